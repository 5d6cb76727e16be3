"""Split-KV decode attention (FlashDecoding: two kernels in one prim_func, scratch from
`T.alloc_global`) vs the best torch path, in one run.

    PYTHONPATH=. python3 benchmarks/splitkv_decode.py [--quick] [--splits 1,2,4,8,16] [--configs 64x128x2,...]

Workload (issue 18's performance table): one query per (batch, head), batch 1, 8, 32, 64;
32 heads; KV length 8192; head dim 128; fp16; K and V stored [batch, seq, heads, dim]. The
kernel is tests/conformance/multi_kernel_kernels.py `splitkv_decode`: kernel 1 runs an online
softmax over each of `num_split` slices of the sequence and writes partial outputs and
log-sum-exps to scratch, kernel 2 combines them. For each batch size every `--splits` value
(default: a small sweep around one to two waves of blocks per SM) with every `--configs` tile
config (block_N x threads x stages) is timed and the best is reported. All kernels are built
first, in parallel (nvcc is the slow part).

torch: `scaled_dot_product_attention` on the same tensors (a [B, H, 1, D] query, K/V as
[B, H, S, D] views) under each SDPA backend available here (flash, efficient, cuDNN, math);
the best one is the comparison. Times: `tilelang.profiler.do_bench` with CUDA events, L2
flushed, warm-up, median. GB/s counts the K and V bytes read once. Every kernel is checked
against torch's flash (or best) output before it is timed. Needs a GPU.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from concurrent.futures import ThreadPoolExecutor  # noqa: E402

from conformance.multi_kernel_kernels import splitkv_decode  # noqa: E402

from tilelang.profiler import do_bench  # noqa: E402

HEADS, SEQ, DIM = 32, 8192, 128
BATCHES = (1, 8, 32, 64)
CONFIGS = "64x128x2,32x128x3,64x256x2"  # block_N x threads x num_stages


def bench(fn) -> float:
    return do_bench(fn, warmup=25, rep=100, backend="event", return_mode="median")


def default_splits(batch: int, sms: int) -> list[int]:
    """Split counts around one to two waves of (batch · heads · splits) blocks."""
    base = max(1, min(16, -(-2 * sms // (batch * HEADS))))
    return sorted({max(1, base // 2), base, min(32, base * 2)})


def torch_paths(q, kt, vt) -> dict:
    """{name: fn} for each SDPA backend that accepts these inputs on this machine."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    sdpa = torch.nn.functional.scaled_dot_product_attention
    names = {
        "flash": "FLASH_ATTENTION",
        "efficient": "EFFICIENT_ATTENTION",
        "cudnn": "CUDNN_ATTENTION",
        "math": "MATH",
    }
    out = {}
    for name, attr in names.items():
        backend = getattr(SDPBackend, attr, None)
        if backend is None:
            continue

        def fn(backend=backend):
            with sdpa_kernel(backend):
                return sdpa(q, kt, vt)

        try:
            fn()
            torch.cuda.synchronize()
        except RuntimeError:  # this backend does not take these inputs here
            continue
        out[name] = fn
    return out


def run_batch(batch: int, kernels: dict) -> tuple:
    """`kernels`: {(num_split, block_N, threads, stages): JITKernel}, all for this batch."""
    q = torch.randn(batch, HEADS, DIM, device="cuda", dtype=torch.float16)
    k = torch.randn(batch, SEQ, HEADS, DIM, device="cuda", dtype=torch.float16)
    v = torch.randn(batch, SEQ, HEADS, DIM, device="cuda", dtype=torch.float16)
    q4, kt, vt = q.unsqueeze(2), k.transpose(1, 2), v.transpose(1, 2)
    paths = torch_paths(q4, kt, vt)
    ref = next(iter(paths.values()))().squeeze(2).float()
    theirs = {name: bench(fn) for name, fn in paths.items()}
    best_torch = min(theirs, key=theirs.get)
    ours = {}
    err = 0.0
    for cfg, kern in kernels.items():
        out = kern(q, k, v)
        err = max(err, (out.float() - ref).abs().max().item())
        ours[cfg] = bench(lambda kern=kern: kern(q, k, v))
    best = min(ours, key=ours.get)
    return best, ours[best], best_torch, theirs[best_torch], theirs, err


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="batch 1 and 8 only")
    ap.add_argument("--splits", help="comma-separated num_split values to time (default: a sweep per batch)")
    ap.add_argument("--configs", default=CONFIGS, help=f"tile configs block_NxthreadsxSTAGES (default {CONFIGS})")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("benchmarks/splitkv_decode.py needs a GPU")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    batches = BATCHES[:2] if args.quick else BATCHES
    print(f"\n{torch.cuda.get_device_name()}, {datetime.date.today()}, torch {torch.__version__}, "
          f"split-KV decode: heads {HEADS}, KV {SEQ}, dim {DIM}, fp16\n")  # fmt: skip
    print("| batch | num_split | block_N×threads×stages | ours ms | ours GB/s | best torch | torch ms | torch GB/s | "
          "ours/torch | all torch paths (ms) | max err |")  # fmt: skip
    print("|---:|---:|---|---:|---:|---|---:|---:|---:|---|---:|", flush=True)
    configs = [tuple(int(x) for x in c.split("x")) for c in args.configs.split(",")]
    jobs = []
    for batch in batches:
        splits = [int(x) for x in args.splits.split(",")] if args.splits else default_splits(batch, sms)
        jobs += [(batch, n, *c) for n in splits for c in configs]

    def build(job):
        batch, n, bn, threads, stages = job
        try:
            return splitkv_decode(batch, HEADS, SEQ, DIM, num_split=n, block_N=bn, threads=threads, num_stages=stages)
        except Exception as err:  # noqa: BLE001 - a config that does not build is reported, the rest still run
            print(f"config {job} failed to build: {type(err).__name__}: {str(err)[:200]}", flush=True)
            return None

    with ThreadPoolExecutor(16) as ex:
        built = dict(zip(jobs, ex.map(build, jobs)))
    for batch in batches:
        kernels = {job[1:]: kern for job, kern in built.items() if job[0] == batch and kern is not None}
        (n, bn, threads, stages), ours, tname, theirs, every, err = run_batch(batch, kernels)
        torch.cuda.empty_cache()  # this batch's K/V (up to 8 GiB at batch 64) before the next
        gbytes = 2 * batch * SEQ * HEADS * DIM * 2 / 1e9
        paths = ", ".join(f"{name} {ms:.3f}" for name, ms in every.items())
        print(f"| {batch} | {n} | {bn}x{threads}x{stages} | {ours:.3f} | {gbytes / ours * 1e3:.0f} | {tname} | "
              f"{theirs:.3f} | {gbytes / theirs * 1e3:.0f} | {theirs / ours:.2f} | {paths} | {err:.1e} |",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
