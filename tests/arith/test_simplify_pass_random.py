"""Property test of the `simplify` pass: random kernels (loop nests with
guards, steps, lets and stores) run by a reference interpreter must store the
same values before and after the pass, for several values of the scalar
parameter and of the dynamic dimension (>= 1)."""

import random

import pytest
from arith_testing import RandomPrograms, run_stmt

from tilelang.transform.simplify import simplify


@pytest.mark.parametrize("seed", range(40))
def test_pass_preserves_behaviour(seed):
    rng = random.Random(seed)
    progs = RandomPrograms(rng)
    f = progs.kernel()
    before = f.script()
    g = simplify(f)
    assert f.script() == before  # the input is not modified
    for n in (-3, 0, 2):
        for M in (1, 4):
            env = {id(progs.n): n, id(progs.M): M}
            want, got = {}, {}
            try:
                run_stmt(f.body, env, want)
            except ZeroDivisionError:
                continue
            run_stmt(g.body, env, got)
            assert got == want, f"n={n} M={M}\n{before}\n-----\n{g.script()}"


def test_random_programs_exercise_the_pass():
    """The generator is not vacuous: most programs change and store something."""
    changed = stored = 0
    for seed in range(20):
        progs = RandomPrograms(random.Random(seed))
        f = progs.kernel()
        changed += simplify(f) is not f
        mem = {}
        run_stmt(f.body, {id(progs.n): 2, id(progs.M): 4}, mem)
        stored += bool(mem)
    assert changed >= 15 and stored >= 10
