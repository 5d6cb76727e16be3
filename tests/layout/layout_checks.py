"""Shared checks: every fragment is enumerated and proven valid, and inverted."""

import itertools


def assert_valid_fragment(frag):
    """Bijective modulo replication, checked independently of check_bijective,
    and inverse ∘ forward = identity on every element copy."""
    frag.check_bijective()
    T, L, R = frag.get_thread_size(), frag.locals_per_thread(), frag.replicate_size
    slots = {}
    for idx in itertools.product(*(range(d) for d in frag.get_input_shape())):
        threads = set()
        for r in range(R):
            t, loc = frag.locate(*idx, rep=r)
            assert 0 <= t < T and 0 <= loc < L
            assert (t, loc) not in slots, f"{idx} collides with {slots[(t, loc)]}"
            slots[(t, loc)] = idx
            threads.add(t)
        assert len(threads) == R
    assert len(slots) == T * L
    inv = frag.inverse()
    loc_shape = frag.get_output_shape()
    for (t, loc), idx in slots.items():
        local = []
        for d in reversed(loc_shape):
            local.append(loc % d)
            loc //= d
        out = inv(t, *reversed(local))
        assert out[: len(idx)] == idx
