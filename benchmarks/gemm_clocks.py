"""Clock, power and throttle reasons while a GEMM runs back to back: ours and cuBLAS (with `--fa`:
FlashAttention forward, ours with the best config and SDPA, causal and not).

fp16 8192^3 with the Hopper issue's 128x256x64 / 3 stages / 256 threads config. Each kernel runs
for `--seconds` without pauses while `nvidia-smi` samples the SM clock, the power draw and the
active throttle reasons every 250 ms; the sustained TFLOP/s is the total work over the CUDA-event
time of the whole run. Shows whether a GEMM is bound by the card's power cap (throttle reason
0x4, "SW power cap") rather than by the kernel.

Usage: python benchmarks/gemm_clocks.py [--seconds 4] [--fa]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import hopper  # noqa: E402

QUERY = "clocks.sm,clocks.max.sm,power.draw,power.limit,clocks_throttle_reasons.active"
SIZE = 8192


def sustained(fn, seconds: float, flops: float = 2.0 * SIZE**3) -> tuple[float, list[str]]:
    """TFLOP/s of `fn` run back to back for `seconds`, and the nvidia-smi samples meanwhile."""
    smi = subprocess.Popen(
        ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader", "-lms", "250"],
        stdout=subprocess.PIPE,
        text=True,
    )
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    calls, t0 = 0, time.time()
    start.record()
    while time.time() - t0 < seconds:
        for _ in range(20):
            fn()
        calls += 20
        torch.cuda.synchronize()
    end.record()
    torch.cuda.synchronize()
    smi.terminate()
    samples = smi.communicate()[0].strip().splitlines()
    ms = start.elapsed_time(end) / calls
    return flops / ms / 1e9, samples


def attention_cases() -> list:
    """(name, fn, flops) of FlashAttention 8x32x4096x128: ours (128x128 / 2 / 256, fast math) and SDPA."""
    out = []
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for causal in (False, True):
        case = ("FA", 8, 32, 4096, 128, causal, 128, 128, 2, 256, True)
        kern = hopper.build_fa(case, {})
        q, k, v = (torch.randn(8, 4096, 32, 128, device="cuda", dtype=torch.float16) for _ in range(3))
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
        flops = 4.0 * 8 * 32 * 4096 * 4096 * 128 * (0.5 if causal else 1.0)
        tag = "causal" if causal else "non-causal"
        out.append((f"ours FA {tag}", lambda kern=kern, q=q, k=k, v=v: kern(q, k, v), flops))
        out.append((f"SDPA {tag}", lambda c=causal, q=qt, k=kt, v=vt: sdpa(q, k, v, is_causal=c), flops))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--fa", action="store_true", help="FlashAttention instead of the GEMM")
    args = ap.parse_args()
    if args.fa:
        print(f"{torch.cuda.get_device_name()}; samples: {QUERY}")
        for name, fn, flops in attention_cases():
            tflops, samples = sustained(fn, args.seconds, flops)
            print(f"{name}: {tflops:.0f} TFLOP/s sustained")
            for line in samples[-6:]:
                print("   ", line)
        return
    case = ("GEMM fp16 8192³", SIZE, SIZE, SIZE, 128, 256, 64, 3, 256, "float16")
    kern = hopper.build_gemm(case, {})
    a = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    b = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    print(f"{torch.cuda.get_device_name()}; samples: {QUERY}")
    for name, fn in (("ours", lambda: kern(a, b)), ("cuBLAS", lambda: a @ b)):
        tflops, samples = sustained(fn, args.seconds)
        print(f"{name}: {tflops:.0f} TFLOP/s sustained")
        for line in samples[-6:]:
            print("   ", line)


if __name__ == "__main__":
    main()
