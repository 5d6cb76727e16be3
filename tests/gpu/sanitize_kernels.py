"""Run the quickstart GEMM, the FlashAttention forward kernel and a reduction kernel
once each, small sizes, checking results — the program `compute-sanitizer` runs:

    PYTHONPATH=. python tests/gpu/sanitize_kernels.py            # compile (fills the disk cache)
    compute-sanitizer --tool memcheck  --error-exitcode 1 python tests/gpu/sanitize_kernels.py
    compute-sanitizer --tool racecheck --error-exitcode 1 python tests/gpu/sanitize_kernels.py
"""

import os
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "tests", "cuda"))

import kernels as KZ  # noqa: E402
import quickstart  # noqa: E402
from catalog import _example  # noqa: E402


def main() -> None:
    torch.manual_seed(0)
    a, b = torch.randn(200, 96, device="cuda").half(), torch.randn(96, 136, device="cuda").half()
    k = quickstart.matmul.compile(M=200, N=136, K=96, block_M=128, block_N=128, block_K=32)
    torch.testing.assert_close(k(a, b).float(), torch.relu(a.float() @ b.float()), atol=5e-2, rtol=1e-2)
    mha = _example("flash_attention/mha_fwd.py")
    q, kk, v = (torch.randn(1, 200, 2, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    for causal in (False, True):
        f = mha.flashattn(1, 2, 200, 64, causal)
        torch.testing.assert_close(f(q, kk, v).float(), mha.reference(q, kk, v, causal), atol=2e-2, rtol=2e-2)
    x = torch.randn(64, 96, device="cuda")
    torch.testing.assert_close(KZ.reduce_dim(64, 96, 1, "sum")(x), x.sum(1), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(KZ.reduce_dim(64, 96, 0, "max")(x), x.amax(0), atol=0, rtol=0)
    torch.cuda.synchronize()
    print("sanitize_kernels: all results match")


if __name__ == "__main__":
    main()
