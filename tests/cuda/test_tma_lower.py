"""TMA on sm_90a without a GPU: tensor-map arguments against hand-computed values, the
TMA plan of tile copies (and its fallbacks), the mbarrier ring `inject_pipeline` builds,
and nvcc builds of the lowered kernels."""

from __future__ import annotations

import re

import pytest
from tma_kernels import gemm_func, lower_source

from tilelang.backend.cuda.tensor_map import TensorMapSpec, data_type_enum, encode_args
from tilelang.backend.target import nvcc_path
from tilelang.errors import UnsupportedError

needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")


# -- tensor-map arguments ---------------------------------------------------------------


def test_encode_args_fp16_2d_128b_swizzle():
    # B (K=1024, N=512) fp16 read in 64-column panels of 32 rows, 128-byte swizzle
    spec = TensorMapSpec(param=1, name="B", dtype="float16", box=(64, 32), swizzle=3)
    a = encode_args(spec, (1024, 512), (512, 1), 0x7F0000000000)
    assert a.data_type == 6 and a.rank == 2 and a.global_address == 0x7F0000000000
    assert a.global_dim == (512, 1024)  # innermost first
    assert a.global_strides == (1024,)  # one row = 512 * 2 bytes
    assert a.box_dim == (64, 32) and a.element_strides == (1, 1)
    assert (a.interleave, a.swizzle, a.oob_fill) == (0, 3, 0)


def test_encode_args_3d_bf16_and_fp32():
    spec = TensorMapSpec(0, "X", "bfloat16", (32, 64, 1), 2)
    a = encode_args(spec, (4, 1000, 96), (96000, 96, 1), 4096)
    assert a.data_type == 9 and a.global_dim == (96, 1000, 4) and a.global_strides == (192, 192000)
    f = encode_args(TensorMapSpec(0, "Y", "float32", (32, 8), 3), (70, 64), (64, 1), 256)
    assert f.data_type == 7 and f.global_strides == (256,)


def test_data_type_enum():
    assert [data_type_enum(t) for t in ("float16", "bfloat16", "float32", "int8", "float8_e4m3", "int32")] == [
        6, 9, 7, 0, 0, 3,
    ]  # fmt: skip
    assert data_type_enum("float16x2") is None


@pytest.mark.parametrize(
    "shape, strides, ptr, match",
    [
        ((64, 70), (70, 1), 0, "stride of dimension 0 is 280 bytes"),  # dynamic K=70 fp32
        ((64, 64), (64, 1), 8, "not 16-byte aligned"),
        ((64, 64), (1, 64), 0, "not contiguous"),
    ],
)
def test_encode_args_rejects(shape, strides, ptr, match):
    with pytest.raises(ValueError, match=match):
        encode_args(TensorMapSpec(0, "A", "float32", (32, 8), 3), shape, strides, ptr)


# -- lowering ------------------------------------------------------------------------------------


def _tma_source(**kw):
    M, N, K = kw.pop("M", 1024), kw.pop("N", 1024), kw.pop("K", 1024)
    cfg = kw.pop("pass_configs", None)
    return lower_source(gemm_func(M, N, K, **kw), pass_configs=cfg)


NO_WS = {"tl.disable_warp_specialized": True}


def test_pipelined_gemm_uses_tma_ring():
    src = _tma_source(pass_configs=NO_WS)
    assert src.count("const __grid_constant__ CUtensorMap") == 2
    assert "tl::mbarrier_init_block(&ko_full[0], 3, 1);" in src
    # expect_tx of the whole tile before the loads, one arrival after the last one
    assert "tl::mbarrier_expect_tx(&ko_full[(ko + 2) % 3], 8192);" in src
    assert "tl::mbarrier_arrive(&ko_full[(ko + 2) % 3]);" in src
    assert "tl::mbarrier_wait(&ko_full[ko % 3], (ko / 3) % 2);" in src  # parity of the slot's phase
    assert src.count("tl::tma_load(&B_tmap") == 2 * 3  # two 64-column panels, prologue x2 + loop
    assert "cp_async" not in src


def test_trip_count_below_stages_and_dynamic_m():
    src = _tma_source(K=32, dynamic_m=True, pass_configs=NO_WS)  # one iteration, 3 stages; M at run time
    assert "tl::tma_load" in src and "ko_full[1]" not in src  # the prologue loads iteration 0 only


