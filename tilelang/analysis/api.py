"""The analysis entry points (see package docstring)."""

from __future__ import annotations

import ast
import linecache
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..backend.block_limits import LaunchLimitError, kib
from ..backend.target import nvcc_path
from ..errors import TileLangError
from ..ir.buffer import Buffer
from ..ir.decisions import decisions_of
from ..ir.expr import Var, const_int
from ..ir.function import PrimFunc
from ..ir.stmt import Allocate, Gemm
from ..ir.visitor import collect
from . import resources as R
from .compiled import AnalysisCancelled, Compiled, pipeline_for_analysis, run_pipeline_for_analysis, target_of_spec
from .compiled import build_source as make_build_source
from .layouts import buffer_layouts, op_decisions
from .measured import apply_measured, cached_measurement, measured_stats
from .model import BenchResult, BufferInfo, Diagnostic, GeneratedSource, KernelInfo, Loc, Resources
from .source import (
    decorator_info,
    decorator_pass_configs,
    define_function,
    find_top_function,
    register_text,
    static_namespace,
)


def _first_line(loc: Loc, lines: list[str]) -> Loc:
    """Clip a range to its first line: editors should not underline a whole function body."""
    if loc.end_line == loc.line:
        return loc
    text = lines[loc.line - 1] if 0 < loc.line <= len(lines) else ""
    return Loc(loc.line, loc.col, loc.line, max(loc.col + 1, len(text.rstrip())))


def _error_loc(err: BaseException, path: str, default: Loc) -> Loc:
    if isinstance(err, TileLangError) and err.span.line:
        return Loc.of(err.span)
    tb = traceback.extract_tb(err.__traceback__)
    for fr in reversed(tb):
        if fr.filename == path and fr.lineno:
            return Loc(fr.lineno, fr.colno or 0, fr.end_lineno or fr.lineno, fr.end_colno or (fr.colno or 0) + 1)
    return default


def trace_function(source: str, path: str, function: str, bindings: dict | None = None) -> tuple[PrimFunc, list[str]]:
    """Trace one top-level kernel of `source` into a PrimFunc; unresolved
    compile-time parameters stay symbolic. Raises SyntaxError / TileLangError / user errors."""
    from ..jit.jit import JITImpl

    bindings = dict(bindings or {})
    register_text(path, source)
    tree = ast.parse(source, path)
    node = find_top_function(tree, function)
    if node is None:
        raise ValueError(f"no top-level function named {function!r}")
    ns = static_namespace(tree, path)
    fn = define_function(node, path, ns)
    impl = JITImpl(fn, out_idx=decorator_info(node).get("out_idx"))
    unresolved: list[str] = []
    kwargs: dict[str, Any] = {}
    for name, p in impl.signature.parameters.items():
        if name in bindings:
            kwargs[name] = bindings[name]
        elif p.default is not p.empty:
            kwargs[name] = p.default
        elif impl.mode == "lazy" or name not in impl._tensor_names:
            kwargs[name] = Var(name)  # shown symbolically, never guessed
            unresolved.append(name)
    if impl.mode == "lazy":
        func = impl.func(**kwargs)
        if not isinstance(func, PrimFunc):
            raise TileLangError(f"`{function}` did not return a @T.prim_func", None)
        return func, unresolved
    extra = {k: v for k, v in bindings.items() if k not in impl.signature.parameters}
    tensors, consts, _ = impl._split_args((), {k: v for k, v in kwargs.items() if k not in impl._tensor_names}, False)
    template, const_vars = impl._template(consts)
    known = {v: int(extra[v.name]) for v in const_vars if v.name in extra and isinstance(extra[v.name], int)}
    unresolved += [v.name for v in const_vars if v not in known]
    return (impl._substituted(template, list(known), list(known.values())) if known else template), unresolved


def _shape_text(buf: Buffer) -> list[str]:
    return [str(d) for d in buf.shape]


