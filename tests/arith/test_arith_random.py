"""Property tests: simplification, bounds and proofs agree with evaluation.

Random small integer expressions over variables with random ranges are
evaluated on random assignments before and after simplification; the values
must agree, lie inside `const_int_bound`, and every condition the analyzer
proves must hold. Seeds are fixed, so a failure reproduces.
"""

import random

import pytest
from arith_testing import RandomExprs, evaluate

from tilelang.arith import Analyzer
from tilelang.ir import Compare, Var, binary


def _ranges(rng: random.Random) -> dict:
    out = {}
    for name in ("x", "y", "z"):
        lo = rng.choice([0, 0, 1, -8, 3])
        out[Var(name)] = (lo, lo + rng.choice([0, 1, 3, 7, 15, 31, 100]))
    return out


def _check(an, gen, e, samples, accept=lambda env: True):
    s = an.simplify(e)
    lo, hi = an.const_int_bound(e)
    tested = 0
    for _ in range(samples):
        env = gen.assignment()
        if not accept(env):
            continue
        try:
            want = evaluate(e, env)
        except ZeroDivisionError:
            continue
        got = evaluate(s, env)
        assert got == want, f"{e}  ->  {s}: {want} != {got} at {env}"
        assert lo <= want <= hi, f"{e}: {want} outside bound ({lo}, {hi})"
        tested += 1
    again = an.simplify(s)
    assert str(again) == str(s), f"not idempotent: {e} -> {s} -> {again}"
    return tested


@pytest.mark.parametrize("seed", range(12))
def test_simplify_preserves_value_and_bounds(seed):
    rng = random.Random(seed)
    ranges = _ranges(rng)
    an = Analyzer()
    for v, (lo, hi) in ranges.items():
        an.bind(v, lo, hi)
    gen = RandomExprs(rng, ranges)
    tested = 0
    for _ in range(60):
        tested += _check(an, gen, gen.expr(rng.choice([2, 3, 4, 5])), 12)
    assert tested > 300  # the test really ran on defined values


@pytest.mark.parametrize("seed", range(8))
def test_proofs_are_sound(seed):
    rng = random.Random(100 + seed)
    ranges = _ranges(rng)
    an = Analyzer()
    for v, (lo, hi) in ranges.items():
        an.bind(v, lo, hi)
    gen = RandomExprs(rng, ranges)
    proved = 0
    for _ in range(80):
        c = gen.cond(rng.choice([1, 2, 3]))
        s = an.simplify(c)
        ok = an.can_prove(c)
        proved += ok
        for _ in range(12):
            env = gen.assignment()
            try:
                want = evaluate(c, env)
            except ZeroDivisionError:
                continue
            assert evaluate(s, env) == want, f"{c} -> {s} at {env}"
            if ok:
                assert want == 1, f"proved {c}, false at {env}"
    assert proved > 0


@pytest.mark.parametrize("seed", range(16))
def test_simplify_under_constraint(seed):
    """Inside `with constraint(x + k < y)` (and its negation) results only need to
    agree where the constraint holds."""
    rng = random.Random(200 + seed)
    ranges = _ranges(rng)
    x, y, z = list(ranges)
    an = Analyzer()
    for v, (lo, hi) in ranges.items():
        an.bind(v, lo, hi)
    gen = RandomExprs(rng, ranges)
    before = [an.const_int_bound(v) for v in ranges]
    k = rng.randint(-3, 3)
    cond = Compare(rng.choice(["lt", "le", "eq"]), binary("add", x, k), binary("mul", y, rng.choice([1, 2])))
    for negate in (False, True):
        c = cond if not negate else an.simplify(~cond)

        def holds(env, c=c):
            return evaluate(c, env) == 1

        with an.constraint(c):
            for _ in range(40):
                _check(an, gen, gen.expr(rng.choice([2, 3, 4])), 25, holds)
                p = gen.cond(2)
                if an.can_prove(p):
                    for _ in range(25):
                        env = gen.assignment()
                        if holds(env):
                            try:
                                assert evaluate(p, env) == 1, f"under {c}: proved {p}, false at {env}"
                            except ZeroDivisionError:
                                pass
    # leaving the scope forgets what the constraint taught
    assert [an.const_int_bound(v) for v in ranges] == before
