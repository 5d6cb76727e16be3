"""CUDA backend benchmark (Ampere mma.sync path): our kernels vs torch, side by side in one run.

    PYTHONPATH=. python benchmarks/cuda_kernels.py [--quick] [--out RESULTS.md]

Rows (the issue's performance table): the seed GEMM (fp16 8192³, 128×128×32,
3 stages, 128 threads) vs cuBLAS; the complete FlashAttention forward kernel
(examples/flash_attention/mha_fwd.py; batch 8, heads 32, seq 4096, dim 128,
block 128×128, 1 stage, 128 threads), non-causal and causal, vs SDPA; the seed
vector add (64M fp32, 12 bytes per element) vs `a + b`; RMSNorm 8192×8192 fp32
(examples/norm/rms_norm.py, one row per block; read + write) vs torch's
composite. Times are CUDA-event medians after warm-up. Then compile and launch
costs: cold compile of the quickstart GEMM (trace → cubin, empty cache, new
process), a disk-cache hit in a new process, and host launch overhead of a
tiny kernel. Needs a GPU.

Host launch overhead is the host time per call of a tiny kernel called back
to back (median of batches; the GPU retires such a kernel faster than the host
issues the next), split into the generated argument checks, the output
allocation and the launch (of which `cuLaunchKernel` itself is ~4.5 us on the
H200). A single call right after a synchronize is slower (idle GPU, colder
caches) and is reported separately.

Every kernel here compiles with `AMPERE_PATH` (`tl.disable_wgmma`,
`tl.disable_tma_lower`, `tl.disable_warp_specialized`) so that the rows keep
measuring the Ampere (mma.sync + cp.async) path on a Hopper card; the Hopper
numbers are benchmarks/hopper.py's.

Compile timings are per fresh process, measured from after the user's own
setup (torch imported, CUDA initialised by creating the GPU inputs — a user
calling a kernel on GPU tensors has paid both) to `compile()` returning, and
to the first result after a synchronize. The cache hit is also broken down
into its steps. Bytecode is compiled by the first process (as for an
installed package), so the hit does not include compiling our .py files.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "cuda"))

import torch  # noqa: E402


def bench(fn, warmup: int = 5, reps: int = 20) -> float:
    """Device milliseconds per call of `fn()`: the median over `reps` CUDA-event-timed
    batches of back-to-back calls, each batch long enough (>= ~2 ms) that the host
    enqueues faster than the GPU runs, so host launch overhead is not counted."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    e.synchronize()
    inner = max(1, min(200, int(2.0 / max(s.elapsed_time(e), 1e-3))))
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(inner):
            fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / inner)
    return statistics.median(times)


# The Hopper-only instructions, each off: wgmma, TMA copies, warp specialization.
AMPERE_PATH = {"tl.disable_wgmma": True, "tl.disable_tma_lower": True, "tl.disable_warp_specialized": True}


def ampere(jitted):
    """The same `@tilelang.jit` kernel with `AMPERE_PATH` added to its pass configs: this
    benchmark measures the mma.sync path (the Hopper path is benchmarks/hopper.py)."""
    import tilelang

    return tilelang.jit(
        jitted.func,
        out_idx=jitted.out_idx,
        target=jitted.target,
        compile_flags=jitted.compile_flags,
        pass_configs={**jitted.pass_configs, **AMPERE_PATH},
    )


def row(rows: list, name: str, unit: str, scale: float, ours_ms: float, torch_ms: float, target: str) -> None:
    """`scale / ms` is the throughput in `unit` (flops / 1e9 for TFLOP/s, bytes / 1e6 for GB/s)."""
    ours, ref = scale / ours_ms, scale / torch_ms
    rows.append(
        (
            name,
            f"{ours_ms:.3f}",
            f"{ours:.0f} {unit}",
            f"{torch_ms:.3f}",
            f"{ref:.0f} {unit}",
            f"{ours / ref:.2f}",
            target,
        )
    )
    print(f"{name:44s} ours {ours_ms:8.3f} ms {ours:8.0f} {unit}   torch {torch_ms:8.3f} ms {ref:8.0f} {unit}   "
          f"ratio {ours / ref:5.2f}   target {target}", flush=True)  # fmt: skip