def analyze_function(
    source: str,
    path: str,
    function: str,
    target: str = "sm_90a",
    bindings: dict | None = None,
    build_source: bool = False,
    should_stop: Callable[[], bool] | None = None,
) -> KernelInfo:
    """What the compiler does with kernel `function` of `source` for `target` (see the package
    docstring); `build_source`: also the generated CUDA source, for a background ptxas run
    (`KernelInfo.build`; skipped when the cache already holds ptxas's figures). `should_stop`:
    polled after the trace and after every pass; when it returns True the analysis stops with
    `AnalysisCancelled` (the editor has a newer version of the kernel)."""
    register_text(path, source)
    tree = ast.parse(source, path)  # SyntaxError propagates: the caller reports it once
    node = find_top_function(tree, function)
    if node is None:
        raise ValueError(f"no top-level function named {function!r}")
    lines = source.splitlines()
    def_loc = _first_line(
        Loc(node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0), lines
    )
    info = KernelInfo(function, def_loc, None, dict(bindings or {}), [])
    try:
        func, unresolved = trace_function(source, path, function, bindings)
    except SyntaxError:
        raise
    except TileLangError as err:
        info.diagnostics.append(Diagnostic("error", _message(err), _error_loc(err, path, def_loc), "dsl-error"))
        return info
    except NameError as err:
        info.diagnostics.append(
            Diagnostic(
                "error",
                f"unresolved name: {err} (module-level code is not executed by the analyzer)",
                _error_loc(err, path, def_loc),
                "unresolved",
            )
        )
        return info
    except Exception as err:  # user code raised while tracing
        info.diagnostics.append(
            Diagnostic("error", f"{type(err).__name__}: {err}", _error_loc(err, path, def_loc), "dsl-error")
        )
        return info
    if should_stop is not None and should_stop():
        raise AnalysisCancelled("trace")
    info.unresolved = unresolved
    if unresolved:
        info.diagnostics.append(
            Diagnostic(
                "info",
                f"no value for {', '.join(unresolved)}: shown symbolically — add a call site like "
                f"{function}.compile({unresolved[0]}=...) or a `# tilelang: {unresolved[0]}=...` comment",
                def_loc,
                "unresolved",
            )
        )
    try:
        pass_configs = decorator_pass_configs(node, static_namespace(tree))
        request = _Request(target, lines, pass_configs, should_stop)
        _describe_kernels(func, info, request, build_source)
    except TileLangError as err:  # several T.Kernel blocks that cannot be launched as written
        info.diagnostics.append(Diagnostic("error", _message(err), _error_loc(err, path, def_loc), "dsl-error"))
    return info


@dataclass(frozen=True)
class _Request:
    """What every kernel of one analysed function is described with."""

    target: str
    lines: list[str]
    pass_configs: dict
    should_stop: Callable[[], bool] | None = None


def _describe_kernels(func: PrimFunc, info: KernelInfo, request: _Request, build_source: bool) -> None:
    """The report of `func`, per `T.Kernel` block when it has several (transform/split_kernels.py):
    each kernel runs the target's pipeline and is read back (`describe_compiled`)."""
    from ..transform.split_kernels import split_kernels
    from ..transform.view_alias import is_view

    split = split_kernels(func)
    if split is None:
        _describe_one(func, info, request, build_source)
        return
    for alloc in collect(
        func.body, lambda n: isinstance(n, Allocate) and n.buffer.scope == "global" and not is_view(n)
    ):
        buf = alloc.buffer
        shape = [const_int(d) for d in buf.shape]
        info.buffers.append(
            BufferInfo(
                buf.name,
                buf.scope,
                str(buf.dtype),
                shape,
                _shape_text(buf),
                R.buffer_bytes(buf),
                1,
                "scratch, allocated per call",
                "",
                None,
                Loc.of(alloc.span),
            )  # fmt: skip
        )
    for k in split.kernels:
        sub = KernelInfo(info.function, info.loc, None, info.bindings, info.unresolved)
        _describe_one(k, sub, request, False)
        info.kernels.append(sub)
        info.buffers += sub.buffers
        info.ops += sub.ops
        info.diagnostics += sub.diagnostics
    info.kernel_loc, info.resources = info.kernels[0].kernel_loc, info.kernels[0].resources


