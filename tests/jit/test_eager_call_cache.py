"""Repeated calls of an eager `@tilelang.jit` kernel skip specialisation: the call signature
(argument types, tensor shapes, constant values) maps straight to the compiled kernel and
where its inputs sit in the call. What specialisation would decide differently (another
shape, another constant, tensors passed by keyword) still gets its own kernel, and the
kernel's own argument checks still run on every call. CPU backend."""

from __future__ import annotations

import pytest
import torch

import tilelang
import tilelang.language as T


@tilelang.jit(target="c")
def scaled_add(A, B, scale: float = 2.0, block: int = 32):
    M = T.const("M")
    A: T.Tensor((M,), T.float32)
    B: T.Tensor((M,), T.float32)
    C = T.empty((M,), T.float32)
    with T.Kernel(T.ceildiv(M, block)) as bx:
        for i in T.Parallel(block):
            C[bx * block + i] = scale * A[bx * block + i] + B[bx * block + i]
    return C


def _count_specialisations(monkeypatch) -> list:
    calls: list = []
    original = type(scaled_add)._specialize

    def counting(self, *a, **k):
        calls.append(1)
        return original(self, *a, **k)

    monkeypatch.setattr(type(scaled_add), "_specialize", counting)
    return calls


def test_repeated_call_skips_specialisation_and_matches(monkeypatch):
    a, b = torch.randn(100), torch.randn(100)
    calls = _count_specialisations(monkeypatch)
    first = scaled_add(a, b)
    n = len(calls)
    for _ in range(3):
        torch.testing.assert_close(scaled_add(a, b), 2 * a + b)
    assert len(calls) == n
    torch.testing.assert_close(first, 2 * a + b)


def test_what_specialisation_reads_selects_another_kernel():
    a, b = torch.randn(100), torch.randn(100)
    torch.testing.assert_close(scaled_add(a, b, 3.0), 3 * a + b)
    torch.testing.assert_close(scaled_add(a, b, scale=0.5), 0.5 * a + b)
    a2, b2 = torch.randn(77), torch.randn(77)
    torch.testing.assert_close(scaled_add(a2, b2), 2 * a2 + b2)
    torch.testing.assert_close(scaled_add(B=b2, A=a2), 2 * a2 + b2)
    torch.testing.assert_close(scaled_add(a, b), 2 * a + b)


def test_kernel_checks_still_run_on_the_fast_path():
    a, b = torch.randn(64), torch.randn(64)
    scaled_add(a, b)
    with pytest.raises((TypeError, ValueError), match="B"):
        scaled_add(a, b.double())


def test_unhashable_arguments_have_no_call_signature():
    from tilelang.jit.jit import _call_signature

    assert _call_signature((torch.ones(3), [1, 2]), {}) is None
    assert _call_signature((torch.ones(3),), {"tiles": {"m": 1}}) is None
    assert _call_signature((torch.ones(3), 1), {}) != _call_signature((torch.ones(3), True), {})
    assert _call_signature((torch.ones(3),), {}) != _call_signature((torch.ones(4),), {})
