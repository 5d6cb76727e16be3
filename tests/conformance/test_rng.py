"""In-kernel random numbers (`T.rng_init` / `T.rng_rand` / `T.rng_rand_float`) written the
public way, on the C backend, the CUDA simulator and nvcc (sm_80, sm_90a):

- the Python Philox4x32-10 (philox_ref.py) reproduces the published known-answer vectors,
  and so do the C header and (host-compiled) the CUDA header, draw for draw for every kind;
- upstream's five-stream fill, dropout, Gumbel-max sampling, the statement-form skip-ahead
  and block-level serial draws give exactly the reference's numbers on the CPU backend and
  in the simulated per-thread CUDA lowering (so the GPU, running the same header, gives
  them too: tests/gpu/test_conformance_rng.py);
- misuse is an error at its line.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import torch
from sim import simulate

import tilelang
import tilelang.language as T
from conformance import rng_kernels as K
from conformance.philox_ref import MASK, draw, philox4x32_10
from conformance.util import CUDA_ARCHS, cuda_build
from tilelang.errors import TileLangError

KAT = [  # Random123 kat_vectors: counter, key -> output
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((MASK,) * 4, (MASK, MASK), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]
KINDS = ("u32", "uniform_f32", "uniform_f64", "normal_f32", "normal_f64")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEED, SEQ = 0x0123456789ABCDEF, 0x1_0000_0005  # both halves of seed and subsequence in play


@pytest.mark.parametrize("ctr,key,want", KAT)
def test_reference_matches_published_vectors(ctr, key, want):
    assert philox4x32_10(ctr, key) == want


def _header_program(c_api: bool) -> str:
    kat = "".join(
        f"{{ uint32_t c[4] = {{{', '.join(hex(x) + 'u' for x in ctr)}}}, k[2] = {{{', '.join(hex(x) + 'u' for x in key)}}}, o[4];"
        f' {"tl_" if c_api else "tl::"}philox4x32_10(c, k, o); printf("%u %u %u %u\\n", o[0], o[1], o[2], o[3]); }}\n'
        for ctr, key, _ in KAT
    )
    pre = "tl_" if c_api else "tl::"
    draws = (
        f'for (unsigned long long p = 0; p < 40; ++p) printf("%u %.9g %.17g %.9g %.17g\\n", '
        f"{pre}philox_u32(s, q, p), (double){pre}philox_uniform_f32(s, q, p), {pre}philox_uniform_f64(s, q, p), "
        f"(double){pre}philox_normal_f32(s, q, p), {pre}philox_normal_f64(s, q, p));\n"
    )
    head = '#include <stdio.h>\n#include "tl_philox.h"\n' if c_api else '#include <stdio.h>\n#include "tl/philox.h"\n'
    return head + f"int main(void) {{\n{kat}unsigned long long s = {SEED}ull, q = {SEQ}ull;\n{draws}return 0; }}\n"


def _expected_lines() -> list:
    lines = [" ".join(str(x) for x in want) for _, _, want in KAT]
    for p in range(40):
        u, f, d, n, nd = (draw(k, SEED, SEQ, p) for k in KINDS)
        lines.append(f"{u} {f:.9g} {d:.17g} {n:.9g} {nd:.17g}")
    return lines


def _run(cmd: list, exe: str) -> list:
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return subprocess.run([exe], check=True, capture_output=True, text=True, timeout=60).stdout.split("\n")[:-1]


def test_c_header_matches_reference(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src, exe = tmp_path / "kat.c", str(tmp_path / "kat")
    src.write_text(_header_program(True))
    inc = os.path.join(ROOT, "tilelang", "backend", "c", "include")
    # the C backend's own flags (-O3 -march=native -ffp-contract=off ...)
    from tilelang.backend.c.compiler import flags_for

    flags = [f for f in flags_for(None) if f not in ("-shared", "-fPIC")]
    assert _run([cc, *flags, f"-I{inc}", "-o", exe, str(src), "-lm"], exe) == _expected_lines()


def test_cuda_header_host_path_matches_reference(tmp_path):
    from tilelang.backend.target import nvcc_path

    nvcc = nvcc_path()
    if nvcc is None:
        pytest.skip("nvcc not found")
    src, exe = tmp_path / "kat.cu", str(tmp_path / "kat")
    src.write_text(_header_program(False))
    inc = os.path.join(ROOT, "tilelang", "backend", "cuda", "include")
    assert _run([nvcc, "-std=c++17", f"-I{inc}", "-o", exe, str(src)], exe) == _expected_lines()


# -- kernels on the CPU backend and in the simulated CUDA lowering ------------------------------------


@pytest.mark.parametrize("M,seed,per,threads", [(300, 42, 128, 1), (77, 0xFFFFFFFF_FFFF, 16, 2)])
def test_rand_1d_streams(M, seed, per, threads):
    ref = K.rand_1d_reference(M, seed, per, threads)
    outs = [torch.zeros(M, dtype=r.dtype) for r in ref]
    K.rand_1d(M, seed, per, threads)(*outs)
    for got, want in zip(outs, ref):
        assert torch.equal(got, want)
    for arch in CUDA_ARCHS:
        sims = [torch.zeros(M, dtype=r.dtype) for r in ref]
        simulate(K.rand_1d.get_tir(M, seed, per, threads), sims, arch=arch)
        for got, want in zip(sims, ref):
            assert torch.equal(got, want), arch


def test_uniform_and_normal_statistics():
    M = 4000
    dts = (torch.uint32, torch.float32, torch.float64, torch.float32, torch.float64)
    bits, u, ud, n, nd = (torch.zeros(M, dtype=d) for d in dts)
    K.rand_1d(M, 3, 128, 1)(bits, u, ud, n, nd)
    for x in (u, ud):
        assert 0 < float(x.min()) and float(x.max()) <= 1 and abs(float(x.mean()) - 0.5) < 0.02
    for x in (n, nd):
        assert abs(float(x.mean())) < 0.06 and abs(float(x.std()) - 1) < 0.05


@pytest.mark.parametrize("M,N,p", [(77, 150, 0.3), (33, 65, 0.5)])
def test_dropout(M, N, p):
    x = torch.randn(M, N, generator=torch.Generator().manual_seed(1)).half()
    mask, y = K.dropout(M, N, p, 1234)(x)
    want = K.dropout_mask_reference(M, N, p, 1234)
    assert torch.equal(mask, want)
    assert abs(float(want.float().mean()) - (1 - p)) < 0.05
    torch.testing.assert_close(y.float(), (x.float() * want.float() / (1 - p)), atol=2e-3, rtol=2e-3)
    m2, y2 = torch.zeros_like(mask), torch.zeros_like(y)
    simulate(K.dropout.get_tir(M, N, p, 1234), [x, m2, y2], arch="sm_80")
    assert torch.equal(m2, mask) and torch.equal(y2, y)


def test_gumbel_max_sampling():
    B, V, seed = 5, 203, 77
    logits = torch.randn(B, V, generator=torch.Generator().manual_seed(2)) * 3
    g = K.gumbel_perturb(B, V, seed)(logits)
    ref = K.gumbel_reference(logits, K.gumbel_uniforms(B, V, seed))
    torch.testing.assert_close(g, ref, atol=1e-5, rtol=1e-5)
    assert torch.equal(g.argmax(-1), ref.argmax(-1))
    g2 = torch.zeros_like(g)
    simulate(K.gumbel_perturb.get_tir(B, V, seed), [logits, g2], arch="sm_90a")
    torch.testing.assert_close(g2, g, atol=1e-5, rtol=1e-5)


def test_statement_draw_skips_ahead_like_triton_randint():
    M, seed = 133, 5
    a = K.skip_ahead(M, seed)()
    assert torch.equal(
        a, torch.tensor([draw("u32", seed, 0, 4 * i) for i in range(M)], dtype=torch.int64).to(torch.uint32)
    )


def test_serial_draws_in_program_order():
    M, seed = 45, 11
    a = K.serial_draws(M, seed)()
    assert torch.equal(a, K.serial_draws_reference(M, seed))
    a2 = torch.zeros_like(a)
    simulate(K.serial_draws.get_tir(M, seed), [a2], arch="sm_80")
    assert torch.equal(a2, a)


def test_default_subsequence_is_block_times_threads():
    @tilelang.jit(out_idx=[-1])
    def k(n, threads):
        @T.prim_func
        def main(A: T.Tensor((n, 2), "uint32")):
            with T.Kernel(n, threads=threads) as bx:
                T.rng_init(99)
                A[bx, 0] = T.rng_rand()
                A[bx, 1] = T.rng_rand()

        return main

    a = k(5, 64)()
    want = [[draw("u32", 99, b * 64, p) for p in range(2)] for b in range(5)]
    assert torch.equal(a, torch.tensor(want, dtype=torch.int64).to(torch.uint32))


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_nvcc_builds(arch):
    for tir in (
        K.rand_1d.get_tir(300, 42),
        K.dropout.get_tir(77, 150, 0.3, 1234),
        K.gumbel_perturb.get_tir(5, 203, 77),
        K.serial_draws.get_tir(45, 11),
    ):
        art = cuda_build(tir, arch)
        assert "tl::philox_" in art.kernel_source and '#include "tl/philox.h"' in art.kernel_source


# -- errors ----------------------------------------------------------------------------------------------


def _trace_error(body) -> TileLangError:
    @tilelang.jit(out_idx=[-1])
    def k(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32):
                body(A, n)

        return main

    with pytest.raises(TileLangError) as ei:
        k(8)()
    return ei.value


def test_draw_before_init_is_an_error():
    @T.macro
    def body(A, n):
        for i in T.Parallel(n):
            A[i] = T.rng_rand_float()

    err = _trace_error(body)
    assert "before T.rng_init" in str(err) and "test_rng.py" in str(err)


def test_other_curand_generators_are_unsupported():
    @T.macro
    def body(A, n):
        T.rng_init(1, generator="curandStateXORWOW_t")

    err = _trace_error(body)
    assert err.kind == "unsupported" and "XORWOW" in str(err)


def test_rng_init_inside_parallel_is_unsupported():
    @T.macro
    def body(A, n):
        for i in T.Parallel(n):
            T.rng_init(1, i)
            A[i] = T.rng_rand_float()

    err = _trace_error(body)
    assert err.kind == "unsupported" and "inside T.Parallel" in str(err)


def test_bad_rng_rand_float_arguments():
    @T.macro
    def body(A, n):
        T.rng_init(1)
        A[0] = T.rng_rand_float(bit=16)

    assert "bit must be 32 or 64" in str(_trace_error(body))
