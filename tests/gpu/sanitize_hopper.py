"""Run the warp-specialized GEMMs and the overlapped FlashAttention (P·V one trip late, two
consumer warpgroups in turns: backend/cuda/overlap_gemms.py; launched, and persistent with more
tiles than SMs: auto_persistent) once each at a small size, checking
results — the program `compute-sanitizer --tool synccheck / racecheck` runs:

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
    mha = _example("flash_attention/mha_fwd.py")
    q, kk, v = (torch.randn(1, 300, 2, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    for causal in (False, True):
        for bm, bn, threads in ((128, 128, 256), (64, 128, 128)):
            fa = mha.flashattn(1, 2, 300, 128, causal, block_M=bm, block_N=bn, num_stages=2, threads=threads)
            assert "late_full" in fa.get_kernel_source()
            ref = mha.reference(q.cpu(), kk.cpu(), v.cpu(), causal)  # on the CPU: torch's own kernels stay out
            torch.testing.assert_close(fa(q, kk, v).float().cpu(), ref, atol=2e-2, rtol=2e-2)
    # persistent (auto_persistent): 144 tiles over 132 resident blocks, Q from the producer
    q, kk, v = (torch.randn(1, 384, 48, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    for causal in (False, True):
        fa = mha.flashattn(1, 48, 384, 128, causal, block_M=128, block_N=128, num_stages=2, threads=256)
        assert "for (int wave = 0;" in fa.get_kernel_source()
        ref = mha.reference(q.cpu(), kk.cpu(), v.cpu(), causal)
        torch.testing.assert_close(fa(q, kk, v).float().cpu(), ref, atol=2e-2, rtol=2e-2)
    torch.cuda.synchronize()
    print("sanitize_hopper: all results match")


if __name__ == "__main__":
    main()