def _describe_one(func: PrimFunc, info: KernelInfo, request: _Request, build_source: bool) -> None:
    func, compiled, derived = pipeline_for_analysis(func, request.target, request.pass_configs, request.should_stop)
    describe_compiled(func, request.target, info, request.lines, compiled)
    if build_source and info.resources is not None and not info.resources.measured and nvcc_path() is not None:
        if "build" not in derived:
            try:
                derived["build"] = make_build_source(compiled)
            except Exception:  # noqa: BLE001 - a late pass's error: the build reports it; no measurement
                derived["build"] = None
        info.build = derived["build"]


def _message(err: TileLangError) -> str:
    return err.message + (f" — {err.hint}" if err.hint else "")


_WARM_KERNEL = """
import tilelang
import tilelang.language as T

@tilelang.jit(out_idx=[-1])
def warm(M, N, K):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            row = T.alloc_fragment((64,), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=2):
                T.copy(A[by * 64, k * 32], A_s)
                T.copy(B[k * 32, bx * 64], B_s)
                T.gemm(A_s, B_s, acc)
            T.reduce_max(acc, row, dim=1)
            T.copy(acc, C[by * 64, bx * 64])
    return main
"""


def warm_up(target: str = "sm_90a") -> None:
    """Import the target pipeline's modules and fill their first-run caches on a small kernel, so
    that the first real request of a fresh analysis process costs what later ones do."""
    try:
        analyze_function(_WARM_KERNEL, "<tilelang-warm-up>", "warm", target, {"M": 256, "N": 256, "K": 256})
    except Exception:  # noqa: BLE001 - warming is best effort
        pass


def analyze_traced(
    func: PrimFunc, target: Any = "sm_90a", pass_configs: dict | None = None, measured: bool = True
) -> KernelInfo:
    """The report for an already traced PrimFunc (what `analyze_function` shows for a source
    text), for tools and tests: the target's pipeline with `pass_configs`, read back
    (`measured=False`: the estimate even where the kernel cache holds ptxas's figures)."""
    loc = Loc.of(func.span) if func.span.line else Loc(1, 0, 1, 1)
    info = KernelInfo(func.name, loc, None, {}, [])
    lines = linecache.getlines(func.span.file) if func.span.file else []
    compiled = run_pipeline_for_analysis(func, target, pass_configs)
    describe_compiled(func, target if isinstance(target, str) else str(target), info, lines, compiled, measured)
    return info


