"""`python -m tilelang.autodd source.py --err-msg MSG -o OUTPUT` (see tilelang.autodd)."""

import sys

from . import main

sys.exit(main())