def gemm(rows: list, quick: bool) -> None:
    from seeds import seed_kernels as S

    n = 4096 if quick else 8192
    a, b = torch.randn(n, n, device="cuda").half(), torch.randn(n, n, device="cuda").half()
    k = ampere(S.matmul).compile(M=n, N=n, K=n, block_M=128, block_N=128, block_K=32)
    c = k(a, b)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=1e-2 * n**0.5, rtol=1e-2)
    flops = 2.0 * n**3
    row(rows, f"GEMM fp16 {n}³ 128×128×32 s3 t128 (seed)", "TFLOP/s", flops / 1e9, bench(lambda: k(a, b)),
        bench(lambda: a @ b), ">= 330 TFLOP/s")  # fmt: skip
    print(f"    registers {k.n_regs}, spills {k.n_spills}", flush=True)


def flash(rows: list, quick: bool) -> None:
    from catalog import _example

    mha = _example("flash_attention/mha_fwd.py")
    flashattn = ampere(mha.flashattn)
    batch, heads, seq, dim = (2, 16, 2048, 128) if quick else (8, 32, 4096, 128)
    q, kk, v = (torch.randn(batch, seq, heads, dim, device="cuda", dtype=torch.float16) for _ in range(3))
    qt, kt, vt = (x.transpose(1, 2).contiguous() for x in (q, kk, v))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    for causal in (False, True):
        k = flashattn(batch, heads, seq, dim, causal, block_M=128, block_N=128, num_stages=1, threads=128)
        o = k(q, kk, v)
        ref = sdpa(qt, kt, vt, is_causal=causal).transpose(1, 2)
        torch.testing.assert_close(o.float(), ref.float(), atol=2e-2, rtol=2e-2)
        flops = 4.0 * batch * heads * seq * seq * dim * (0.5 if causal else 1.0)
        row(rows, f"FlashAttention fwd {batch}×{heads}×{seq}×{dim} {'causal' if causal else 'non-causal'}", "TFLOP/s",
            flops / 1e9, bench(lambda k=k: k(q, kk, v), 3, 10), bench(lambda c=causal: sdpa(qt, kt, vt, is_causal=c), 3, 10),
            ">= 240 TFLOP/s" if not causal else "-")  # fmt: skip
        print(f"    registers {k.n_regs}, spills {k.n_spills}", flush=True)


def vector_add(rows: list, quick: bool) -> None:
    from seeds import seed_kernels as S

    n = 1 << (24 if quick else 26)
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    best = None
    for block in (128, 1024, 2048, 4096):
        k = ampere(S.vector_add).compile(M=n, block_M=block)
        torch.testing.assert_close(k(a, b), a + b, atol=0, rtol=0)
        t = bench(lambda k=k: k(a, b))
        print(f"    vector add block_M={block}: {12.0 * n / t / 1e6:.0f} GB/s", flush=True)
        if best is None or t < best[0]:
            best = (t, block)
    row(rows, f"vector add {n >> 20}M fp32 (seed, block_M={best[1]})", "GB/s", 12.0 * n / 1e6, best[0],
        bench(lambda: a + b), ">= 3800 GB/s")  # fmt: skip


def rms_norm(rows: list, quick: bool) -> None:
    from catalog import _example

    rms = _example("norm/rms_norm.py")
    n = 4096 if quick else 8192
    a = torch.randn(n, n, device="cuda")
    k = ampere(rms.rms_norm)(n, n)

    def ref():
        return a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6)

    torch.testing.assert_close(k(a), ref(), atol=1e-4, rtol=1e-4)
    row(rows, f"RMSNorm {n}×{n} fp32 (one row per block)", "GB/s", 8.0 * n * n / 1e6, bench(lambda: k(a)),
        bench(ref), ">= 3500 GB/s")  # fmt: skip


# One fresh process per measurement. What is timed starts after the user's own setup: torch
# imported, CUDA initialised by creating the GPU inputs (a user calling a kernel on GPU tensors
# has paid both already), and ends when the kernel is ready (`compile` returned) and when its
# first result is on the host side of a synchronize.
COMPILE_ONCE = r"""
import os, sys, time
sys.path.insert(0, os.path.join(sys.argv[1], "examples"))
import torch
import tilelang
import quickstart
AMPERE = eval(sys.argv[2])
matmul = tilelang.jit(quickstart.matmul.func, pass_configs=AMPERE)
a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
b = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
torch.cuda.synchronize()
t0 = time.perf_counter()
k = matmul.compile(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32)
t1 = time.perf_counter()
c = k(a, b)
torch.cuda.synchronize()
t2 = time.perf_counter()
print("SECONDS", t1 - t0, t2 - t0)
"""

