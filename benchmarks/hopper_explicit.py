"""Explicit-Hopper examples on an sm_90a GPU: the seed's warp-specialized GEMMs
(T.ws + mbarriers + T.tma_copy), the persistent warp-specialized GEMM and stream-K,
fp16 in / fp32 accumulate, vs torch.matmul (cuBLAS) in the same run.

Timing: `tilelang.profiler.do_bench` (CUDA events, L2 flushed, median); each kernel is
checked against torch before it is timed. Prints a markdown table (device, date, TFLOP/s).

Usage: PYTHONPATH=. python benchmarks/hopper_explicit.py [--size 4096]
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "cuda"))

from catalog import _example  # noqa: E402

from tilelang.profiler import do_bench  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    args = ap.parse_args()
    n = args.size
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    ref = a.float() @ b.float()
    flops = 2 * n**3
    rows = []

    def run(name, kernel, call):
        out = call(kernel)
        torch.testing.assert_close(out.float(), ref, atol=1e-2 * n**0.5, rtol=1e-2)
        ms = do_bench(lambda: call(kernel), return_mode="median")
        rows.append((name, ms, flops / ms / 1e9))

    ex = {k: _example(f"hopper/{k}.py") for k in ("ws_gemm", "ws_gemm_pipelined", "persistent_ws_gemm", "streamk_gemm")}
    run(
        "T.ws GEMM, 1 buffer (seed §5.2), 128×128×64", ex["ws_gemm"].matmul_ws(n, n, n, 128, 128, 64), lambda k: k(a, b)
    )
    for st in (2, 3, 4):
        k = ex["ws_gemm_pipelined"].matmul_ws_ring(n, n, n, 128, 128, 64, st)
        run(f"T.ws GEMM, {st}-stage ring, 128×128×64", k, lambda k: k(a, b))
    for st in (3, 4):
        k = ex["persistent_ws_gemm"].matmul_persistent_ws(n, n, n, 128, 128, 64, sms, st)
        run(f"persistent T.ws GEMM, {st} stages, setmaxnreg 40/240", k, lambda k: k(a, b))
    c = torch.zeros(n, n, device="cuda", dtype=torch.float32)

    def sk_call(k):
        c.zero_()
        k(a, b, c)
        return c

    run("stream-K GEMM, 128×128×32, 2 stages", ex["streamk_gemm"].matmul_streamk(n, n, n, 128, 128, 32, sms), sk_call)
    ms = do_bench(lambda: a @ b, return_mode="median")
    rows.append(("torch.matmul (cuBLAS)", ms, flops / ms / 1e9))
    dev = torch.cuda.get_device_name(0)
    print(f"\n{dev}, {datetime.date.today()}, fp16 GEMM {n}³ (fp32 accumulate)\n")
    print("| kernel | ms | TFLOP/s |\n|---|---:|---:|")
    for name, ms, tf in rows:
        print(f"| {name} | {ms:.3f} | {tf:.0f} |")


if __name__ == "__main__":
    main()
