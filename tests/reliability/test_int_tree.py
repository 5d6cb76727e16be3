"""`ir.int_tree`: launch-grid expressions as data. The evaluator computes what the IR
means (checked against `ir.py_source` on random expressions), and malformed trees — what
an edited cache entry holds — are refused when compiled, never evaluated."""

from __future__ import annotations

import json
import random

import pytest

from tilelang.ir import expr as E
from tilelang.ir.int_tree import compile_tree, to_tree
from tilelang.ir.py_source import py_source, truncdiv

P = [E.Var("n", E.int32), E.Var("k", E.int32)]
F = E.Var("s", E.DataType("float32"))
D = [E.Var("m", E.int32)]
NAMES = {P[0]: ("p", 0), P[1]: ("p", 1), F: ("p", 2), D[0]: ("d", 0)}
PY_NAMES = {P[0]: "v[0]", P[1]: "v[1]", F: "v[2]", D[0]: "d[0]"}


def random_expr(rng: random.Random, depth: int):
    if depth == 0 or rng.random() < 0.25:
        choice = rng.random()
        if choice < 0.2:
            return E.IntImm(rng.randint(1, 300), E.int32)
        if choice < 0.3:
            return E.cast(F, "int32")
        return rng.choice(P + D)
    a, b = random_expr(rng, depth - 1), random_expr(rng, depth - 1)
    kind = rng.choice(["arith", "div", "minmax", "select", "bits", "logic"])
    if kind == "arith":
        return E.binary(rng.choice(["add", "sub", "mul"]), a, b)
    if kind == "div":  # divisors kept positive: x // 0 is not a grid
        return E.binary(rng.choice(["floordiv", "floormod", "div"]), a, E.IntImm(rng.randint(1, 64), E.int32))
    if kind == "minmax":
        return E.binary(rng.choice(["min", "max"]), a, b)
    if kind == "bits":
        return E.binary(rng.choice(["bitand", "bitor", "bitxor"]), a, b)
    if kind == "logic":
        c1, c2 = E.compare(rng.choice(["lt", "ge", "eq"]), a, b), E.compare("ne", b, 3)
        return E.cast(E.logical_and(c1, E.logical_not(c2)) if rng.random() < 0.5 else E.logical_or(c1, c2), "int32")
    return E.select(E.compare(rng.choice(["lt", "le", "gt", "ne"]), a, b), a, b)


def test_the_evaluator_matches_the_ir_on_random_expressions():
    rng = random.Random(22)
    for _ in range(400):
        e = random_expr(rng, 4)
        if isinstance(e, int):
            continue
        tree = json.loads(json.dumps(to_tree(e, NAMES)))  # through JSON, as the cache stores it
        fn = compile_tree(tree, 3, 1)
        ref = eval(f"lambda v, d: {py_source(e, PY_NAMES)}", {"_tdiv": truncdiv, "min": min, "max": max, "int": int})
        for _ in range(5):
            v = [rng.randint(-500, 500), rng.randint(1, 4000), rng.uniform(-9.0, 9.0)]
            d = [rng.randint(0, 5000)]
            assert fn(v, d) == ref(v, d), (e, tree, v, d)


def test_constant_trees_fold_once():
    fn = compile_tree(["floordiv", ["add", 1000, 63], 64], 0, 0)
    assert fn.const == 16 and fn([], []) == 16


@pytest.mark.parametrize(
    "tree",
    [
        "__import__('os').system('true')",
        ["call", "os.system", "true"],
        ["add", ["p", 0]],
        ["p", 3],
        ["d", -1],
        ["p", "0"],
        ["add", 1.5, ["p", 0]],
        ["add", True, ["p", 0]],
        ["add", 1 << 70, ["p", 0]],
        ["shl", 1, 1 << 40],
        ["floordiv", 5, 0],
        {"op": "add"},
        [],
        [["p", 0]],
        None,
    ],
    ids=repr,
)
def test_malformed_trees_are_refused_when_compiled(tree):
    with pytest.raises(ValueError):
        compile_tree(tree, 3, 1)


def test_too_deep_or_too_large_trees_are_refused():
    deep: object = ["p", 0]
    for _ in range(200):
        deep = ["add", deep, 1]
    with pytest.raises(ValueError, match="too deep"):
        compile_tree(deep, 1, 0)


def test_a_huge_shift_of_a_parameter_raises_at_launch_instead_of_allocating():
    fn = compile_tree(["shl", 1, ["p", 0]], 1, 0)
    assert fn([10], []) == 1024
    with pytest.raises(ValueError, match="shift"):
        fn([1 << 40], [])
