"""The generated call fast path (tilelang/jit/fast_call.py) accepts exactly what the checked
path accepts: for good arguments both give the same result; for every bad argument the
call raises the checked path's error (naming the parameter). Runs on the CPU backend; the
CUDA launcher it feeds is covered by tests/cuda/test_runtime.py and tests/gpu."""

from __future__ import annotations

import pytest
import torch

import tilelang
import tilelang.language as T


@tilelang.jit
def axpy(A, B, block: int = 64):
    M = T.const("M")
    A: T.Tensor((M,), T.float32)
    B: T.Tensor((M,), T.float32)
    C = T.empty((M,), T.float32)
    with T.Kernel(T.ceildiv(M, block)) as bx:
        for i in T.Parallel(block):
            C[bx * block + i] = 2 * A[bx * block + i] + B[bx * block + i]
    return C


@tilelang.jit(out_idx=[-2, -1])
def dyn_two_outputs(N):
    m = T.dynamic("m")

    @T.prim_func
    def main(
        x: T.Tensor((m, N), "float32"),
        y: T.Tensor((m, N), "float32"),
        s: T.float32,
        rows: T.Tensor((m,), "float32"),
        both: T.Tensor((m * 2, N), "float32"),
    ):
        with T.Kernel(m) as bx:
            rows[bx] = 0.0
            for j in T.serial(N):
                rows[bx] = rows[bx] + x[bx, j] * s
                both[bx, j] = x[bx, j]
                both[m + bx, j] = y[bx, j]

    return main


def both_paths(kernel, *args):
    """(fast result or error, checked result or error)."""
    out = []
    for call in (kernel, lambda *a: kernel.adapter.checked_call(a)):
        try:
            out.append(call(*args))
        except Exception as err:  # noqa: BLE001 - compared below
            out.append(err)
    return out


def same(fast, checked):
    if isinstance(checked, Exception):
        assert type(fast) is type(checked) and str(fast) == str(checked)
    elif isinstance(checked, list):
        for f, c in zip(fast, checked):
            torch.testing.assert_close(f, c)
    else:
        torch.testing.assert_close(fast, checked)


def test_static_kernel_has_a_generated_entry_without_loops():
    k = axpy.compile(M=128)
    src = k.adapter.call.source
    assert "for " not in src and "while " not in src
    assert "dtype is dt0" in src and "is_contiguous()" in src


@pytest.mark.parametrize(
    "args",
    [
        lambda: (torch.randn(128), torch.randn(128)),
        lambda: (torch.randn(128).double(), torch.randn(128)),
        lambda: (torch.randn(128), torch.randn(127)),
        lambda: (torch.randn(128, 1), torch.randn(128)),
        lambda: (torch.randn(256)[::2], torch.randn(128)),
        lambda: (torch.empty(128, device="meta"), torch.randn(128)),
        lambda: (torch.randn(128), [0.0] * 128),
        lambda: (torch.randn(128),),
        lambda: (torch.randn(128), torch.randn(128), torch.randn(128)),
    ],
)
def test_static_parity(args):
    same(*both_paths(axpy.compile(M=128), *args()))


@pytest.mark.parametrize(
    "args",
    [
        lambda: (torch.randn(5, 8), torch.randn(5, 8), 2.0),
        lambda: (torch.randn(1, 8), torch.randn(1, 8), 3),
        lambda: (torch.randn(5, 8), torch.randn(6, 8), 2.0),
        lambda: (torch.randn(5, 9), torch.randn(5, 8), 2.0),
        lambda: (torch.randn(5, 8), torch.randn(5, 8), torch.tensor(2.0)),
        lambda: (torch.randn(5, 8), torch.randn(5, 8), "2"),
        lambda: (torch.randn(8, 5).t(), torch.randn(5, 8), 2.0),
        lambda: (torch.randn(5, 8).half(), torch.randn(5, 8), 2.0),
    ],
)
def test_dynamic_parity_and_outputs(args):
    k = dyn_two_outputs(8)
    assert "v0 = s0[0]" in k.adapter.call.source
    a = args()
    fast, checked = both_paths(k, *a)
    same(fast, checked)
    if not isinstance(checked, Exception):
        x, y, s = a
        rows, both = fast
        torch.testing.assert_close(rows, (x * s).sum(1))
        torch.testing.assert_close(both, torch.cat([x, y]))


def test_stricter_fast_check_completes_through_the_checked_path():
    # a size-1 dimension with an odd stride is contiguous for torch; whatever the fast path
    # decides, the call must succeed and agree with the reference
    k = dyn_two_outputs(8)
    x = torch.randn(1, 16)[:, ::2].contiguous()
    y = torch.randn(1, 8)
    fast, checked = both_paths(k, x, y, 1.0)
    same(fast, checked)


def test_untranslatable_kernels_fall_back_to_the_checked_path():
    from tilelang.jit import fast_call

    k = axpy.compile(M=64)
    assert fast_call.make_fast_call(k.adapter) is not None
    k.adapter.unbindable = ["n"]
    assert fast_call.make_fast_call(k.adapter) is None