def describe_compiled(
    func: PrimFunc, target: str, info: KernelInfo, lines: list[str], compiled: Compiled, measured: bool = True
) -> None:
    """Fill `info` (buffers, ops, resources, diagnostics) from the traced `func` and what the
    target's pipeline did to it (`compiled`): every figure is read from a pass's output."""
    is_c = compiled.target.kind == "c"
    limits = compiled.target.limits
    kernel = R.kernel_of(func)
    if kernel is not None:
        info.kernel_loc = _first_line(Loc.of(kernel.span), lines)
    planned = compiled.after("plan_shared_memory")
    lowered = compiled.after("lower_threads")
    # the block the launch asks for: warp_specialize adds a producer warpgroup to the user's threads
    final = R.kernel_of(planned or compiled.after("warp_specialize") or func)
    threads = final.num_threads if final is not None else None
    stages = dict((compiled.after("inject_pipeline") or func).attrs.get("pipeline_stages", {}) or {})
    layouts = buffer_layouts(compiled) if not is_c else {}
    arrays = R.register_arrays(planned or lowered) if (planned or lowered) is not None and not is_c else None
    regs_of = dict(arrays or [])
    for alloc in collect(func.body, lambda n: isinstance(n, Allocate)):
        buf = alloc.buffer
        lay = layouts.get(buf)
        regs = regs_of.get(buf.name) if buf.is_local else None
        summary = lay.summary if lay else ""
        if regs is not None and buf.is_fragment:
            summary = f"{summary} · {regs} regs/thread" if summary else f"{regs} regs/thread"
        info.buffers.append(
            BufferInfo(
                buf.name,
                buf.scope,
                str(buf.dtype),
                [const_int(d) for d in buf.shape],
                _shape_text(buf),
                R.buffer_bytes(buf),
                int(stages.get(buf.name, 1)) if buf.is_shared else 1,
                summary,
                lay.detail if lay else "",
                regs,
                Loc.of(alloc.span),
            )
        )
    info.ops = op_decisions(func, "c" if is_c else target, compiled)
    plan = decisions_of(planned).shared if planned is not None else None
    breakdown = [(_shared_label(b), b.bytes) for b in plan.buffers if b.bytes] if plan is not None else []
    smem = plan.total_bytes if plan is not None else (0 if is_c else None)
    res = Resources(target, threads, smem, limits.smem_per_block, breakdown, None, None, None, None, "")
    res.dynamic_shared_bytes = smem
    if arrays is not None:
        res.register_arrays = list(arrays)
        cfg = compiled.pass_configs
        fast_math = bool(cfg.get("tl.enable_fast_math")) and not cfg.get("tl.disable_fast_math")  # backend._fast_math
        res.regs_per_thread = R.estimate_registers(planned or lowered, fast_math, compiled.target.arch)
    if res.regs_per_thread is not None:
        if threads is not None:
            res.regs_per_block = res.regs_per_thread * threads
    if not is_c and threads and smem is not None and res.regs_per_thread is not None:
        occ = R.occupancy(compiled.target.arch, threads, smem, min(res.regs_per_thread, R.REG_MAX))
        if occ is not None:
            res.occupancy, res.blocks_per_sm, res.limiting = occ
    if measured and compiled.complete and not is_c:  # a build of this very kernel replaces the estimate
        stats = cached_measurement(func, compiled.target, compiled.pass_configs)
        if stats is not None:
            apply_measured(res, stats)
    info.resources = res
    top = max(((n, w) for n, w in arrays or [] if w > 0), key=lambda x: x[1], default=("", 0))
    _resource_diagnostics(target, info, limits, top, is_c)
    _pipeline_diagnostic(compiled, info, lines)


def _shared_label(b: Any) -> str:
    return b.name + (f" (shares bytes with {', '.join(b.shares_with)})" if b.shares_with else "")


def _pipeline_diagnostic(compiled: Compiled, info: KernelInfo, lines: list[str]) -> None:
    """The compiler's own error, when a pass stopped the pipeline: at its span, as the build
    would raise it (a note when it may come from a value the analysis assumed)."""
    err = compiled.error
    if err is None:
        return
    if (
        isinstance(err, LaunchLimitError)
        and info.diagnostics
        and any(d.code in ("smem-overflow", "threads") for d in info.diagnostics)
    ):
        return  # already said, with the breakdown
    loc = _error_loc(err, "", info.kernel_loc or info.loc)
    message = _message(err) if isinstance(err, TileLangError) else f"{type(err).__name__}: {err}"
    code = "threads" if isinstance(err, LaunchLimitError) else "dsl-error"
    if info.unresolved:
        info.diagnostics.append(Diagnostic("info", f"{message} (with symbolic {', '.join(info.unresolved)})", loc,
                                           "unresolved"))  # fmt: skip
    else:
        info.diagnostics.append(Diagnostic("error", message, loc, code))


