"""Exceptions raised by the JIT layer."""

from ..errors import TileLangError


class JITNoBuilderError(TileLangError):
    """A tracing-only construct (T.Kernel, T.const, ...) was used outside a kernel trace."""


class EagerJITBuildError(TileLangError):
    """An eager-style kernel could not be built from the given arguments."""
