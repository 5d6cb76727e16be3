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

Everything else stays per lane; the lane loop itself becomes `unrolled`.
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
from ...tileop.base import op_span
from .lower_threads import SHARED_SCOPES, address_of, tl_call
from .ops import _runs_contiguous

VECTOR_BYTES = (2, 4, 8, 16)


def vectorize(func: PrimFunc, ctx: dict | None = None) -> PrimFunc:
    layouts = dict(func.attrs.get("layout_map", {}) or {})
    an = Analyzer()
    dyn = func.dynamic_vars()
    with an.scope():
        for v in dyn:
            an.bind(v, 1, 2**31 - 1)
        body = _Vec(an, layouts).visit(func.body)
    return func if body is func.body else func.with_body(body)


def _uses(e: Any, v: Var) -> bool:
    return any(x is v for x in free_vars_of(e))


class _Vec(Mutator):
    def __init__(self, an: Analyzer, layouts: dict) -> None:
        super().__init__()
        self.an = an
        self.layouts = layouts
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
        if v is None or v <= 1 or const_int(n.start) != 0:
            return unrolled
        lane = n.var
        plan = _Plan(self, lane, v)
        plan.scan(n.body, conditional=False)
        plan.finish()
        if not plan.loads and not plan.stores:
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
        body = _Rewrite(plan, load_map, store_map, lane).visit(n.body)
        return seq(*pre, replace(n, kind="unrolled", body=body), *post)


def _at_lane0(ld: BufferLoad, lane: Var) -> tuple:
    return tuple(substitute(i, {lane: IntImm(0)}) for i in ld.indices)


def _key(buf: Buffer, indices: tuple) -> tuple:
    from ...ir.expr import structural_hash

    return (id(buf), structural_hash(indices))


class _Plan(Visitor):
    """Which accesses of one lane loop become vectors."""

    def __init__(self, vec: _Vec, lane: Var, v: int) -> None:
        self.vec = vec
        self.an = vec.an
        self.lane = lane
        self.v = v
        self.loads: dict = {}  # key -> (BufferLoad, pred | None)
        self.stores: dict = {}  # key -> (BufferStore, cond | None)
        self.bad: set = set()  # buffer ids that must stay scalar
        self.indices: dict = {}  # buffer id -> set of index keys (for read/write consistency)
        self.cond: Any = None
        self.conditional = False
        self.guarded = False
        self.selects: set = set()

    def eligible(self, buf: Buffer, indices: tuple) -> bool:
        if buf.scope != "global" and buf.scope not in SHARED_SCOPES:
            return False
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

    def visit_Evaluate(self, n: Evaluate) -> None:
        # calls taking addresses (atomics, copies) may touch any buffer: keep those scalar
        from ...ir.expr import Call

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
        self.loads = {k: x for k, x in self.loads.items() if k[0] not in self.bad}
        self.stores = {k: x for k, x in self.stores.items() if k[0] not in self.bad}


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

    def visit_BufferStore(self, n: BufferStore) -> Any:
        value = self.visit(n.value)
        key = _key(n.buffer, n.indices)
        tmp = self.store_map.get(key)
        if tmp is not None:
            return BufferStore(tmp, (self.lane,), value, n.span)
        return n if value is n.value else replace(n, value=value)


_ = (int32, compare)
