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
"""

from __future__ import annotations

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


def make_wgmma_accumulator_fragment(
    block_m: int, block_n: int, num_warps: int, policy: Any = "Square", dtype: Any = "float32"
) -> Fragment:
    """Accumulator of a Hopper wgmma gemm: warpgroups of 4 consecutive warps,
    each computing m64nNk* atoms (N = its tile width). Warpgroups are laid out
    by `gemm_warp_partition(..., atom_m=64)` (M first, like warps); inside a
    warpgroup tile, registers run over atoms row-major, N fastest, so for
    one m64 atom register r is the PTX `d_r`."""
    DataType(dtype)
    if num_warps % 4:
        raise ValueError(f"wgmma needs whole warpgroups: num_warps={num_warps} is not a multiple of 4")
    gm, gn = gemm_warp_partition(block_m, block_n, num_warps // 4, policy, atom_m=64, atom_n=8, unit="warpgroup")
    meta = {
        "origin": "wgmma accumulator",
        "warp_grid": (4 * gm, gn),
        "warpgroup_grid": (gm, gn),
        "policy": normalize_policy(policy),
    }
    return _tile_warps(
        make_wgmma_atom(), (block_m, block_n), (block_m // gm, block_n // gn), gm, gn, 128,
        lambda i, r: _f(i, block_m // gm), lambda j, r: _f(j, block_n // gn), 1, meta,
    )  # fmt: skip


def is_register_compatible(src: Fragment, dst: Fragment) -> bool:
    """True when converting `src` into `dst` is a per-register operation (a
    cast) with no data movement between threads or registers."""
    return src.is_equal(dst)
