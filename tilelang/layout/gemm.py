"""Register fragments of tensor-core instructions and their block-level tiling.

Per-warp atoms follow the PTX ISA "Matrix Fragments for mma.m16n8k*"
tables. With `g = lane // 4` (groupID) and `t = lane % 4`
(threadID_in_group), and the register index `r` being the element's
position in the instruction operand list (a0, a1, ... / b0.. / c0..):

| operand | dtypes | tile | element held in register r |
|---|---|---|---|
| A | f16/bf16 (k16) | 16×16 | row g + 8·(r//2 % 2), col 2t + r%2 + 8·(r//4) |
| A | 8-bit (k32) | 16×32 | row g + 8·(r//4 % 2), col 4t + r%4 + 16·(r//8) |
| A | tf32 (k8) | 16×8 | row g + 8·(r%2), col t + 4·(r//2) |
| B | f16/bf16 | 16×8 (k×n) | k = 2t + r%2 + 8·(r//2), n = g |
| B | 8-bit | 32×8 | k = 4t + r%4 + 16·(r//4), n = g |
| B | tf32 | 8×8 | k = t + 4·r, n = g |
| C/D | f32/f16/s32 | 16×8 | row g + 8·(r//2), col 2t + r%2 |

Block-level fragments tile an atom over a warp's sub-tile and warps over the
block (`_tile_warps`). Conventions, shared by every factory here:

- **Warp grid**: `gemm_warp_partition` picks `(warps_m, warps_n)`; warp `w`
  sits at `(w % warps_m, w // warps_m)` — warps are numbered down M first
  (this is also how the four warps of a wgmma warpgroup stack along M).
  Warp `(a, b)` owns rows `[a·M/warps_m, (a+1)·M/warps_m)` and columns
  `[b·N/warps_n, ...)`. Thread = 32·w + lane.
- **Registers**: inside a warp tile the atoms are numbered row-major (N
  fastest); atom `k` occupies registers `[k·R, (k+1)·R)` where R is the
  atom's registers per thread, in the instruction's own order.

Because of the register rule, the fp32 accumulator of GEMM1 (16×8 atoms,
4 regs) and the fp16/bf16 A operand of GEMM2 (16×16 atoms, 8 regs) are the
*same* fragment when (1) both GEMMs put all warps along M with the same
warps_m (warps_n = 1, e.g. policy "FullRow"), and (2) the shared K extent is
a multiple of 16: A atom (m, k) registers 0-3 are C atom (m, 2k) and 4-7 are
C atom (m, 2k+1) — so FlashAttention's `acc_s -> acc_s_cast -> gemm` is an
element-wise cast in registers. `Fragment.is_equal` checks it;
`Fragment.mismatch` says where it fails otherwise. 8-bit and tf32 A
fragments do not line up with the accumulator.

Hopper wgmma (sm_90a): `plan_wgmma` decides whether a gemm runs as warpgroup
MMA (whole warpgroups of 128 threads, m64nNk(32 bytes) instructions, operands
in 32/64/128-byte swizzled shared tiles, MN-major only for 16-bit types, A in
registers only 16-bit and with every warpgroup along M) and with which
warpgroup grid (`wgmma_partition`) and instruction width
(`wgmma_instruction_n`); otherwise it returns the reason and the gemm stays on
mma.sync. `make_wgmma_accumulator_fragment` is the PTX wgmma `d` table tiled
over the grid; `make_wgmma_operand_a_fragment` (the RS A operand) is the same
map over (M, K), so FlashAttention's cast accumulator feeds the next wgmma
register by register.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ir.dtype import DataType
from ..ir.expr import IntImm, PrimExpr, Var, binary
from ._expr import substitute
from .fragment import Fragment

POLICIES = ("Square", "FullRow", "FullCol")


# --------------------------------------------------------------------------
# Instruction atoms (one warp)
# --------------------------------------------------------------------------


def mma_k(dtype: Any) -> int:
    """K of the m16n8k* instruction for an operand dtype."""
    dt = DataType(dtype)
    if dt.bits == 16 and dt.is_float:
        return 16
    if dt.bits == 8:
        return 32
    if dt.bits == 4 and dt.is_integer:
        return 64  # m16n8k64 .s4 / .u4: the byte layout of the 8-bit k32 atom, two elements a byte
    if dt.base in ("float32", "tfloat32"):
        return 8
    raise ValueError(
        f"no mma.sync shape for operand dtype {dt}: use float16/bfloat16 (k16), int8/uint8/float8 (k32) "
        "or float32/tfloat32 (tf32, k8)"
    )


def mma_instruction(dtype: Any) -> str:
    return f"m16n8k{mma_k(dtype)}"


def _f(x: PrimExpr, d: int) -> PrimExpr:
    return binary("floordiv", x, d)


def _m(x: PrimExpr, d: int) -> PrimExpr:
    return binary("floormod", x, d)


def _lin(*terms: tuple) -> PrimExpr:
    acc: PrimExpr = IntImm(0)
    for x, c in terms:
        acc = binary("add", acc, binary("mul", x, c))
    return acc


def make_mma_atom(operand: str, dtype: Any = "float16") -> Fragment:
    """One warp's fragment of an mma.sync m16n8k* operand.

    `operand` is "A" (16×k, row-major M×K), "B" (k×8, K×N) or "C"/"D" (16×8);
    `dtype` is the operand element type (for C, any accumulator type: the map
    is the same for f32, f16 and s32). Thread = lane, local = register index r
    in the PTX operand order."""
    op = operand.upper()
    i, j = Var("i"), Var("j")
    if op in ("C", "D"):
        thread = _lin((_m(i, 8), 4), (_f(j, 2), 1))
        local = _lin((_f(i, 8), 2), (_m(j, 2), 1))
        shape, name = (16, 8), "m16n8 accumulator"
    else:
        k = mma_k(dtype)
        if k == 64:
            raise ValueError(f"no register fragment for {dtype} operands: 4-bit gemm operands stay in shared memory")
        if op == "A":
            shape = (16, k)
            if k == 16:  # r = 4·(col//8) + 2·(row//8) + col%2 ; t = (col%8)//2
                local = _lin((_f(j, 8), 4), (_f(i, 8), 2), (_m(j, 2), 1))
                t = _f(_m(j, 8), 2)
            elif k == 32:  # r = 8·(col//16) + 4·(row//8) + col%4 ; t = (col%16)//4
                local = _lin((_f(j, 16), 8), (_f(i, 8), 4), (_m(j, 4), 1))
                t = _f(_m(j, 16), 4)
            else:  # tf32: r = 2·(col//4) + row//8 ; t = col%4
                local = _lin((_f(j, 4), 2), (_f(i, 8), 1))
                t = _m(j, 4)
            thread = _lin((_m(i, 8), 4), (t, 1))
        elif op == "B":
            shape = (k, 8)  # (k index, n index)
            if k == 16:
                local, t = _lin((_f(i, 8), 2), (_m(i, 2), 1)), _f(_m(i, 8), 2)
            elif k == 32:
                local, t = _lin((_f(i, 16), 4), (_m(i, 4), 1)), _f(_m(i, 16), 4)
            else:
                local, t = _f(i, 4), _m(i, 4)
            thread = _lin((j, 4), (t, 1))
        else:
            raise ValueError(f"mma operand must be 'A', 'B' or 'C', got {operand!r}")
        name = f"m16n8k{k} operand {op}"
    return Fragment.from_exprs(shape, (i, j), thread, local, meta={"origin": f"mma {name}", "warp_grid": (1, 1)})


# --------------------------------------------------------------------------
# Warp partition
# --------------------------------------------------------------------------


def normalize_policy(policy: Any) -> str:
    """Accept "Square"/"FullRow"/"FullCol" (any case), enum members or their ints 0/1/2."""
    name = getattr(policy, "name", policy)
    if isinstance(name, int) and 0 <= name < 3:
        return POLICIES[name]
    if isinstance(name, str):
        for p in POLICIES:
            if p.lower() == name.lower().replace("_", ""):
                return p
    raise ValueError(f"unknown gemm warp policy {policy!r}: use one of {', '.join(POLICIES)}")


def _divisors(n: int) -> list:
    return [d for d in range(1, n + 1) if n % d == 0]


def gemm_warp_partition(
    M: int, N: int, num_warps: int, policy: Any = "Square", atom_m: int = 16, atom_n: int = 8, *, unit: str = "warp"
) -> tuple[int, int]:
    """Split `num_warps` into a `(warps_m, warps_n)` grid over an M×N tile.

    Valid grids have `warps_m * warps_n == num_warps`, `M % (warps_m*atom_m) == 0`
    and `N % (warps_n*atom_n) == 0`. "Square" minimises the aspect ratio of the
    per-warp tile (ties: more warps along M); "FullRow" puts as many warps
    along M as fit (all of them when M allows); "FullCol" as many along N.
    Raises ValueError naming the failed constraint and a fix."""
    pol = normalize_policy(policy)
    for name, v in (("M", M), ("N", N), (f"num_{unit}s", num_warps)):
        if not isinstance(v, int) or v <= 0:
            raise ValueError(f"gemm warp partition needs a positive int {name}, got {v!r}")
    valid = [
        (wm, num_warps // wm)
        for wm in _divisors(num_warps)
        if M % (wm * atom_m) == 0 and N % ((num_warps // wm) * atom_n) == 0
    ]
    if not valid:
        raise ValueError(_partition_error(M, N, num_warps, pol, atom_m, atom_n, unit))
    if pol == "FullRow":
        return max(valid, key=lambda p: p[0])
    if pol == "FullCol":
        return max(valid, key=lambda p: p[1])

    def skew(p: tuple) -> tuple:
        tm, tn = M // p[0], N // p[1]
        return (max(tm, tn) / min(tm, tn), -p[0])

    return min(valid, key=skew)


def _partition_error(M: int, N: int, W: int, pol: str, am: int, an: int, unit: str) -> str:
    head = (
        f"cannot split a {M}×{N} gemm tile over {W} {unit}s (policy {pol}): each {unit} needs a "
        f"multiple of {am} rows and {an} columns (the m{am}n{an} instruction tile)"
    )
    if M % am:
        return f"{head}, but M={M} is not a multiple of {am} — make block_M a multiple of {am}"
    if N % an:
        return f"{head}, but N={N} is not a multiple of {an} — make block_N a multiple of {an}"
    ok = [
        w for w in (1, 2, 4, 8, 16, 32) if any((M // am) % d == 0 and (N // an) % (w // d) == 0 for d in _divisors(w))
    ]
    most = (M // am) * (N // an)
    return (
        f"{head}; at most {most} {unit}{'s' if most != 1 else ''} fit and {W} does not factor as warps_m×warps_n with "
        f"{M // am} % warps_m == 0 and {N // an} % warps_n == 0 — use {unit} counts in {ok} "
        f"(threads = {128 if unit == 'warpgroup' else 32} × {unit}s) or grow the tile"
    )


# --------------------------------------------------------------------------
# Block-level fragments
# --------------------------------------------------------------------------


def _tile_warps(
    atom: Fragment,
    shape: tuple,
    tile: tuple,
    warps_m: int,
    warps_n: int,
    unit_threads: int,
    warp_m_of: Any,
    warp_n_of: Any,
    replicate: int,
    meta: dict,
) -> Fragment:
    """Tile `atom` over a `tile`-sized unit tile, units over the block.

    `warp_m_of(i, rep)` / `warp_n_of(j, rep)` give the unit's grid coordinates
    (from the element's position, or from the replicate var when the operand
    is shared by a row/column of units). Unit u = wm + warps_m·wn holds
    threads [u·unit_threads, (u+1)·unit_threads)."""
    i, j, rep = Var("i"), Var("j"), Var("rep")
    am, an = atom.shape
    tm, tn = tile
    wi, wj = _m(i, tm), _m(j, tn)
    asub = dict(zip(atom.get_forward_vars(), (_m(wi, am), _m(wj, an))))
    lane = substitute(atom.thread, asub)
    (aloc,) = atom.index
    aloc = substitute(aloc, asub)
    atoms_n = tn // an
    local = _lin((_f(wi, am), atoms_n * atom.locals_per_thread()), (_f(wj, an), atom.locals_per_thread()), (aloc, 1))
    unit = _lin((warp_m_of(i, rep), 1), (warp_n_of(j, rep), warps_m))
    thread = _lin((unit, unit_threads), (lane, 1))
    return Fragment.from_exprs(shape, (i, j), thread, local, replicate, rep, meta)


def _check_tile(what: str, size: int, atom: int, dim: str) -> None:
    if size % atom:
        raise ValueError(f"{what}: {dim}={size} is not a multiple of the instruction's {atom}")


def make_mma_accumulator_fragment(
    block_m: int, block_n: int, num_warps: int, policy: Any = "Square", dtype: Any = "float32"
) -> Fragment:
    """Accumulator C/D of an mma.sync gemm over a block_m×block_n tile."""
    DataType(dtype)
    wm, wn = gemm_warp_partition(block_m, block_n, num_warps, policy)
    atom = make_mma_atom("C")
    meta = {"origin": "mma m16n8 accumulator", "warp_grid": (wm, wn), "policy": normalize_policy(policy)}
    return _tile_warps(
        atom, (block_m, block_n), (block_m // wm, block_n // wn), wm, wn, 32,
        lambda i, r: _f(i, block_m // wm), lambda j, r: _f(j, block_n // wn), 1, meta,
    )  # fmt: skip


def make_mma_operand_a_fragment(
    block_m: int, block_n: int, block_k: int, num_warps: int, policy: Any = "Square", dtype: Any = "float16"
) -> Fragment:
    """Operand A (block_m×block_k, held in registers) of an M×N×K mma gemm.

    The warp grid is the gemm's own (`gemm_warp_partition(block_m, block_n)`);
    warp (a, b) needs rows of band a and all of K, so A is replicated over the
    warps_n warps of a row band (copy `rep` lives in warp a + warps_m·rep)."""
    k = mma_k(dtype)
    _check_tile("register A operand", block_k, k, "block_K")
    wm, wn = gemm_warp_partition(block_m, block_n, num_warps, policy)
    atom = make_mma_atom("A", dtype)
    meta = {"origin": f"mma m16n8k{k} operand A", "warp_grid": (wm, wn), "policy": normalize_policy(policy)}
    return _tile_warps(
        atom, (block_m, block_k), (block_m // wm, block_k), wm, wn, 32,
        lambda i, r: _f(i, block_m // wm), lambda j, r: r, wn, meta,
    )  # fmt: skip


def make_mma_operand_b_fragment(
    block_m: int, block_n: int, block_k: int, num_warps: int, policy: Any = "Square", dtype: Any = "float16"
) -> Fragment:
    """Operand B (block_k×block_n, K×N, held in registers), replicated over the
    warps_m warps of a column band (copy `rep` lives in warp rep + warps_m·b)."""
    k = mma_k(dtype)
    _check_tile("register B operand", block_k, k, "block_K")
    wm, wn = gemm_warp_partition(block_m, block_n, num_warps, policy)
    atom = make_mma_atom("B", dtype)
    meta = {"origin": f"mma m16n8k{k} operand B", "warp_grid": (wm, wn), "policy": normalize_policy(policy)}
    return _tile_warps(
        atom, (block_k, block_n), (block_k, block_n // wn), wm, wn, 32,
        lambda i, r: r, lambda j, r: _f(j, block_n // wn), wm, meta,
    )  # fmt: skip


def make_wgmma_atom() -> Fragment:
    """One warpgroup's m64nNk* accumulator for N = 8 (128 threads, 4 regs):
    warp w of the group owns rows 16w..16w+15 with the m16n8 C layout; wider
    N repeats it every 8 columns (registers 4·(col//8) + ...)."""
    i, j = Var("i"), Var("j")
    c = make_mma_atom("C")
    sub = dict(zip(c.get_forward_vars(), (_m(i, 16), j)))
    thread = _lin((_f(i, 16), 32), (substitute(c.thread, sub), 1))
    (loc,) = c.index
    return Fragment.from_exprs(
        (64, 8), (i, j), thread, substitute(loc, sub), meta={"origin": "wgmma m64n8 accumulator"}
    )


# --------------------------------------------------------------------------
# Hopper wgmma (warpgroup MMA, sm_90a)
# --------------------------------------------------------------------------

# N of m64nNk32 with 8-bit integer inputs (PTX ISA, "wgmma .s8/.u8 shapes")
WGMMA_INT_N = (8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256)


def wgmma_k(dtype: Any) -> int:
    """K of one m64nNk* wgmma: 32 bytes of K (16 for 16-bit, 8 for tf32, 32 for 8-bit inputs)."""
    dt = DataType(dtype)
    if dt.bits in (8, 16, 32) and (dt.is_float or dt.bits == 8):
        return 256 // dt.bits
    raise ValueError(f"no wgmma shape for operand dtype {dt}")


def wgmma_instruction_n(tile_n: int, dtype: Any) -> int | None:
    """The widest wgmma N (≤ 256, a multiple of 8; the integer list for 8-bit
    integer inputs) dividing a warpgroup's tile width `tile_n`."""
    dt = DataType(dtype)
    ok = WGMMA_INT_N if (dt.bits == 8 and not dt.is_float) else range(8, 257, 8)
    best = [n for n in ok if tile_n % n == 0]
    return max(best) if best else None


def wgmma_partition(M: int, N: int, warpgroups: int, policy: Any = "Square") -> tuple[int, int]:
    """Split `warpgroups` into a `(groups_m, groups_n)` grid over an M×N tile
    (each warpgroup tile a multiple of 64 rows and 8 columns).

    "FullCol" puts as many warpgroups along N as fit. "FullRow" and "Square"
    put as many along M as fit: every warpgroup reads its rows of A plus all
    of its columns of B per instruction, so shared-memory operand traffic is
    (M/64)·(64·groups_n + N) — smallest with the fewest groups along N, and wide
    N per instruction (up to 256) is what the hardware prefers."""
    pol = normalize_policy(policy)
    valid = [
        (gm, warpgroups // gm)
        for gm in _divisors(warpgroups)
        if M % (gm * 64) == 0 and N % ((warpgroups // gm) * 8) == 0
    ]
    if not valid:
        raise ValueError(_partition_error(M, N, warpgroups, pol, 64, 8, "warpgroup"))
    if pol == "FullCol":
        return max(valid, key=lambda p: p[1])
    return max(valid, key=lambda p: p[0])


@dataclass(frozen=True)
class WgmmaPlan:
    """How one `T.gemm` runs on wgmma: the warpgroup grid, the instruction
    `m64n{inst_n}k{inst_k}`, and each shared operand's major-ness ("K" or "MN")."""

    groups_m: int
    groups_n: int
    inst_n: int
    inst_k: int
    a_major: str  # "K", "MN", or "regs" (A in registers)
    b_major: str

    @property
    def instruction(self) -> str:
        return f"m64n{self.inst_n}k{self.inst_k}"


_WGMMA_ACC = {
    ("float", 16): ("float32", "float16"),
    ("bfloat", 16): ("float32",),
    ("float", 32): ("float32",),
    ("float", 8): ("float32", "float16"),
    ("int", 8): ("int32",),
    ("uint", 8): ("int32",),
}


def plan_wgmma(
    M: int,
    N: int,
    K: int,
    num_threads: int,
    policy: Any,
    a_dtype: Any,
    b_dtype: Any,
    c_dtype: Any,
    transpose_A: bool,
    transpose_B: bool,
    a_swizzle: int | None,
    b_swizzle: int,
) -> WgmmaPlan | str:
    """The wgmma plan of a gemm, or the reason it must use mma.sync instead.

    `a_swizzle` / `b_swizzle`: the swizzle width in bytes (0 = none) of each
    operand's shared layout (`a_swizzle=None`: A is in registers). Shared
    operands must be 32/64/128-byte swizzled (the layouts a descriptor can
    name with our panel storage); MN-major (transposed) operands are 16-bit
    only and their instruction width along MN must cover whole swizzle rows."""
    adt, bdt, cdt = DataType(a_dtype), DataType(b_dtype), DataType(c_dtype)
    if num_threads % 128 or num_threads == 0:
        return f"{num_threads} threads are not whole warpgroups (multiples of 128)"
    if adt.bits != bdt.bits or (adt.bits != 8 and adt is not bdt) or (adt.bits == 8 and adt.is_float != bdt.is_float):
        return f"operand dtypes {adt} × {bdt} have no wgmma form"
    kind = "bfloat" if adt.base == "bfloat16" else adt.kind
    accs = _WGMMA_ACC.get((kind, adt.bits))
    if accs is None or adt.base == "float64":
        return f"operand dtype {adt} has no wgmma form"
    if str(cdt) not in accs:
        return f"wgmma with {adt} inputs cannot accumulate in {cdt}"
    ik = wgmma_k(adt)
    if K % ik:
        return f"K={K} is not a multiple of the instruction's k={ik}"
    wide = adt.bits == 16
    a_regs = a_swizzle is None
    if a_regs and (not wide or transpose_A):
        return "a register A operand must be 16-bit and not transposed"
    if not wide and (transpose_A or not transpose_B):
        return f"{adt} operands must be K-major (transpose_A=False, transpose_B=True)"
    groups = num_threads // 128
    try:
        if a_regs:  # A is not replicated: every warpgroup owns whole rows of A and of C
            if M % (groups * 64):
                return f"a register A operand needs all {groups} warpgroups along M (M={M})"
            gm, gn = groups, 1
        else:
            gm, gn = wgmma_partition(M, N, groups, policy)
    except ValueError as err:
        return str(err)
    inst_n = wgmma_instruction_n(N // gn, adt)
    if inst_n is None:
        return f"no wgmma N divides the warpgroup tile width {N // gn}"
    eb = adt.bytes
    for name, sw, mn_major, mn_width in (("A", a_swizzle, transpose_A, 64), ("B", b_swizzle, not transpose_B, inst_n)):
        if sw is None:
            continue
        if sw not in (32, 64, 128):
            return f"shared operand {name} is not 32/64/128-byte swizzled (rows are not a multiple of 32 bytes)"
        if mn_major and (mn_width * eb) % sw:
            return f"MN-major operand {name}: {mn_width} elements per instruction do not cover whole {sw}-byte rows"
    return WgmmaPlan(gm, gn, inst_n, ik, "regs" if a_regs else ("MN" if transpose_A else "K"),
                     "K" if transpose_B else "MN")  # fmt: skip


def make_wgmma_accumulator_fragment(
    block_m: int,
    block_n: int,
    num_warps: int,
    policy: Any = "Square",
    dtype: Any = "float32",
    groups: tuple[int, int] | None = None,
    origin: str = "wgmma accumulator",
) -> Fragment:
    """Accumulator of a Hopper wgmma gemm: warpgroups of 4 consecutive warps,
    each computing m64nNk* atoms (N = its tile width). Warpgroups are laid out
    by `wgmma_partition` (or the given `groups` = (groups_m, groups_n)), M
    first, like warps; inside a warpgroup tile, registers run over m64n8 atoms
    row-major, N fastest, so one m64nN instruction on row atom `mi` and
    columns [n0, n0+N) updates the contiguous registers starting at
    `4·(mi·tile_n/8 + n0/8)` in PTX `d_r` order (what tl::wgmma_gemm_* passes)."""
    DataType(dtype)
    if num_warps % 4:
        raise ValueError(f"wgmma needs whole warpgroups: num_warps={num_warps} is not a multiple of 4")
    gm, gn = groups or wgmma_partition(block_m, block_n, num_warps // 4, policy)
    if gm * gn * 4 != num_warps or block_m % (gm * 64) or block_n % (gn * 8):
        raise ValueError(f"warpgroup grid {gm}×{gn} does not tile {block_m}×{block_n} with {num_warps} warps")
    meta = {
        "origin": origin,
        "warp_grid": (4 * gm, gn),
        "warpgroup_grid": (gm, gn),
        "policy": normalize_policy(policy),
    }
    return _tile_warps(
        make_wgmma_atom(), (block_m, block_n), (block_m // gm, block_n // gn), gm, gn, 128,
        lambda i, r: _f(i, block_m // gm), lambda j, r: _f(j, block_n // gn), 1, meta,
    )  # fmt: skip


def make_wgmma_operand_a_fragment(block_m: int, block_k: int, num_warps: int, dtype: Any = "float16") -> Fragment:
    """A (block_m×block_k, 16-bit, in registers) of a wgmma RS gemm.

    Warpgroup g owns rows [g·block_m/G, ...) (all warpgroups along M); per k16
    step a thread supplies 4 registers in the mma.sync m16n8k16 A order for its
    warp's 16 rows. That is exactly the wgmma *accumulator* layout of a
    block_m×block_k tile: k-step s of row atom mi is the 8 halves at
    `4·(mi·block_k/8 + 2s)` (C atoms 2s and 2s+1) — so the fp32 accumulator of
    a previous wgmma gemm converts to this operand register by register."""
    if DataType(dtype).bits != 16:
        raise ValueError(f"a wgmma register A operand must be 16-bit, got {dtype}")
    _check_tile("wgmma register A operand", block_k, 16, "block_K")
    return make_wgmma_accumulator_fragment(
        block_m, block_k, num_warps, "FullRow", dtype, groups=(num_warps // 4, 1), origin="wgmma operand A (registers)"
    )


def is_register_compatible(src: Fragment, dst: Fragment) -> bool:
    """True when converting `src` into `dst` is a per-register operation (a
    cast) with no data movement between threads or registers."""
    return src.is_equal(dst)
