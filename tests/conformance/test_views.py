"""Buffer views written the way public TileLang 0.1.x programs write them: `T.Tensor(shape,
dtype, buf.data)` / `T.Buffer(...)` over another buffer's storage, `T.reshape`, `T.view`
with dtype reinterpretation (int8 storage as float8_e4m3fn, uint8 as float16 and back,
float32 as int32), on global, shared and fragment buffers.

CPU backend vs torch at sizes that are not tile multiples; nvcc builds for sm_80 and sm_90a;
the CUDA simulator for the same-dtype views (it holds values, not bytes); the shared-memory
planner counts a view once and puts it at its base's offset; barriers order a view's
accesses against its base's; and the views that cannot be expressed are errors at their line.
"""

from __future__ import annotations

import pytest
import torch

import tilelang
import tilelang.language as T
from conformance.util import CUDA_ARCHS, cuda_build
from tilelang.errors import TileLangError

torch.manual_seed(0)


def cuda_lower(func, arch="sm_80"):
    from tilelang.backend.cuda.pipeline import lower
    from tilelang.backend.target import parse

    return lower(func, {"target": parse({"kind": "cuda", "arch": arch}), "pass_configs": {}})


# -- global views ---------------------------------------------------------------------------------------


@tilelang.jit(out_idx=[-1], target="c")
def flat_scale(M, N, block=64, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M * N, block), threads=128) as bx:
            A_flat = T.Tensor((M * N,), dtype, A.data)
            B_flat = T.Buffer((M * N,), dtype, B.data)
            for i in T.Parallel(block):
                if bx * block + i < M * N:
                    B_flat[bx * block + i] = A_flat[bx * block + i] * 3 + 1

    return main


def test_global_tensor_over_data():
    a = torch.randn(37, 21)
    torch.testing.assert_close(flat_scale(37, 21)(a), a * 3 + 1)


@tilelang.jit(out_idx=[-1], target="c")
def reshape_copy(M, N, block_M=16, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M * N,), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            A2 = T.reshape(A, (M, N))
            S = T.alloc_shared((block_M, N), dtype)
            T.copy(A2[bx * block_M, 0], S)
            T.copy(S, B[bx * block_M, 0])

    return main


def test_global_reshape_tile_copy():
    a = torch.randn(45 * 24).half()
    torch.testing.assert_close(reshape_copy(45, 24)(a), a.reshape(45, 24))


