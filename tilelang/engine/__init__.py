"""`tilelang.engine`: kernel parameters (`param`) and source post-processing hooks (`callback`)."""

from . import callback
