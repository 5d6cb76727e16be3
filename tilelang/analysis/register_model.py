"""A register-pressure model of the per-thread IR the CUDA code generator consumes.

Requires: the per-thread PrimFunc after `plan_shared_memory` (register arrays are `local`
allocations; tile ops are per-thread statements and calls of the `tl::` templates). Guarantees:
`pressure(func)` is the number of 32-bit registers live at the kernel's peak point (with where
that point is), computed only from the IR, by a liveness scan in program order:

- points: every statement; a fully unrolled nest (a `T.unroll` / vectorized loop, or a serial loop
  with a constant trip count that nvcc unrolls by itself: `NVCC_UNROLL_BUDGET`) is scanned
  instance by instance with its loop variables bound, so register-array indices are constants;
- register-array elements and let-bound scalars are live from their first to their last access
  (an element defined before a rolled loop and used in it stays live through the whole loop:
  loop-carried accumulators); a pointer into an array passed to a template touches the elements
  the template reads or writes (`copy_vec<16>`: 16 bytes), a whole-array use (a gemm's
  accumulator) every element;
- on top, at each point, the values of the statement itself: the distinct memory words the
  enclosing unrolled nest loads (issued ahead of their uses; `LOAD_BATCH` in flight at most; a
  load into an array of the nest's own is in flight for the other instances only: the current
  instance's values are that array's elements) and a
  64-bit address per global tensor it touches (guarded per instance at sm_90: fewer in flight,
  `GUARDED_LOAD_BATCH_BY_MAJOR`); at a `tl::gemm_ss` / `gemm_rs` call the operand fragments our
  mma.sync template (`include/tl/gemm.h`) holds per warp — A (4 words per m16 atom) and B (2 per
  n8 atom) of a K-step, double-buffered inside a K loop, plus one shared address per ldmatrix of
  every K-step (outside a loop: one K-step, addresses folded into immediates; tf32: scalar loads,
  every K-step's fragments) — `register_templates.py`; at a wgmma call its descriptors
  (`WGMMA_WORDS`); an ABI call (printf, assert: `CALL_REGISTERS`), an IEEE float division's
  slow path (`FDIV_WORDS`) or an all-reduce across warps (shared scratch: `XWARP_REDUCE_WORDS`);
- in a K loop nvcc fully unrolls (`NVCC_FULL_UNROLL_TRIPS`), one register per guarded epilogue
  store at each 16/8-bit mma.sync gemm: ptxas computes those bounds guards ahead, through the
  straight-line gemms; at each wgmma, the words the next iteration's copies stage through
  registers, loaded ahead under it (`register_schedule.py`);
- through a rolled loop, the 64-bit addresses and row predicates of its global accesses with a
  run-time stride (dynamic shapes: `register_schedule.WIDE_ADDRESS_WORDS` per unrolled instance),
  computed before it.

`resources.estimate_registers` adds the floor every kernel holds. The constants are measured
with nvcc 13 (a bare printf kernel, `x / y`) or calibrated once on the reference kernels
(`LOAD_BATCH`, `WGMMA_WORDS`), or by varying one generated source (`#pragma unroll 1`, guards
removed: NVCC_FULL_UNROLL_TRIPS, the guard term); `tests/analysis/test_estimate.py` compares
every reference kernel and four kernels outside the catalogue with ptxas, listing the misses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ir.buffer import Buffer
from ..ir.expr import BinaryOp, BufferLoad, Call, Cast, FloatImm, Select, StringImm, StructuralKey, Var, const_int
from ..ir.node import Node, child_fields
from ..ir.stmt import Allocate, BufferStore, Evaluate, For, IfThenElse, KernelLaunch, LetStmt, SeqStmt, While
from .register_index import evaluate, flat_index
from .register_schedule import (  # noqa: F401 - the address constants re-exported
    INVARIANT_ROW_ADDRESS_WORDS,
    WIDE_ADDRESS_WORDS,
    hoist_into_unrolled_k_loops,
    staged_copy_words,
    wide_address_words,
)
from .register_templates import (  # noqa: F401 - WGMMA_WORDS re-exported
    WGMMA_WORDS,
    XWARP_REDUCE_WORDS,
    cross_warp_reduce,
    gemm_fragments,
    gemm_operand_bits,
    pointee_elements,
    pointer_buffer,
    staged_words,
    template_ints,
)
from .resources import numel

REG_SCOPES = ("local", "local.var")
UNROLLED_KINDS = ("unrolled", "vectorized")
EXTERNAL_CALLS = ("tl.print", "tl.assert_fail")  # vprintf / __assertfail: real calls
CALL_REGISTERS = 24  # ptxas's count for any kernel that makes an ABI call (measured: a bare printf)
FDIV_WORDS = 6  # the IEEE division's slow-path subroutine: its operands and scratch (measured: x / y)
NVCC_UNROLL_BUDGET = 256  # statements nvcc's loop unroller spends on fully unrolling one loop without a pragma
EXPAND_LIMIT = 1024  # unrolled instances scanned one by one (larger nests: one point)
LOAD_BATCH = 20  # memory words a fully unrolled nest keeps in flight at most (see estimate_registers)
# ptxas for sm_90 issues fewer of an unrolled nest's *guarded* loads (under an `if` on the unrolled index) ahead
# of their uses than for sm_80; unguarded ones it batches alike (measured, nvcc 13: the 16 guarded
# pairs of float loads of seed.elementwise_op hold 32 registers at sm_80, 22 at sm_90a; the
# unguarded loads of gemv / prefix_sum the same count at both); keyed by the major version
GUARDED_LOAD_BATCH_BY_MAJOR = {9: 10}
# nvcc fully unrolls a K loop of at most this many iterations around an mma.sync gemm (measured, nvcc 13:
# 7 iterations of a 128x128x32 gemm body are unrolled, 8 are not; a 64x64x32 body rolls at 12)
NVCC_FULL_UNROLL_TRIPS = 7


def words(buf_or_dtype: Any) -> int:
    dt = getattr(buf_or_dtype, "dtype", buf_or_dtype)
    return max(1, -(-dt.bits * dt.lanes // 32))


def array_words(buf: Buffer) -> int | None:
    n = numel(buf)
    if n is None:
        return None
    return max(1, -(-n * buf.dtype.bits * buf.dtype.lanes // 32))


@dataclass
class Pressure:
    peak: int = 0  # live 32-bit words at the peak point
    arrays: int = 0  # of which register arrays
    transient: int = 0  # of which the peak statement's own values (loads in flight, fragments, addresses)
    gemm_family: str = ""  # the family of the gemm at the peak point ("" when the peak is elsewhere)
    live: list = field(default_factory=list)  # names of the arrays live at the peak
    raised_to: int = 0  # the largest setmaxnreg.inc limit a warpgroup raises itself to (0: none)


@dataclass
class _Point:
    index: int
    transient: int
    family: str = ""


class _Scan:
    """Program-order points of the kernel body, the accesses of every register array, and the
    rolled loops (as ranges of points)."""

    def __init__(self, reg_arrays: dict, floor: int, fast_math: bool, load_batch: int = LOAD_BATCH) -> None:
        self.reg_arrays = reg_arrays  # Buffer -> words
        self.guarded_load_batch = load_batch  # LOAD_BATCH for guarded loads on the target architecture
        self.floor, self.fast_math = floor, fast_math
        self.points: list[_Point] = []
        self.access: dict[tuple, list[int]] = {}  # (array, generation, element | None) -> points
        self.loops: list[tuple[int, int]] = []  # (first point, last point) of every rolled loop
        self.raised_to = 0
        self.generation: dict[Buffer, int] = {}  # an array declared in an unrolled nest: one per instance
        self.in_flight_into: set = set()  # the nest's own arrays whose loads the scheduler hoists
        self.templates: dict[int, tuple] = {}  # id(statement) -> (statement, accesses, subroutine words)
        self.scalar_of: dict = {}  # let-bound Var -> its latest definition (var, point)
        self.scalars: dict = {}  # definition -> the points that define and read it
        self.guarded_stores: list[int] = []  # points of a guarded store of a register value to global memory
        # (last point, 16/8-bit mma.sync points, wgmma points, staged copy words) per unrolled K loop
        self.unrolled_k_loops: list[tuple[int, list, list, int]] = []
        self.mma_points: list[int] = []  # 16/8-bit mma.sync gemm points of the loop being scanned
        self.wgmma_points: list[int] = []  # wgmma gemm points of the loop being scanned
        self.loop_depth = 0  # rolled loops around the statement being scanned
        self.resident: list[tuple[int, int, int]] = []  # (first, last point, words) live through a loop

    # -- expressions ---------------------------------------------------------------------------
    def traffic(self, node: Any, mem: dict, tensors: set) -> None:
        """The words `node` loads from memory into registers of their own (into `mem`, one entry
        per distinct load) and the global tensors it addresses (into `tensors`)."""
        if isinstance(node, Buffer):
            if node.scope == "global":
                tensors.add(node)
            return
        if isinstance(node, Call) and node.op == "address_of" and node.args and isinstance(node.args[0], BufferLoad):
            ld = node.args[0]  # a pointer, not a load: cp.async and the templates read through it
            self.traffic(ld.buffer, mem, tensors)
            self.traffic(ld.indices, mem, tensors)
            return
        if isinstance(node, Call) and node.args and isinstance(node.args[0], StringImm):
            dst = pointer_buffer(node.args[1]) if len(node.args) > 2 else None
            src = pointer_buffer(node.args[2]) if len(node.args) > 2 else None
            staged = staged_words(node.args[0].value)
            if staged and src not in self.reg_arrays and (dst not in self.reg_arrays or dst in self.in_flight_into):
                mem[StructuralKey(node)] = staged  # global -> shared through registers, or hoisted
        if (
            isinstance(node, BufferStore)
            and node.buffer in self.reg_arrays
            and node.buffer not in self.in_flight_into
            and _is_load(node.value) is not None
        ):
            # a copy into a register array: the loaded value lives in the array's registers
            ld = _is_load(node.value)
            self.traffic(ld.buffer, mem, tensors)
            self.traffic(ld.indices, mem, tensors)
            self.traffic(node.indices, mem, tensors)
            return
        if isinstance(node, BufferLoad) and node.buffer not in self.reg_arrays:
            mem[StructuralKey(node)] = words(node.dtype)  # the same load twice: one value (CSE)
            if node.buffer.scope == "global":
                tensors.add(node.buffer)
        if isinstance(node, Node):
            for name in child_fields(type(node)):
                v = getattr(node, name)
                if isinstance(v, (tuple, list)):
                    for x in v:
                        self.traffic(x, mem, tensors)
                else:
                    self.traffic(v, mem, tensors)

    def point(self, node: Any, transient: int, family: str = "", env: dict | None = None) -> None:
        i = len(self.points)
        accesses, extra = self.template(node)
        self.points.append(_Point(i, transient + extra, family))
        env = env or {}
        for kind, a, b, width in accesses:
            if kind in ("call", "fdiv", "xwarp"):
                continue
            if kind == "var":
                key = self.scalar_of.get(a)
                if key is not None:
                    self.scalars[key].append(i)
                continue
            start = flat_index(a, b, env) if b is not None else None
            gen = self.generation.get(a, 0)
            if start is None or width is None:
                self.access.setdefault((a, gen, None), []).append(i)
            else:
                for j in range(start, start + width):
                    self.access.setdefault((a, gen, j), []).append(i)
        if isinstance(node, LetStmt):  # a scalar: live from here to its last use
            self.scalar_of[node.var] = key = (node.var, i)
            self.scalars[key] = [i]

    def template(self, node: Any) -> tuple[list, int]:
        """What a statement touches, computed once per statement (an unrolled nest repeats it):
        [(\"at\", array, indices | None, elements | None) | (\"var\", Var, None, None)] and the
        registers of the subroutines it calls."""
        got = self.templates.get(id(node))
        if got is None:
            accesses: list = []
            self.accesses(node, accesses)
            got = self.templates[id(node)] = (node, accesses, self.subroutine_words(accesses))
        return got[1], got[2]

    def accesses(self, node: Any, out: list, width: int | None = None) -> None:
        """Register-array accesses of `node` (a pointer into an array touches `width` elements from
        it; None: unknown, the whole array) and reads of let-bound scalars, in any order."""
        if isinstance(node, (BufferLoad, BufferStore)) and node.buffer in self.reg_arrays:
            out.append(("at", node.buffer, node.indices, 1))
            self.accesses(node.indices, out)
            if isinstance(node, BufferStore):
                self.accesses(node.value, out)
            return
        if isinstance(node, Call) and node.op == "address_of" and node.args and isinstance(node.args[0], BufferLoad):
            ld = node.args[0]
            if ld.buffer in self.reg_arrays:
                out.append(("at", ld.buffer, ld.indices, width))
            self.accesses(ld.indices, out)
            return
        if isinstance(node, Call) and node.args and isinstance(node.args[0], StringImm):
            if node.args[0].value.startswith("tl::warpgroup_reg_alloc<"):
                got = template_ints(node.args[0].value, 1)
                self.raised_to = max(self.raised_to, got[0] if got else 0)
        if isinstance(node, Call) and node.op in EXTERNAL_CALLS:
            out.append(("call", None, None, len(node.args)))
        elif isinstance(node, BinaryOp) and node.op == "div" and node.dtype.is_float:
            out.append(("fdiv", None, None, None))
        elif isinstance(node, Call) and node.op == "tl.all_reduce" and cross_warp_reduce(node):
            out.append(("xwarp", None, None, None))
        if isinstance(node, Call) and node.args and isinstance(node.args[0], StringImm):
            per_array = pointee_elements(node.args[0].value)
            for a in node.args[1:]:
                buf = pointer_buffer(a)
                w = max(1, per_array(buf)) if per_array is not None and buf is not None else None
                self.accesses(a, out, w)
            return
        if isinstance(node, Buffer):
            if node in self.reg_arrays:
                out.append(("at", node, None, None))
            return
        if isinstance(node, LetStmt):  # its variable is defined here, not read
            self.accesses(node.value, out)
            return
        if isinstance(node, Var):
            out.append(("var", node, None, None))
            return
        if isinstance(node, (tuple, list)):
            for x in node:
                self.accesses(x, out)
        elif isinstance(node, Node):
            for name in child_fields(type(node)):
                self.accesses(getattr(node, name), out)

    def subroutine_words(self, accesses: list) -> int:
        """Registers a statement needs for the calls it makes: printf / assert call an external
        function under the ABI (CALL_REGISTERS at least, with the arguments on top); an IEEE float
        division (not under fast math) runs a slow-path subroutine (FDIV_WORDS); an all-reduce over
        several warps goes through shared scratch (XWARP_REDUCE_WORDS)."""
        calls = [n for kind, _, _, n in accesses if kind == "call"]
        if calls:
            return max(0, CALL_REGISTERS - self.floor) + max(calls)
        extra = XWARP_REDUCE_WORDS if any(kind == "xwarp" for kind, *_ in accesses) else 0
        if not self.fast_math and any(kind == "fdiv" for kind, *_ in accesses):
            return FDIV_WORDS + extra
        return extra

    # -- statements ----------------------------------------------------------------------------
    def stmt(self, s: Any) -> None:
        if s is None:
            return
        if isinstance(s, SeqStmt):
            for x in s.stmts:
                self.stmt(x)
        elif isinstance(s, KernelLaunch):
            self.stmt(s.body)
        elif isinstance(s, For) and _unrolled(s):
            self.unrolled_nest(s)
        elif isinstance(s, (For, While)):
            first = len(self.points)
            if isinstance(s, While):
                self.point(s.cond, 0)
            outer, self.mma_points = self.mma_points, []
            outer_wgmma, self.wgmma_points = self.wgmma_points, []
            per_thread = isinstance(s, For) and s.kind == "thread"  # the thread index, not a loop
            self.loop_depth += 0 if per_thread else 1
            self.stmt(s.body)
            self.loop_depth -= 0 if per_thread else 1
            self.loops.append((first, len(self.points) - 1))
            if not per_thread:
                loop_var = s.var if isinstance(s, For) else None
                self.resident.append((first, len(self.points) - 1, wide_address_words(s.body, loop_var)))
            trips = const_int(s.extent) if isinstance(s, For) and s.kind == "serial" else None
            if (self.mma_points or self.wgmma_points) and trips is not None and trips <= NVCC_FULL_UNROLL_TRIPS:
                staged = staged_copy_words(s.body, self.reg_arrays) if self.wgmma_points else 0
                self.unrolled_k_loops.append((len(self.points) - 1, self.mma_points, self.wgmma_points, staged))
            self.mma_points = outer + self.mma_points
            self.wgmma_points = outer_wgmma + self.wgmma_points
        elif isinstance(s, IfThenElse):
            if _guards_register_store(s, self.reg_arrays):
                self.guarded_stores.append(len(self.points))
            self.point(s.cond, 0)
            self.stmt(s.then_body)
            self.stmt(s.else_body)
        elif isinstance(s, Allocate):  # a declaration: its array is live from its first access
            self.stmt(getattr(s, "body", None))
        else:
            gemm = gemm_fragments(s, self.loop_depth > 0)
            if gemm is not None:
                if gemm[1] == "mma.sync" and gemm_operand_bits(s) < 32:
                    self.mma_points.append(len(self.points))
                if gemm[1] == "wgmma":
                    self.wgmma_points.append(len(self.points))
                self.point(s, gemm[0], gemm[1])
            else:
                mem: dict = {}
                tensors: set = set()
                self.traffic(s, mem, tensors)
                self.point(s, min(LOAD_BATCH, sum(mem.values())) + 2 * len(tensors))

    def unrolled_nest(self, s: For) -> None:
        """A fully unrolled nest is straight-line code: one point whose own values are the
        memory words it loads (at most LOAD_BATCH in flight) and the 64-bit addresses of the
        global tensors it touches; a gemm inside counts as at a gemm."""
        mult = 1
        body: Any = s
        while isinstance(body, For) and _unrolled(body):
            mult *= const_int(body.extent)
            body = body.body
        gemm = gemm_fragments(body, self.loop_depth > 0)
        mem: dict = {}
        tensors: set = set()
        self.in_flight_into = hoisted = self.hoisted_arrays(body)
        self.traffic(body, mem, tensors)
        self.in_flight_into = set()
        from ..ir.visitor import collect

        nest_vars = set()
        loop: Any = s
        while isinstance(loop, For) and _unrolled(loop):
            nest_vars.add(loop.var)
            loop = loop.body
        # guarded per instance: a bounds guard on the unrolled index (a guard on the thread index
        # alone, `tx < 64`, is one branch around the whole nest)
        guarded = any(
            collect(c.cond, lambda n: isinstance(n, Var) and n in nest_vars)
            for c in collect(body, lambda n: isinstance(n, IfThenElse))
        )
        batch = self.guarded_load_batch if guarded else LOAD_BATCH
        # the current instance's loads into its own arrays are counted as those arrays' elements
        # (live from the load to the use): in flight are the other instances' loads
        current = sum(self.reg_arrays[b] for b in hoisted if _loaded_into(body, b, self.reg_arrays))
        in_flight = min(batch, max(0, sum(mem.values()) * mult - current))
        transient = in_flight + 2 * len(tensors)
        if gemm is not None and gemm[0] > transient:
            self.point(s, gemm[0], gemm[1])
        elif mult <= EXPAND_LIMIT:  # one point per instance: array elements die where last read
            self.expand(s, {}, transient)
        else:
            self.point(s, transient)

    def hoisted_arrays(self, body: Any) -> set:
        """The register arrays declared inside an unrolled nest whose values are not also kept in
        an outer array (a load into `vec`, then `x_frag[i] = vec[j]`: they are): the scheduler
        issues their loads ahead, across instances, so they count as loads in flight."""
        from ..ir.visitor import collect

        local = {a.buffer for a in collect(body, lambda n: isinstance(n, Allocate)) if a.buffer in self.reg_arrays}
        out = set()
        for buf in local:
            copies = collect(body, lambda n, b=buf: isinstance(n, BufferStore) and isinstance(n.value, BufferLoad)
                             and n.value.buffer is b and n.buffer in self.reg_arrays and n.buffer not in local)  # fmt: skip
            if not copies:  # copied into an outer array: its values live there anyway
                out.add(buf)
        return out

    def expand(self, s: Any, env: dict, transient: int) -> None:
        """The instances of an unrolled nest in program order, each a point carrying the nest's
        own values (`transient`), with the unrolled loop variables bound in `env`."""
        if s is None:
            return
        if isinstance(s, SeqStmt):
            for x in s.stmts:
                self.expand(x, env, transient)
        elif isinstance(s, For) and _unrolled(s):
            start = evaluate(s.start, env)
            if start is None:
                self.point(s, transient, env=env)
                return
            for v in range(start, start + const_int(s.extent)):
                self.expand(s.body, {**env, s.var: v}, transient)
        elif isinstance(s, IfThenElse):
            if _guards_register_store(s, self.reg_arrays):
                self.guarded_stores.append(len(self.points))
            self.point(s.cond, transient, env=env)
            self.expand(s.then_body, env, transient)
            self.expand(s.else_body, env, transient)
        elif isinstance(s, Allocate):  # a fresh array per instance (the compiler renames it)
            self.generation[s.buffer] = self.generation.get(s.buffer, 0) + 1
            self.expand(getattr(s, "body", None), env, transient)
        else:
            self.point(s, transient, env=env)


def _loaded_into(body: Any, buf: Buffer, reg_arrays: dict) -> bool:
    """Whether `body` fills `buf` from memory (a staging copy template, or a load stored into it)."""
    from ..ir.visitor import collect

    def fills(n: Any) -> bool:
        if isinstance(n, BufferStore) and n.buffer is buf:
            ld = _is_load(n.value)
            return ld is not None and ld.buffer not in reg_arrays
        if isinstance(n, Call) and len(n.args) > 2 and isinstance(n.args[0], StringImm):
            return staged_words(n.args[0].value) > 0 and pointer_buffer(n.args[1]) is buf
        return False

    return bool(collect(body, fills))


def _is_load(e: Any) -> BufferLoad | None:
    """`e` when it is a memory load (possibly converted), else None."""
    if isinstance(e, Select):  # a masked load: the load or a constant
        t, f = _is_load(e.true_value), _is_load(e.false_value)
        other = e.false_value if t is not None else e.true_value
        return (t if t is not None else f) if const_int(other) is not None or isinstance(other, FloatImm) else None
    while isinstance(e, Cast) or (isinstance(e, Call) and e.op == "tl.call" and len(e.args) == 2
                                   and isinstance(e.args[0], StringImm) and e.args[0].value.startswith("tl::cvt")):  # fmt: skip
        e = e.value if isinstance(e, Cast) else e.args[1]
    return e if isinstance(e, BufferLoad) else None


_UNROLLED_CACHE: dict[int, tuple] = {}


def _unrolled(s: For) -> bool:
    """`_straight_line(s)`, remembered per loop (a nest asks for each loop several times)."""
    got = _UNROLLED_CACHE.get(id(s))
    if got is None or got[0] is not s:
        if len(_UNROLLED_CACHE) > 4096:
            _UNROLLED_CACHE.clear()
        got = _UNROLLED_CACHE[id(s)] = (s, _straight_line(s))
    return got[1]


def _straight_line(s: For) -> bool:
    """Straight-line code after compilation: an unrolled loop of constant extent, or a serial
    one nvcc unrolls by itself — a constant trip count whose unrolled body stays within
    NVCC_UNROLL_BUDGET statements. A loop with a barrier, a gemm or an inner loop counts as rolled:
    nvcc unrolls short ones too (a K loop of 2-3 steps), but what ptxas then schedules across
    the steps is its own choice (tests/analysis/test_estimate.py lists the kernels it changes)."""
    ext = const_int(s.extent)
    if ext is None:
        return False
    if s.kind in UNROLLED_KINDS:
        return True
    if s.kind != "serial":
        return False
    from ..ir.visitor import collect

    if collect(s.body, lambda n: isinstance(n, (For, While)) or (isinstance(n, Call) and _is_barrier(n))):
        return False
    return ext * len(collect(s.body, lambda n: isinstance(n, (BufferStore, Evaluate)))) <= NVCC_UNROLL_BUDGET


def _is_barrier(c: Call) -> bool:
    name = c.args[0].value if c.args and isinstance(c.args[0], StringImm) else c.op
    return isinstance(name, str) and ("sync" in name or "gemm" in name or "barrier" in name or "wait" in name)


def _guards_register_store(s: IfThenElse, reg_arrays: dict) -> bool:
    """A bounds guard around a plain store of a register-array value to global memory (the
    epilogue of a tile whose edge is not a tile multiple): `if (row < M && col < N) C[...] = acc[i]`.
    Atomics and copy templates are calls, not stores: they do not count."""
    body = s.then_body
    if s.else_body is not None or not isinstance(body, BufferStore) or body.buffer.scope != "global":
        return False
    from ..ir.visitor import collect

    return bool(collect(body.value, lambda n: isinstance(n, BufferLoad) and n.buffer in reg_arrays))


def guarded_load_batch_of(arch: str | None) -> int:
    """The in-flight limit of guarded loads for `arch` ("sm_90a" -> major 9); LOAD_BATCH otherwise."""
    digits = (arch or "").removeprefix("sm_").rstrip("abf")
    return GUARDED_LOAD_BATCH_BY_MAJOR.get(int(digits) // 10, LOAD_BATCH) if digits.isdigit() else LOAD_BATCH


def pressure(func: Any, floor: int = 0, fast_math: bool = False, arch: str | None = None) -> Pressure | None:
    """The peak register pressure of the per-thread `func` on top of `floor` registers every
    kernel holds (`fast_math`: the build uses --use_fast_math, float division is inline; `arch`:
    the target, for GUARDED_LOAD_BATCH_BY_MAJOR); None when a register array has a size that is not
    constant."""
    from .resources import allocations

    reg_arrays: dict = {}
    for a in allocations(func):
        b = a.buffer
        if b.scope in REG_SCOPES:
            w = array_words(b)
            if w is None:
                return None
            reg_arrays[b] = w
    scan = _Scan(reg_arrays, floor, fast_math, guarded_load_batch_of(arch))
    scan.stmt(func.body)
    if not scan.points:
        return Pressure()
    count = len(scan.points)
    delta = [0.0] * (count + 1)  # live words, as differences between neighbouring points
    at_peak: list[tuple[Buffer, int, int]] = []
    for buf, idxs in _per_element(scan.access, reg_arrays).items():
        weight = buf.dtype.bits * buf.dtype.lanes / 32
        for elem_points in idxs:
            lo, hi = min(elem_points), max(elem_points)
            for first, last in scan.loops:
                # defined before a rolled loop that uses it: live around the loop's back edge
                if lo < first and any(first <= i <= last for i in elem_points):
                    hi = max(hi, last)
            delta[lo] += weight
            delta[hi + 1] -= weight
            at_peak.append((buf, lo, hi))
    for (var, _), pts in scan.scalars.items():
        lo, hi = min(pts), max(pts)
        for first, last in scan.loops:
            if lo < first and any(first <= i <= last for i in pts):
                hi = max(hi, last)
        delta[lo] += words(var.dtype)
        delta[hi + 1] -= words(var.dtype)
    hoist_into_unrolled_k_loops(scan)
    for first, last, resident in scan.resident:
        for i in range(first, last + 1):
            scan.points[i].transient += resident
    live_at, run = [], 0.0
    for i in range(count):
        run += delta[i]
        live_at.append(int(-(-round(run, 6) // 1)))
    best = max(range(count), key=lambda i: live_at[i] + scan.points[i].transient)
    p = scan.points[best]
    names = sorted({b.name for b, lo, hi in at_peak if lo <= best <= hi})
    return Pressure(live_at[best] + p.transient, live_at[best], p.transient, p.family, names, scan.raised_to)


def _per_element(access: dict, reg_arrays: dict) -> dict:
    """{array: [points of one element, ...]} from accesses keyed (array, generation, index): a
    whole-array access (index None) counts for every element of that generation."""
    whole: dict = {}
    single: dict = {}
    for (buf, gen, idx), pts in access.items():
        if idx is None:
            whole.setdefault((buf, gen), []).extend(pts)
        else:
            single.setdefault((buf, gen), {}).setdefault(idx, []).extend(pts)
    out: dict = {}
    for key in set(whole) | set(single):
        buf = key[0]
        common, elems = whole.get(key, []), single.get(key, {})
        out.setdefault(buf, []).extend(common + elems.get(i, []) for i in range(_numel(buf)) if common or i in elems)
    return out


def _numel(buf: Buffer) -> int:
    n = 1
    for d in buf.shape:
        n *= const_int(d)
    return n
