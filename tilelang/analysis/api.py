"""The analysis entry points (see package docstring)."""

from __future__ import annotations

import ast
import traceback
from typing import Any

from ..errors import TileLangError
from ..ir.buffer import Buffer
from ..ir.expr import Var, const_int
from ..ir.function import PrimFunc
from ..ir.stmt import Allocate, Gemm
from ..ir.visitor import collect
from . import resources as R
from .layouts import buffer_layouts, op_decisions, row_split_kernel
from .model import BenchResult, BufferInfo, Diagnostic, GeneratedSource, KernelInfo, Loc, Resources
from .source import decorator_info, define_function, find_top_function, register_text, static_namespace


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
    source: str, path: str, function: str, target: str = "sm_90a", bindings: dict | None = None
) -> KernelInfo:
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
        _describe_kernels(func, target, info, lines)
    except TileLangError as err:  # several T.Kernel blocks that cannot be launched as written
        info.diagnostics.append(Diagnostic("error", _message(err), _error_loc(err, path, def_loc), "dsl-error"))
    return info


def _describe_kernels(func: PrimFunc, target: str, info: KernelInfo, lines: list[str]) -> None:
    """`_describe` per `T.Kernel` block of a function with several (transform/split_kernels.py)."""
    from ..transform.split_kernels import split_kernels

    split = split_kernels(func)
    if split is None:
        _describe(func, target, info, lines)
        return
    for alloc in collect(func.body, lambda n: isinstance(n, Allocate) and n.buffer.scope == "global"):
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
        _describe(k, target, sub, lines)
        info.kernels.append(sub)
        info.buffers += sub.buffers
        info.ops += sub.ops
        info.diagnostics += sub.diagnostics
    info.kernel_loc, info.resources = info.kernels[0].kernel_loc, info.kernels[0].resources


def _message(err: TileLangError) -> str:
    return err.message + (f" — {err.hint}" if err.hint else "")


def _describe(func: PrimFunc, target: str, info: KernelInfo, lines: list[str]) -> None:
    limits = R.arch_limits(target)
    kernel = R.kernel_of(func)
    threads = kernel.num_threads if kernel else None
    if kernel is not None:
        info.kernel_loc = _first_line(Loc.of(kernel.span), lines)
    stages = R.pipeline_stages(func)
    layouts = buffer_layouts(func, target)
    smem_total, smem_known, breakdown = 0, True, []
    reg_known, local_regs = True, []  # (name, registers per thread) of each register tile
    for alloc in collect(func.body, lambda n: isinstance(n, Allocate)):
        buf = alloc.buffer
        nbytes = R.buffer_bytes(buf)
        st = stages.get(buf, 1)
        lay = layouts.get(buf)
        regs = R.fragment_regs_per_thread(buf, threads or 1) if buf.is_local else None
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
                nbytes,
                st,
                summary,
                lay.detail if lay else "",
                regs,
                Loc.of(alloc.span),
            )
        )
        if alloc.annotations.get("view_of") is not None:
            continue  # a view (T.view / T.reshape / T.Tensor(..., buf.data)): its base's bytes
        if buf.is_shared and buf.scope != "shared.barrier":
            if nbytes is None:
                smem_known = False
            else:
                smem_total += nbytes * st
                breakdown.append((buf.name, nbytes * st))
        elif buf.is_local:
            if regs is None:
                reg_known = False
            else:
                local_regs.append((buf.name, regs))
    halves = row_split_kernel(func, target)
    if halves is not None and reg_known:  # the compiler runs the rows in halves: count its tiles
        local = collect(halves.body, lambda n: isinstance(n, Allocate) and n.buffer.is_local)
        local_regs = [(a.buffer.name, R.fragment_regs_per_thread(a.buffer, threads or 1) or 0) for a in local]
    reg_total = R.REG_OVERHEAD + sum(regs for _, regs in local_regs)
    reg_top = max((x for x in local_regs if x[1] > 0), key=lambda x: x[1], default=("", 0))  # first of the largest
    info.ops = op_decisions(func, target, stages)
    res = Resources(
        target,
        threads,
        smem_total if smem_known else None,
        limits.smem_per_block,
        breakdown,
        reg_total if reg_known else None,
        None,
        None,
        None,
        "",
    )
    if threads is not None and reg_known:
        res.regs_per_block = reg_total * threads
    if target != "c" and threads and smem_known and reg_known:
        occ, blocks, limiting = R.occupancy(limits, threads, smem_total, min(reg_total, 255))
        res.occupancy, res.blocks_per_sm, res.limiting = occ, blocks, limiting
    info.resources = res
    _resource_diagnostics(func, target, info, limits, reg_top)


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n % 1024 else f"{n // 1024} KiB"


