"""2-D convolution benchmark: the public-example convolution (T.im2col + T.gemm in a
T.Pipelined loop, weight and output through `T.Tensor(shape, dtype, buf.data)` views) vs
cuDNN through torch.

Workload (issue 18): 3×3, N=8, C=F=256, H=W=56, fp16 (fp32 accumulate), stride 1, pad 1,
dilation 1; input NHWC, weight (KH, KW, C, F). cuDNN gets the same data as channels_last
NCHW tensors (no copies for the input; the weight is converted once, outside the timing) and
`torch.backends.cudnn.benchmark = True`, so it picks its fastest algorithm.

Each config of a small sweep (block sizes, stages, threads; `--style parallel` times the
example's direct-indexing T.Parallel load instead of T.im2col) is checked against cuDNN once,
then timed: CUDA events around each call, warm-up, the median of the repetitions; ours and
cuDNN's measured the same way in the same run. Prints a markdown table (device, date,
TFLOP/s, ratio to cuDNN); the target is ≥ 0.8× cuDNN.

Usage: PYTHONPATH=. python3 benchmarks/conv2d.py [--style im2col|parallel|both] [--reps 100] [--quick]
       [--configs BMxBNxBKxSTAGESxTHREADS,...]   (--cpu: a small smoke run on the C backend)
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
from conformance.conv_kernels import convolution, reference  # noqa: E402  (the conformance kernel itself)

import tilelang  # noqa: E402

SWEEP = [  # (block_M, block_N, block_K, num_stages, threads)
    (128, 128, 32, 3, 256),
    (128, 128, 64, 3, 256),
    (128, 256, 32, 3, 256),
    (256, 128, 32, 3, 256),
    (128, 128, 32, 4, 128),
    (64, 128, 64, 4, 128),
    (128, 64, 64, 4, 128),
]


def median_ms(fn, warmup: int, reps: int) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def parse_configs(text: str) -> list:
    return [tuple(int(x) for x in c.split("x")) for c in text.split(",") if c]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--style", default="im2col", choices=["im2col", "parallel", "both"])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="the first two configs only")
    ap.add_argument("--configs", default="", help="BMxBNxBKxSTAGESxTHREADS,... instead of the sweep")
    ap.add_argument("--cpu", action="store_true", help="smoke run on the C backend at a small size")
    args = ap.parse_args()

    if args.cpu:
        N, C, H, W, F, K, S, P, D = 1, 16, 9, 9, 24, 3, 1, 1, 1
        x, w = torch.randn(N, H, W, C).half(), (torch.randn(K, K, C, F) / 16).half()
        kern = tilelang.compile(convolution(N, C, H, W, F, K, S, D, P, 64, 32, 32, 2, 128), out_idx=[2], target="c")
        err = (kern(x, w).float() - reference(x, w, S, D, P)).abs().max().item()
        print(f"C backend smoke run: max |ours - conv2d| = {err:.3g}")
        return

    N, C, H, W, F, K, S, P, D = 8, 256, 56, 56, 256, 3, 1, 1, 1
    OH, OW = (H + 2 * P - D * (K - 1) - 1) // S + 1, (W + 2 * P - D * (K - 1) - 1) // S + 1
    flops = 2 * N * OH * OW * F * K * K * C
    torch.manual_seed(0)
    x = torch.randn(N, H, W, C, device="cuda").half()
    w = (torch.randn(K, K, C, F, device="cuda") / 16).half()
    x_cl = x.permute(0, 3, 1, 2)  # NCHW view of NHWC storage: channels_last, no copy
    w_cl = w.permute(3, 2, 0, 1).contiguous(memory_format=torch.channels_last)
    torch.backends.cudnn.benchmark = True

    def cudnn():
        return torch.nn.functional.conv2d(x_cl, w_cl, stride=S, padding=P, dilation=D)

    ref = cudnn().permute(0, 2, 3, 1).float()
    t_ref = median_ms(cudnn, args.warmup, args.reps)
    name = torch.cuda.get_device_name()
    print(f"# conv2d 3x3, N={N} C=F={C} H=W={H}, fp16, stride {S} pad {P} — {name}, {datetime.date.today()}")
    print(f"# cuDNN (torch {torch.__version__}, channels_last): {t_ref:.3f} ms, {flops / t_ref / 1e9:.1f} TFLOP/s\n")
    print("| style | block_M×block_N×block_K | stages | threads | ms | TFLOP/s | vs cuDNN | max err |")
    print("|---|---|---|---|---|---|---|---|")
    configs = parse_configs(args.configs) if args.configs else SWEEP[: 2 if args.quick else None]
    styles = ["im2col", "parallel"] if args.style == "both" else [args.style]
    best = None
    for style in styles:
        for bm, bn, bk, stages, threads in configs:
            tag = f"| {style} | {bm}×{bn}×{bk} | {stages} | {threads} |"
            try:
                func = convolution(N, C, H, W, F, K, S, D, P, bm, bn, bk, stages, threads, style)
                kern = tilelang.compile(func, out_idx=[2], target="cuda")
                got = kern(x, w)
                err = (got.float() - ref).abs().max().item()
                if err > 0.25:
                    print(f"{tag} — | — | — | WRONG ({err:.3g}) |", flush=True)
                    continue
                t = median_ms(lambda k=kern: k(x, w), args.warmup, args.reps)
            except Exception as e:  # noqa: BLE001 - a config that does not build is reported, not fatal
                print(f"{tag} — | — | — | {type(e).__name__}: {str(e).splitlines()[0][:80]} |", flush=True)
                continue
            print(f"{tag} {t:.3f} | {flops / t / 1e9:.1f} | {t_ref / t:.2f}× | {err:.2g} |", flush=True)
            if best is None or t < best[0]:
                best = (t, style, bm, bn, bk, stages, threads)
    if best is not None:
        t, *cfg = best
        print(f"\nbest: {cfg} {t:.3f} ms = {t_ref / t:.2f}× cuDNN (target ≥ 0.8×)")


if __name__ == "__main__":
    main()
