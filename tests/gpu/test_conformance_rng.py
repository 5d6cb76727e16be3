"""GPU twin of tests/conformance/test_rng.py: the same kernels run on CUDA and give exactly
the numbers of the CPU backend (and of the Python Philox reference) — uint32, uniform and
normal streams, a dropout mask, Gumbel-max samples."""

from __future__ import annotations

import pytest
import torch
from conformance import rng_kernels as K
from conformance.philox_ref import draw

pytestmark = pytest.mark.cuda


@pytest.mark.parametrize("M,seed,per,threads", [(1000, 42, 128, 1), (77, 0xFFFFFFFF_FFFF, 16, 2), (4099, 7, 8, 64)])
def test_rand_1d_streams_cuda(M, seed, per, threads):
    ref = K.rand_1d_reference(M, seed, per, threads)
    outs = [torch.zeros(M, dtype=r.dtype, device="cuda") for r in ref]
    K.rand_1d(M, seed, per, threads)(*outs)
    cpu = [torch.zeros(M, dtype=r.dtype) for r in ref]
    K.rand_1d.compile(M, seed, per, threads, target="c")(*cpu)
    for got, c, want in zip(outs, cpu, ref):
        assert torch.equal(got.cpu(), want)
        assert torch.equal(c, want)


@pytest.mark.parametrize("M,N,p", [(77, 150, 0.3), (1000, 1027, 0.1)])
def test_dropout_cuda(M, N, p):
    x = torch.randn(M, N, generator=torch.Generator().manual_seed(1)).half()
    mask, y = K.dropout(M, N, p, 1234)(x.cuda())
    cmask, cy = K.dropout.compile(M, N, p, 1234, target="c")(x)
    assert torch.equal(mask.cpu(), cmask)
    if M * N < 20000:  # the Python reference is slow
        assert torch.equal(cmask, K.dropout_mask_reference(M, N, p, 1234))
    torch.testing.assert_close(y.cpu().float(), cy.float(), atol=2e-3, rtol=2e-3)
    torch.testing.assert_close(y.float(), x.cuda().float() * mask.float() / (1 - p), atol=2e-3, rtol=2e-3)


def test_gumbel_max_sampling_cuda():
    B, V, seed = 8, 32001, 77
    logits = torch.randn(B, V, generator=torch.Generator().manual_seed(2)) * 3
    g = K.gumbel_perturb(B, V, seed)(logits.cuda())
    cg = K.gumbel_perturb.compile(B, V, seed, target="c")(logits)
    torch.testing.assert_close(g.cpu(), cg, atol=1e-5, rtol=1e-5)
    assert torch.equal(g.argmax(-1).cpu(), cg.argmax(-1))
    # the samples follow softmax(logits): compare a frequency on many rows
    rows = 4096
    lg = torch.tensor([2.0, 1.0, 0.0, -1.0]).repeat(rows, 1)
    s = K.gumbel_perturb(rows, 4, seed, block_V=4, threads=32)(lg.cuda()).argmax(-1).cpu()
    freq = torch.bincount(s, minlength=4).double() / rows
    torch.testing.assert_close(freq, torch.softmax(lg[0].double(), 0), atol=0.03, rtol=0)


def test_statement_draw_skips_ahead_cuda():
    M, seed = 1333, 5
    a = K.skip_ahead(M, seed, threads=128)()
    assert a.is_cuda
    want = torch.tensor([draw("u32", seed, 0, 4 * i) for i in range(M)], dtype=torch.int64).to(torch.uint32)
    assert torch.equal(a.cpu(), want)


def test_serial_draws_cuda():
    M, seed = 300, 11
    a = K.serial_draws(M, seed)()
    assert torch.equal(a.cpu(), K.serial_draws_reference(M, seed))
