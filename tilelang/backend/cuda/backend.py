"""The CUDA backend as seen by the backend registry (`tilelang.backend.registry`).

`make_backend()` returns the object the JIT, `tilelang.lower` and the kernel
cache use: `lower` (pipeline + codegen, no compiler), `build` (+ nvcc → cubin;
no GPU needed), `load` (cubin → `launch(values, dyn_values)` through the
driver API on torch's current stream), `cache_salt` (nvcc version, header
digest, backend revision).

Launch metadata kept with the cubin (JSON, so disk-cache hits need no
lowering): kernel entry, block size, dynamic shared memory, the parameter
kinds, and the grid as expression trees (`ir.int_tree`: data, never `eval`'d) over
the scalar parameters and dynamic dimensions, evaluated at every launch by
closures built once when the kernel is loaded. `check_meta` validates all of it
before the cache hands an entry to `load`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any

from ...errors import UnsupportedError
from ...ir.buffer import Buffer
from ...ir.expr import PrimExpr
from ...ir.function import PrimFunc
from ...ir.int_tree import compile_tree, host_leaves, to_tree
from ...ir.stmt import KernelLaunch
from ...ir.visitor import collect, free_vars_of
from ...transform.context import CompileContext
from ..kernel_args import grid_launcher
from ..launch_limits import grid_guard, guard_dynamic
from ..meta_schema import field, is_identifier, is_int, is_list_of, need
from ..registry import BuiltKernel
from ..source_backend import SourceBackend
from ..target import Target, nvcc_path
from ..toolrun import ToolTimeoutError
from .build_options import verbose_ptxas
from .check_launch_limits import check_built
from .compiler import INCLUDE_DIR, CompileError, compile_cuda
from .occupancy import SPILL_SLACK, min_blocks_to_request

# The pass pipeline and code generator (`.pipeline`, `.codegen`, `.tensor_map`) are imported
# inside `_generate`: a disk-cache hit needs neither, and importing them costs more than
# the whole rest of the hit.

BACKEND_REVISION = "cuda-ampere-1"

_SCALAR_KINDS = {
    "int32": "i32",
    "int64": "i64",
    "uint32": "u32",
    "uint64": "u64",
    "int8": "i8",
    "uint8": "u8",
    "int16": "i16",
    "uint16": "u16",
    "bool": "bool",
    "float32": "f32",
    "float64": "f64",
    "float16": "f16",
    "bfloat16": "bf16",
}


def _ctx(options: dict, target: Any) -> CompileContext:
    return CompileContext(
        target, options.get("pass_configs") or {}, {"compile_flags": list(options.get("compile_flags") or [])}
    )


def _fast_math(cfg: dict) -> bool:
    return bool(cfg.get("tl.enable_fast_math")) and not cfg.get("tl.disable_fast_math")


def grid_exprs(func: PrimFunc) -> list:
    """The launch grid as expression trees (`ir.int_tree`) over `["p", i]` (scalar parameter
    `i`) and `["d", k]` (dynamic dimension `k`): data, so a cached entry is never `eval`'d."""
    kernels = collect(func.body, lambda n: isinstance(n, KernelLaunch))
    if len(kernels) != 1:
        raise UnsupportedError("the CUDA backend compiles exactly one T.Kernel per function", func.span)
    names = host_leaves(func)
    return [_tree(g, names) for g in kernels[0].grid]


def _tree(e: Any, names: dict) -> Any:
    """The expression tree of launch-grid dimension `e` over the leaves in `names`."""
    if isinstance(e, int):
        return e
    unbound = [v for v in free_vars_of(e) if v not in names]
    if unbound:
        raise UnsupportedError(
            f"the launch grid depends on `{unbound[0].name}`, which is not a parameter or tensor dimension"
        )
    try:
        return to_tree(e, names)
    except TypeError as err:  # not integer arithmetic
        raise UnsupportedError(f"cannot evaluate the launch grid expression `{e}` on the host") from err


