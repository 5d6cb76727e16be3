"""Run the warp-specialized GEMMs once each at a small size, checking results — the
program `compute-sanitizer --tool synccheck / racecheck` runs:

    PYTHONPATH=. python tests/gpu/sanitize_hopper.py           # compile (fills the disk cache)
    compute-sanitizer --tool synccheck --error-exitcode 1 python tests/gpu/sanitize_hopper.py
    compute-sanitizer --tool racecheck --error-exitcode 1 python tests/gpu/sanitize_hopper.py
"""

import os
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "cuda"))

from catalog import _example  # noqa: E402


def main() -> None:
    torch.manual_seed(0)
    M, N, K = 256, 256, 256
    a, b = torch.randn(M, K, device="cuda").half(), torch.randn(K, N, device="cuda").half()
    ws = _example("hopper/ws_gemm.py").matmul_ws(M, N, K, 128, 128, 64)
    ring = _example("hopper/ws_gemm_pipelined.py").matmul_ws_ring(M, N, K, 128, 128, 64, 2)
    for k in (ws, ring):
        torch.testing.assert_close(k(a, b).float(), a.float() @ b.float(), atol=0.2, rtol=1e-2)
    torch.cuda.synchronize()
    print("sanitize_hopper: all results match")


if __name__ == "__main__":
    main()
