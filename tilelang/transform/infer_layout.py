"""infer_layout: a Fragment for every register tile, a Layout for every shared
tile, a thread mapping for every `T.Parallel` nest.

Requires: a verified, simplified tile-level PrimFunc (tile ops present, before
`inject_pipeline`). `ctx` may hold `target` and `pass_configs`: on a CUDA
`sm_90a` target (unless `tl.disable_wgmma` is set) a `T.gemm` that wgmma can
run (`tilelang.layout.plan_wgmma`) gets the wgmma accumulator fragment (and
register A operand), recorded in the fragment's `meta["wgmma"]`; every other
gemm, every gemm of a kernel whose register tiles cannot fit a thread's registers
while one gemm reads A from registers (`register_bound_rs_gemm`: FlashAttention
with 128×128 tiles on 128 threads), and every other target get the mma.sync
fragments. Kernels without a
`T.Kernel` are returned unchanged.

Guarantees: an equivalent PrimFunc (the input is never modified) with

* `attrs["layout_map"]`: Buffer → `Fragment` for every `local.fragment` and
  `local.reducer` buffer, Buffer → `Layout` for every shared buffer (the
  swizzle of `make_swizzled_layout` for `T.gemm` operands, row-major for the
  rest, or what `T.annotate_layout` pinned);
* `attrs["layout_origin"]`: Buffer → `(why, Span)` — which statement decided
  each layout (the language server shows it; conflicts quote it);
* the outermost `For` of every `T.Parallel` nest annotated with
  `"tl.loop_layout"`: a `Fragment` over the nest's iteration space mapping an
  iteration to the thread(s) that execute it and the per-thread step;
  `"tl.loop_vars"`: how many perfectly nested loops form the nest.

Mechanism (DESIGN.md): sources of truth are ranked first — `T.gemm`
accumulators (the mma.sync accumulator fragment of the block tile under the
gemm's warp policy, warps = threads / 32), a register A operand
(`make_mma_operand_a_fragment`), `T.annotate_layout`, and
`T.Parallel(loop_layout=...)`. A work-list then propagates to a fixed point:
a nest whose body indexes a laid-out fragment exactly by its loop variables
(unit dimensions aside — `x[0, j]` in a `T.Parallel(1, N)` over a `(1, N)` tile is
exact: `nest_access.py`) takes that fragment's map as its loop layout (a *written* fragment is
preferred); every other fragment it indexes exactly, or by a subset of the
loop variables (a projection such as `s[i]` in a nest over `(i, j)`), gets the
implied layout (projections: `Fragment.reduce_dims`, i.e. replicated over the
threads that execute the row); fragment→fragment copies share layouts;
reductions give `dst = src.reduce_dims(dim)`; `finalize_reducer` gives its
destination the reducer's layout. Fragments still free afterwards get a
default (`default_fragment`: contiguous 16-byte runs per thread, consecutive
threads along the last dimension, replicated when the tile is too small for
the block), one at a time in allocation order with propagation in between;
nests still free get `default_loop_layout` (the same construction without
replication: spare threads idle).

Checks: a fragment required in two different layouts by sources of truth, or
written by a nest whose threads do not hold the elements they write, is a
`LayoutError` naming both statements. Reads of elements a thread does not
hold are legal (the CUDA lowering stages them through shared memory).
Dynamic tile shapes are an `UnsupportedError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import Any

from ..errors import LayoutError, UnsupportedError
from ..ir.buffer import Buffer, BufferRegion
from ..ir.decisions import record
from ..ir.expr import BufferLoad, IntImm, Var, const_int
from ..ir.function import PrimFunc
from ..ir.node import FrozenDict
from ..ir.span import NO_SPAN, Span
from ..ir.stmt import (
    Allocate,
    AnnotateLayout,
    BufferStore,
    Copy,
    FinalizeReducer,
    For,
    Gemm,
    KernelLaunch,
    Reduce,
    ReducerUpdate,
    SeqStmt,
)
from ..ir.visitor import Mutator, Visitor, collect
from ..layout import (
    Fragment,
    SwizzleMode,
    WgmmaPlan,
    detect_swizzle_mode,
    make_linear_layout,
    make_mma_accumulator_fragment,
    make_mma_operand_a_fragment,
    make_swizzled_layout,
    make_wgmma_accumulator_fragment,
    make_wgmma_operand_a_fragment,
    mma_k,
    plan_wgmma,
)
from ..layout._expr import substitute as lsub
from ..layout.layout import ENUM_LIMIT, prod
from ..layout.packed import gemm_operand_layout
from ..pass_config import in_force
from .context import CompileContext
from .nest_access import access_perm, covers, implied, loop_from_fragment
from .record_decisions import gemm_records

LOOP_LAYOUT = "tl.loop_layout"
LOOP_DEPTH = "tl.loop_vars"
FRAGMENT_SCOPES = ("local.fragment", "local.reducer")
SHARED_SCOPES = ("shared", "shared.dyn")


# --------------------------------------------------------------------------
# Default layouts
# --------------------------------------------------------------------------


def _pow2_divisor(n: int, cap: int) -> int:
    """Largest power of two dividing `n` and at most `cap` (>= 1)."""
    p = 1
    while p * 2 <= cap and n % (p * 2) == 0:
        p *= 2
    return p


def _floor_pow2(n: int) -> int:
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def vector_width(shape: tuple, threads: int, elem_bytes: int) -> int:
    """Elements per 16-byte run along the last dim, shrunk so every thread gets work."""
    numel = prod(shape)
    cap = max(1, 16 // max(1, elem_bytes))
    cap = min(cap, max(1, _floor_pow2(max(1, numel // max(1, threads)))))
    return _pow2_divisor(shape[-1], cap)


def _blocked_digits(shape: tuple, threads: int, vec: int) -> tuple:
    """(thread expr, local expr, threads used, vars) of the digit-form blocked layout."""
    fv = tuple(Var(n) for n in ("i", "j", "k", "l", "m", "n")[: len(shape)]) if len(shape) <= 6 else None
    if fv is None:
        raise UnsupportedError(f"tiles of more than 6 dimensions are not supported ({list(shape)})")
    nd = len(shape)
    remaining = threads
    tdim = [1] * nd
    for d in reversed(range(nd)):
        units = shape[d] // (vec if d == nd - 1 else 1)
        t = _pow2_divisor(units, remaining)
        tdim[d] = t
        remaining //= t
    thread: Any = IntImm(0)
    coef = 1
    for d in reversed(range(nd)):
        unit = fv[d] // vec if d == nd - 1 else fv[d]
        thread = thread + (unit % tdim[d]) * coef
        coef *= tdim[d]
    local: Any = IntImm(0)
    for d in range(nd):
        unit = fv[d] // vec if d == nd - 1 else fv[d]
        ext = (shape[d] // (vec if d == nd - 1 else 1)) // tdim[d]
        local = local * ext + unit // tdim[d]
    local = local * vec + fv[nd - 1] % vec
    return thread, local, coef, fv


def _padded_shape(shape: tuple, threads: int, vec: int) -> tuple:
    """`shape`, or `shape` with the last dim rounded up (at most +25%) when that lets
    the digit-form layout use every thread (e.g. 1000 -> 1024 over 128 threads)."""
    _, _, used, _ = _blocked_digits(shape, threads, vec)
    if used >= threads or prod(shape) < threads * vec:
        return shape
    k = threads
    while k >= 1:
        q = vec * k
        last = -(-shape[-1] // q) * q
        cand = tuple(shape[:-1]) + (last,)
        if last * 4 <= shape[-1] * 5 and _blocked_digits(cand, threads, vec)[2] > used:
            return cand
        k //= 2
    return shape


def default_fragment(shape: tuple, threads: int, elem_bytes: int) -> Fragment:
    """Default register layout of a free fragment: runs of `vector_width` contiguous
    elements per thread, consecutive threads along the last dimension, then the
    next; threads left over hold replicas (so small tiles are fully replicated).
    The layout may cover a slightly padded shape (see `_padded_shape`); the
    padding elements exist in registers but are never read or written."""
    vec = vector_width(shape, threads, elem_bytes)
    shape = _padded_shape(tuple(shape), threads, vec)
    thread, local, used, fv = _blocked_digits(shape, threads, vec)
    rep = Var("rep")
    replicate = max(1, threads // used)
    if replicate > 1:
        thread = thread + rep * used
    origin = f"default ×{vec}" + (f", ×{replicate} replicas" if replicate > 1 else "")
    return Fragment.from_exprs(shape, fv, thread, local, replicate, rep, {"origin": origin})


def default_loop_layout(extents: tuple, threads: int, vec: int) -> Fragment:
    """Default thread mapping of a free `T.Parallel` nest: like `default_fragment`
    with vector width `vec`, but never replicated (threads left over idle)."""
    vec = _pow2_divisor(extents[-1], vec)
    shape = _padded_shape(tuple(extents), threads, vec)
    thread, local, used, fv = _blocked_digits(shape, threads, vec)
    return Fragment.from_exprs(shape, fv, thread, local, 1, None, {"origin": f"loop default ×{vec}", "vector": vec})


# --------------------------------------------------------------------------
# Facts collected from the kernel
# --------------------------------------------------------------------------


@dataclass
class Decision:
    layout: Any
    why: str
    span: Span
    fixed: bool = False


@dataclass
class Access:
    buffer: Buffer
    indices: tuple
    write: bool
    span: Span


@dataclass
class Nest:
    loop: For
    vars: tuple
    extents: tuple
    accesses: list = field(default_factory=list)
    layout: Decision | None = None

    @property
    def span(self) -> Span:
        return self.loop.span


def _static(shape: tuple) -> tuple | None:
    dims = tuple(const_int(d) for d in shape)
    return None if any(d is None for d in dims) else dims


def perfect_nest(loop: For) -> tuple[list, Any]:
    """The perfectly nested `parallel` loops starting at `loop` and the innermost body."""
    loops = [loop]
    body = loop.body
    while isinstance(body, For) and body.kind == "parallel" and not body.annotations.get("loop_layout"):
        loops.append(body)
        body = body.body
    return loops, body


def whole_tile_store(loop: For) -> BufferStore | None:
    """The one store of a perfect `T.Parallel` nest that writes every element of its buffer once
    (loops from 0 over exactly the buffer's constant shape, indexing it by the loop variables in
    order), or None."""
    loops, body = perfect_nest(loop)
    if not isinstance(body, BufferStore) or len(loops) != len(body.buffer.shape):
        return None
    for lp, ix, d in zip(loops, body.indices, body.buffer.shape):
        if lp.var is not ix or const_int(lp.start) != 0 or const_int(d) is None or const_int(lp.extent) != const_int(d):
            return None
    return body


class _AccessCollector(Visitor):
    """Fragment accesses (loads, stores, reducer updates) inside a nest body."""

    def __init__(self) -> None:
        self.out: list = []

    def visit_BufferLoad(self, n: BufferLoad) -> None:
        if n.buffer.scope in FRAGMENT_SCOPES:
            self.out.append(Access(n.buffer, n.indices, False, n.span))
        self.visit(n.indices)

    def visit_BufferStore(self, n: BufferStore) -> None:
        if n.buffer.scope in FRAGMENT_SCOPES:
            self.out.append(Access(n.buffer, n.indices, True, n.span))
        self.visit(n.indices)
        self.visit(n.value)

    def visit_ReducerUpdate(self, n: ReducerUpdate) -> None:
        self.out.append(Access(n.reducer, n.indices, True, n.span))
        self.visit(n.indices)
        self.visit(n.value)

    def visit_BufferRegion(self, n: BufferRegion) -> None:
        if n.buffer.scope in FRAGMENT_SCOPES:
            self.out.append(Access(n.buffer, tuple(r.begin for r in n.region), False, n.span))
        for r in n.region:
            self.visit(r.begin)
            self.visit(r.extent)


class _Collect(Visitor):
    def __init__(self) -> None:
        self.allocs: list = []  # Allocate statements (order of appearance)
        self.sites: list = []  # Gemm / Copy / Reduce / FinalizeReducer / AnnotateLayout / Nest
        self.gemm_operands: dict = {}  # shared Buffer -> Gemm
        self.regions: list = []  # T.ws regions: laid out over their own threads (_domain_inferences)

    def visit_WarpSpecialize(self, n: Any) -> None:
        self.regions.append(n)

    def visit_Allocate(self, n: Allocate) -> None:
        self.allocs.append(n)

    def visit_For(self, n: For) -> None:
        if n.kind != "parallel":
            self.generic_visit(n)
            return
        loops, body = perfect_nest(n)
        nest = Nest(n, tuple(x.var for x in loops), tuple(x.extent for x in loops))
        c = _AccessCollector()
        c.visit(body)
        nest.accesses = c.out
        self.sites.append(nest)
        # allocations inside the nest body are per-thread; fragments there are unusual but legal
        inner = _Collect()
        inner.visit(body)
        self.allocs.extend(inner.allocs)

    def visit_Gemm(self, n: Gemm) -> None:
        self.sites.append(n)
        for r in (n.A, n.B):
            if r.buffer.scope in SHARED_SCOPES:
                self.gemm_operands.setdefault(r.buffer, n)

    def visit_Copy(self, n: Copy) -> None:
        self.sites.append(n)

    def visit_Reduce(self, n: Reduce) -> None:
        self.sites.append(n)

    def visit_FinalizeReducer(self, n: FinalizeReducer) -> None:
        self.sites.append(n)

    def visit_AnnotateLayout(self, n: AnnotateLayout) -> None:
        self.sites.append(n)


# --------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------


def infer_layout(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    kernels = [s for s in _kernels(func.body)]
    if not kernels:
        return func
    layout_map: dict = dict(func.attrs.get("layout_map", {}) or {})
    origin: dict = {}
    loop_layouts: dict = {}
    from ..backend.cuda.split_rows import row_split_enabled

    wgmma = wgmma_enabled(ctx, func)
    row_split = row_split_enabled(func, ctx)
    simdgroup = getattr(CompileContext.of(ctx).target, "kind", None) == "metal"  # layout/simdgroup.py
    mfma = getattr(CompileContext.of(ctx).target, "kind", None) == "hip"  # layout/mfma.py
    for k in kernels:
        # a register-bound kernel the compiler splits into row halves (split_rows) keeps wgmma here,
        # as it does compiled; one it cannot split gets mma.sync
        for inf in _domain_inferences(k, layout_map, wgmma, row_split, simdgroup, mfma):
            inf.run()
            layout_map.update({b: d.layout for b, d in inf.buf.items()})
            origin.update({b: (d.why, d.span) for b, d in inf.buf.items()})
            loop_layouts.update({id(n.loop): n.layout for n in inf.nests})
    body = _Annotate(loop_layouts).visit(func.body)
    attrs = dict(func.attrs)
    attrs["layout_map"] = layout_map
    attrs["layout_origin"] = origin
    out = dc_replace(func, body=body, attrs=FrozenDict(attrs))
    return record(out, *gemm_records(out))  # each gemm's instruction, K step and warp grid


def wgmma_enabled(ctx: CompileContext | None, func: PrimFunc | None = None) -> bool:
    """True when gemms may use wgmma: a CUDA sm_90a target and `tl.disable_wgmma` unset."""
    target = CompileContext.of(ctx).target
    if target is None or getattr(target, "kind", None) != "cuda" or getattr(target, "arch", "") != "sm_90a":
        return False
    return not in_force(func, ctx).get("tl.disable_wgmma", False)


REGISTERS_PER_THREAD = 255


def register_bound_rs_gemm(k: KernelLaunch) -> bool:
    """`k` has a gemm reading A from registers (FlashAttention's P·V) and its register tiles
    need more than a thread's 255 registers (fragment bytes / threads / 4). Such kernels
    spill either way, and measured on the H200 (2026-11-29, FlashAttention 8×32×4096×128,
    128×128 tiles, 1 stage, 128 threads: 2.9 KB of spills per thread with wgmma, 1.5 KB with
    mma.sync) mma.sync runs them faster (252 vs 206 TFLOP/s), because wgmma keeps both
    accumulators pinned in registers while it runs asynchronously. `infer_layout` then
    gives the kernel's gemms the mma.sync layouts."""
    gemms = collect(k.body, lambda n: isinstance(n, Gemm))
    if not any(g.A.buffer.scope == "local.fragment" for g in gemms):
        return False
    fragments = collect(k.body, lambda n: isinstance(n, Allocate) and n.buffer.scope == "local.fragment")
    total = 0
    for a in fragments:
        shape = a.buffer.static_shape
        if shape is None:
            return False
        total += math.prod(shape) * a.buffer.dtype.bytes
    return total / max(1, k.num_threads) / 4 > REGISTERS_PER_THREAD


def wgmma_plan_of(layout: Any) -> WgmmaPlan | None:
    """The wgmma plan recorded on a gemm accumulator fragment (None: mma.sync)."""
    return layout.meta.get("wgmma") if isinstance(layout, Fragment) else None


def _kernels(s: Any) -> list:
    out: list = []

    class _K(Visitor):
        def visit_KernelLaunch(self, n: KernelLaunch) -> None:
            out.append(n)

    _K().visit(s)
    return out


class _Annotate(Mutator):
    def __init__(self, loop_layouts: dict) -> None:
        super().__init__()
        self.loop_layouts = loop_layouts

    def visit_For(self, n: For) -> Any:
        d = self.loop_layouts.get(id(n))
        if d is None:
            return self.generic_visit(n)
        loops, body = perfect_nest(n)
        new_body = self.visit(body)
        # rebuild the nest bottom-up (inner loops keep their identity when unchanged)
        inner = new_body
        for lp in reversed(loops[1:]):
            inner = lp if inner is lp.body else dc_replace(lp, body=inner)
        ann = n.annotations.set(**{LOOP_LAYOUT: d.layout, LOOP_DEPTH: len(loops)})
        return dc_replace(n, body=inner, annotations=ann)


def _where(span: Span) -> str:
    if span is NO_SPAN or not span.line:
        return "<unknown>"
    return f"{span.file.rsplit('/', 1)[-1]}:{span.line}"


def _splits_rows(k: KernelLaunch) -> bool:
    from ..backend.cuda.split_rows import split_kernel

    return split_kernel(k) is not None


def _domain_inferences(
    k: KernelLaunch, given: dict, wgmma: bool, row_split: bool = False, simdgroup: bool = False, mfma: bool = False
) -> list:
    """One inference per thread domain of kernel `k`: one per `T.ws` warpgroup range
    (its fragments and nests are laid out over the range's threads, thread 0 being its
    first thread; tilelang/backend/cuda/explicit_hopper.py lowers it that way), then
    the block's (everything outside the regions). A fragment used in two domains has
    no single layout: a `LayoutError`."""
    block = _Inference(k, given, wgmma)
    block.simdgroup = simdgroup
    block.mfma = mfma
    if not block.regions:
        if wgmma and register_bound_rs_gemm(k) and not (row_split and _splits_rows(k)):
            block = _Inference(k, given, False)
        return [block]
    owner: dict = {b: ("outside T.ws regions", k.span) for b in _fragments_used(k.body)}
    by_range: dict = {}
    for r in block.regions:
        by_range.setdefault(r.thread_range, []).append(r)
    subs = []
    for (_first, count), regions in by_range.items():
        where = f"T.ws({', '.join(map(str, regions[0].warpgroups))})"
        used = set()
        for r in regions:
            used |= _fragments_used(r.body)
        for b in used:
            other = owner.setdefault(b, (where, regions[0].span))
            if other[0] != where:
                raise LayoutError(
                    f"fragment `{b.name}` is used {other[0]} ({_where(other[1])}) and in {where} "
                    f"({_where(regions[0].span)}): registers belong to the threads of one warpgroup range",
                    regions[0].span,
                    "give each warpgroup range its own fragments and exchange data through shared memory",
                )
        sub = _Inference(k, given, wgmma, threads=count, body=SeqStmt(tuple(r.body for r in regions), k.span))
        sub.allocs = [a for a in block.allocs if a.buffer in used] + sub.allocs
        for buf, g in sub.gemm_operands.items():
            block.gemm_operands.setdefault(buf, g)
        subs.append(sub)
    block.allocs = [a for a in block.allocs if owner.get(a.buffer, ("outside",))[0].startswith("outside")]
    return subs + [block]


def _fragments_used(body: Any) -> set:
    """Fragment buffers referenced in `body` outside `T.ws` regions (allocations excluded)."""
    out: set = set()

    class _F(Visitor):
        def visit_WarpSpecialize(self, n: Any) -> None:
            pass

        def visit_Allocate(self, n: Allocate) -> None:
            pass

        def visit_Buffer(self, n: Buffer) -> None:
            if n.scope in FRAGMENT_SCOPES:
                out.add(n)

    _F().visit(body)
    return out


class _Inference:
    def __init__(
        self, kernel: KernelLaunch, given: dict, wgmma: bool = False, threads: int | None = None, body: Any = None
    ) -> None:
        self.kernel = kernel
        self.wgmma = wgmma
        self.simdgroup = False  # Metal: gemm tiles get the simdgroup_matrix layouts (layout/simdgroup.py)
        self.mfma = False  # HIP: gemm tiles get the MFMA 16x16 layouts over waves of 64 (layout/mfma.py)
        self.threads = threads or kernel.num_threads  # a T.ws region's own threads (_domain_inferences)
        self.buf: dict = {}
        c = _Collect()
        c.visit(kernel.body if body is None else body)
        self.regions = c.regions
        self.allocs = c.allocs
        self.sites = c.sites
        self.gemm_operands = c.gemm_operands
        self.nests = [s for s in c.sites if isinstance(s, Nest)]
        self.given = given

    # -- decisions ------------------------------------------------------------------
    def set(self, b: Buffer, layout: Any, why: str, span: Span, fixed: bool = False) -> bool:
        old = self.buf.get(b)
        if old is not None:
            if old.layout is layout or _same(old.layout, layout):
                if fixed and not old.fixed:
                    old.fixed = True
                return False
            if fixed and old.fixed:
                raise LayoutError(
                    f"`{b.name}` needs two different layouts: {old.why} ({_where(old.span)}) fixed "
                    f"{_brief(old.layout)}, but {why} ({_where(span)}) requires {_brief(layout)}",
                    span,
                    "use separate buffers for the two uses, or make both agree (same warp policy / tile shape)",
                )
            return False
        self.buf[b] = Decision(layout, why, span, fixed)
        return True

    def shape_of(self, b: Buffer, span: Span) -> tuple:
        s = _static(b.shape)
        if s is None:
            raise UnsupportedError(
                f"`{b.name}` has a dynamic shape {[str(d) for d in b.shape]}; register and shared tiles "
                "need compile-time shapes on GPU targets",
                span,
                "make the tile size a compile-time constant",
            )
        return s

    # -- driver -----------------------------------------------------------------------
    def run(self) -> None:
        self.sources()
        self.propagate()
        for a in self.allocs:
            b = a.buffer
            if b.scope in FRAGMENT_SCOPES and b not in self.buf:
                shape = self.shape_of(b, a.span)
                self.set(b, default_fragment(shape, self.threads, max(1, b.dtype.bytes)), "default layout", a.span)
                self.propagate()
        for n in self.nests:
            if n.layout is None:
                ext = _static(n.extents)
                if ext is None:
                    continue  # no layout: the backend deals the iterations out round-robin
                n.layout = Decision(default_loop_layout(ext, self.threads, self.nest_vector(n, ext)), "default", n.span)
        for a in self.allocs:
            b = a.buffer
            if b.scope in SHARED_SCOPES and b not in self.buf:
                shape = self.shape_of(b, a.span)
                g = self.gemm_operands.get(b)
                if g is not None:
                    lay = gemm_operand_layout(shape, b.dtype)  # 4-bit tiles: swizzled byte pairs
                    self.set(b, lay, "T.gemm operand (swizzled)", g.span)
                else:
                    self.set(b, make_linear_layout(shape, b.dtype), "row-major", a.span)
        self.check()

    def nest_vector(self, n: Nest, ext: tuple) -> int:
        """Vector width of a free nest: 16 bytes of the widest element it touches."""
        from ..ir.visitor import collect

        widest = 1
        for x in collect(n.loop, lambda x: isinstance(x, (BufferLoad, BufferStore))):
            if x.buffer.scope in ("global",) + SHARED_SCOPES:
                widest = max(widest, x.buffer.dtype.bytes)
        vec = max(1, 16 // widest)
        numel = prod(ext)
        return min(vec, max(1, _floor_pow2(max(1, numel // self.threads))))

    # -- sources of truth -----------------------------------------------------------
    def sources(self) -> None:
        # annotations first: a gemm's wgmma plan depends on its operands' shared layouts
        for s in self.sites:
            if isinstance(s, AnnotateLayout):
                for b, lay in s.layouts:
                    self.set(b, lay, "T.annotate_layout", s.span, fixed=True)
        for s in self.sites:
            if isinstance(s, Gemm):
                self.gemm_source(s)
            elif isinstance(s, Nest):
                ll = s.loop.annotations.get("loop_layout")
                if ll is not None:
                    if not isinstance(ll, Fragment):
                        raise LayoutError("T.Parallel(loop_layout=...) needs a T.Fragment", s.span)
                    s.layout = Decision(ll, "T.Parallel(loop_layout=...)", s.span, True)

    def gemm_source(self, g: Gemm) -> None:
        from ..tileop.gemm import matrix_dims

        warps = self.threads // 32
        if self.threads % 32 or warps == 0:
            raise UnsupportedError(
                f"T.gemm needs whole warps: the kernel has {self.threads} threads",
                g.span,
                "use a multiple of 32 threads",
            )
        C = g.C
        if C.buffer.scope not in FRAGMENT_SCOPES:
            raise UnsupportedError(
                f"T.gemm accumulator `{C.buffer.name}` is in {C.buffer.scope}; mma.sync accumulates in registers",
                g.span,
                "allocate it with T.alloc_fragment",
            )
        cd = matrix_dims(C, g.span, "C")
        shape = self.shape_of(C.buffer, g.span)
        M, N = shape[cd[0]], shape[cd[1]]
        if len(shape) != 2 or any(const_int(b) != 0 for b in C.begins):
            raise UnsupportedError(
                f"T.gemm accumulator must be a whole 2-D fragment, got {C!r}", g.span, "pass the fragment itself"
            )
        ad = matrix_dims(g.A, g.span, "A")
        a_ext = [const_int(g.A.region[d].extent) for d in ad]
        K = a_ext[0] if g.transpose_A else a_ext[1]
        adt = g.A.buffer.dtype
        plan = self.wgmma_plan(g, M, N, K) if self.wgmma else None
        if isinstance(plan, WgmmaPlan):
            self.wgmma_source(g, plan, M, N, K)
            return
        if self.simdgroup:
            self.simdgroup_source(g, M, N, K)
            return
        if self.mfma:
            self.mfma_source(g, M, N, K)
            return
        try:
            mma_k(adt)
        except ValueError as err:
            raise UnsupportedError(str(err), g.span) from None
        if adt.bits <= 8 and (not g.transpose_B or g.transpose_A):
            raise UnsupportedError(
                f"{adt.bits}-bit T.gemm needs A as (M, K) and B as (N, K): transpose_A=False, transpose_B=True",
                g.span,
                "store B transposed (N×K) and pass transpose_B=True",
            )
        try:
            acc = make_mma_accumulator_fragment(M, N, warps, g.policy, C.buffer.dtype)
        except ValueError as err:
            raise LayoutError(str(err), g.span) from None
        self.set(C.buffer, acc, f"T.gemm accumulator ({g.policy})", g.span, fixed=True)
        A = g.A.buffer
        if A.scope in FRAGMENT_SCOPES:
            if g.transpose_A:
                raise UnsupportedError("T.gemm with A in registers needs transpose_A=False", g.span)
            if adt.bits != 16:
                raise UnsupportedError(
                    f"T.gemm with A in registers supports float16/bfloat16 A, got {adt}",
                    g.span,
                    "stage A through shared memory",
                )
            ashape = self.shape_of(A, g.span)
            if len(ashape) != 2 or K is None:
                raise UnsupportedError("T.gemm register A operand must be a whole 2-D fragment", g.span)
            try:
                alay = make_mma_operand_a_fragment(M, N, K, warps, g.policy, adt)
            except ValueError as err:
                raise LayoutError(str(err), g.span) from None
            self.set(A, alay, f"T.gemm register operand A ({g.policy})", g.span, fixed=True)
        if g.B.buffer.scope in FRAGMENT_SCOPES:
            raise UnsupportedError(
                "T.gemm with B in registers is not supported by the mma.sync path",
                g.span,
                "stage B through shared memory",
            )

    def simdgroup_source(self, g: Gemm, M: int, N: int, K: int | None) -> None:
        """Metal: the accumulator (and a register A operand) in the simdgroup_matrix layouts."""
        from ..layout.simdgroup import make_simdgroup_fragment, simdgroup_grid

        a_regs = g.A.buffer.scope in FRAGMENT_SCOPES
        try:
            grid = simdgroup_grid(M, N, self.threads // 32, rows_only=a_regs)
            if a_regs and (K is None or K % 8):
                raise ValueError(f"a register A operand needs K a multiple of 8, got {K}")
        except ValueError as err:
            raise LayoutError(str(err), g.span) from None
        acc = make_simdgroup_fragment(M, N, grid, g.C.buffer.dtype)
        self.set(g.C.buffer, acc, "T.gemm accumulator (simdgroup_matrix 8x8 blocks)", g.span, fixed=True)
        if a_regs:
            alay = make_simdgroup_fragment(M, K, grid, g.A.buffer.dtype, "operand A")
            self.set(g.A.buffer, alay, "T.gemm register operand A (simdgroup_matrix 8x8 blocks)", g.span, fixed=True)

    def mfma_source(self, g: Gemm, M: int, N: int, K: int | None) -> None:
        """HIP: the accumulator (and a register A operand) in the MFMA layouts, over waves of 64."""
        from ..layout.mfma import mfma_gemm_layouts

        for buf, layout, why in mfma_gemm_layouts(g, M, N, K, self.threads):
            self.set(buf, layout, why, g.span, fixed=True)

    def operand_swizzle(self, r: BufferRegion, dims: tuple) -> int:
        """Swizzle bytes of a shared gemm operand's layout (what `run` will give it when
        nothing pinned one); -1 when the layout is no hardware swizzle or the operand is
        not a whole 2-D tile of its buffer."""
        b = r.buffer
        shape = self.shape_of(b, r.buffer.span)
        if (
            len(dims) != 2
            or any(const_int(r.region[d].begin) != 0 or const_int(r.region[d].extent) != shape[d] for d in dims)
            or tuple(dims) != (len(shape) - 2, len(shape) - 1)
        ):
            return -1
        d = self.buf.get(b)
        if b.dtype.bits < 8:
            return -1  # packed 4-bit tiles: mma.sync only
        lay = d.layout if d is not None else make_swizzled_layout(shape, dtype=b.dtype)
        try:
            mode = detect_swizzle_mode(lay, b.dtype)
        except ValueError:
            return -1
        if mode is None or lay.meta.get("padded"):
            return -1
        return 0 if mode is SwizzleMode.NONE else mode.swizzle_byte_size()

    def wgmma_plan(self, g: Gemm, M: int, N: int, K: int | None) -> WgmmaPlan | str:
        from ..tileop.gemm import matrix_dims

        A, B = g.A.buffer, g.B.buffer
        if A.dtype.bits < 8:
            return f"{A.dtype} operands have no wgmma form (mma.sync m16n8k64 runs them)"
        if K is None or B.scope not in SHARED_SCOPES:
            return "operand B is not a shared tile"
        if A.scope in FRAGMENT_SCOPES:
            a_sw = None
        elif A.scope in SHARED_SCOPES:
            a_sw = self.operand_swizzle(g.A, matrix_dims(g.A, g.span, "A"))
        else:
            return "operand A is neither shared nor a fragment"
        b_sw = self.operand_swizzle(g.B, matrix_dims(g.B, g.span, "B"))
        return plan_wgmma(M, N, K, self.threads, g.policy, A.dtype, B.dtype, g.C.buffer.dtype,
                          g.transpose_A, g.transpose_B, a_sw, b_sw)  # fmt: skip

    def wgmma_source(self, g: Gemm, plan: WgmmaPlan, M: int, N: int, K: int) -> None:
        warps = self.threads // 32
        C = g.C.buffer
        acc = make_wgmma_accumulator_fragment(
            M, N, warps, g.policy, C.dtype, groups=(plan.groups_m, plan.groups_n)
        ).with_meta(wgmma=plan)
        self.set(C, acc, f"T.gemm accumulator (wgmma {plan.instruction}, {g.policy})", g.span, fixed=True)
        if plan.a_major == "regs":
            alay = make_wgmma_operand_a_fragment(M, K, warps, g.A.buffer.dtype)
            self.set(g.A.buffer, alay, f"T.gemm register operand A (wgmma {plan.instruction})", g.span, fixed=True)

    # -- propagation ------------------------------------------------------------------
    def propagate(self) -> None:
        changed = True
        while changed:
            changed = False
            for s in self.sites:
                if isinstance(s, Nest):
                    changed |= self.nest(s)
                elif isinstance(s, Copy):
                    changed |= self.copy(s)
                elif isinstance(s, Reduce):
                    changed |= self.reduce(s)
                elif isinstance(s, FinalizeReducer):
                    changed |= self.finalize(s)

    def known(self, b: Buffer) -> Any:
        d = self.buf.get(b)
        return None if d is None else d.layout

    def nest(self, n: Nest) -> bool:
        changed = False
        if n.layout is None:
            best = None
            for acc in sorted(n.accesses, key=lambda a: not a.write):
                lay = self.known(acc.buffer)
                if lay is None:
                    continue
                perm = access_perm(acc.indices, n.vars, n.extents, _static(acc.buffer.shape))
                if perm is None:
                    continue
                ext = _static(n.extents)
                if ext is None:
                    continue
                cand = loop_from_fragment(lay, perm, ext)
                if cand is not None:
                    best = Decision(cand, f"from `{acc.buffer.name}`", self.buf[acc.buffer].span)
                    break
            if best is None:
                return False
            n.layout = best
            changed = True
        L = n.layout.layout
        for acc in n.accesses:
            b = acc.buffer
            if b in self.buf:
                continue
            shape = _static(b.shape)
            if shape is None:
                continue
            lay = implied(L, acc.indices, n.vars, n.extents, shape)
            if lay is not None:
                changed |= self.set(b, lay, "T.Parallel loop", n.span)
        return changed

    def copy(self, c: Copy) -> bool:
        s, d = c.src.buffer, c.dst.buffer
        if s.scope not in FRAGMENT_SCOPES or d.scope not in FRAGMENT_SCOPES:
            return False
        if not (c.src.is_whole() and c.dst.is_whole()) or not _shapes_match(s, d):
            return False
        ls, ld = self.known(s), self.known(d)
        if ls is not None and ld is None:
            return self.set(d, _retarget(ls, d), "T.copy", c.span)
        if ld is not None and ls is None:
            return self.set(s, _retarget(ld, s), "T.copy", c.span)
        return False

    def reduce(self, r: Reduce) -> bool:
        s, d = r.src.buffer, r.dst.buffer
        if s.scope not in FRAGMENT_SCOPES or d.scope not in FRAGMENT_SCOPES or d in self.buf:
            return False
        ls = self.known(s)
        if ls is None or not (r.src.is_whole() and r.dst.is_whole()):
            return False
        nd = len(s.shape)
        dim = r.dim % nd
        keep = len(d.shape) == nd
        try:
            lay = ls.reduce_dims(dim, keepdims=keep)
        except (ValueError, TypeError):
            return False
        dshape = _static(d.shape)
        if dshape is None or not covers(tuple(lay.shape), tuple(dshape)):
            return False
        return self.set(d, lay, f"T.reduce_{r.kind} of `{s.name}`", r.span)

    def finalize(self, f: FinalizeReducer) -> bool:
        lr = self.known(f.reducer)
        if lr is None or f.dst in self.buf or f.dst.scope not in FRAGMENT_SCOPES:
            return False
        if not _shapes_match(f.reducer, f.dst):
            return False
        return self.set(f.dst, _retarget(lr, f.dst), "T.finalize_reducer", f.span)

    # -- validation -------------------------------------------------------------------
    def check(self) -> None:
        for b, d in self.buf.items():
            if isinstance(d.layout, Fragment) and d.layout.is_static:
                shape = _static(b.shape)
                if shape is not None and not covers(tuple(d.layout.shape), shape):
                    raise LayoutError(
                        f"layout of `{b.name}` covers {list(d.layout.shape)} but the buffer is {list(shape)}", d.span
                    )
                if d.layout.get_thread_size() > self.threads:
                    raise LayoutError(
                        f"layout of `{b.name}` ({d.why}) needs {d.layout.get_thread_size()} threads but the kernel "
                        f"has {self.threads}",
                        d.span,
                        "launch more threads or use a smaller tile",
                    )
        for n in self.nests:
            self.check_writes(n)

    def check_writes(self, n: Nest) -> None:
        if n.layout is None:  # a dynamic extent
            return
        L = n.layout.layout
        ext = _static(n.extents)
        if ext is None or prod(ext) * L.replicate_size > ENUM_LIMIT:
            return
        rows = None
        for acc in n.accesses:
            if not acc.write:
                continue
            F = self.known(acc.buffer)
            if F is None or not isinstance(F, Fragment):
                continue
            if any(not any(v is w for w in n.vars) for v in _vars(acc.indices)):
                continue  # indexed by inner serial loops: checked at lowering
            perm = access_perm(acc.indices, n.vars, n.extents, _static(acc.buffer.shape))
            if perm is not None:
                derived = loop_from_fragment(F, perm, ext)
                if derived is not None and _struct_equal(derived, L):
                    continue  # the loop runs exactly where the fragment lives
            if rows is None:
                rows = _executors(L)
            idx_fn = _index_fn(acc.indices, n.vars)
            holders = _holders(F)
            exact = perm is not None
            for it, threads in rows.items():
                if any(x >= m for x, m in zip(it, ext)):
                    continue  # padding iterations are guarded off
                e = idx_fn(it)
                h = holders.get(e)
                if h is None:
                    continue  # out of the tile: legalisation drops it
                if not threads <= h or (exact and acc.buffer.scope == "local.fragment" and h != threads):
                    d = self.buf[acc.buffer]
                    raise LayoutError(
                        f"the T.Parallel loop at {_where(n.span)} writes `{acc.buffer.name}`{list(e)} from thread(s) "
                        f"{sorted(threads)[:4]}, but {d.why} ({_where(d.span)}) placed that element in thread(s) "
                        f"{sorted(h)[:4]}",
                        acc.span if acc.span.line else n.span,
                        "index the fragment by the loop variables the way its producer lays it out, or copy it into a "
                        "new fragment first",
                    )


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and a.is_equal(b)
    except Exception:  # noqa: BLE001 - incomparable layouts are different
        return False


def _struct_equal(a: Fragment, b: Fragment) -> bool:
    """Same maps written the same way (a cheap, sufficient test of equality)."""
    from ..ir.expr import structural_equal

    if a.replicate_size != b.replicate_size or tuple(a.shape) != tuple(b.shape) or len(a.index) != len(b.index):
        return False
    m = dict(zip(tuple(b.get_forward_vars()) + (b.get_rep_var(),), tuple(a.get_forward_vars()) + (a.get_rep_var(),)))
    if not structural_equal(a.thread, lsub(b.thread, m)):
        return False
    return all(structural_equal(x, lsub(y, m)) for x, y in zip(a.index, b.index))


def _brief(lay: Any) -> str:
    origin = getattr(lay, "meta", {}).get("origin")
    return f"the {origin} layout" if origin else repr(lay)


def _shapes_match(a: Buffer, b: Buffer) -> bool:
    sa, sb = _static(a.shape), _static(b.shape)
    return sa is not None and sa == sb


def _retarget(lay: Fragment, b: Buffer) -> Fragment:
    """The same map, for another buffer of the same shape (a new object so metadata stays apart)."""
    return Fragment.from_exprs(
        lay.shape, tuple(lay.get_forward_vars()), lay.thread, tuple(lay.index), lay.replicate_size, lay.get_rep_var(),
        dict(lay.meta),
    )  # fmt: skip


def _vars(indices: tuple) -> list:
    from ..ir.visitor import free_vars_of

    out: list = []
    for i in indices:
        out.extend(free_vars_of(i))
    return out


def _executors(L: Fragment) -> dict:
    """iteration tuple -> set of threads executing it."""
    out: dict = {}
    for e, _, t, _ in L.placements():
        out.setdefault(tuple(e), set()).add(t)
    return out


def _holders(F: Fragment) -> dict:
    out: dict = {}
    for e, _, t, _ in F.placements():
        out.setdefault(tuple(e), set()).add(t)
    return out


def _index_fn(indices: tuple, loop_vars: tuple):
    from ..layout._expr import compile_map

    fn = compile_map(loop_vars, tuple(indices))
    return lambda it: tuple(fn(*it))


__all__ = ["LOOP_DEPTH", "LOOP_LAYOUT", "default_fragment", "default_loop_layout", "infer_layout", "perfect_nest"]