def grid_function(grid: list, n_params: int, n_dyn: int) -> Callable[[list, list], tuple]:
    """`fn(values, dyn)` → the (x, y, z) grid of a launch, built once from the trees of
    `grid_exprs`; `fn.fixed` is the grid when it depends on nothing, else None. Raises
    ValueError for malformed trees (a damaged cache entry: it is rebuilt)."""
    if not isinstance(grid, list) or not 1 <= len(grid) <= 3:
        raise ValueError(f"a launch grid has 1 to 3 dimensions, got {grid!r:.80}")
    dims = [compile_tree(t, n_params, n_dyn) for t in grid]
    dims += [compile_tree(1, 0, 0)] * (3 - len(dims))
    consts = [getattr(f, "const", None) for f in dims]
    if all(c is not None for c in consts):
        fixed = tuple(int(c) for c in consts)

        def fixed_grid(values: list, dyn: list) -> tuple:
            return fixed

        fixed_grid.fixed = fixed  # type: ignore[attr-defined]
        return fixed_grid
    gx, gy, gz = dims
    if consts[1] is not None and consts[2] is not None:  # the common 1-D grid: one call per launch
        cy, cz = consts[1], consts[2]

        def grid_of(values: list, dyn: list) -> tuple:
            return (gx(values, dyn), cy, cz)
    elif consts[2] is not None:
        cz = consts[2]

        def grid_of(values: list, dyn: list) -> tuple:
            return (gx(values, dyn), gy(values, dyn), cz)
    else:

        def grid_of(values: list, dyn: list) -> tuple:
            return (gx(values, dyn), gy(values, dyn), gz(values, dyn))

    grid_of.fixed = None  # type: ignore[attr-defined]
    return grid_of


def arg_kinds(func: PrimFunc) -> list:
    out = []
    for p in func.params:
        if isinstance(p, Buffer):
            out.append("ptr")
        else:
            k = _SCALAR_KINDS.get(str(p.dtype))
            if k is None:
                raise UnsupportedError(
                    f"scalar parameter `{p.name}` of dtype {p.dtype} is not supported on CUDA", func.span
                )
            out.append(k)
    for _ in func.dynamic_vars():
        out.append("i64")  # every dynamic dimension is passed as int64 (codegen narrows after the check)
    return out


class CudaBackend(SourceBackend):
    kind = "cuda"
    device_kind = "cuda"
    source_ext = "cu"

    def compile_context(self, options: dict, target: Target) -> CompileContext:
        return _ctx(options, target)

    def run_pipeline(self, func: PrimFunc, ctx: CompileContext, stop_after: str | None = None) -> PrimFunc:
        from .pipeline import lower as cuda_lower

        return cuda_lower(func, ctx, stop_after=stop_after)

    def generate_source(self, lowered: PrimFunc, target: Target, options: dict) -> Any:
        from ...engine.callback import apply_postproc
        from .build_options import line_directives, write_kernels_output
        from .codegen import generate

        src = generate(lowered)
        if (options.get("pass_configs") or {}).get("tl.emit_line_directives"):
            src.source = line_directives(src.source, src.line_spans)
        src.source = apply_postproc("cuda", src.source, target)  # register_cuda_postproc: before nvcc sees it
        write_kernels_output(options.get("pass_configs") or {}, src.entry, src.source)
        return src

    def extra_meta(self, lowered: PrimFunc, target: Target) -> dict:
        from .explicit_hopper import cluster_dims_of
        from .tensor_map import collect_tensor_maps

        meta: dict = {"tensor_maps": [spec.to_json() for spec in collect_tensor_maps(lowered.body)]}
        if cluster_dims_of(lowered) is not None:
            meta["cluster"] = list(cluster_dims_of(lowered))  # launched by runtime.cluster_launch_fn
        return meta

    def build(
        self, func: PrimFunc, target: Target, options: dict, workdir: str, pre: BuiltKernel | None = None
    ) -> BuiltKernel:
        """Lower (or take `pre`, a `lower()` result for the same inputs) and compile with nvcc."""
        from . import native_launch
        from .build_options import nvcc_flags

        native_launch.prebuild()  # the launcher's one-time C build overlaps nvcc
        if pre is not None and pre.lowered is not None:
            lowered, source, meta = pre.lowered, pre.kernel_source, dict(pre.meta)
        else:
            lowered, src, meta = self._generate(func, target, options)
            source = src.source
        cfg = dict(options.get("pass_configs") or {})
        extra = list(options.get("compile_flags") or []) + nvcc_flags(cfg)
        arch = target.arch or "sm_80"
        fast_math = _fast_math(cfg)
        path, stats = compile_cuda(source, workdir, meta["entry"], arch, fast_math, extra, verbose_ptxas(cfg))
        bounded = _with_min_blocks(source, int(meta["threads"]), arch, stats, int(meta["smem"]))
        if bounded is not None:  # registers just past an occupancy cliff: ask ptxas for the block back
            try:
                retry = compile_cuda(
                    bounded, workdir, meta["entry"] + "_bounded", arch, fast_math, extra, verbose_ptxas(cfg)
                )
            except (CompileError, ToolTimeoutError):  # ptxas cannot fit an instruction under the cap
                retry = None
            if retry is not None and retry[1].get("spill_bytes", 0) <= SPILL_SLACK:
                source, (path, stats) = bounded, retry
        check_built(lowered, arch, stats)  # static shared memory, registers × threads (ptxas's figures)
        meta.update(stats)
        meta.update(measured_meta(arch, int(meta["threads"]), int(meta["smem"]), stats))
        return BuiltKernel(source, path, meta, lowered)

    def build_joined(self, pres: list, name: str, target: Target, options: dict, workdir: str) -> tuple:
        """One cubin for several lowered kernels (`multi_kernel.py`; `backend/launch_plan.py`)."""
        from .multi_kernel import build_joined

        return build_joined(pres, name, target, options, workdir)

    def load(self, built: BuiltKernel) -> Callable[[list, list], None]:
        return make_launcher(built)

    def check_meta(self, meta: dict) -> None:
        """Raise ValueError unless `meta` is launch metadata `build` could have written."""
        check_cuda_meta(meta)

    def cache_salt(self, target: Target) -> str:
        return "|".join([BACKEND_REVISION, nvcc_version(), header_digest()])


