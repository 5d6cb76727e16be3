"""GEMV written with thread bindings (issue #18, item 4): y = W · x at N = K = 8192, fp16 data,
float32 accumulation, against the bandwidth of a device-to-device copy measured in the same run
(target: >= 90 % of it) and torch (`torch.mv`, `W @ x`) beside it.

Kernels (tests/conformance/thread_level_kernels.py, the programs the conformance tests check):
- `gemv_warp_shuffle`: one warp per row, 16-byte `T.vectorized` loads into `T.alloc_local`,
  a `T.shfl_xor` butterfly;
- `gemv_allreduce`: the public example's shape, the partial sums combined by
  `T.tvm_thread_allreduce` (reduce axis 1 as the example; reduce axis 0: lanes of a warp);
- `gemv_split_k_atomic`: split-K inside the block, partial sums meet by shared-memory atomics;
- `gemv_split_k_global`: split-K over the grid, warp partials added by global float32 atomics
  (its output is zeroed before each timed launch, outside the timed events).
A small config sweep per kernel; CUDA events, warm-up, median of `--rep` launches.
Bandwidth counts the bytes a GEMV must move (W, x, y); the copy's counts read + write.

Usage (on a GPU): PYTHONPATH=. python3 benchmarks/gemv.py [--size 8192] [--rep 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
from conformance import thread_level_kernels as TK  # noqa: E402


def time_ms(fn, rep: int, warmup: int = 10, before=None) -> float:
    """Median of `rep` CUDA-event timings of fn() (each launch timed on its own)."""
    for _ in range(warmup):
        if before:
            before()
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rep):
        if before:
            before()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def measure(fname: str, cfg: dict, x: torch.Tensor, W: torch.Tensor, rep: int) -> tuple:
    """(output, median ms) of kernel `fname` with `cfg`."""
    n, k = W.shape
    kern = getattr(TK, fname)(n, k, **cfg)
    if fname == "gemv_split_k_global":
        y = torch.zeros(n, device="cuda", dtype=torch.float32)
        kern(x, W, y)
        got = y.clone()
        # the events bracket the kernel only: the zeroing runs before the first one
        return got, time_ms(lambda: kern(x, W, y), rep, before=y.zero_)
    return kern(x, W), time_ms(lambda: kern(x, W), rep)


CONFIGS = {
    "gemv_warp_shuffle": [dict(rows=r, unroll=u) for r in (2, 4, 8) for u in (1, 4, 8)],
    "gemv_allreduce (axis 1, public shape)": [
        dict(block_n=b, reduce_threads=r, reduce_axis=1, unroll=u)
        for b, r in ((2, 64), (4, 32), (8, 32))
        for u in (1, 4)
    ],
    "gemv_allreduce (axis 0)": [
        dict(block_n=b, reduce_threads=r, reduce_axis=0, unroll=u)
        for b, r in ((4, 32), (8, 32), (2, 64))
        for u in (1, 4)
    ],
    "gemv_split_k_atomic": [dict(block_n=b, reduce_threads=r) for b, r in ((4, 32), (8, 16), (16, 8))],
    "gemv_split_k_global": [dict(rows=r, split=s, unroll=u) for r in (4, 8) for s in (2, 4) for u in (1, 4)],
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--rep", type=int, default=50)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no GPU: nothing to time (the CPU numerics are in tests/conformance/test_thread_level.py)")
        return
    n = k = args.size
    torch.manual_seed(0)
    x = torch.randn(k, device="cuda", dtype=torch.float16)
    W = torch.randn(n, k, device="cuda", dtype=torch.float16)
    ref = W.float() @ x.float()
    gemv_bytes = (n * k + k + n) * 2

    src = torch.empty(n * k, device="cuda", dtype=torch.float16)
    dst = torch.empty_like(src)
    t_copy = time_ms(lambda: dst.copy_(src), args.rep)
    copy_bw = 2 * src.numel() * 2 / t_copy / 1e6  # GB/s
    print(f"device-to-device copy of {src.numel() * 2 / 2**20:.0f} MiB: {t_copy * 1e3:.1f} us, {copy_bw:.0f} GB/s")

    rows = []
    for name, fn in (("torch.mv", lambda: torch.mv(W, x)), ("torch W @ x", lambda: W @ x)):
        t = time_ms(fn, args.rep)
        rows.append((name, "", t))

    for label, configs in CONFIGS.items():
        fname = label.split(" ")[0]
        best = None
        for cfg in configs:
            try:
                got, t = measure(fname, cfg, x, W, args.rep)
            except Exception as e:  # noqa: BLE001 - report and go on with the sweep
                print(f"  {label} {cfg}: failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
                continue
            err = (got.float() - ref).abs().max().item()
            ok = err <= 0.05 * ref.abs().max().item()
            print(f"  {label} {cfg}: {t * 1e3:.1f} us, {gemv_bytes / t / 1e6:.0f} GB/s, max err {err:.3g}"
                  f"{'' if ok else '  WRONG'}")  # fmt: skip
            if ok and (best is None or t < best[2]):
                best = (label, str(cfg), t)
        if best:
            rows.append(best)

    print()
    print(f"| kernel | config | time (us) | GB/s | vs copy ({copy_bw:.0f} GB/s) |")
    print("|---|---|---:|---:|---:|")
    for name, cfg, t in rows:
        bw = gemv_bytes / t / 1e6
        print(f"| {name} | {cfg} | {t * 1e3:.1f} | {bw:.0f} | {100 * bw / copy_bw:.0f} % |")


if __name__ == "__main__":
    main()