@tilelang.jit(out_idx=[-1], target="c")
def fp8_from_int8(M, N, block_M=16):
    @T.prim_func
    def main(A: T.Tensor((M, N), "int8"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            A8 = T.view(A, dtype="float8_e4m3fn")
            R = T.alloc_fragment((block_M, N), "float32")
            T.copy(A8[bx * block_M, 0], R)
            T.copy(R, B[bx * block_M, 0])

    return main


def test_global_int8_viewed_as_fp8():
    f8 = torch.randn(37, 40).to(torch.float8_e4m3fn)
    torch.testing.assert_close(fp8_from_int8(37, 40)(f8.view(torch.int8)), f8.float())


@tilelang.jit(out_idx=[-1], target="c")
def halves_of_bytes(M, N):
    # uint8 storage (M, 2N) viewed as float16 (M, N): the shape follows from the widths
    @T.prim_func
    def main(A: T.Tensor((M, 2 * N), "uint8"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=32) as bx:
            H = T.view(A, dtype="float16")
            for j in T.Parallel(N):
                B[bx, j] = H[bx, j]

    return main


@tilelang.jit(out_idx=[-1], target="c")
def bytes_of_halves(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, 2 * N), "uint8")):
        with T.Kernel(M, threads=32) as bx:
            U = T.view(A, shape=(M, 2 * N), dtype="uint8")
            for j in T.Parallel(2 * N):
                B[bx, j] = U[bx, j]

    return main


def test_global_bytes_and_halves():
    h = torch.randn(7, 13).half()
    torch.testing.assert_close(halves_of_bytes(7, 13)(h.view(torch.uint8)), h.float())
    assert torch.equal(bytes_of_halves(7, 13)(h), h.view(torch.uint8))


# -- shared views ---------------------------------------------------------------------------------------


@tilelang.jit(out_idx=[-1], target="c")
def shared_fp8(M, N, block_M=16):
    @T.prim_func
    def main(A: T.Tensor((M, N), "int8"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=64) as bx:
            S = T.alloc_shared((block_M, N), "int8")
            S8 = T.view(S, dtype="float8_e4m3fn")
            R = T.alloc_fragment((block_M, N), "float32")
            T.copy(A[bx * block_M, 0], S)
            for i, j in T.Parallel(block_M, N):
                R[i, j] = S8[i, j] * 2
            T.copy(R, B[bx * block_M, 0])

    return main


def test_shared_int8_viewed_as_fp8():
    f8 = torch.randn(37, 24).to(torch.float8_e4m3fn)
    torch.testing.assert_close(shared_fp8(37, 24)(f8.view(torch.int8)), f8.float() * 2)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_shared_fp8_view_cuda(arch):
    src = cuda_build(shared_fp8.get_tir(37, 24), arch).kernel_source
    assert "reinterpret_cast<tl::fp8_e4m3_t*>(smem + 0)" in src and "reinterpret_cast<int8_t*>(smem + 0)" in src
    # the view is read after the base is written by other threads: a barrier between them
    body = src[src.index("int8_t* S =") :]
    assert body.index("__syncthreads()") < body.index("tl::cvt<float>")


@tilelang.jit(out_idx=[-1], target="c")
def shared_reshape(M, N, block_M=8):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=64) as bx:
            S = T.alloc_shared((block_M, N), "float32")
            S_flat = T.reshape(S, (block_M * N,))
            T.copy(A[bx * block_M, 0], S)
            for k in T.Parallel(block_M * N):
                S_flat[k] = S_flat[k] + k
            T.copy(S, B[bx * block_M, 0])

    return main


def _shared_reshape_ref(a, block_M=8):
    M, N = a.shape
    k = torch.arange(M * N).reshape(M, N) % (block_M * N)
    return a + k.float()


def test_shared_reshape_cpu_and_simulated():
    from sim import simulate

    a = torch.randn(21, 12)
    ref = _shared_reshape_ref(a)
    torch.testing.assert_close(shared_reshape(21, 12)(a), ref)
    out = torch.zeros(21, 12)
    lowered = simulate(shared_reshape.get_tir(21, 12), [a, out], arch="sm_80")
    torch.testing.assert_close(out, ref)
    # one allocation: the view sits at its base's offset and adds no bytes
    offs = dict(lowered.attrs["smem_offsets"])
    assert offs["S_flat"] == offs["S"] and lowered.attrs["smem_bytes"] == 8 * 12 * 4


def test_view_counts_once_in_the_plan():
    lowered = cuda_lower(shared_fp8.get_tir(37, 24))
    assert dict(lowered.attrs["smem_offsets"]) == {"S": 0, "S8": 0}
    assert lowered.attrs["smem_bytes"] == 16 * 24


@tilelang.jit(out_idx=[-1], target="c")
def fp8_gemm_from_int8(M, N, K, block_M=32, block_N=32, block_K=32):
    # int8 storage loaded by T.copy, multiplied as float8_e4m3fn through a shared view:
    # the gemm's swizzle is the base's too (one layout for one storage)
    @T.prim_func
    def main(A: T.Tensor((M, K), "int8"), B: T.Tensor((N, K), "float8_e4m3fn"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_raw = T.alloc_shared((block_M, block_K), "int8")
            A8 = T.view(A_raw, dtype="float8_e4m3fn")
            B_s = T.alloc_shared((block_N, block_K), "float8_e4m3fn")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(K, block_K)):
                T.copy(A[by * block_M, k * block_K], A_raw)
                T.copy(B[bx * block_N, k * block_K], B_s)
                T.gemm(A8, B_s, acc, transpose_B=True)
            T.copy(acc, C[by * block_M, bx * block_N])

    return main


def test_fp8_gemm_through_shared_view():
    M, N, K = 40, 36, 72
    a = torch.randn(M, K).to(torch.float8_e4m3fn)
    b = torch.randn(N, K).to(torch.float8_e4m3fn)
    out = fp8_gemm_from_int8(M, N, K)(a.view(torch.int8), b)
    torch.testing.assert_close(out, a.float() @ b.float().T, atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_fp8_gemm_through_shared_view_cuda(arch):
    func = fp8_gemm_from_int8.get_tir(40, 36, 72)
    lowered = cuda_lower(func, arch)
    lays = {b.name: lay for b, lay in lowered.attrs["layout_map"].items() if b.name in ("A_raw", "A8")}
    assert lays["A_raw"].is_equal(lays["A8"])  # the view's swizzle is its base's
    cuda_build(func, arch)


# -- fragment views ---------------------------------------------------------------------------------------


@tilelang.jit(out_idx=[-1], target="c")
def float_bits(M, N, block_M=16):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "int32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            R = T.alloc_fragment((block_M, N), "float32")
            Ri = T.view(R, dtype="int32")
            Q = T.alloc_fragment((block_M, N), "int32")
            T.copy(A[bx * block_M, 0], R)
            for i, j in T.Parallel(block_M, N):
                Q[i, j] = Ri[i, j] ^ 0x7FFFFF  # flip the mantissa bits
            T.copy(Q, B[bx * block_M, 0])

    return main


def test_fragment_float_viewed_as_int():
    a = torch.randn(37, 24)
    assert torch.equal(float_bits(37, 24)(a), a.view(torch.int32) ^ 0x7FFFFF)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_fragment_view_cuda(arch):
    src = cuda_build(float_bits.get_tir(37, 24), arch).kernel_source
    assert "Ri" not in src  # the view is its base's registers


@tilelang.jit(out_idx=[-1], target="c")
def fragment_reshape(M, N, block_M=16):
    # a T.Parallel loop over the flat view of an accumulator: walked as the (block_M, N) tile
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            R = T.alloc_fragment((block_M, N), "float32")
            R_flat = T.reshape(R, (block_M * N,))
            T.copy(A[bx * block_M, 0], R)
            for k in T.Parallel(block_M * N):
                R_flat[k] = R_flat[k] * 2 + k
            T.copy(R, B[bx * block_M, 0])

    return main


def _fragment_reshape_ref(a, block_M=16):
    M, N = a.shape
    return a * 2 + (torch.arange(M * N).reshape(M, N) % (block_M * N)).float()


def test_fragment_reshape_walked_by_parallel():
    from sim import simulate

    a = torch.randn(37, 24)
    torch.testing.assert_close(fragment_reshape(37, 24)(a), _fragment_reshape_ref(a))
    out = torch.zeros(37, 24)
    simulate(fragment_reshape.get_tir(37, 24), [a, out], arch="sm_80")
    torch.testing.assert_close(out, _fragment_reshape_ref(a))


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_fragment_reshape_cuda(arch):
    cuda_build(fragment_reshape.get_tir(37, 24), arch)


@tilelang.jit(out_idx=[-1], target="c")
def local_reshape(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=32) as bx:
            L = T.alloc_local((N,), "float32")
            L2 = T.reshape(L, (N // 2, 2))
            for j in T.serial(N):
                L[j] = A[bx, j]
            for p in T.serial(N // 2):
                t = L2[p, 0]
                L2[p, 0] = L2[p, 1]
                L2[p, 1] = t
            for j in T.serial(N):
                B[bx, j] = L[j]

    return main


def test_local_reshape_swaps_pairs():
    from sim import simulate

    a = torch.randn(5, 12)
    ref = a.reshape(5, 6, 2).flip(-1).reshape(5, 12)
    torch.testing.assert_close(local_reshape(5, 12)(a), ref)
    out = torch.zeros(5, 12)
    simulate(local_reshape.get_tir(5, 12), [a, out], arch="sm_80")
    torch.testing.assert_close(out, ref)


# -- what cannot be a view -------------------------------------------------------------------------------


def _err(factory, *args):
    with pytest.raises(TileLangError) as e:
        factory(*args)
    return str(e.value)


def test_reshape_element_count_mismatch():
    @tilelang.jit(out_idx=[-1], target="c")
    def bad(M, N):
        @T.prim_func
        def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
            with T.Kernel(1, threads=32):
                A2 = T.reshape(A, (M * N + 1,))
                B[0, 0] = A2[0]

        return main

    msg = _err(bad, 5, 7)
    assert "T.reshape" in msg and "same size in bits" in msg and "test_views.py:" in msg


def test_tensor_view_larger_than_its_base():
    @tilelang.jit(out_idx=[-1], target="c")
    def bad(M):
        @T.prim_func
        def main(A: T.Tensor((M,), "float16"), B: T.Tensor((M,), "float32")):
            with T.Kernel(1, threads=32):
                A2 = T.Tensor((M,), "float32", A.data)
                B[0] = A2[0]

        return main

    assert "no larger than" in _err(bad, 9)


def test_view_dtype_not_dividing_the_row():
    @tilelang.jit(out_idx=[-1], target="c")
    def bad(M, N):
        @T.prim_func
        def main(A: T.Tensor((M, N), "uint8"), B: T.Tensor((M, N), "float32")):
            with T.Kernel(1, threads=32):
                A2 = T.view(A, dtype="float32")
                B[0, 0] = A2[0, 0]

        return main

    msg = _err(bad, 4, 6)
    assert "not a multiple of 32 bits" in msg


def test_fragment_view_changing_width_breaks_layout():
    @tilelang.jit(out_idx=[-1], target="c")
    def bad(M):
        @T.prim_func
        def main(A: T.Tensor((M, 64), "float16"), B: T.Tensor((M, 32), "uint32")):
            with T.Kernel(1, threads=128):
                R = T.alloc_fragment((M, 64), "float16")
                T.copy(A, R)
                R2 = T.view(R, dtype="uint32")
                T.copy(R2, B)

        return main

    msg = _err(bad, 16)
    assert "breaks its layout" in msg and "16 → 32 bits" in msg


def test_view_of_a_scalar_var():
    @tilelang.jit(out_idx=[-1], target="c")
    def bad(M):
        @T.prim_func
        def main(A: T.Tensor((M,), "float32")):
            with T.Kernel(1, threads=32):
                v = T.alloc_var("float32")
                T.view(v, dtype="int32")
                A[0] = v

        return main

    assert "local.var" in _err(bad, 4)


def test_view_outside_the_kernel():
    @tilelang.jit(out_idx=[-1], target="c")
    def bad(M):
        @T.prim_func
        def main(A: T.Tensor((M,), "float32"), B: T.Tensor((M,), "float32")):
            A2 = T.reshape(A, (M,))
            with T.Kernel(1, threads=32):
                B[0] = A2[0]

        return main

    assert "inside `with T.Kernel" in _err(bad, 4)


def test_fragment_reshape_as_tile_op_operand_is_unsupported_on_cuda():
    @tilelang.jit(out_idx=[-1], target="c")
    def k(M, N):
        @T.prim_func
        def main(A: T.Tensor((M * N,), "float32"), B: T.Tensor((M * N,), "float32")):
            with T.Kernel(1, threads=128):
                R = T.alloc_fragment((M, N), "float32")
                Rf = T.reshape(R, (M * N,))
                T.copy(A, Rf)
                T.copy(Rf, B)

        return main

    a = torch.randn(16 * 8)
    torch.testing.assert_close(k(16, 8)(a), a)  # the C backend aliases the storage
    with pytest.raises(TileLangError) as e:
        cuda_lower(k.get_tir(16, 8))
    assert "unsupported" in str(e.value) and "pass `R` itself" in str(e.value)


def test_view_of_a_pipelined_tile_is_refused():
    @tilelang.jit(out_idx=[-1], target="c")
    def k(M, K, block_K=32):
        @T.prim_func
        def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((M, block_K), "float32")):
            with T.Kernel(1, threads=128):
                S = T.alloc_shared((M, block_K), "float16")
                Sf = T.reshape(S, (M * block_K,))
                acc = T.alloc_fragment((M, block_K), "float32")
                T.clear(acc)
                for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                    T.copy(A[0, ko * block_K], S)
                    for i, j in T.Parallel(M, block_K):
                        acc[i, j] += Sf[i * block_K + j]
                T.copy(acc, B)

        return main

    a = torch.randn(16, 70).half()
    ref = torch.nn.functional.pad(a.float(), (0, 26)).reshape(16, 3, 32).sum(1)
    torch.testing.assert_close(k(16, 70)(a), ref)
    with pytest.raises(TileLangError) as e:
        cuda_lower(k.get_tir(16, 70))
    assert "multi-buffers" in str(e.value)


@tilelang.jit(out_idx=[-1], target="c")
def chained_dynamic(N):
    # a view of a view over a tensor with a run-time dimension: the sizes are provably equal
    M = T.dynamic("m")

    @T.prim_func
    def main(A: T.Tensor((M, N), "int8"), B: T.Tensor((M * N,), "float32")):
        with T.Kernel(T.ceildiv(M * N, 128), threads=128) as bx:
            A8 = T.view(A, dtype="float8_e4m3fn")
            flat = T.reshape(A8, (M * N,))
            for i in T.Parallel(128):
                if bx * 128 + i < M * N:
                    B[bx * 128 + i] = flat[bx * 128 + i]

    return main


def test_chained_view_with_dynamic_shape():
    kern = chained_dynamic(24)
    for m in (5, 77):
        f8 = torch.randn(m, 24).to(torch.float8_e4m3fn)
        torch.testing.assert_close(kern(f8.view(torch.int8)), f8.float().flatten())


def test_non_contiguous_base():
    import dataclasses

    @tilelang.jit(out_idx=[-1], target="c")
    def bad(M):
        @T.prim_func
        def main(A: T.Tensor((M, M), "float32"), B: T.Tensor((M,), "float32")):
            with T.Kernel(1, threads=32):
                At = dataclasses.replace(A, strides=(1, M))  # a column-major tensor (no public spelling yet)
                flat = T.reshape(At, (M * M,))
                B[0] = flat[0]

        return main

    assert "not contiguous" in _err(bad, 4)


def test_view_of_a_region_is_an_error():
    @tilelang.jit(out_idx=[-1], target="c")
    def bad(M):
        @T.prim_func
        def main(A: T.Tensor((M, M), "float32"), B: T.Tensor((M,), "float32")):
            with T.Kernel(1, threads=32):
                flat = T.reshape(A[0:2, :], (2 * M,))
                B[0] = flat[0]

        return main

    assert "must be a buffer" in _err(bad, 4)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_global_views_cuda_build(arch):
    src = cuda_build(chained_dynamic.get_tir(24), arch).kernel_source
    assert "tl::fp8_e4m3_t* A8 = reinterpret_cast<tl::fp8_e4m3_t*>(A);" in src
    assert "reinterpret_cast<tl::fp8_e4m3_t*>(A8)" not in src  # a view of a view names the root
    cuda_build(flat_scale.get_tir(37, 21), arch)
    cuda_build(halves_of_bytes.get_tir(7, 13), arch)


def test_analysis_counts_a_view_once():
    import inspect

    from tilelang.analysis import analyze_function

    src = inspect.getsource(inspect.getmodule(test_analysis_counts_a_view_once))
    info = analyze_function(src, __file__, "shared_fp8", target="sm_80", bindings={"M": 37, "N": 24})
    assert info.resources.shared_bytes == 16 * 24 and [n for n, _ in info.resources.shared_breakdown] == ["S"]
    assert {b.name for b in info.buffers} >= {"S", "S8"}  # both shown, one storage counted


def test_swizzled_view_of_another_shape_is_refused_on_cuda():
    @tilelang.jit(out_idx=[-1], target="c")
    def k(M):
        @T.prim_func
        def main(A: T.Tensor((32, 64), "float16"), B: T.Tensor((32, M), "float16"), C: T.Tensor((64, M), "float32")):
            with T.Kernel(1, threads=128):
                S = T.alloc_shared((32, 64), "float16")
                V = T.reshape(S, (64, 32))  # the same bytes as a (64, 32) gemm operand
                B_s = T.alloc_shared((32, M), "float16")
                acc = T.alloc_fragment((64, M), "float32")
                T.copy(A, S)
                T.copy(B, B_s)
                T.clear(acc)
                T.gemm(V, B_s, acc)
                T.copy(acc, C)

        return main

    a, b = torch.randn(32, 64).half(), torch.randn(32, 32).half()
    torch.testing.assert_close(k(32)(a, b), a.reshape(64, 32).float() @ b.float(), atol=1e-2, rtol=1e-2)
    with pytest.raises(TileLangError) as e:
        cuda_lower(k.get_tir(32))
    msg = str(e.value)
    assert "unsupported" in msg and "shared view `V` of `S`" in msg and "test_views.py:" in msg


def test_analysis_reads_view_layouts():
    import inspect

    from tilelang.analysis import analyze_function

    src = inspect.getsource(inspect.getmodule(test_analysis_reads_view_layouts))
    info = analyze_function(src, __file__, "fp8_gemm_from_int8", target="sm_80", bindings={"M": 40, "N": 36, "K": 72})
    lay = {b.name: b.layout for b in info.buffers}
    assert lay["A_raw"] == lay["A8"] and lay["A8"].startswith("swizzle")  # what the compiler gives both
    info = analyze_function(src, __file__, "fragment_reshape", target="sm_80", bindings={"M": 37, "N": 24})
    lay = {b.name: b.layout for b in info.buffers}
    assert lay["R_flat"].startswith("view of R: ")