def _resource_diagnostics(target: str, info: KernelInfo, limits: Any, reg_top: tuple, is_c: bool) -> None:
    res = info.resources
    kloc = info.kernel_loc or info.loc
    if is_c or res is None:
        return
    if res.shared_bytes is not None and res.shared_bytes > limits.smem_per_block:
        parts = ", ".join(f"{n} {kib(b)}" for n, b in res.shared_breakdown)
        # Metal's name for it: threadgroup memory, per threadgroup (what check_limits.py says too)
        what = "threadgroup memory" if limits.name == "metal" else "shared memory"
        per = "threadgroup" if limits.name == "metal" else "block"
        info.diagnostics.append(
            Diagnostic(
                "error",
                f"{what} {kib(res.shared_bytes)} per {per} exceeds the {target} limit of {kib(limits.smem_per_block)} ({parts}) "
                "— use smaller tiles or fewer pipeline stages",
                kloc,
                "smem-overflow",
            )
        )
    if res.measured and res.spill_stores:
        info.diagnostics.append(
            Diagnostic(
                "warning",
                f"register spills: {res.spill_stores} bytes stored, {res.spill_loads} bytes loaded per thread "
                f"({res.regs_per_thread} registers — measured, {res.source}); correct, slower — use a smaller "
                "tile or more threads",
                kloc,
                "reg-pressure",
            )
        )
    elif res.regs_per_thread is not None and res.threads and not res.measured:
        per_block = res.regs_per_thread * res.threads
        declared = R.REG_FLOOR + sum(n for _, n in res.register_arrays)  # the arrays alone, with the floor
        if max(res.regs_per_thread, declared) > R.REG_MAX or per_block > limits.regs_per_sm:
            name, regs = reg_top
            what = (
                f"~{res.regs_per_thread} registers/thread (estimate; `{name}` alone needs {regs})"
                if name
                else f"~{res.regs_per_thread} registers/thread"
            )
            # a warning, never an error: ptxas spills what does not fit to local memory, so the
            # kernel builds and runs correctly — only slower
            info.diagnostics.append(
                Diagnostic(
                    "warning",
                    f"register pressure: {what}, {per_block} per block (limits: 255/thread, {limits.regs_per_sm}/block); "
                    "the excess spills to local memory (correct, slower) — use a smaller tile or more threads",
                    kloc,
                    "reg-pressure",
                )
            )


def generate_source(
    source: str, path: str, function: str, target: str = "sm_90a", bindings: dict | None = None
) -> GeneratedSource:
    from ..lower import lower

    func, unresolved = trace_function(source, path, function, bindings)
    if unresolved:
        raise TileLangError(
            f"cannot compile `{function}`: no value for {', '.join(unresolved)}",
            None,
            "add a call site or a `# tilelang:` comment",
        )
    art = lower(func, target=target_of_spec(target), pass_configs=kernel_pass_configs(source, path, function))
    lang = {"cuda": "cuda", "hip": "hip", "metal": "metal", "c": "c"}[art.target.kind]
    ext = {"cuda": "cu", "hip": "hip", "metal": "metal", "c": "c"}[lang]
    ptxas = measured_stats(art.meta)
    return GeneratedSource(function, lang, ext, art.kernel_source, ptxas)


def lowering_trace(
    source: str, path: str, function: str, target: str = "sm_90a", bindings: dict | None = None
) -> GeneratedSource:
    """The lowering trace page of the target's pipeline (tools.lower_trace): the kernel source
    beside the IR after every pass, with diffs, times and the generated source."""
    import importlib
    import time

    from ..tools.lower_trace import Stage, render_html

    func, unresolved = trace_function(source, path, function, bindings)
    if unresolved:
        raise TileLangError(
            f"cannot lower `{function}`: no value for {', '.join(unresolved)}",
            None,
            "add a call site or a `# tilelang:` comment",
        )
    from ..jit.kernel import compile_options
    from ..transform.context import CompileContext

    tgt = target_of_spec(target)
    pipeline = importlib.import_module(f"tilelang.backend.{tgt.kind}.pipeline")
    from ..backend.launch_plan import plan_kernels

    codegen = importlib.import_module(f"tilelang.backend.{tgt.kind}.codegen")
    options = compile_options(func, kernel_pass_configs(source, path, function), None)
    stages: list = []
    clock = [time.perf_counter()]

    def record(name: str, f: PrimFunc) -> None:
        from ..ir.printer import func_lines

        now = time.perf_counter()
        text, lines = func_lines(f)
        stages.append(Stage(name, (now - clock[0]) * 1e3, text, tuple(lines)))
        clock[0] = time.perf_counter()

    record("input (traced)", func)
    kernels = plan_kernels(func)  # several T.Kernel blocks: each runs the whole pipeline
    generated = []
    for i, k in enumerate(kernels):
        tag = f"kernel {i}: " if len(kernels) > 1 else ""
        ctx = CompileContext(tgt, options["pass_configs"], {}, lambda n, f, tag=tag: record(tag + n, f))
        clock[0] = time.perf_counter()
        generated.append(codegen.generate(pipeline.lower(k, ctx)).source)
    page = render_html(function, stages, path, "\n".join(generated))
    return GeneratedSource(function, "html", "trace.html", page)


