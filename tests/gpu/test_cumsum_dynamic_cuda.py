"""T.cumsum on register fragments (both dims, reverse, in place or not, a GEMM
accumulator) and T.Parallel over a dynamic extent on a real GPU, against torch,
at sizes that are not tile multiples."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

import cumsum_kernels as CK  # noqa: E402

torch.manual_seed(0)


def tiled_cumsum(x, bm, bn, dim, reverse):
    M, N = x.shape
    pm, pn = -M % bm, -N % bn
    t = torch.nn.functional.pad(x, (0, pn, 0, pm)).view((M + pm) // bm, bm, (N + pn) // bn, bn)
    d = 1 if dim == 0 else 3
    t = t.flip(d).cumsum(d).flip(d) if reverse else t.cumsum(d)
    return t.reshape(M + pm, N + pn)[:M, :N]


@pytest.mark.parametrize(
    "dim,reverse,in_place", [(0, False, True), (1, False, False), (1, True, True), (0, True, False)]
)
def test_fragment_cumsum(dim, reverse, in_place):
    M, N = 1000, 777
    k = CK.fragment_cumsum(M, N, dim, reverse, in_place=in_place)
    x = torch.randn(M, N, device="cuda")
    y = torch.zeros_like(x)
    k(x, y)
    torch.testing.assert_close(y, tiled_cumsum(x, 32, 64, dim, reverse), atol=1e-4, rtol=1e-4)


def test_cumsum_of_gemm_accumulator():
    M, N, K = 500, 300, 256
    k = CK.cumsum_of_gemm(M, N, K)
    a, b = torch.randn(M, K, device="cuda").half(), torch.randn(K, N, device="cuda").half()
    c = torch.zeros(M, N, device="cuda")
    k(a, b, c)
    ref = tiled_cumsum(a.float() @ b.float(), 64, 64, 1, False)
    torch.testing.assert_close(c, ref, atol=5e-2, rtol=1e-3)


@pytest.mark.parametrize("n", [1, 333, 4099])
def test_dynamic_parallel(n):
    k = CK.dynamic_parallel_scale(1000)
    x = torch.randn(1000, n, device="cuda")
    y = torch.zeros_like(x)
    k(x, y)
    torch.testing.assert_close(y, 2 * x + 1)


def test_dynamic_parallel_atomics():
    k = CK.dynamic_parallel_atomic(64)
    x = torch.randn(64, 1001, device="cuda")
    out = torch.zeros(1001, device="cuda")
    k(x, out)
    torch.testing.assert_close(out, x.sum(0), atol=1e-3, rtol=1e-4)