# one block per SM by shared memory: 128 KB (4 stages of 128x64 + 64x128 fp16) / 144 KB
WS_128 = dict(block_K=64, num_stages=4)
WS_256 = dict(block_N=256, block_K=64, threads=256)


@pytest.mark.parametrize("threads, regs, D", [(128, None, 4), (256, 232, 3)])
def test_warp_specialized_structure(threads, regs, D):
    src = _tma_source(**(WS_128 if threads == 128 else WS_256))
    assert f"__launch_bounds__({threads + 128}, 1)" in src
    assert f"if (tx >= {threads}) {{" in src and f"if (tx == {threads}) {{" in src and "} else {" in src
    # producer: waits for the consumers' release of iteration k - D (phase k/D - 1), then loads
    assert f"tl::mbarrier_wait(&ko_empty[ko % {D}], (ko / {D} + 1) % 2);" in src
    assert f"tl::mbarrier_init_block(&ko_empty[0], {D}, {threads // 32});" in src
    # consumers: wait for the load of iteration k (phase k/D), release the slot after the gemm
    assert f"tl::mbarrier_wait(&ko_full[ko % {D}], (ko / {D}) % 2);" in src
    assert f"tl::mbarrier_arrive_per_warp(&ko_empty[(ko + {D - 1}) % {D}]);" in src  # wgmma in flight: k - 1
    assert "__syncthreads" not in src.split("} else {", 1)[1]
    if regs:
        assert "tl::warpgroup_reg_dealloc<40>();" in src and f"tl::warpgroup_reg_alloc<{regs}>();" in src
    else:
        assert "warpgroup_reg" not in src


def test_warp_specialized_epilogue_syncs_become_named_barriers():
    src = _tma_source(smem_out=True, **WS_128)
    consumer = src.split("} else {", 1)[1]
    assert "tl::named_barrier_sync(1, 128)" in consumer and "__syncthreads" not in consumer


def test_warp_specialization_only_where_its_shared_memory_fits():
    # 4 stages of 128x64 + 64x256 fp16 (192 KB) and a 64 KB epilogue tile: the plain ring reuses
    # the pipeline's storage for the epilogue tile (192 KB in all); the warp-specialized form
    # could not (256 KB, more than a block may have), so it is not chosen
    import re

    src = _tma_source(smem_out=True, num_stages=4, **WS_256)
    assert "ko_empty" not in src and "__launch_bounds__(256" in src
    smem = int(re.search(r"dynamic shared memory (\d+) bytes", src).group(1))
    assert smem <= 227 * 1024


def test_small_pipelines_keep_several_blocks_per_sm():
    # the seed's 128x128x32 in 3 stages needs 48 KB: four blocks fit an SM, no producer warpgroup
    src = _tma_source()
    assert "tl::tma_load" in src and "ko_empty" not in src and "__launch_bounds__(128)" in src


def test_sm90_without_a_keeps_the_plain_ring():
    src = lower_source(gemm_func(512, 512, 512), arch="sm_90")
    assert "tl::tma_load" in src and "ko_empty" not in src


@pytest.mark.parametrize(
    "kw",
    [
        dict(K=1001),  # row stride 2002 bytes: not a multiple of 16
        dict(disable_tma=True),  # T.copy(..., disable_tma=True) on one producer
        dict(pass_configs={"tl.disable_tma_lower": True}),
        dict(dtype="float32", K=70),  # dynamic-K-like misalignment in fp32
    ],
)
def test_tma_falls_back_to_cp_async(kw):
    src = _tma_source(**kw)
    assert "tl::tma_load" not in src and "CUtensorMap" not in src
    assert "cp_async_zfill" in src


def test_sm80_never_uses_tma():
    src = lower_source(gemm_func(256, 256, 256), arch="sm_80")
    assert "tl::tma_" not in src and "mbarrier" not in src


def test_explicit_tma_copy_reports_why_not():
    from tilelang.backend.cuda.tma_lower import tma_unsupported_reason

    f = gemm_func(1024, 1024, 1001)
    copies = []
    from tilelang.ir.stmt import Copy
    from tilelang.ir.visitor import collect

    copies = collect(f.body, lambda n: isinstance(n, Copy) and n.src.buffer.scope == "global")
    why = tma_unsupported_reason(copies[0].src, copies[0].dst, None, f)
    assert "multiple of 16 bytes" in why
    assert issubclass(UnsupportedError, Exception)