# The same disk-cache hit, step by step (the steps `JITKernel.__init__` takes).
HIT_BREAKDOWN = r"""
import os, sys, time
sys.path.insert(0, os.path.join(sys.argv[1], "examples"))
import torch
import tilelang
import quickstart
from tilelang.backend.registry import get_backend
from tilelang.backend.target import parse
from tilelang.cache.kernel_cache import cache_key, entry_dir, read_entry
from tilelang.jit.adapter import Adapter
from tilelang.jit.kernel import compile_options
AMPERE = eval(sys.argv[2])
a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
b = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
torch.cuda.synchronize()
t = [time.perf_counter()]
func = quickstart.matmul.get_tir(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32)
t.append(time.perf_counter())
target = parse(None)
backend = get_backend(target)
options = compile_options(func, AMPERE, None)
key = cache_key(func, target, options, backend.cache_salt(target))
t.append(time.perf_counter())
built = read_entry(entry_dir(key), backend.source_ext)
assert built is not None, "expected a cache hit"
t.append(time.perf_counter())
launch = backend.load(built)
t.append(time.perf_counter())
adapter = Adapter(func, list(func.attrs["out_idx"]), backend.device_kind, launch)
t.append(time.perf_counter())
c = adapter(a, b)
torch.cuda.synchronize()
t.append(time.perf_counter())
print("STEPS", *[t[i + 1] - t[i] for i in range(len(t) - 1)])
"""
HIT_STEPS = (
    "trace (frontend, both phases)",
    "target + backend + cache key",
    "read + verify the cache entry",
    "load the cubin (cuModuleLoadData) + launcher",
    "launch adapter (checks compiled)",
    "first call + synchronize",
)


def _fresh_process(script: str, env: dict, marker: str) -> list[float] | None:
    args = [sys.executable, "-c", script, ROOT, repr(AMPERE_PATH)]
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        print(out.stderr[-3000:], flush=True)
        return None
    return [float(x) for x in out.stdout.split(marker)[-1].split()]