def _resource_diagnostics(func: PrimFunc, target: str, info: KernelInfo, limits: R.ArchLimits, reg_top: tuple) -> None:
    res = info.resources
    kloc = info.kernel_loc or info.loc
    if target == "c" or res is None:
        return
    if res.shared_bytes is not None and res.shared_bytes > limits.smem_per_block:
        parts = ", ".join(f"{n} {_kib(b)}" for n, b in res.shared_breakdown)
        info.diagnostics.append(
            Diagnostic(
                "error",
                f"shared memory {_kib(res.shared_bytes)} per block exceeds the {target} limit of {_kib(limits.smem_per_block)} ({parts}) "
                "— use smaller tiles or fewer pipeline stages",
                kloc,
                "smem-overflow",
            )
        )
    most = limits.max_threads_per_block  # the number the compiler's check_launch_limits enforces
    if res.threads is not None and (res.threads % 32 or res.threads > most):
        info.diagnostics.append(
            Diagnostic(
                "error",
                f"threads={res.threads}: a block needs a multiple of 32 threads, at most {most}",
                kloc,
                "threads",
            )
        )
    if res.regs_per_thread is not None and res.threads:
        per_block = res.regs_per_thread * res.threads
        if res.regs_per_thread > 255 or per_block > limits.regs_per_sm:
            name, regs = reg_top
            what = (
                f"{res.regs_per_thread} registers/thread (estimate; `{name}` needs {regs})"
                if name
                else f"{res.regs_per_thread} registers/thread"
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
    for g in collect(func.body, lambda n: isinstance(n, Gemm)):
        _check_gemm_shape(g, info)


def _check_gemm_shape(g: Gemm, info: KernelInfo) -> None:
    def dims(r: Any) -> list:
        ext = [const_int(e) for e in r.extents]
        return [e for e in ext if e != 1][-2:] if len(ext) > 2 else ext

    a, b = dims(g.A), dims(g.B)
    if len(a) != 2 or len(b) != 2 or None in a or None in b:
        return
    m, k = (a[1], a[0]) if g.transpose_A else (a[0], a[1])
    n = b[0] if g.transpose_B else b[1]
    kstep = {4: 64, 8: 32, 32: 8}.get(g.A.buffer.dtype.bits, 16)
    bad = [f"{nm}={v} is not a multiple of {q}" for nm, v, q in (("M", m, 16), ("N", n, 8), ("K", k, kstep)) if v % q]
    if bad:
        info.diagnostics.append(
            Diagnostic(
                "error",
                f"gemm tile does not fit the tensor-core instruction m16n8k{kstep}: " + "; ".join(bad),
                Loc.of(g.span),
                "gemm-shape",
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
    tgt = _target_spec(target)
    art = lower(func, target=tgt)
    lang = {"cuda": "cuda", "hip": "hip", "metal": "metal", "c": "c"}[art.target.kind]
    ext = {"cuda": "cu", "hip": "hip", "metal": "metal", "c": "c"}[lang]
    ptxas = {k: art.meta[k] for k in ("registers", "spill_bytes", "shared_bytes") if k in art.meta} or None
    return GeneratedSource(function, lang, ext, art.kernel_source, ptxas)


def lowering_trace(
    source: str, path: str, function: str, target: str = "sm_90a", bindings: dict | None = None
) -> GeneratedSource:
    """The lowering trace page of the target's pipeline (tools.lower_trace): the kernel source
    beside the IR after every pass, with diffs, times and the generated source."""
    import importlib
    import time

    from ..backend.target import parse
    from ..tools.lower_trace import Stage, render_html

    func, unresolved = trace_function(source, path, function, bindings)
    if unresolved:
        raise TileLangError(
            f"cannot lower `{function}`: no value for {', '.join(unresolved)}",
            None,
            "add a call site or a `# tilelang:` comment",
        )
    tgt = parse(_target_spec(target))
    pipeline = importlib.import_module(f"tilelang.backend.{tgt.kind}.pipeline")
    from ..backend.launch_plan import plan_kernels

    codegen = importlib.import_module(f"tilelang.backend.{tgt.kind}.codegen")
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
        clock[0] = time.perf_counter()
        lowered = pipeline.lower(
            k, {"target": tgt, "pass_configs": {}, "trace": lambda n, f, tag=tag: record(tag + n, f)}
        )
        generated.append(codegen.generate(lowered).source)
    page = render_html(function, stages, path, "\n".join(generated))
    return GeneratedSource(function, "html", "trace.html", page)


def _target_spec(target: str) -> Any:
    if target.startswith("sm_"):
        return {"kind": "cuda", "arch": target}
    if target.startswith("hip:"):
        return {"kind": "hip", "arch": target.split(":", 1)[1]}
    return target


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
    kernel = JITKernel(func, target=_target_spec(target) if on_gpu else "c")
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
