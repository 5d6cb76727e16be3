"""GPU twin of tests/conformance/test_sync_uniformity.py: the same kernels on a real GPU against
torch — loops and branches made block-uniform by `T.alloc_local` / `T.alloc_var` scalars or
global loads, holding shared-memory traffic (so their barriers must be there), and `break` /
`continue` in serial and `while` loops. Sizes are larger than on the CPU and not tile
multiples; every kernel runs several times so a missing barrier has chances to show."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from conformance.sync_kernels import (  # noqa: E402
    branch_on_loaded_flag,
    ref_first_tiles,
    ref_weighted,
    streamk_gemm,
    sum_of_first_tiles,
    weighted_tiles,
)

torch.manual_seed(0)
REPEATS = 5


def dev(x):
    return x.cuda()


@pytest.mark.parametrize("counter", ["local", "var"])
@pytest.mark.parametrize("M,N,K,blocks", [(70, 50, 90, 4), (1000, 520, 700, 132), (333, 4000, 257, 64)])
def test_streamk_gemm(counter, M, N, K, blocks):
    a, b = (torch.randn(M, K) / 4).half(), (torch.randn(K, N) / 4).half()
    ref = (a.double() @ b.double()).cuda()
    k = streamk_gemm(M, N, K, 64, 64, 32, blocks, counter)
    for _ in range(REPEATS):
        torch.testing.assert_close(k(dev(a), dev(b)).double(), ref, atol=2e-3, rtol=2e-3)


@pytest.mark.parametrize("n", [0, 1, 7, 40])
def test_for_over_a_loaded_bound(n):
    M, N = 1001, 16 * 40 - 5
    a = torch.randn(M, N)
    lim = torch.tensor([n], dtype=torch.int32)
    ref = ref_first_tiles(a, n, 16).cuda()
    k = sum_of_first_tiles(M, N)
    for _ in range(REPEATS):
        torch.testing.assert_close(k(dev(a), dev(lim)).double(), ref, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("flag", [1, 0])
def test_if_on_a_loaded_scalar(flag):
    M, N = 1001, 40
    a, b = torch.randn(M, N), torch.randn(M, N)
    fl = torch.tensor([flag], dtype=torch.int32)
    ref = (a * 2 if flag else a + b).double().cuda()
    k = branch_on_loaded_flag(M, N)
    for _ in range(REPEATS):
        torch.testing.assert_close(k(dev(a), dev(b), dev(fl)).double(), ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("loop", ["serial", "while"])
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("skip,stop", [(1, 3), (0, 99), (5, 30), (2, 2)])
def test_break_and_continue(loop, shared, skip, stop):
    M, N = 777, 16 * 37 - 3
    a = torch.randn(M, N)
    p = torch.tensor([skip, stop], dtype=torch.int32)
    ref = ref_weighted(a, skip, stop, 16).cuda()
    k = weighted_tiles(M, N, loop=loop, shared=shared)
    for _ in range(REPEATS):
        torch.testing.assert_close(k(dev(a), dev(p)).double(), ref, atol=1e-3, rtol=1e-5)