def check_cuda_meta(meta: dict) -> None:
    """The schema of CUDA launch metadata (see the module doc); ValueError names the field."""
    from .runtime import ARG_KINDS

    field(meta, "entry", is_identifier, "a C identifier")
    field(meta, "threads", lambda x: is_int(x, 1, 1025), "an int in [1, 1024]")
    field(meta, "smem", lambda x: is_int(x, 0, 1 << 31), "a byte count")
    args = field(meta, "args", lambda x: is_list_of(x, lambda k: type(k) is str and k in ARG_KINDS), "parameter kinds")
    n_params = field(meta, "n_params", lambda x: is_int(x, 0, len(args) + 1), "at most the number of args")
    grid_function(field(meta, "grid", lambda x: type(x) is list, "a list"), n_params, len(args) - n_params)
    maps = field(meta, "tensor_maps", lambda x: type(x) is list, "a list", optional=True) or []
    for spec in maps:
        _check_tensor_map(spec, n_params)
    field(meta, "arch", lambda x: x is None or type(x) is str, "an arch name", optional=True)
    field(meta, "cluster", lambda x: is_list_of(x, lambda c: is_int(c, 1, 1025), 3) and len(x) == 3,
          "three cluster dimensions", optional=True)  # fmt: skip
    for stat in ("registers", "spill_bytes", "spill_stores", "spill_loads", "static_smem_bytes", "shared_bytes",
                 "blocks_per_sm"):  # fmt: skip
        field(meta, stat, lambda x: is_int(x, 0), "a count", optional=True)
    field(meta, "limiting", lambda x: type(x) is str and len(x) < 32, "a resource name", optional=True)


def measured_meta(arch: str, threads: int, dynamic_smem: int, stats: dict) -> dict:
    """What the post-compile hints show, from ptxas's `stats`: the shared memory a block holds
    (static + the dynamic block the launch requests), blocks per SM and the resource that limits
    them (`occupancy.blocks_and_limit`, the table the launch-bounds decision uses)."""
    from .occupancy import blocks_and_limit

    shared = dynamic_smem + int(stats.get("static_smem_bytes", 0) or 0)
    out: dict = {"shared_bytes": shared}
    got = blocks_and_limit(arch, threads, int(stats["registers"]), shared) if "registers" in stats else None
    if got is not None:
        out["blocks_per_sm"], out["limiting"] = got
    return out


