"""`layout._expr.simplify` reads a node's digit form from its children's forms instead of
building and re-reading every intermediate expression (the editor's per-keystroke cost). This
test keeps the plain definition — simplify the children, rebuild, read the digit form, emit —
and checks that both give the same expression, printed alike, on every index expression the
CUDA pipeline simplifies for the seed and example kernels at odd sizes, and on hand-made
corner cases (negative and zero divisors, shifts, masks, non-int32 vars, atoms)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tilelang.ir.dtype import int64
from tilelang.ir.expr import BinaryOp, Cast, Compare, IntImm, Select, Var, binary, cast, compare, select
from tilelang.layout import _expr
from tilelang.layout._expr import _rebuild_binary, bounds, emit, normalize, parse_digits, var_ranges


def reference_simplify(e, extents=None):
    extents = extents or {}
    e = _reference_children(e, extents)
    dg = parse_digits(e, extents)
    return e if dg is None else emit(normalize(dg))


def _reference_children(e, extents):
    if isinstance(e, BinaryOp):
        a, b = reference_simplify(e.a, extents), reference_simplify(e.b, extents)
        if e.op == "bitxor":
            ba, bb = bounds(a, var_ranges(extents)), bounds(b, var_ranges(extents))
            if ba and bb and ba[1] is not None and bb[1] is not None and bb[1] > ba[1]:
                a, b = b, a
        return _rebuild_binary(e.op, a, b)
    if isinstance(e, Select):
        return select(*(reference_simplify(x, extents) for x in (e.cond, e.true_value, e.false_value)))
    if isinstance(e, Compare):
        return compare(e.op, reference_simplify(e.a, extents), reference_simplify(e.b, extents))
    if isinstance(e, Cast):
        return cast(reference_simplify(e.value, extents), e.dtype)
    return e


FAST = _expr.simplify  # taken before the pipeline test records calls through the module name


def _same(e, extents) -> None:
    fast, ref = FAST(e, extents), reference_simplify(e, extents)
    assert repr(fast) == repr(ref), f"{e}: {fast} != {ref}"


def _corner_cases():
    x, y, w = Var("x"), Var("y"), Var("w", int64)
    ext = {x: 128, y: 6}
    cases = [
        binary("floordiv", binary("add", binary("mul", x, 8), y), 8),
        binary("floormod", binary("add", binary("mul", x, 8), y), 8),
        binary("floordiv", binary("add", x, y), 0 + 3),
        binary("bitand", binary("add", binary("mul", x, 16), y), 15),
        binary("bitand", binary("add", binary("mul", x, 16), y), 12),
        binary("shr", binary("shl", x, 3), 2),
        binary("shl", 3, x),
        binary("sub", binary("mul", x, 4), y),
        binary("sub", binary("mul", x, 4), 5),
        binary("mul", binary("add", x, y), binary("add", x, 1)),
        binary("add", binary("floordiv", w, 4), binary("floormod", x, 4)),
        binary("add", binary("bitxor", x, y), binary("mul", binary("floordiv", x, 8), 8)),
        binary("floordiv", binary("add", binary("floormod", x, 4), binary("mul", binary("floordiv", x, 4), 4)), 2),
        binary("mul", binary("add", x, -3), 2),
        binary("floordiv", binary("sub", x, 3), 4),
        binary("add", select(compare("lt", x, 4), x, y), binary("mul", y, 8)),
        binary("add", Var("v1"), Var("v1")),
    ]
    return [(c, ext) for c in cases] + [(binary("add", x, IntImm(0)), {x: 1})]


@pytest.mark.parametrize("case", range(len(_corner_cases())))
def test_corner_cases_match_the_plain_definition(case: int) -> None:
    e, ext = _corner_cases()[case]
    _same(e, ext)


def test_pipeline_expressions_match_the_plain_definition(monkeypatch) -> None:
    root = Path(__file__).resolve().parents[2]
    sys.path[:0] = [str(root / "tests" / "cuda"), str(root / "tests")]
    from catalog import all_funcs

    from tilelang.backend.cuda.pipeline import lower

    seen: list = []
    plain = _expr.simplify

    def recording(e, extents=None):
        seen.append((e, dict(extents or {})))
        return plain(e, extents)

    monkeypatch.setattr(_expr, "simplify", recording)
    for mod in ("tilelang.backend.cuda.lower_threads", "tilelang.layout.layout", "tilelang.layout.fragment"):
        m = __import__(mod, fromlist=["_"])
        for name in ("simplify", "lsimplify"):
            if getattr(m, name, None) is plain:
                monkeypatch.setattr(m, name, recording)
    funcs = all_funcs()
    for name in KERNELS:
        lower(funcs[name](), None)
    assert len(seen) > 200
    monkeypatch.undo()
    for e, ext in seen:
        _same(e, ext)


# a GEMM, an attention kernel, reductions, a copy-only kernel, a dynamic-shape GEMM
KERNELS = ("seed.matmul", "seed.flashattn_causal", "seed.fragment_reduce", "seed.vector_add", "seed.matmul_dynamic")
