"""vectorize: turn `vectorized` lane loops into vector memory accesses.

Requires: per-thread IR from `lower_threads` (lane loops `For(kind="vectorized")`
of constant extent v), after `legalize_memory_access`; shared buffers still
indexed logically with their layouts in `attrs["layout_map"]`.

Guarantees: an equivalent PrimFunc (the input is never modified) without
`vectorized` loops. In each lane loop, a global or shared access whose last
index is `base + lane` (every other index and `base` lane-independent) is
done once, as one `v × elem`-byte vector (`tl::copy_vec<bytes>` through a
16-byte aligned register array; `tl::copy_vec_pred` for a load guarded by a
lane-independent `Select(cond, load, 0)`), when

* `v × elem` is 2, 4, 8 or 16 bytes;
* the access is aligned: the element offset of `base` is provably a multiple
  of v (global: row-major offsets with constant inner dims; shared: aligned
  runs of v elements are contiguous in the buffer's layout);
* it is evaluated unconditionally in the lane body (a store may sit under an
  `if` whose condition does not depend on the lane), and a buffer both loaded
  and stored in the loop is accessed at the same element by each lane.

A relaxed atomic add `tl.atomic_add(&dst[base + lane], value)` evaluated
unconditionally in the lane body (or under a lane-independent `if`), whose
`dst` is accessed nowhere else in the loop and passes the same alignment test,
becomes a per-lane store of `value` into a register array and, after the
loop, vector atomics over it: `tl::atomic_add_x2` for float16 / bfloat16
(global or shared; `atomicAdd` on `__half2` / `__nv_bfloat162`), and
`tl::atomic_add_x4` / `_x2` for float32 in global memory (one `float4` /
`float2` atomic on sm_90, per element before). Each element is still updated
atomically; only the instruction count changes.

Everything else stays per lane; the lane loop itself becomes `unrolled`.
With `pass_configs["tirx.disable_vectorize"]` every access stays per lane.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...arith import Analyzer
from ...ir.buffer import Buffer
from ...ir.dtype import int32
from ...ir.expr import (
    BufferLoad,
    FloatImm,
    IntImm,
    PrimExpr,
    Select,
    Var,
    binary,
    compare,
    const_int,
)
from ...ir.function import PrimFunc
from ...ir.stmt import Allocate, BufferStore, Evaluate, For, IfThenElse, KernelLaunch, LetStmt, SeqStmt, Stmt, seq
from ...ir.visitor import Mutator, Visitor, free_vars_of, substitute
from ...pass_config import in_force
from ...tileop.base import op_span
from ...transform.context import CompileContext
from .lower_threads import SHARED_SCOPES, address_of, tl_call
from .ops import _runs_contiguous

VECTOR_BYTES = (2, 4, 8, 16)


DISABLE_KEY = "tirx.disable_vectorize"


def vectorize(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    layouts = dict(func.attrs.get("layout_map", {}) or {})
    an = Analyzer()
    dyn = func.dynamic_vars()
    with an.scope():
        for v in dyn:
            an.bind(v, 1, 2**31 - 1)
        body = _Vec(an, layouts, not in_force(func, ctx).get(DISABLE_KEY)).visit(func.body)
    return func if body is func.body else func.with_body(body)


def _uses(e: Any, v: Var) -> bool:
    return any(x is v for x in free_vars_of(e))


class _Vec(Mutator):
    def __init__(self, an: Analyzer, layouts: dict, enabled: bool = True) -> None:
        super().__init__()
        self.an = an
        self.layouts = layouts
        self.enabled = enabled  # False (tirx.disable_vectorize): every lane loop stays per lane
        self.n = 0

    # -- scopes ------------------------------------------------------------------
    def visit_KernelLaunch(self, n: KernelLaunch) -> Any:
        with self.an.scope():
            for v, g in zip(n.block_vars, n.grid):
                self.an.bind_range(v, 0, g)
            return self.generic_visit(n)

    def visit_SeqStmt(self, n: SeqStmt) -> Any:
        with self.an.scope():
            out = []
            for s in n.stmts:
                x = self.visit(s)
                if isinstance(s, LetStmt) and s.var.dtype.is_integer:
                    try:
                        self.an.bind_value(s.var, s.value)
                    except Exception:  # noqa: BLE001 - unusable facts only mean less is known
                        pass
                out.append(x)
        if all(a is b for a, b in zip(out, n.stmts)):
            return n
        return SeqStmt(tuple(out), n.span)

    def visit_IfThenElse(self, n: IfThenElse) -> Any:
        with self.an.scope():
            try:
                self.an.assume(n.cond)
            except Exception:  # noqa: BLE001
                pass
            t = self.visit(n.then_body)
        e = self.visit(n.else_body) if n.else_body is not None else None
        if t is n.then_body and e is n.else_body:
            return n
        return IfThenElse(n.cond, t, e, n.span)

    def visit_For(self, n: For) -> Any:
        with self.an.scope():
            if n.step is None or const_int(n.step) == 1:
                self.an.bind_range(n.var, n.start, n.extent)
            body = self.visit(n.body)
            loop = n if body is n.body else replace(n, body=body)
            if n.kind == "vectorized":
                with op_span(n.span):
                    return self.lane_loop(loop)
            return loop

    # -- one lane loop --------------------------------------------------------------
    def lane_loop(self, n: For) -> Stmt:
        v = const_int(n.extent)
        unrolled = replace(n, kind="unrolled")
        if v is None or v <= 1 or const_int(n.start) != 0 or not self.enabled:
            return unrolled
        lane = n.var
        plan = _Plan(self, lane, v)
        plan.scan(n.body, conditional=False)
        plan.finish()
        if not plan.loads and not plan.stores and not plan.atomics:
            return unrolled
        pre: list = []
        post: list = []
        load_map: dict = {}
        for key, (ld, pred) in plan.loads.items():
            self.n += 1
            tmp = Buffer(f"vec{self.n}", (IntImm(v),), ld.buffer.dtype, "local")
            base = _at_lane0(ld, lane)
            nbytes = v * ld.buffer.dtype.bytes
            pre.append(Allocate(tmp))
            if pred is None:
                call = tl_call(f"tl::copy_vec<{nbytes}>", address_of(tmp, (IntImm(0),)), address_of(ld.buffer, base))
            else:
                call = tl_call(
                    f"tl::copy_vec_pred<{nbytes}>", address_of(tmp, (IntImm(0),)), address_of(ld.buffer, base), pred
                )
            pre.append(Evaluate(call))
            load_map[key] = tmp
        store_map: dict = {}
        for key, (st, cond) in plan.stores.items():
            self.n += 1
            tmp = Buffer(f"vec{self.n}", (IntImm(v),), st.buffer.dtype, "local")
            base = tuple(substitute(i, {lane: IntImm(0)}) for i in st.indices)
            nbytes = v * st.buffer.dtype.bytes
            pre.append(Allocate(tmp))
            out: Stmt = Evaluate(
                tl_call(f"tl::copy_vec<{nbytes}>", address_of(st.buffer, base), address_of(tmp, (IntImm(0),)))
            )
            if cond is not None:
                out = IfThenElse(cond, out, None)
            post.append(out)
            store_map[key] = tmp
        for key, (call, cond, chunk) in plan.atomics.items():
            self.n += 1
            dst = call.args[0].args[0]
            tmp = Buffer(f"vec{self.n}", (IntImm(v),), dst.buffer.dtype, "local")
            pre.append(Allocate(tmp))
            post.append(_vector_atomics(call, dst, tmp, lane, v, chunk, cond))
            store_map[key] = tmp
        body = _Rewrite(plan, load_map, store_map, lane).visit(n.body)
        return seq(*pre, replace(n, kind="unrolled", body=body), *post)


def _vector_atomics(call: Any, dst: BufferLoad, tmp: Buffer, lane: Var, v: int, chunk: int, cond: Any) -> Stmt:
    """`tl.atomic_add_x<chunk>(&dst[base + k], &tmp[k], order)` for k = 0, chunk, ... < v."""
    from ...ir.expr import Call

    base = _at_lane0(dst, lane)
    order = call.args[2] if len(call.args) > 2 else IntImm(0)
    calls = []
    for k in range(0, v, chunk):
        at = base[:-1] + (binary("add", base[-1], k) if k else base[-1],)
        args = (address_of(dst.buffer, at), address_of(tmp, (IntImm(k),)), order)
        calls.append(Evaluate(Call(f"tl.atomic_add_x{chunk}", args, dst.buffer.dtype)))
    out = seq(*calls)
    return out if cond is None else IfThenElse(cond, out, None)


def _atomic_add_target(e: Any) -> BufferLoad | None:
    """The element `dst[...]` of an `tl.atomic_add(&dst[...], value[, order])` call, else None."""
    from ...ir.expr import Call

    if isinstance(e, Call) and e.op == "tl.atomic_add" and len(e.args) >= 2:
        addr = e.args[0]
        if isinstance(addr, Call) and addr.op == "address_of" and isinstance(addr.args[0], BufferLoad):
            return addr.args[0]
    return None


def _at_lane0(ld: BufferLoad, lane: Var) -> tuple:
    return tuple(substitute(i, {lane: IntImm(0)}) for i in ld.indices)


def _key(buf: Buffer, indices: tuple) -> tuple:
    from ...ir.expr import StructuralKey

    return (id(buf), StructuralKey(indices))  # equal keys: structurally equal indices, not equal hashes


class _Plan(Visitor):
    """Which accesses of one lane loop become vectors."""

    def __init__(self, vec: _Vec, lane: Var, v: int) -> None:
        self.vec = vec
        self.an = vec.an
        self.lane = lane
        self.v = v
        self.loads: dict = {}  # key -> (BufferLoad, pred | None)
        self.stores: dict = {}  # key -> (BufferStore, cond | None)
        self.atomics: dict = {}  # key -> (tl.atomic_add Call, cond | None, elements per vector atomic)
        self.bad: set = set()  # buffer ids that must stay scalar
        self.indices: dict = {}  # buffer id -> set of index keys (for read/write consistency)
        self.cond: Any = None
        self.conditional = False
        self.guarded = False
        self.selects: set = set()

    def eligible(self, buf: Buffer, indices: tuple) -> bool:
        if buf.scope != "global" and buf.scope not in SHARED_SCOPES or buf.dtype.bits < 8:
            return False  # packed 4-bit elements: stored nibble by nibble (subbyte.py)
        nbytes = self.v * buf.dtype.bytes
        if nbytes not in VECTOR_BYTES:
            return False
        lane = self.lane
        if any(_uses(i, lane) for i in indices[:-1]):
            return False
        last = indices[-1]
        base = substitute(last, {lane: IntImm(0)})
        diff = self.an.simplify(binary("sub", last, base))
        if not (isinstance(diff, Var) and diff is lane):
            return False
        if buf.scope == "global":
            if buf.strides is not None:
                return False
            flat: PrimExpr = IntImm(0)
            for k, i in enumerate(indices):
                i0 = substitute(i, {lane: IntImm(0)})
                flat = binary("add", binary("mul", flat, buf.shape[k]), i0) if k else i0
            return self.an.can_prove(compare("eq", binary("floormod", flat, self.v), 0))
        lay = self.vec.layouts.get(buf)
        if lay is not None and not _runs_contiguous(lay, self.v):
            return False
        if lay is None and const_int(buf.shape[-1]) is not None and const_int(buf.shape[-1]) % self.v:
            return False
        return self.an.can_prove(compare("eq", binary("floormod", base, self.v), 0))

    def scan(self, s: Any, conditional: bool) -> None:
        old = self.conditional
        self.conditional = conditional
        self.visit(s)
        self.conditional = old

    def visit_IfThenElse(self, n: IfThenElse) -> None:
        self.visit(n.cond)
        old_g = self.guarded
        self.guarded = True
        if _uses(n.cond, self.lane) or n.else_body is not None:
            self.scan(n.then_body, True)
            if n.else_body is not None:
                self.scan(n.else_body, True)
        else:
            old_c = self.cond
            self.cond = n.cond if old_c is None else old_c & n.cond
            self.scan(n.then_body, self.conditional)
            self.cond = old_c
        self.guarded = old_g

    def visit_For(self, n: For) -> None:
        self.scan(n.body, True)

    def visit_Select(self, n: Select) -> None:
        self.visit(n.cond)
        tv = n.true_value
        zero = isinstance(n.false_value, (IntImm, FloatImm)) and n.false_value.value == 0
        if (
            isinstance(tv, BufferLoad)
            and zero
            and not _uses(n.cond, self.lane)
            and not self.conditional
            and not self.guarded
            and self.eligible(tv.buffer, tv.indices)
        ):
            self.visit(tv.indices)
            self.note_load(tv, n.cond)
            self.selects.add(id(n))
        else:
            old = self.conditional
            self.conditional = True
            self.visit(tv)
            self.visit(n.false_value)
            self.conditional = old

    def note_load(self, ld: BufferLoad, pred: Any) -> None:
        key = _key(ld.buffer, ld.indices)
        self.indices.setdefault(id(ld.buffer), set()).add(key[1])
        hit = self.loads.get(key)
        if hit is not None and (hit[1] is None) != (pred is None):
            self.bad.add(id(ld.buffer))
            return
        self.loads.setdefault(key, (ld, pred))

    def visit_BufferLoad(self, n: BufferLoad) -> None:
        self.visit(n.indices)
        if self.conditional or self.guarded or not self.eligible(n.buffer, n.indices):
            self.indices.setdefault(id(n.buffer), set()).add(None)
            return
        self.note_load(n, None)

    def visit_BufferStore(self, n: BufferStore) -> None:
        self.visit(n.indices)
        self.visit(n.value)
        key = _key(n.buffer, n.indices)
        self.indices.setdefault(id(n.buffer), set()).add(key[1])
        if self.conditional or not self.eligible(n.buffer, n.indices) or key in self.stores:
            self.bad.add(id(n.buffer))
            return
        self.stores[key] = (n, self.cond)

    def atomic_chunk(self, dst: BufferLoad) -> int:
        """Elements per vector atomic add into `dst` (0: keep it scalar)."""
        base = dst.buffer.dtype.base
        if base in ("float16", "bfloat16"):
            chunk = 2
        elif base == "float32" and dst.buffer.scope == "global":  # float2/float4 atomics: global only
            chunk = 4 if self.v % 4 == 0 else 2
        else:
            return 0
        if self.v % chunk or self.conditional or not self.eligible(dst.buffer, dst.indices):
            return 0
        return chunk

    def relaxed(self, call: Any) -> bool:
        """Only relaxed atomics move after the lane loop: an acquire / release one orders the
        accesses around it."""
        order = call.args[2] if len(call.args) > 2 else IntImm(0)
        return const_int(order) == 0

    def visit_Evaluate(self, n: Evaluate) -> None:
        # calls taking addresses (atomics, copies) may touch any buffer: keep those scalar,
        # except an atomic add that becomes vector atomics
        from ...ir.expr import Call

        dst = _atomic_add_target(n.value)
        chunk = self.atomic_chunk(dst) if dst is not None and self.relaxed(n.value) else 0
        if chunk:
            self.visit(dst.indices)
            self.visit(n.value.args[1:])
            key = _key(dst.buffer, dst.indices)
            self.indices.setdefault(id(dst.buffer), set()).add(key[1])
            if key in self.atomics:
                self.bad.add(id(dst.buffer))
            self.atomics[key] = (n.value, self.cond, chunk)
            return
        for c in _calls(n.value):
            if isinstance(c, Call) and c.op == "address_of":
                ld = c.args[0]
                if isinstance(ld, BufferLoad):
                    self.bad.add(id(ld.buffer))
        self.visit(n.value)

    def finish(self) -> None:
        for bid, keys in self.indices.items():
            stored = any(k[0] == bid for k in self.stores)
            if stored and (len(keys) > 1 or None in keys):
                self.bad.add(bid)
        for bid, keys in self.indices.items():
            # a vector atomic's destination must not be touched otherwise in the loop
            if any(k[0] == bid for k in self.atomics) and (len(keys) > 1 or None in keys):
                self.bad.add(bid)
        self.loads = {k: x for k, x in self.loads.items() if k[0] not in self.bad}
        self.stores = {k: x for k, x in self.stores.items() if k[0] not in self.bad}
        self.atomics = {k: x for k, x in self.atomics.items() if k[0] not in self.bad}


def _calls(e: Any) -> list:
    from ...ir.expr import Call
    from ...ir.visitor import collect

    return collect(e, lambda x: isinstance(x, Call))


class _Rewrite(Mutator):
    def __init__(self, plan: _Plan, load_map: dict, store_map: dict, lane: Var) -> None:
        super().__init__()
        self.plan = plan
        self.load_map = load_map
        self.store_map = store_map
        self.lane = lane
        self.selects = plan.selects

    def visit_Select(self, n: Select) -> Any:
        tv = n.true_value
        if id(n) in self.selects and isinstance(tv, BufferLoad):
            tmp = self.load_map.get(_key(tv.buffer, tv.indices))
            if tmp is not None and self.plan.loads[_key(tv.buffer, tv.indices)][1] is not None:
                return BufferLoad(tmp, (self.lane,), tv.dtype, tv.span)
        return self.generic_visit(n)

    def visit_BufferLoad(self, n: BufferLoad) -> Any:
        key = _key(n.buffer, n.indices)
        tmp = self.load_map.get(key)
        if tmp is not None and self.plan.loads[key][1] is None:
            return BufferLoad(tmp, (self.lane,), n.dtype, n.span)
        return self.generic_visit(n)

    def visit_Evaluate(self, n: Evaluate) -> Any:
        dst = _atomic_add_target(n.value)
        if dst is not None:
            tmp = self.store_map.get(_key(dst.buffer, dst.indices))
            if tmp is not None and _key(dst.buffer, dst.indices) in self.plan.atomics:
                return BufferStore(tmp, (self.lane,), self.visit(n.value.args[1]), n.span)
        return self.generic_visit(n)

    def visit_BufferStore(self, n: BufferStore) -> Any:
        value = self.visit(n.value)
        key = _key(n.buffer, n.indices)
        tmp = self.store_map.get(key)
        if tmp is not None:
            return BufferStore(tmp, (self.lane,), value, n.span)
        return n if value is n.value else replace(n, value=value)


_ = (int32, compare)
