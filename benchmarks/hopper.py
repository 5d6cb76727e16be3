"""Hopper (H100/H200, sm_90a) benchmark: wgmma GEMMs and FlashAttention, ours vs torch in one run.

Workloads (issue 4's performance table):
- GEMM fp16 8192^3 with 128x256x64, 3 stages, 256 threads; 4096^3 with the same
  config; 8192^3 with the seed's 128x128x32, 3 stages, 128 threads — vs torch.matmul (cuBLAS);
- GEMM fp8 e4m3 8192^3 (fp32 accumulate, fp16 out) — vs torch._scaled_mm;
- FlashAttention forward fp16, batch 8, heads 32, seq 4096, dim 128
  (examples/flash_attention/mha_fwd.py): the seed config 128x128 / 1 stage / 128
  threads, the same tiles with `tl.enable_fast_math` (nvcc --use_fast_math: `T.exp2` becomes
  ex2.approx), 128x128 / 2 stages / 256 threads with and without it (two consumer warpgroups,
  P·V one trip late and in ping-pong: backend/cuda/overlap_gemms.py) and 128x64 / 2 / 256 with it,
  causal and not — vs
  torch SDPA; `--fa-sweep` times
  every config of `FA_SWEEP` instead (the search for the best config).
The GEMM kernel is the seed's three-line T.Pipelined loop (tests/cuda/kernels.py `gemm`).

Timing: `tilelang.profiler.do_bench` with CUDA events, L2 flushed between calls,
warm-up, median of the repetitions; ours and torch's measured the same way.
Every kernel is checked against torch once before it is timed.
Prints a markdown table (device, date, TFLOP/s).

Rows are printed as they are measured. `--wgmma-only` turns TMA and warp
specialisation off (what wgmma with the cp.async pipeline gives alone).

Usage: python benchmarks/hopper.py [--quick] [--only gemm|fp8|fa] [--no-wgmma] [--wgmma-only] [--no-ws] [--fast-math]
       [--fa-sweep | --fa-configs BMxBNxSTAGESxTHREADS,...]
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "cuda"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import tilelang  # noqa: E402
from tilelang.profiler import do_bench  # noqa: E402

TARGET = {"kind": "cuda", "arch": "sm_90a"}


def bench(fn) -> float:
    return do_bench(fn, warmup=50, rep=300, backend="event", return_mode="median")


def gemm_cases(quick: bool) -> list[tuple]:
    """(label, M, N, K, bm, bn, bk, stages, threads, dtype)."""
    big = 4096 if quick else 8192
    return [
        (f"GEMM fp16 {big}³", big, big, big, 128, 256, 64, 3, 256, "float16"),
        ("GEMM fp16 4096³", 4096, 4096, 4096, 128, 256, 64, 3, 256, "float16"),
        (f"GEMM fp16 {big}³ (seed config)", big, big, big, 128, 128, 32, 3, 128, "float16"),
        (f"GEMM fp8 e4m3 {big}³", big, big, big, 128, 256, 128, 3, 256, "float8_e4m3fn"),
    ]


def fa_cases(quick: bool) -> list[tuple]:
    """(label, batch, heads, seq, dim, causal, bm, bn, stages, threads, fast_math)."""
    seq = 2048 if quick else 4096
    out = []
    for causal in (False, True):
        tag = "causal" if causal else "non-causal"
        out.append((f"FA fwd {tag} (seed config)", 8, 32, seq, 128, causal, 128, 128, 1, 128, False))
        out.append((f"FA fwd {tag} (seed tiles, fast math)", 8, 32, seq, 128, causal, 128, 128, 1, 128, True))
        out.append((f"FA fwd {tag}", 8, 32, seq, 128, causal, 128, 128, 2, 256, False))
        out.append((f"FA fwd {tag} (fast math)", 8, 32, seq, 128, causal, 128, 128, 2, 256, True))
        out.append((f"FA fwd {tag} (fast math)", 8, 32, seq, 128, causal, 128, 64, 2, 256, True))
    return out


# (block_M, block_N, num_stages, threads): one consumer warpgroup per 64 rows at most, shared
# memory (Q + stages x (K + V), fp16, dim 128) within the sm_90 limit
FA_SWEEP = [
    (128, 64, 1, 128), (128, 64, 2, 128), (128, 128, 1, 128), (128, 128, 2, 128),
    (128, 64, 1, 256), (128, 64, 2, 256), (128, 64, 3, 256), (128, 64, 4, 256),
    (128, 128, 1, 256), (128, 128, 2, 256), (128, 128, 3, 256),
    (64, 64, 2, 128), (64, 128, 2, 128),
    (192, 64, 2, 384), (192, 128, 2, 384), (256, 64, 2, 256), (256, 64, 2, 512),
]  # fmt: skip


def fa_sweep_cases(quick: bool, configs: list[tuple]) -> list[tuple]:
    seq = 2048 if quick else 4096
    return [
        (f"FA fwd {'causal' if causal else 'non-causal'}", 8, 32, seq, 128, causal, bm, bn, st, t, False)
        for causal in (False, True)
        for (bm, bn, st, t) in configs
    ]


def build_gemm(case: tuple, cfg: dict):
    import kernels as KZ

    _, M, N, K, bm, bn, bk, s, t, dt = case
    fp8 = dt.startswith("float8")
    func = KZ.gemm.get_tir(M, N, K, bm, bn, bk, dt, "float32", "float16", False, fp8, "Square", s, t)
    return tilelang.compile(func, out_idx=[-1], target=TARGET, pass_configs=cfg)


def build_fa(case: tuple, cfg: dict):
    from flash_attention import mha_fwd

    _, b, h, s, d, causal, bm, bn, st, t, fast_math = case
    func = mha_fwd.flashattn.get_tir(b, h, s, d, causal, block_M=bm, block_N=bn, num_stages=st, threads=t)
    cfg = {**cfg, "tl.enable_fast_math": True} if fast_math else cfg
    return tilelang.compile(func, out_idx=[3], target=TARGET, pass_configs=cfg)


def run_gemm(case: tuple, kern) -> tuple:
    label, M, N, K, bm, bn, bk, s, t, dt = case
    flops = 2.0 * M * N * K
    if dt.startswith("float8"):
        a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device="cuda")
        ref = torch._scaled_mm(a, b.t(), one, one, out_dtype=torch.float16)
        torch_fn, torch_name = (lambda: torch._scaled_mm(a, b.t(), one, one, out_dtype=torch.float16)), "_scaled_mm"
    else:
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16)
        ref = a @ b
        torch_fn, torch_name = (lambda: a @ b), "cuBLAS"
    out = kern(a, b)
    err = (out.float() - ref.float()).abs().max().item() / max(1.0, ref.float().abs().max().item())
    ours, theirs = bench(lambda: kern(a, b)), bench(torch_fn)
    cfg = f"{bm}×{bn}×{bk}, {s} stages, {t} thr"
    return label, cfg, ours, flops, theirs, torch_name, err


def run_fa(case: tuple, kern) -> tuple:
    label, b, h, s, d, causal, bm, bn, st, t, _ = case
    flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.float16) for _ in range(3))
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))

    def sdpa():
        return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

    out = kern(q, k, v)
    ref = sdpa().transpose(1, 2)
    err = (out.float() - ref.float()).abs().max().item()
    ours, theirs = bench(lambda: kern(q, k, v)), bench(sdpa)
    cfg = f"{bm}×{bn}, {st} stage{'s' if st > 1 else ''}, {t} thr"
    return label, cfg, ours, flops, theirs, "SDPA", err


def _or_error(build, case: tuple, cfg: dict):
    try:
        return build(case, cfg)
    except Exception as err:  # noqa: BLE001 - reported in the table
        return err


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument("--only", choices=("gemm", "fp8", "fa"), help="run one group")
    ap.add_argument("--no-wgmma", action="store_true", help="pass tl.disable_wgmma (the mma.sync path)")
    ap.add_argument("--wgmma-only", action="store_true", help="turn TMA lowering and warp specialisation off")
    ap.add_argument("--no-ws", action="store_true", help="turn automatic warp specialisation off")
    ap.add_argument("--fa-sweep", action="store_true", help="FlashAttention: time every config of FA_SWEEP")
    ap.add_argument("--fa-configs", help="FlashAttention: time these configs, e.g. 128x128x1x128,256x128x1x256 "
                    "(block_M x block_N x stages x threads), causal and not")  # fmt: skip
    ap.add_argument("--fast-math", action="store_true", help="pass tl.enable_fast_math (nvcc --use_fast_math)")
    args = ap.parse_args()
    if torch.cuda.get_device_capability() != (9, 0):
        sys.exit("benchmarks/hopper.py needs a Hopper (sm_90) GPU")
    cfg = {"tl.disable_wgmma": True} if args.no_wgmma else {}
    if args.wgmma_only:
        cfg.update({"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True})
    if args.no_ws:
        cfg["tl.disable_warp_specialized"] = True
    if args.fast_math:
        cfg["tl.enable_fast_math"] = True
    gemms = [c for c in gemm_cases(args.quick) if args.only in (None, "fp8" if "fp8" in c[0] else "gemm")]
    if args.fa_configs:
        sweep = [tuple(int(v) for v in c.split("x")) for c in args.fa_configs.split(",")]
        fas = fa_sweep_cases(args.quick, sweep)
    else:
        fas = fa_sweep_cases(args.quick, FA_SWEEP) if args.fa_sweep else fa_cases(args.quick)
    fas = [c for c in fas if args.only in (None, "fa")]
    with ThreadPoolExecutor(16) as ex:  # nvcc is the slow part: build everything at once
        gk = list(ex.map(lambda c: build_gemm(c, cfg), gemms))
        fk = list(ex.map(lambda c: _or_error(build_fa, c, cfg), fas))
    name = torch.cuda.get_device_name()
    path = "mma.sync" if args.no_wgmma else ("wgmma + cp.async" if args.wgmma_only else "default (wgmma)")
    path += ", no warp specialisation" if args.no_ws else ""
    path += ", fast math" if args.fast_math else ""
    print(f"\n{name}, {datetime.date.today()}, torch {torch.__version__}, path: {path}\n")
    print("| workload | config | ours ms | ours TFLOP/s | torch | torch ms | torch TFLOP/s | ours/torch | max err |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|", flush=True)
    runs = [(run_gemm, c, k) for c, k in zip(gemms, gk)] + [(run_fa, c, k) for c, k in zip(fas, fk)]
    for run, case, kern in runs:
        if isinstance(kern, Exception):  # a sweep config that does not build: say why, go on
            print(f"| {case[0]} | {case[6:10]} | failed: {type(kern).__name__}: {str(kern)[:120]} |", flush=True)
            continue
        label, conf, ours, flops, theirs, tname, err = run(case, kern)
        print(f"| {label} | {conf} | {ours:.3f} | {flops / ours / 1e9:.0f} | {tname} | {theirs:.3f} | "
              f"{flops / theirs / 1e9:.0f} | {theirs / ours:.2f} | {err:.1e} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
