"""A shared-memory bank-conflict model, to prove layouts conflict-free.

Shared memory has 32 banks of 4-byte words and serves 128 bytes per
wavefront. A warp instruction moving 16 bytes per thread (ldmatrix, cp.async,
ld/st.shared.v4) is served in *phases* of 8 threads (4 phases for 32
threads; each 8×8 matrix of an ldmatrix.x4 is one phase of 8 row addresses);
8-byte accesses in phases of 16 threads, 4-byte and narrower ones in one
phase of 32. Within a phase, threads touching *different* words of the same
bank serialise (the same word is a broadcast). So a phase costs
`max over banks of #distinct words` wavefronts, and

    conflicts = sum over phases of (wavefronts - 1)

is the number of extra wavefronts; 0 means conflict-free.

An access pattern is a list of phases; a phase is a list of
`(logical index of the first element, bytes)` — one per thread, contiguous
along the last dimension. `ldmatrix_access` and `vector_access` build the
patterns a gemm operand tile sees when it is read by ldmatrix or written by
16-byte cp.async; `bank_conflicts(layout, dtype, access)` evaluates them on a
layout.
"""

from __future__ import annotations

import itertools
from typing import Any

from ..ir.dtype import DataType
from .layout import Layout, row_major_strides
from .swizzle import _elem_bytes

BANKS = 32
WORD_BYTES = 4
WAVEFRONT_BYTES = BANKS * WORD_BYTES

_ALIASES = {
    "ldmatrix": "ldmatrix",
    "ldmatrix.trans": "ldmatrix",
    "stmatrix": "ldmatrix",
    "cp.async": 16,
    "ld.shared.v4": 16,
    "st.shared.v4": 16,
    "vec16": 16,
    "vec8": 8,
    "vec4": 4,
    "scalar": 4,
}


def _lead_points(shape: tuple) -> list:
    return list(itertools.product(*(range(d) for d in shape[:-2])))


def ldmatrix_access(shape: tuple, dtype: Any) -> list:
    """Every 8-row × 16-byte block of the tile (rows aligned to 8, chunks to 16 B),
    one phase each: what ldmatrix (.trans or not) reads for mma operands."""
    b = _elem_bytes(DataType(dtype))
    *_, R, C = shape
    q = max(1, 16 // b)
    phases = []
    for lead in _lead_points(shape):
        for r0 in range(0, R, 8):
            for c in range(0, C, q):
                phases.append([((*lead, r, c), min(16, (C - c) * b)) for r in range(r0, min(R, r0 + 8))])
    return phases


def vector_access(shape: tuple, dtype: Any, vec_bytes: int = 16) -> list:
    """Threads move consecutive `vec_bytes` chunks of the tile in row-major
    order (the usual cp.async / vectorised copy thread mapping)."""
    b = _elem_bytes(DataType(dtype))
    if vec_bytes % b or (shape[-1] * b) % vec_bytes:
        raise ValueError(f"rows of {shape[-1]} × {b} B cannot be split into {vec_bytes}-byte vectors")
    per = vec_bytes // b
    starts = [
        (*p[:-1], p[-1] * per) for p in itertools.product(*(range(d) for d in shape[:-1]), range(shape[-1] // per))
    ]
    tpp = WAVEFRONT_BYTES // vec_bytes if vec_bytes >= WORD_BYTES else 32
    return [[(s, vec_bytes) for s in starts[k : k + tpp]] for k in range(0, len(starts), tpp)]


def _phases_for(access: Any, shape: tuple, dtype: Any) -> list:
    if isinstance(access, str):
        kind = _ALIASES.get(access)
        if kind is None:
            raise ValueError(f"unknown access pattern {access!r}: use one of {', '.join(_ALIASES)} or a list of phases")
        return ldmatrix_access(shape, dtype) if kind == "ldmatrix" else vector_access(shape, dtype, kind)
    return list(access)


def bank_conflict_stats(layout: Layout, dtype: Any, access: Any = "ldmatrix") -> dict:
    """Phases, wavefronts, extra wavefronts (`conflicts`) and the worst phase's ways."""
    shape = tuple(layout.shape)
    b = _elem_bytes(DataType(dtype))
    offs = layout.offsets()
    strides = row_major_strides(shape)
    phases = _phases_for(access, shape, dtype)
    total = worst = 0
    for phase in phases:
        banks: dict[int, set] = {}
        for idx, nbytes in phase:
            base = sum(x * s for x, s in zip(idx, strides))
            for e in range(max(1, nbytes // b)):
                addr = offs[base + e] * b
                for w in range(addr // WORD_BYTES, (addr + b - 1) // WORD_BYTES + 1):
                    banks.setdefault(w % BANKS, set()).add(w)
        ways = max((len(ws) for ws in banks.values()), default=1)
        total += ways
        worst = max(worst, ways)
    return {"phases": len(phases), "wavefronts": total, "conflicts": total - len(phases), "worst_ways": worst}


def bank_conflicts(layout: Layout, dtype: Any, access: Any = "ldmatrix") -> int:
    """Extra shared-memory wavefronts of `access` on `layout` (0 = conflict-free).

    `access`: "ldmatrix" (8 rows × 16 B per phase, every aligned block),
    "cp.async"/"vec16" (16 B per thread, row-major), "vec8", "vec4", or an
    explicit list of phases (see module docstring)."""
    return bank_conflict_stats(layout, dtype, access)["conflicts"]


def is_vectorizable(layout: Layout, dtype: Any, vec_bytes: int = 16) -> bool:
    """Every aligned run of `vec_bytes` along the last dimension is stored
    contiguously at a `vec_bytes`-aligned address (so 16-byte cp.async,
    ldmatrix rows and vector loads are legal on this layout)."""
    b = _elem_bytes(DataType(dtype))
    per = vec_bytes // b
    if per < 1 or layout.shape[-1] % per:
        return False
    offs = layout.offsets()
    for k in range(0, len(offs), per):
        if (offs[k] * b) % vec_bytes or any(offs[k + e] != offs[k] + e for e in range(per)):
            return False
    return True