def _target_spec(target: str) -> Any:
    return target_of_spec(target)


def kernel_pass_configs(source: str, path: str, function: str) -> dict:
    """The pass configs written in kernel `function`'s decorator (what its build uses)."""
    tree = ast.parse(source, path)
    node = find_top_function(tree, function)
    return decorator_pass_configs(node, static_namespace(tree)) if node is not None else {}


def benchmark(
    source: str, path: str, function: str, target: str = "sm_90a", bindings: dict | None = None
) -> BenchResult:
    import torch

    from ..jit.kernel import JITKernel
    from ..profiler import do_bench

    func, unresolved = trace_function(source, path, function, bindings)
    if unresolved:
        raise TileLangError(f"cannot benchmark `{function}`: no value for {', '.join(unresolved)}", None)
    on_gpu = torch.cuda.is_available()
    configs = kernel_pass_configs(source, path, function)
    kernel = JITKernel(func, target=_target_spec(target) if on_gpu else "c", pass_configs=configs)
    inputs = [_random_input(p) for p in kernel.params if not p.is_output]
    ms = do_bench(lambda: kernel(*inputs), warmup=25 if on_gpu else 5, rep=100 if on_gpu else 50)
    flops, nbytes = _work(func)
    device = torch.cuda.get_device_name() if on_gpu else "CPU (c backend; no GPU on this machine)"
    return BenchResult(
        function,
        device,
        ms,
        flops / ms / 1e9 if flops else None,
        None if flops else nbytes / ms / 1e6,
        "" if on_gpu else "timed on the CPU backend",
    )


def _random_input(p: Any) -> Any:
    import torch

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    shape = [d if isinstance(d, int) else 256 for d in p.shape]
    dt = p.dtype.as_torch()
    if p.dtype.is_float and not p.dtype.is_float8:
        return torch.randn(shape, device=dev).to(dt)
    return torch.randint(0, 3, shape, device=dev).to(dt)


def _work(func: PrimFunc) -> tuple[float, float]:
    """(FLOPs of all gemms per launch, bytes of all global params)."""
    kernel = R.kernel_of(func)
    blocks = 1
    for g in kernel.grid if kernel else ():
        v = const_int(g)
        blocks *= v if v else 1
    flops = 0.0
    for g in collect(func.body, lambda n: isinstance(n, Gemm)):
        m, k = [const_int(e) or 1 for e in g.A.extents][-2:]
        if g.transpose_A:
            m, k = k, m
        n = [const_int(e) or 1 for e in g.B.extents][-2 if g.transpose_B else -1]
        flops += 2.0 * m * n * k
    nbytes = sum((R.buffer_bytes(p) or 0) for p in func.buffer_params)
    return flops * blocks * _gemm_trip_count(func), float(nbytes)


def _gemm_trip_count(func: PrimFunc) -> int:
    from ..ir.stmt import For

    trips = 1
    for f in collect(
        func.body,
        lambda n: (
            isinstance(n, For) and n.kind in ("pipelined", "serial") and collect(n.body, lambda m: isinstance(m, Gemm))
        ),
    ):
        v = const_int(f.extent)
        trips *= v if v else 1
    return trips
