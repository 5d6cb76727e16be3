"""Indices beyond 2^31 elements (issue #22, item 1).

A kernel whose global buffers can hold 2^31 elements or more computes their indices in 64
bits (`transform/widen_indices.py`); a dynamic dimension declared int32 (the default of
`T.dynamic`) keeps 32-bit arithmetic and the launcher refuses sizes above the kernel's limit
with a one-line error (`backend/launch_limits.py`); every dynamic dimension reaches the kernel
as an int64.

The large CPU runs use `torch.empty` (pages are committed lazily: reading an untouched page
maps the zero page) and check a sample of positions plus the tail, where inputs are random and
non-zero. They are marked `slow`: each touches ~6.5 GB (the 2^31 + 200 runs) or ~1 KB (the
tail kernel at 2^32 + 300, which indexes past 2^32 without reading the rest).
"""

from __future__ import annotations

import re

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.errors import IndexLimitError

BIG = 2**31 + 200  # not a multiple of the tile
HUGE = 2**32 + 300


# -- kernels, written the way user programs are -------------------------------------------------
@tilelang.jit(out_idx=[-1], target="c")
def vector_add(M, block=128, dtype="int8"):
    @T.prim_func
    def main(A: T.Tensor((M,), dtype), B: T.Tensor((M,), dtype), C: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return main


@tilelang.jit(out_idx=[-1], target="c")
def vector_add_dyn(index_dtype="int32", block=128, dtype="int8"):
    m = T.dynamic("m", index_dtype)

    @T.prim_func
    def main(A: T.Tensor((m,), dtype), B: T.Tensor((m,), dtype), C: T.Tensor((m,), dtype)):
        with T.Kernel(T.ceildiv(m, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return main


@tilelang.jit(out_idx=[-1], target="c")
def add_one_2d(M, N, bm=32, bn=128, dtype="int8"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                C[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j] + 1

    return main


def tail_add(M, tiles=3, block=128, dtype="int8"):
    """C = A + B on the last `tiles` tiles only: every block runs, the others skip their tile
    (cheap at any size), and the indices of the working blocks are near M."""

    @T.prim_func
    def main(A: T.Tensor((M,), dtype), B: T.Tensor((M,), dtype), C: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
            if bx >= T.ceildiv(M, block) - tiles:
                for i in T.Parallel(block):
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return main


# -- helpers ----------------------------------------------------------------------------------
def _sparse_inputs(n: int, gen: torch.Generator, dtype=torch.int8, tail: int = 300):
    """Two lazily committed length-`n` tensors, random and non-zero at 64 sampled positions,
    around 2^31 and 2^32 (when inside) and in the last `tail` elements; zero elsewhere."""
    a, b = torch.empty(n, dtype=dtype), torch.empty(n, dtype=dtype)
    pos = torch.randint(0, n, (64,), generator=gen).tolist()
    for edge in (2**31, 2**32):
        pos += [p for p in range(edge - 3, edge + 3) if 0 <= p < n]
    pos = sorted(set(pos))
    idx = torch.tensor(pos)
    a[idx] = torch.randint(1, 60, (len(pos),), generator=gen, dtype=dtype)
    b[idx] = torch.randint(1, 60, (len(pos),), generator=gen, dtype=dtype)
    a[n - tail :] = torch.randint(1, 60, (tail,), generator=gen, dtype=dtype)
    b[n - tail :] = torch.randint(1, 60, (tail,), generator=gen, dtype=dtype)
    return a, b, idx


def _check_sparse(c, a, b, idx, tail: int = 300) -> None:
    n = a.numel()
    assert torch.equal(c[idx], a[idx] + b[idx])
    assert torch.equal(c[n - tail :], a[n - tail :] + b[n - tail :])
    zeros = torch.tensor([0, 1, 2**30, n // 2, n - tail - 1])  # inputs untouched there: 0 + 0
    assert torch.equal(c[zeros], torch.zeros(len(zeros), dtype=c.dtype))


# -- beyond 2^31 on the CPU backend -----------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("form", ["static", "dynamic_int64"])
def test_vector_add_beyond_2_31_cpu(form):
    # ~6.5 GB touched per form (2 GiB written, 4 GiB of zero pages read); well under a minute
    gen = torch.Generator().manual_seed(1)
    a, b, idx = _sparse_inputs(BIG, gen)
    kernel = vector_add(BIG) if form == "static" else vector_add_dyn("int64")
    c = kernel(a, b)
    _check_sparse(c, a, b, idx)


@pytest.mark.slow
def test_2d_elementwise_beyond_2_31_cpu():
    M, N = 2**16 + 3, 2**15 + 5  # 2^31 + 425_999 elements; neither a tile multiple
    gen = torch.Generator().manual_seed(2)
    a = torch.empty(M, N, dtype=torch.int8)
    rows = torch.tensor([0, 17, M // 2, M - 2, M - 1])
    a[rows] = torch.randint(-50, 50, (len(rows), N), generator=gen, dtype=torch.int8)
    c = add_one_2d(M, N)(a)
    assert torch.equal(c[rows], a[rows] + 1)
    assert torch.equal(c[M // 3, :64], torch.ones(64, dtype=torch.int8))  # 0 + 1 where untouched


@pytest.mark.slow
def test_indices_past_2_32_cpu():
    # static shape of 2^32 + 300 elements; only the last 3 tiles are added, so this stays cheap.
    # With 32-bit indices `bx * 128 + i` wraps past 2^32: the writes land near the start of C.
    gen = torch.Generator().manual_seed(3)
    a, b, _ = _sparse_inputs(HUGE, gen, tail=384)
    c = torch.empty(HUGE, dtype=torch.int8)
    c[:1024] = 7
    c[-1024:] = 7
    kernel = tilelang.compile(tail_add(HUGE), target="c")
    kernel(a, b, c)
    n = 384 - (-HUGE % 128)  # the last 3 tiles, the last one partial
    assert torch.equal(c[-n:], a[-n:] + b[-n:])
    assert torch.equal(c[-1024:-n], torch.full((1024 - n,), 7, dtype=torch.int8))
    assert torch.equal(c[:1024], torch.full((1024,), 7, dtype=torch.int8))


def test_int32_dynamic_size_above_limit_is_refused():
    # the tensors are never touched: the launcher refuses before the kernel runs
    a = torch.empty(BIG, dtype=torch.int8)
    kernel = vector_add_dyn()
    with pytest.raises(IndexLimitError) as err:
        kernel(a, a)
    msg = str(err.value)
    assert "\n" not in msg
    assert "argument `A`: dimension 0 is m = 2147483848" in msg and "32-bit" in msg
    assert 'T.dynamic("m", "int64")' in msg
    limit = int(re.search(r"above (\d+)", msg).group(1))
    assert 2**30 <= limit < 2**31


def test_int32_dynamic_sizes_below_limit_run():
    kernel = vector_add_dyn(block=96)
    gen = torch.Generator().manual_seed(4)
    for n in (1, 95, 1000, 4099):
        a = torch.randint(-60, 60, (n,), generator=gen, dtype=torch.int8)
        b = torch.randint(-60, 60, (n,), generator=gen, dtype=torch.int8)
        assert torch.equal(kernel(a, b), a + b)


def test_launch_limits_are_recorded_per_kernel():
    from tilelang.transform.widen_indices import INT32_MAX

    limits = _limits(_dyn_func("int32"))
    assert len(limits) == 1 and limits[0][1] == "m" and limits[0][3:] == ("A", 0)
    assert 2**30 <= limits[0][2] <= INT32_MAX
    assert _limits(_dyn_func("int64")) == ()  # int64 dimensions: 64-bit arithmetic, no limit
    assert _limits(_static_func(1000)) == ()


def cuda_build(func, arch: str):
    """Lower `func` for CUDA `arch` and build it with nvcc (skip without nvcc)."""
    from tilelang.backend.target import nvcc_path

    if nvcc_path() is None:
        pytest.skip("nvcc not found")
    return tilelang.lower(func, target={"kind": "cuda", "arch": arch})


# -- generated source ---------------------------------------------------------------------------
def _dyn_func(index_dtype, block=128, dtype="int8"):
    m = T.dynamic("m", index_dtype)

    @T.prim_func
    def main(A: T.Tensor((m,), dtype), B: T.Tensor((m,), dtype), C: T.Tensor((m,), dtype)):
        with T.Kernel(T.ceildiv(m, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return main


def _static_func(M, block=128, dtype="int8"):
    @T.prim_func
    def main(A: T.Tensor((M,), dtype), B: T.Tensor((M,), dtype), C: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return main


def _limits(func):
    from tilelang.backend.c.pipeline import lower

    return tuple(lower(func).attrs.get("index_limits") or ())


def test_c_source_uses_64_bit_indices_only_where_needed():
    big = tilelang.lower(_static_func(BIG), target="c").kernel_source
    assert "C[((int64_t)bx) * INT64_C(128) + ((int64_t)i)]" in big
    small = tilelang.lower(_static_func(1 << 20), target="c").kernel_source
    assert "int64_t)bx" not in small and "C[bx * 128 + i]" in small
    dyn64 = tilelang.lower(_dyn_func("int64"), target="c").kernel_source
    assert "const int64_t bx = (int64_t)tl_bx;" in dyn64 and "bx * INT64_C(128) + ((int64_t)i) < m" in dyn64
    dyn32 = tilelang.lower(_dyn_func("int32"), target="c").kernel_source
    assert "const int32_t m = (int32_t)(*(const int64_t*)args[3]);" in dyn32 and "C[bx * 128 + i]" in dyn32


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_cuda_source_uses_64_bit_indices_and_builds(arch):
    big = cuda_build(_static_func(BIG, dtype="float16"), arch)
    assert "C[((int64_t)bx) * 128ll + ((int64_t)tx)]" in big.kernel_source
    dyn64 = cuda_build(_dyn_func("int64", dtype="float16"), arch).kernel_source
    assert "int64_t m) {" in dyn64 and "const int64_t bx = blockIdx.x;" in dyn64
    assert "if (bx * 128ll + ((int64_t)tx) < m)" in dyn64
    dyn32 = cuda_build(_dyn_func("int32", dtype="float16"), arch).kernel_source
    # passed as int64, narrowed after the launcher's check; 32-bit arithmetic inside
    assert "int64_t m_arg) {" in dyn32 and "const int m = (int)m_arg;" in dyn32
    assert "C[bx * 128 + tx]" in dyn32
    two_d = cuda_build(_two_d_func(2**16 + 3, 2**15 + 5), arch).kernel_source
    assert "C[(int64_t)(by * 32 + co * 16 + tx / 8) * 32773 + (bx * 128 + tx % 8 * 16 + lane)]" in two_d


def _two_d_func(M, N, bm=32, bn=128, dtype="int8"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                C[by * bm + i, bx * bn + j] = A[by * bm + i, bx * bn + j] + 1

    return main


def test_cuda_static_grid_above_the_limit_is_a_compile_error():
    @T.prim_func
    def main(A: T.Tensor((2**20, 2**17), "int8")):
        with T.Kernel(1, 2**17, threads=128) as (bx, by):
            for j in T.Parallel(128):
                A[bx, by * 128 + j] = 0

    with pytest.raises(tilelang.errors.UnsupportedError, match="grid dimension y has 131072 blocks"):
        tilelang.lower(main, target={"kind": "cuda", "arch": "sm_90a"}, enable_device_compile=False)


def test_small_kernels_keep_32_bit_indices():
    src = tilelang.lower(_static_func(1000), target={"kind": "cuda", "arch": "sm_80"},
                         enable_device_compile=False).kernel_source  # fmt: skip
    assert "int64_t" not in src


def test_cuda_launcher_checks_dynamic_limits_and_grid():
    # the CUDA backend's meta carries the limits; the launch wrappers refuse before packing
    from tilelang.backend.cuda.backend import make_backend
    from tilelang.backend.launch_limits import grid_guard, guard_dynamic
    from tilelang.backend.target import parse

    backend = make_backend()
    target = parse({"kind": "cuda", "arch": "sm_90a"})
    meta = backend.lower(_dyn_func("int32", dtype="float16"), target, {}).meta
    assert meta["args"][-1] == "i64"
    calls = []
    launch = guard_dynamic(lambda values, dyn: calls.append(dyn), meta)
    launch([], [1000])
    assert calls == [[1000]]
    with pytest.raises(IndexLimitError, match=r"argument `A`: dimension 0 is m = 2147483648, above \d+"):
        launch([], [2**31])
    assert calls == [[1000]]  # nothing launched

    m = T.dynamic("m", "int64")

    @T.prim_func
    def tall(A: T.Tensor((m, 128), "float16")):
        with T.Kernel(1, T.ceildiv(m, 64), threads=128) as (bx, by):
            for i, j in T.Parallel(64, 128):
                A[by * 64 + i, j] = 0

    meta = backend.lower(tall, target, {}).meta
    assert meta.get("grid_check") and "index_limits" not in meta
    grid = grid_guard(lambda values, dyn: (1, (dyn[0] + 63) // 64, 1), meta)
    assert grid([], [64 * 65535]) == (1, 65535, 1)
    with pytest.raises(IndexLimitError, match="65536 blocks in y, more than CUDA's limit of 65535"):
        grid([], [64 * 65535 + 1])


@tilelang.jit(out_idx=[-1], target="c")
def gather_pairs(M, n, block=64, dtype="int8"):
    """C[i] = A[2 * idx[i]] + A[2 * idx[i] + 1]: indices that read memory."""

    @T.prim_func
    def main(A: T.Tensor((M,), dtype), idx: T.Tensor((n,), "int32"), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[idx[bx * block + i] * 2] + A[idx[bx * block + i] * 2 + 1]

    return main


def test_gather_into_a_buffer_beyond_2_31_cpu():
    # only the gathered pages of A are touched: cheap at 2^31 + 200 elements
    n = 100
    gen = torch.Generator().manual_seed(5)
    a = torch.empty(BIG, dtype=torch.int8)
    idx = torch.randint(2**30 - 50, BIG // 2, (n,), generator=gen, dtype=torch.int32)
    idx[:3] = torch.tensor([0, BIG // 2 - 1, 2**30 + 7])
    a[2 * idx.long()] = torch.randint(-60, 60, (n,), generator=gen, dtype=torch.int8)
    a[2 * idx.long() + 1] = torch.randint(-60, 60, (n,), generator=gen, dtype=torch.int8)
    kernel = gather_pairs(BIG, n)
    assert "((int64_t)idx[" in kernel.get_kernel_source()  # the load's value times 2 computed in 64 bits
    c = kernel(a, idx)
    assert torch.equal(c, a[2 * idx.long()] + a[2 * idx.long() + 1])