def _check_tensor_map(spec: Any, n_params: int) -> None:
    import json

    try:
        d = json.loads(spec) if type(spec) is str else None
    except ValueError:
        d = None
    need(type(d) is dict, f"tensor map {spec!r:.80} is not a JSON object")
    field(d, "param", lambda x: is_int(x, 0, n_params), "a parameter index")
    field(d, "name", lambda x: type(x) is str, "a name")
    field(d, "dtype", lambda x: type(x) is str, "a dtype")
    field(d, "box", lambda x: is_list_of(x, lambda b: is_int(b, 1, 257), 5), "box dimensions")
    field(d, "swizzle", lambda x: is_int(x, 0, 1 << 16), "a swizzle mode")


def _with_min_blocks(source: str, threads: int, arch: str, stats: dict, smem: int) -> str | None:
    """`source` with `__launch_bounds__(threads, n)` when occupancy.min_blocks_to_request asks
    for n blocks per SM, else None (the kernel already states a minimum, or none is worth it)."""
    plain = f"__launch_bounds__({threads})"
    if "registers" not in stats or source.count(plain) != 1:
        return None
    n = min_blocks_to_request(arch, threads, stats["registers"], smem + stats.get("static_smem_bytes", 0))
    return None if n is None else source.replace(plain, f"__launch_bounds__({threads}, {n})")


def make_launcher(built: BuiltKernel) -> Callable[[list, list], None]:
    """`launch(values, dyn_values)`: `values` are the parameters (torch tensors /
    Python scalars) in order, `dyn_values` the ints of the dynamic dimensions.
    Everything that does not change between calls is prepared here. Dynamic dimensions
    above the kernel's 32-bit index limits, and grids above CUDA's, are refused before
    anything is packed (`launch_limits.py`)."""
    return guard_dynamic(_make_launcher(built), built.meta)


def _make_launcher(built: BuiltKernel) -> Callable[[list, list], None]:
    from .runtime import CudaModule

    m = built.meta
    if not built.lib_path:
        raise UnsupportedError("this kernel was lowered without compiling; build it to launch it")
    n_params = int(m["n_params"])
    arg_types, tensor_maps = list(m["args"]), list(m.get("tensor_maps") or [])
    grid_fn = grid_function(m["grid"], n_params, len(arg_types) - n_params)
    mod = CudaModule(built.lib_path, m["entry"], int(m["smem"]))
    if m.get("cluster"):  # T.ClusterKernel
        from .runtime import cluster_launch_fn

        mod.launch_fn = cluster_launch_fn(mod, tuple(m["cluster"]))
    block = (int(m["threads"]), 1, 1)
    fixed = grid_fn.fixed  # a fixed grid over CUDA's limits was refused at compile time
    grid_fn = grid_guard(grid_fn, m)
    if fixed is not None and min(fixed) <= 0:
        return lambda values, dyn_values: None
    native = mod.native_launcher(arg_types, n_params, tensor_maps, block, fixed)
    return grid_launcher(native, lambda: mod.launcher(arg_types, n_params, tensor_maps), grid_fn, fixed, block)


_NVCC_VERSION: str | None = None


def nvcc_version() -> str:
    """Identity of the nvcc in use, for cache keys: its path, size and mtime change when the
    toolkit is upgraded. (Running `nvcc --version` would cost ~0.1 s on every cache hit.)"""
    global _NVCC_VERSION
    if _NVCC_VERSION is None:
        path = nvcc_path()
        if path is None:
            _NVCC_VERSION = "no-nvcc"
        else:
            try:
                st = os.stat(os.path.realpath(path))
                _NVCC_VERSION = f"{os.path.realpath(path)}:{st.st_size}:{int(st.st_mtime)}"
            except OSError:
                _NVCC_VERSION = path
    return _NVCC_VERSION


def header_digest() -> str:
    h = hashlib.sha256()
    tl_dir = os.path.join(str(INCLUDE_DIR), "tl")
    for fn in sorted(os.listdir(tl_dir)):
        if fn.endswith(".h"):
            with open(os.path.join(tl_dir, fn), "rb") as f:
                h.update(fn.encode() + b"\0" + f.read())
    return h.hexdigest()[:24]


def make_backend() -> CudaBackend:
    return CudaBackend()


_ = PrimExpr
