"""Time TMA GEMMs (fp16, fp32 accumulation) against torch on the GPU: the 128x256x64 /
3 stages / 256 threads config at 8192^3 and 4096^3 and the seed's 128x128x32 / 3 / 128 at
8192^3; warp-specialized (default on sm_90a), plain mbarrier ring, and TMA off (cp.async).
Each time is the median of three `do_bench` runs. One line per case."""

import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "cuda"))
from tma_kernels import gemm_func  # noqa: E402

import tilelang  # noqa: E402
from tilelang.profiler import do_bench  # noqa: E402

BIG = dict(block_M=128, block_N=256, block_K=64, num_stages=3, threads=256)
SEED = dict(block_M=128, block_N=128, block_K=32, num_stages=3, threads=128)
MODES = (("tma+ws", None), ("tma", {"tl.disable_warp_specialized": True}), ("cp.async", {"tl.disable_tma_lower": True}))
SHAPES = ((8192, "128x256x64 s3 t256", BIG), (4096, "128x256x64 s3 t256", BIG), (8192, "128x128x32 s3 t128", SEED))


def median_ms(fn) -> float:
    return statistics.median(do_bench(fn) for _ in range(3))


def main() -> None:
    jobs = [(n, cfg_name, cfg, mode, pc) for n, cfg_name, cfg in SHAPES for mode, pc in MODES]
    with ThreadPoolExecutor(max_workers=len(jobs)) as ex:
        built = list(ex.map(lambda j: tilelang.compile(gemm_func(j[0], j[0], j[0], **j[2]), target="cuda",
                                                       pass_configs=j[4]), jobs))  # fmt: skip
    torch_tflops: dict = {}
    for (n, cfg_name, _, mode, _), k in zip(jobs, built):
        torch.manual_seed(0)
        a = torch.randn(n, n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, n, device="cuda", dtype=torch.float16)
        flops = 2 * n**3
        if n not in torch_tflops:
            torch_tflops[n] = flops / median_ms(lambda a=a, b=b: a @ b) / 1e9
            print(f"torch fp16 {n}^3: {torch_tflops[n]:.0f} TFLOP/s", flush=True)
        err = (k(a, b).float() - a.float() @ b.float()).abs().max().item()
        t = median_ms(lambda k=k, a=a, b=b: k(a, b))
        print(f"{cfg_name} {mode} {n}^3: {flops / t / 1e9:.0f} TFLOP/s ({t:.3f} ms, max err {err:.3f}, "
              f"regs {k.n_regs}, spills {k.n_spills})", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