def compile_and_launch(rows_extra: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # An installed package has its bytecode compiled: let the first process write it.
        env = dict(os.environ, PYTHONPATH=ROOT, TILELANG_CACHE_DIR=os.path.join(tmp, "kernels"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pyc")
        cold = _fresh_process(COMPILE_ONCE, env, "SECONDS")
        hits = [_fresh_process(COMPILE_ONCE, env, "SECONDS") for _ in range(3)]
        steps = _fresh_process(HIT_BREAKDOWN, env, "STEPS")
    if cold is None or None in hits or steps is None:
        return
    hit = min(hits, key=lambda h: h[0])
    print(f"quickstart GEMM compile(): cold {cold[0]:.2f} s; disk-cache hit in a new process {hit[0] * 1e3:.1f} ms "
          f"(best of 3: {', '.join(f'{h[0] * 1e3:.1f}' for h in hits)}), {hit[1] * 1e3:.1f} ms to the first result "
          "(torch imported and CUDA initialised before timing)", flush=True)  # fmt: skip
    print("  cache-hit breakdown: " + "; ".join(f"{n} {x * 1e3:.1f} ms" for n, x in zip(HIT_STEPS, steps)), flush=True)
    rows_extra.append(
        ("cold compile of the quickstart GEMM (trace → cubin, empty cache)", f"{cold[0]:.2f} s", "<= 1.5 s")
    )
    rows_extra.append(("compile() on a disk-cache hit, new process", f"{hit[0] * 1e3:.1f} ms", "<= 50 ms"))
    rows_extra.append(("… to the first result (compile + call + synchronize)", f"{hit[1] * 1e3:.1f} ms", "-"))
    for name, x in zip(HIT_STEPS, steps):
        rows_extra.append((f"… {name}", f"{x * 1e3:.1f} ms", "-"))
    launch_overhead(rows_extra)


def _back_to_back_us(fn, n: int = 5000) -> float:
    """Host microseconds per call, median of 5 batches of `n` back-to-back calls (warm
    caches; the GPU retires a tiny kernel faster than the host issues the next, so this is
    the host's time, not the GPU's)."""
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n * 1e6)
        torch.cuda.synchronize()
    return statistics.median(times)


def _after_idle_us(fn, n: int = 2000) -> float:
    """Microseconds the calling thread spends in one `fn()` right after a synchronize (an idle
    GPU, colder CPU caches and driver state), median of `n` calls."""
    clock, sync, times = time.perf_counter, torch.cuda.synchronize, []
    for _ in range(n):
        sync()
        t0 = clock()
        fn()
        times.append(clock() - t0)
    sync()
    return statistics.median(times) * 1e6


def launch_overhead(rows_extra: list) -> None:
    from seeds import seed_kernels as S

    a, b = torch.randn(128, device="cuda"), torch.randn(128, device="cuda")
    k = ampere(S.vector_add).compile(M=128)
    out = torch.empty(128, device="cuda")
    launch, values = k.adapter.launch, [a, b, out]
    # the generated checks alone: the same entry with the allocation and the launch stubbed out
    entry = k.adapter.call
    ns = dict(entry.__globals__, launch=lambda v, d: None, out_stub=out)
    exec(re.sub(r"= \S*empty\(.*\)$", "= out_stub", entry.source, flags=re.M), ns)  # noqa: S102
    checks_only = ns["entry"]
    from tilelang.backend.cuda import native_launch

    launcher = "C launcher" if native_launch.extension() else f"ctypes ({native_launch.unavailable_reason()})"
    parts = {
        "call": _back_to_back_us(lambda: k(a, b)),
        "checks": _back_to_back_us(lambda: checks_only(a, b)),
        "alloc": _back_to_back_us(lambda: a.new_empty(128)),
        "launch": _back_to_back_us(lambda: launch(values, [])),
        "after_idle": _after_idle_us(lambda: k(a, b)),
        "torch": _back_to_back_us(lambda: torch.add(a, b)),
    }
    print(f"host launch overhead (tiny kernel, {launcher}): {parts['call']:.1f} us per call through JITKernel = "
          f"checks {parts['checks']:.1f} + output allocation {parts['alloc']:.1f} + parameter packing and "
          f"cuLaunchKernel {parts['launch']:.1f} us (+ call frames); one call right after a synchronize: "
          f"{parts['after_idle']:.1f} us; torch.add(a, b) on the same tensors: {parts['torch']:.1f} us",
          flush=True)  # fmt: skip
    rows_extra.append(("host overhead per call, tiny kernel, JITKernel(...)", f"{parts['call']:.1f} us", "<= 10 us"))
    rows_extra.append(("… generated argument checks", f"{parts['checks']:.1f} us", "-"))
    rows_extra.append(("… output allocation (`new_empty`)", f"{parts['alloc']:.1f} us", "-"))
    rows_extra.append((f"… parameter packing + cuLaunchKernel ({launcher})", f"{parts['launch']:.1f} us", "-"))
    rows_extra.append(("one call right after a synchronize (idle GPU)", f"{parts['after_idle']:.1f} us", "-"))
    rows_extra.append(("torch's own tiny op, `torch.add(a, b)`, for scale", f"{parts['torch']:.1f} us", "-"))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=None, help="write a markdown table here")
    p.add_argument("--only", default="gemm,flash,vector_add,rms_norm,compile")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA GPU: nothing to benchmark")
        return
    dev = torch.cuda.get_device_name(0)
    print(f"device: {dev}; torch {torch.__version__}", flush=True)
    rows: list = []
    extra: list = []
    only = set(args.only.split(","))
    for name, fn in (("gemm", gemm), ("flash", flash), ("vector_add", vector_add), ("rms_norm", rms_norm)):
        if name in only:
            try:
                fn(rows, args.quick)
            except Exception as err:  # noqa: BLE001 - keep benchmarking the rest
                print(f"{name}: FAILED: {type(err).__name__}: {err}", flush=True)
    if "compile" in only:
        compile_and_launch(extra)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"## CUDA backend (mma.sync path) — {dev}, {datetime.date.today().isoformat()}\n\n")
            f.write(
                "| kernel | ours ms | ours | torch ms | torch | ours/torch | target |\n|---|---|---|---|---|---|---|\n"
            )
            for r in rows:
                f.write("| " + " | ".join(r) + " |\n")
            if extra:
                f.write("\n| measurement | value | target |\n|---|---|---|\n")
                for r in extra:
                    f.write("| " + " | ".join(r) + " |\n")


if __name__ == "__main__":
    main()
