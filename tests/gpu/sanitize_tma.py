"""Small TMA-pipelined GEMMs, warp-specialized and not, plain and persistent, checked
against torch: the program compute-sanitizer runs (memcheck / racecheck / synccheck) on
the TMA + mbarrier paths. K spans more iterations than stages, so the producer waits on
the "empty" ring; the persistent kernels carry ring phases across tiles (and the automatic
one leaves each tile's TMA stores in flight while the next tile computes)."""

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "cuda"))
sys.path.insert(0, str(ROOT / "examples" / "gemm"))
import persistent  # noqa: E402
from tma_kernels import gemm_func  # noqa: E402

import tilelang  # noqa: E402

if __name__ == "__main__":
    a = torch.randn(200, 192, device="cuda", dtype=torch.float16)
    b = torch.randn(192, 264, device="cuda", dtype=torch.float16)
    ref = a.float() @ b.float()
    # 128 KB / 144 KB of shared memory: one block per SM, so warp-specialized unless switched off
    configs = (dict(block_K=64, num_stages=4), dict(block_N=256, block_K=64, num_stages=3, threads=256, smem_out=True))
    for pc, mark in ((None, "ko_empty"), ({"tl.disable_warp_specialized": True}, "ko_full")):
        for cfg in configs:
            k = tilelang.compile(gemm_func(200, 264, 192, **cfg), target="cuda", pass_configs=pc)
            assert mark in k.get_kernel_source()
            torch.testing.assert_close(k(a, b).float(), ref, atol=0.3, rtol=2e-2)
        kp = tilelang.compile(persistent.matmul_persistent.get_tir(200, 264, 192, 128, 128, 64, 128, 3, 3),
                              out_idx=[-1], target="cuda", pass_configs=pc)  # fmt: skip
        assert ("k_ring_pos" in kp.get_kernel_source()) == (pc is None)
        torch.testing.assert_close(kp(a, b).float(), ref, atol=0.3, rtol=2e-2)
    # auto_persistent: 17 x 8 = 136 tiles of 128 x 256 over 132 blocks, its epilogue TMA stores
    # left in flight into the next tile (odd M and N: partial edge tiles)
    a2 = torch.randn(2100, 200, device="cuda", dtype=torch.float16)
    b2 = torch.randn(200, 2000, device="cuda", dtype=torch.float16)
    big = dict(block_N=256, block_K=64, num_stages=3, threads=256)
    kq = tilelang.compile(gemm_func(2100, 2000, 200, **big), target="cuda")
    assert "wave" in kq.get_kernel_source() and "C_local_out" in kq.get_kernel_source()
    torch.testing.assert_close(kq(a2, b2).float(), a2.float() @ b2.float(), atol=0.3, rtol=2e-2)
    torch.cuda.synchronize()
    print("sanitize_tma: results match")
