"""GPU tests import the shared kernel catalogues of tests/cuda and tests/ by module name."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT / "tests" / "cuda", ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