@needs_nvcc
@pytest.mark.parametrize(
    "kw",
    [
        dict(),  # plain TMA ring
        dict(block_N=256, block_K=64, threads=256, dtype="bfloat16"),  # warp-specialized, setmaxnreg 40 / 232
        dict(block_K=64, num_stages=4, smem_out=True),  # warp-specialized, TMA store epilogue, named barriers
    ],
)
def test_tma_gemm_builds_for_sm90a(kw):
    import tilelang

    art = tilelang.lower(gemm_func(1000, 1000, 1024, **kw), target={"kind": "cuda", "arch": "sm_90a"})
    assert art.lib_path and re.search(r"tl::tma_load", art.kernel_source)

    art = tilelang.lower(gemm_func(1000, 1000, 1024, **kw), target={"kind": "cuda", "arch": "sm_90a"})
    assert art.lib_path and re.search(r"tl::tma_load", art.kernel_source)


def test_wgmma_group_stays_in_flight_across_iterations():
    src = _tma_source(**WS_256)
    consumer = src.split("} else {", 1)[1]
    assert "tl::wgmma_wait<1>();" in consumer
    assert "if (ko > 0) {" in consumer and "tl::mbarrier_arrive_per_warp(&ko_empty[(ko + 2) % 3]);" in consumer
    after = consumer.split("tl::wgmma_wait<0>();", 1)[1]
    assert after.lstrip().startswith("tl::warpgroup_fence_operands<128>(&C_local[0]);")


def test_tma_store_epilogue_swizzles_the_staging_tile():
    src = _tma_source(smem_out=True, pass_configs=NO_WS)
    assert "tl::tma_store(&C_tmap, &C_shared[0], bx * 128, by * 128);" in src
    assert "tl::tma_store(&C_tmap, &C_shared[8192], bx * 128 + 64, by * 128);" in src  # second 128-byte panel
    tail = src.split("tl::tma_store_arrive();", 1)[1]
    assert tail.lstrip().startswith("tl::tma_store_wait<0>();")
    assert "tl::fence_proxy_async();" in src.split("tl::tma_store(", 1)[0][-400:]


def test_tma_store_brings_the_only_barrier_before_it():
    # inject_sync counts the store's own fence + barrier: the staged tile is synchronised once
    src = _tma_source(smem_out=True, pass_configs=NO_WS)
    staged = src.split("tl::tma_store(", 1)[0].rsplit("copy_vec", 1)[1]
    assert staged.count("tl::fence_proxy_async();") == 1 and staged.count("__syncthreads();") == 1


def test_unaligned_inner_start_is_rejected():
    from tilelang.backend.cuda.tma_lower import tma_unsupported_reason
    from tilelang.ir.buffer import BufferRegion, Range
    from tilelang.ir.expr import IntImm
    from tilelang.ir.stmt import Copy
    from tilelang.ir.visitor import collect
    from tilelang.layout import make_swizzled_layout

    f = gemm_func(1024, 1024, 1024)
    c = collect(f.body, lambda n: isinstance(n, Copy) and n.src.buffer.name == "B")[0]
    shifted = BufferRegion(c.src.buffer, (c.src.region[0], Range(c.src.region[1].begin + 3, IntImm(128))))
    lay = make_swizzled_layout((32, 128), dtype="float16")
    assert tma_unsupported_reason(c.src, c.dst, lay, f) is None
    assert "16-byte aligned" in tma_unsupported_reason(shifted, c.dst, lay, f)


def test_tensor_map_encoder_calls_the_driver_once_per_tensor():
    import ctypes

    from tilelang.backend.cuda.tensor_map import TensorMapEncoder

    calls = []

    class Driver:
        def cuTensorMapEncodeTiled(self, out, dt, rank, addr, dims, strides, box, estr, il, sw, l2, oob):  # noqa: N802
            calls.append((dt.value, rank.value, addr.value, list(dims), list(strides), list(box), list(estr), sw.value))
            ctypes.memset(out.value, 7, 128)
            return 0

    class Tensor:
        shape = (64, 128)

        def __init__(self, ptr):
            self.ptr = ptr

        def data_ptr(self):
            return self.ptr

        def stride(self):
            return (128, 1)

    enc = TensorMapEncoder(Driver(), TensorMapSpec(0, "A", "float16", (64, 32), 3))
    first, again, other = enc.address(Tensor(4096)), enc.address(Tensor(4096)), enc.address(Tensor(8192))
    assert first == again != other and first % 64 == 0 and len(calls) == 2
    assert calls[0] == (6, 2, 4096, [128, 64], [256], [64, 32], [1, 1], 3)
    assert ctypes.string_at(first, 128) == b"\x07" * 128
    with pytest.raises(RuntimeError, match="16-byte aligned"):
        enc.address(Tensor(4100))


