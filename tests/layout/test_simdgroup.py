"""The simdgroup_matrix register layouts of Metal gemm tiles (tilelang/layout/simdgroup.py): every
element lives in exactly one (thread, register); each 8×8 block belongs to one SIMD-group, whose
lane l holds its elements 2l and 2l+1; register A bands follow the accumulator's rows."""

from __future__ import annotations

import pytest

from tilelang.layout.simdgroup import make_simdgroup_fragment, simdgroup_grid, simdgroup_grid_of


@pytest.mark.parametrize("rows, cols, groups", [(64, 64, 4), (128, 128, 4), (16, 64, 4), (32, 32, 2), (64, 128, 8)])
def test_every_element_once_and_blocks_per_simdgroup(rows, cols, groups):
    grid = simdgroup_grid(rows, cols, groups)
    F = make_simdgroup_fragment(rows, cols, grid)
    assert simdgroup_grid_of(F) == grid and F.get_thread_size() == 32 * groups
    assert F.locals_per_thread() == rows * cols // (32 * groups)
    seen = set()
    owner = {}
    for (i, j), _rep, thread, local in F.placements():
        assert (thread, local) not in seen
        seen.add((thread, local))
        assert thread % 32 == ((i % 8) * 8 + j % 8) // 2  # lane of the element inside its block
        owner.setdefault((i // 8, j // 8), set()).add(thread // 32)
    assert len(seen) == rows * cols
    assert all(len(sgs) == 1 for sgs in owner.values())


def test_register_a_shares_row_bands_with_the_accumulator():
    grid = simdgroup_grid(64, 64, 4, rows_only=True)
    assert grid == (4, 1)
    C, A = make_simdgroup_fragment(64, 64, grid), make_simdgroup_fragment(64, 32, grid, "float16", "operand A")
    c_band = {i // 8: t // 32 for (i, _j), _r, t, _l in C.placements()}
    a_band = {i // 8: t // 32 for (i, _j), _r, t, _l in A.placements()}
    assert c_band == a_band


def test_uneven_tiles_are_refused():
    with pytest.raises(ValueError, match="8×8 blocks"):
        simdgroup_grid(60, 64, 4)
    with pytest.raises(ValueError, match="cannot share"):
        simdgroup_grid(8, 8, 4, rows_only=True)
