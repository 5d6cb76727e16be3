"""Conformance kernels: small programs written the way public TileLang 0.1.x programs are
(lazy factories with `out_idx`, eager style, module-level scripts), run on the CPU backend
against torch, and lowered + nvcc-compiled for sm_80 and sm_90a. Their GPU twins live in
`tests/gpu/test_conformance_*.py`."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for p in (os.path.join(os.path.dirname(HERE), "cuda"), os.path.dirname(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)