def test_two_pipelined_loops_keep_plain_rings():
    from tma_kernels import two_gemms

    src = lower_source(two_gemms.get_tir(M=512, N=512, K=512))
    assert src.count("tl::mbarrier_init_block") == 2 and "_empty" not in src and "tl::tma_load(&D_tmap" in src


def test_batched_gemm_boxes_have_a_unit_batch_dimension():
    from tma_kernels import batched_gemm

    src = lower_source(batched_gemm.get_tir(BATCH=4, M=256, N=256, K=256))
    assert "tl::tma_load(&A_tmap, &k_full[k], &A_s[k * 8192], k * 64, by * 128, bz);" in src  # 4 trips, 4 slots
    assert "if (tx >= 256) {" in src  # 4 stages x 32 KB: warp-specialized


def test_pipelines_inside_ws_regions_keep_cp_async():
    # a T.ws region is a subset of the block: no block-wide barrier initialisation, no second producer
    from tma_kernels import gemm_in_ws_region

    src = lower_source(gemm_in_ws_region.get_tir(M=512, N=512, K=512))
    assert "cp_async_zfill" in src and "tl::tma_load" not in src and "mbarrier_init_block" not in src


def _explicit_copy_ctx(K):
    """The B copy of a GEMM and a stand-in ThreadCtx (layouts, function, thread index)."""
    from tilelang.ir.dtype import int32
    from tilelang.ir.expr import Var
    from tilelang.ir.stmt import Copy
    from tilelang.ir.visitor import collect
    from tilelang.layout import make_swizzled_layout

    f = gemm_func(1024, 1024, K)
    c = collect(f.body, lambda n: isinstance(n, Copy) and n.src.buffer.name == "B")[0]
    lay = make_swizzled_layout((32, 128), dtype="float16")

    class Ctx:
        func, tx = f, Var("tx", int32)

        def shared_layout(self, b):
            return lay

    return c, Ctx()


def test_explicit_tma_copy_contract():
    from tilelang.backend.cuda.tma_lower import tma_copy_stmt
    from tilelang.ir.buffer import Buffer
    from tilelang.ir.expr import BufferLoad, IntImm

    c, tc = _explicit_copy_ctx(1024)
    bars = Buffer("bars", (IntImm(2),), "uint64", "shared.barrier")
    load = tma_copy_stmt(c.src, c.dst, BufferLoad(bars, (IntImm(1),), bars.dtype), tc, c.span)
    text = str(load)
    # one elected thread: expect_tx of the whole 32x128 fp16 tile, then one box per 128-byte panel; no arrive/wait
    assert "tx == 0" in text and text.count("tl::tma_load") == 2 and "8192" in text
    assert "mbarrier_arrive" not in text and "mbarrier_wait" not in text
    store = str(tma_copy_stmt(c.dst, c.src, None, tc, c.span))  # shared -> global: stores + one commit
    assert store.count("tl::tma_store'") == 2 and "tl::tma_store_arrive" in store
    with pytest.raises(UnsupportedError, match="needs `barrier=`"):
        tma_copy_stmt(c.src, c.dst, None, tc, c.span)


def test_explicit_tma_copy_unfit_raises_with_reason():
    from tilelang.backend.cuda.tma_lower import tma_copy_stmt

    c, tc = _explicit_copy_ctx(1001)  # A's rows of 2002 bytes; B (K=1001 rows of N=1024) is fine
    from tilelang.ir.stmt import Copy
    from tilelang.ir.visitor import collect

    a = collect(tc.func.body, lambda n: isinstance(n, Copy) and n.src.buffer.name == "A")[0]
    with pytest.raises(UnsupportedError, match="not provably a multiple of 16 bytes"):
        tma_copy_stmt(a.src, a.dst, None, tc, a.span)
