"""Autotune the seed GEMM and measure the autotuner itself.

GPU (default): M = N = K = 8192, fp16 in / fp32 accumulate, target "cuda",
over the grid block_M, block_N in {64, 128, 256}, block_K in {32, 64},
num_stages in {2, 3, 4}, threads in {128, 256}, filtered to configs whose
pipelined shared memory fits the device and whose accumulator stays within
128 fp32 registers per thread (>= 48 configs). Reports

- compile throughput (configs/minute): serial (a sample, in this process)
  vs parallel (every config, on the autotuner's process pool), each into an
  empty kernel cache so nothing is served from a previous run;
- total cold tuning time (compile + check + benchmark), the best config and
  its TFLOP/s vs torch.matmul (cuBLAS);
- the time of a second, cached tuning call.

`--cpu` runs the same script on the C backend at a small size (smoke test).
Usage: python benchmarks/autotune_gemm.py [--cpu] [--size N] [--serial-sample K]
"""

import argparse
import itertools
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402
from tilelang.autotuner import AutoTuner, set_autotune_inputs  # noqa: E402
from tilelang.autotuner import cache as result_cache  # noqa: E402


@tilelang.jit(out_idx=[-1])
def matmul(
    M, N, K, block_M=128, block_N=128, block_K=32, threads=128, num_stages=3, dtype=T.float16, accum_dtype=T.float32
):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def ref_program(A, B):
    return (A.float() @ B.float()).to(A.dtype)


def smem_limit() -> int:
    major, _ = torch.cuda.get_device_capability()
    return {8: 163, 9: 227, 10: 227, 12: 99}.get(major, 99) * 1024


def gpu_configs() -> list[dict]:
    limit = smem_limit()
    out = []
    for bm, bn, bk, s, th in itertools.product([64, 128, 256], [64, 128, 256], [32, 64], [2, 3, 4], [128, 256]):
        smem = (bm * bk + bk * bn) * 2 * s
        if smem <= limit and bm * bn // th <= 128:
            out.append(dict(block_M=bm, block_N=bn, block_K=bk, num_stages=s, threads=th))
    return out


def cpu_configs() -> list[dict]:
    grid = itertools.product([32, 64], [32, 64], [16, 32], [2], [128])
    return [dict(block_M=bm, block_N=bn, block_K=bk, num_stages=s, threads=th) for bm, bn, bk, s, th in grid]


def tuner(configs: list[dict], size: int, target: str, warmup: int, rep: int) -> AutoTuner:
    return (
        AutoTuner(matmul, configs)
        .set_kernel_parameters((size, size, size))
        .set_compile_args(target=target)
        .set_profile_args(warmup=warmup, rep=rep, timeout=600, ref_prog=ref_program, atol=0.1, rtol=1e-2)
    )


def start_pool(n_configs: int) -> tuple[float, int]:
    """Start the autotuner's compile pool (spawn + imports) so it is not counted as compile time."""
    from tilelang.autotuner.executor import start_pool as start

    t0 = time.perf_counter()
    n = start(n_configs, matmul)
    return time.perf_counter() - t0, n


def fresh_cache() -> str:
    d = tempfile.mkdtemp(prefix="tilelang-autotune-bench-")
    os.environ["TILELANG_CACHE_DIR"] = d
    result_cache._MEMORY.clear()
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", action="store_true", help="small smoke run on the C backend")
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument(
        "--serial-sample", type=int, default=None, help="configs compiled serially to measure serial throughput"
    )
    ap.add_argument("--max-configs", type=int, default=None, help="tune only the first N configs of the grid")
    ap.add_argument("--workers", type=int, default=None, help="sets TILELANG_AUTO_TUNING_CPU_COUNTS")
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--rep", type=int, default=None)
    args = ap.parse_args()
    if not args.cpu and not torch.cuda.is_available():
        sys.exit("no CUDA GPU: run with --cpu for the C-backend smoke test")
    if args.workers:
        os.environ["TILELANG_AUTO_TUNING_CPU_COUNTS"] = str(args.workers)
    target = "c" if args.cpu else "cuda"
    size = args.size or (128 if args.cpu else 8192)
    configs = (cpu_configs() if args.cpu else gpu_configs())[: args.max_configs]
    sample = min(len(configs), args.serial_sample or (2 if args.cpu else 4))
    warmup, rep = args.warmup or (2 if args.cpu else 25), args.rep or (5 if args.cpu else 100)
    dev = "cpu" if args.cpu else "cuda"
    from tilelang.autotuner.executor import worker_count

    print(
        f"# autotune GEMM {size}^3 fp16 on {target}: {len(configs)} configs, {worker_count(len(configs))} compile workers"
    )

    fresh_cache()  # serial compile throughput, on a sample
    t0 = time.perf_counter()
    serial = tuner(configs[:sample], size, target, warmup, rep).compile_configs(executor="serial")
    serial_s = time.perf_counter() - t0
    serial_ok = sum(k is not None for _, k, _ in serial)

    fresh_cache()  # cold tuning: parallel compile of every config, then check + benchmark
    pool_s, pool_n = start_pool(len(configs))
    g = torch.Generator(device=dev).manual_seed(0)
    a = torch.randn(size, size, device=dev, generator=g).half()
    b = torch.randn(size, size, device=dev, generator=g).half()
    c = torch.empty(size, size, device=dev, dtype=torch.float16)
    with set_autotune_inputs(a, b, c):
        res = tuner(configs, size, target, warmup, rep).run()
        result_cache._MEMORY.clear()
        t0 = time.perf_counter()
        cached = tuner(configs, size, target, warmup, rep).run()
        cached_s = time.perf_counter() - t0
    assert cached.from_cache and cached.config == res.config

    out = res.kernel(a, b)
    err = (out.float() - ref_program(a, b).float()).abs().max().item()
    flops = 2 * size**3
    from tilelang.profiler import do_bench

    torch_ms = do_bench(lambda: a @ b, _n_warmup=warmup, _n_repeat=rep, device=dev)
    n_ok = len(res.timings)
    rows = [
        (
            "configs (compiled ok / total)",
            f"{len(configs) - sum(1 for _, r in res.skipped if r.startswith('compile'))} / {len(configs)}",
        ),
        (
            "serial compile throughput",
            f"{60 * sample / serial_s:.1f} configs/min ({serial_ok}/{sample} in {serial_s:.1f} s)",
        ),
        (
            f"parallel compile throughput ({pool_n} workers)",
            f"{60 * len(configs) / res.compile_seconds:.1f} configs/min ({len(configs)} in {res.compile_seconds:.1f} s)",
        ),
        ("compile pool start-up", f"{pool_s:.1f} s ({pool_n} worker processes; once per Python process)"),
        ("total cold tuning time", f"{res.tuning_seconds:.1f} s ({n_ok} benchmarked, {len(res.skipped)} skipped)"),
        ("cached tuning call", f"{cached_s * 1e3:.0f} ms"),
        ("best config", str(res.config)),
        ("best latency", f"{res.latency:.4f} ms = {flops / res.latency / 1e9:.3g} TFLOP/s (max abs err {err:.3g})"),
        ("torch.matmul", f"{torch_ms:.4f} ms = {flops / torch_ms / 1e9:.3g} TFLOP/s"),
        ("ours / torch", f"{torch_ms / res.latency:.2f}x"),
    ]
    print("| metric | value |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")
    for cfg, reason in res.skipped[:10]:
        print(f"skipped {cfg}: {reason.splitlines()[0][:160]}")


if __name__ == "__main__":
    main()
