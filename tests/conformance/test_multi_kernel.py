"""Several `T.Kernel` blocks in one `@T.prim_func`, with `T.alloc_global` scratch (issue #18,
item 1): split-KV decode attention (kernel 1 writes per-split partial outputs and log-sum-exp
values into `T.alloc_global` buffers, kernel 2 combines them) on the CPU backend against
float32 SDPA, the `num_split == 1` single-kernel branch, a two-kernel program over an in/out
parameter, nvcc builds for sm_80 and sm_90a, `get_kernel_source()` holding every kernel in
order, the disk-cache round trip, the language server's per-kernel hints, and the errors."""

from __future__ import annotations

import textwrap

import pytest
import torch

import tilelang
import tilelang.language as T
from conformance import multi_kernel_kernels as K
from conformance.util import CUDA_ARCHS, cuda_build
from tilelang.errors import TileLangError
from tilelang.ir.stmt import KernelLaunch
from tilelang.ir.visitor import collect

B, H, S = 3, 5, 1000  # none a tile multiple


def _kernels(func) -> list:
    return collect(func.body, lambda n: isinstance(n, KernelLaunch))


@pytest.mark.parametrize("dim", [64, 128])
@pytest.mark.parametrize("num_split", [1, 3, 4])
def test_splitkv_decode_cpu(dim, num_split):
    kernel = K.splitkv_decode(B, H, S, dim, num_split=num_split)
    assert kernel.target.kind == "c"
    q, k, v = K.decode_inputs(B, H, S, dim, seed=dim + num_split)
    out = kernel(q, k, v)
    assert out.shape == (B, H, dim) and out.dtype == torch.float16
    torch.testing.assert_close(out.float(), K.decode_reference(q, k, v), atol=2e-3, rtol=2e-3)


def test_python_branch_traces_only_the_branch_taken():
    one = K.splitkv_decode.get_tir(B, H, S, 64, num_split=1)
    two = K.splitkv_decode.get_tir(B, H, S, 64, num_split=4)
    assert len(_kernels(one)) == 1 and "alloc_global" not in one.script()
    assert len(_kernels(two)) == 2


def test_an_empty_split_contributes_nothing_cpu():
    # seqlen 9 over 4 splits of 3: the last split has no keys
    kernel = K.splitkv_decode(2, 3, 9, 64, num_split=4, block_N=16)
    q, k, v = K.decode_inputs(2, 3, 9, 64, seed=7)
    torch.testing.assert_close(kernel(q, k, v).float(), K.decode_reference(q, k, v), atol=2e-3, rtol=2e-3)


def test_two_kernels_over_an_in_out_parameter_cpu():
    M, N = 45, 70
    kernel = K.scale_then_shift(M, N, alpha=3.0, shift=-0.25)
    x = torch.randn(M, N)
    x0 = x.clone()
    y = kernel(x)
    torch.testing.assert_close(x, x0 * 3.0)  # kernel 1 wrote its input in place
    torch.testing.assert_close(y, x0 * 3.0 - 0.25)  # kernel 2 saw all of kernel 1's writes


def test_eager_style_with_scratch_cpu():
    for m in (37, 5):
        x = torch.randn(m, 50)
        torch.testing.assert_close(K.center_rows(x), x - x.mean(1, keepdim=True), atol=1e-5, rtol=1e-5)


def test_kernel_source_holds_every_kernel_in_order_cpu():
    src = K.splitkv_decode(B, H, S, 64, num_split=4).get_kernel_source()
    first, second = src.find("tl_kernel_main("), src.find("tl_kernel_main_1(")
    assert 0 <= first < second
    one = K.splitkv_decode(B, H, S, 64, num_split=1).get_kernel_source()
    assert "tl_kernel_main(" in one and "tl_kernel_main_1" not in one


@pytest.mark.parametrize("arch", CUDA_ARCHS)
@pytest.mark.parametrize("num_split", [1, 4])
def test_splitkv_decode_builds(arch, num_split):
    art = cuda_build(K.splitkv_decode.get_tir(B, H, S, 128, num_split=num_split), arch)
    assert art.lib_path
    if num_split == 1:
        assert art.kernel_source.count("__global__") == 1 and "main_kernel(" in art.kernel_source
    else:
        src = art.kernel_source
        assert src.count("__global__") == 2
        assert 0 <= src.find("main_kernel(") < src.find("main_kernel_1(")  # named as the public API names them
        assert [k["entry"] for k in art.meta["kernels"]] == ["main_kernel", "main_kernel_1"]
        assert [k["grid"] for k in art.meta["kernels"]] == [[H, B, 4], [H, B]]
        assert all(isinstance(k.get("registers"), int) for k in art.meta["kernels"])  # ptxas, per entry
        assert [s["dtype"] for s in art.meta["scratch"]] == ["float32", "float32"]
        assert [s["shape"] for s in art.meta["scratch"]] == [[B, H, 4], [B, H, 4, 128]]


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_in_out_program_builds(arch):
    art = cuda_build(K.scale_then_shift.get_tir(45, 70), arch)
    assert art.kernel_source.count("__global__") == 2 and len(art.meta["kernels"]) == 2
    art = cuda_build(K.flip_rows.get_tir(37, 20), arch)
    assert art.kernel_source.count("__global__") == 2 and art.meta["scratch"][0]["shape"] == [37, 20]


def _simulate_plan(func, args: list, arch: str) -> None:
    """Run each kernel of `func` in order with the CUDA simulator (per-thread lowered IR)."""
    from sim import simulate

    from tilelang.transform.split_kernels import split_kernels

    split = split_kernels(func)
    scratch = [torch.full(b.static_shape, float("nan"), dtype=b.dtype.as_torch()) for b in split.scratch]
    for kernel in split.kernels:
        simulate(kernel, [*args, *scratch], arch=arch)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_splitkv_decode_simulated(arch):
    b, h, s, d = 1, 2, 100, 64
    q, k, v = K.decode_inputs(b, h, s, d, seed=3)
    out = torch.zeros(b, h, d, dtype=torch.float16)
    _simulate_plan(K.splitkv_decode.get_tir(b, h, s, d, num_split=3, block_N=32), [q, k, v, out], arch)
    torch.testing.assert_close(out.float(), K.decode_reference(q, k, v), atol=2e-3, rtol=2e-3)


@pytest.mark.parametrize("arch", CUDA_ARCHS)
def test_in_out_program_simulated(arch):
    M, N = 21, 70
    x = torch.randn(M, N)
    x0, y = x.clone(), torch.zeros(M, N)
    _simulate_plan(K.scale_then_shift.get_tir(M, N, alpha=3.0, shift=-0.25), [x, y], arch)
    torch.testing.assert_close(x, x0 * 3.0)
    torch.testing.assert_close(y, x0 * 3.0 - 0.25)
    y = torch.zeros(M, N)
    _simulate_plan(K.flip_rows.get_tir(M, N), [x0, y], arch)  # scratch allocated inside kernel 1
    torch.testing.assert_close(y, (x0.flip(0) + 1.0) * 2.0)


def test_cache_round_trip_cpu(monkeypatch, tmp_path):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    func = K.splitkv_decode.get_tir(B, H, S, 64, num_split=3)
    q, k, v = K.decode_inputs(B, H, S, 64, seed=11)
    first = tilelang.compile(func, out_idx=[-1], target="c")
    assert first.built.lowered is not None  # built now
    second = tilelang.compile(func, out_idx=[-1], target="c")
    assert second.built.lowered is None  # read back from the disk cache
    assert second.get_kernel_source() == first.get_kernel_source()
    torch.testing.assert_close(second(q, k, v), first(q, k, v), atol=0, rtol=0)
    torch.testing.assert_close(second(q, k, v).float(), K.decode_reference(q, k, v), atol=2e-3, rtol=2e-3)


def test_damaged_plan_metadata_is_rebuilt():
    from tilelang.backend.launch_plan import check_plan_meta

    def ok(m):
        return None

    good = {"kernels": [{}, {}], "scratch": [{"shape": [2, ["p", 0]], "dtype": "float32"}], "n_params": 1}
    check_plan_meta(good, ok, 1, 2)
    bad_tree = dict(good, scratch=[{"shape": [["bad"]], "dtype": "float32"}])
    bad_dtype = dict(good, scratch=[{"shape": [2], "dtype": "nope"}])
    bad_param = dict(good, scratch=[{"shape": [["p", 5]], "dtype": "float32"}])  # past n_params
    for meta in (bad_tree, bad_dtype, bad_param, dict(good, kernels=[]), dict(good, n_params="1")):
        with pytest.raises(ValueError):
            check_plan_meta(meta, ok, 1)
    with pytest.raises(ValueError, match="kernels"):
        check_plan_meta(good, ok, 1, 3)
    with pytest.raises(ValueError, match="scratch"):
        check_plan_meta(good, ok, 2, 2)

    def bad_kernel(m):
        raise ValueError("launch metadata: bad kernel")

    with pytest.raises(ValueError, match="bad kernel"):
        check_plan_meta(good, bad_kernel, 1, 2)


def test_scratch_sized_by_a_dynamic_dimension_cpu():
    @tilelang.jit(out_idx=[-1])
    def twice_sum(N, block=32):
        M = T.dynamic("m")

        @T.prim_func
        def main(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M,), T.float32)):
            tmp = T.alloc_global((M, N), T.float32)
            with T.Kernel(T.ceildiv(M, block), threads=32) as bx:
                for i, j in T.Parallel(block, N):
                    if bx * block + i < M:
                        tmp[bx * block + i, j] = X[bx * block + i, j] * 2.0
            with T.Kernel(M, threads=32) as bx:
                acc = T.alloc_fragment((N,), T.float32)
                s = T.alloc_fragment((1,), T.float32)
                T.copy(tmp[bx, :], acc)
                T.reduce_sum(acc, s, dim=0)
                Y[bx] = s[0]

        return main

    kernel = twice_sum(40)
    for m in (7, 100):
        x = torch.randn(m, 40)
        torch.testing.assert_close(kernel(x), x.sum(1) * 2.0, atol=1e-4, rtol=1e-5)


def test_alloc_global_inside_a_kernel_is_one_buffer_for_the_call_cpu():
    kernel = K.flip_rows(37, 20)
    x = torch.randn(37, 20)
    torch.testing.assert_close(kernel(x), (x.flip(0) + 1.0) * 2.0)


def test_alloc_global_sized_by_a_block_index_is_an_error():
    @T.prim_func
    def main(X: T.Tensor((8,), T.float32)):
        with T.Kernel(4, threads=32) as bx:
            g = T.alloc_global((bx + 1,), T.float32)
            g[0] = X[0]

    with pytest.raises(TileLangError, match="depends on `bx`"):
        tilelang.compile(main, target="c")


def test_host_statement_between_kernels_is_an_error():
    def make():
        @T.prim_func
        def main(X: T.Tensor((8,), T.float32)):
            with T.Kernel(1, threads=32):
                X[0] = 1.0
            X[1] = 2.0
            with T.Kernel(1, threads=32):
                X[2] = 3.0

        return main

    with pytest.raises(TileLangError):
        make()


def test_analysis_gives_hints_for_every_kernel_block():
    from tilelang.analysis.api import analyze_function

    source = textwrap.dedent(
        """
        import tilelang
        import tilelang.language as T

        @tilelang.jit(out_idx=[-1])
        def two(M=64, N=128):
            @T.prim_func
            def main(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M, N), T.float32)):
                tmp = T.alloc_global((M, N), T.float32)
                with T.Kernel(M // 16, threads=128) as bx:
                    a = T.alloc_shared((16, N), T.float32)
                    T.copy(X[bx * 16, 0], a)
                    T.copy(a, tmp[bx * 16, 0])
                with T.Kernel(M // 32, threads=64) as bx:
                    f = T.alloc_fragment((32, N), T.float32)
                    T.copy(tmp[bx * 32, 0], f)
                    T.copy(f, Y[bx * 32, 0])

            return main
        """
    )
    info = analyze_function(source, "/tmp/two_kernels.py", "two", target="sm_90a")
    assert not [d for d in info.diagnostics if d.severity == "error"], info.diagnostics
    assert info.kernel_loc is not None and info.kernel_loc.line == 10
    assert [k.kernel_loc.line for k in info.kernels] == [10, 14]
    assert {b.name for b in info.buffers} >= {"a", "f", "tmp"}
    assert [k.resources.threads for k in info.kernels] == [128, 64]
    from tilelang.analysis.api import generate_source, lowering_trace

    gen = generate_source(source, "/tmp/two_kernels.py", "two", target="c")
    assert 0 <= gen.text.find("tl_kernel_main(") < gen.text.find("tl_kernel_main_1(")
    trace = lowering_trace(source, "/tmp/two_kernels.py", "two", target="sm_90a").text
    assert "kernel 0: " in trace and "kernel 1: " in trace
    # the language server puts a kernel hint on each `with T.Kernel` line (no pygls needed here)
    from tilelang_lsp.bindings import KernelFunction
    from tilelang_lsp.documents import DocResult, FunctionResult
    from tilelang_lsp.render import hints, hover

    lines = source.splitlines()
    fn = KernelFunction("two", "jit", 5, 6, len(lines), [], [], [])
    doc = DocResult(1, functions=[FunctionResult(fn, info.to_dict())])
    kernel_lines = [h.line + 1 for h in hints(doc, lines, {"kernel": True}) if h.kind == "kernel"]
    assert kernel_lines == [10, 14]
    assert "64" in (hover(doc, lines, 13, lines[13].index("Kernel")) or "")


def _decode_reference_half(q, k, v):
    return K.decode_reference(q, k, v).half()


def test_autotune_over_num_split_cpu():
    from tilelang.autotuner import cache as result_cache

    b, h, s, d = 2, 3, 300, 64
    configs = [{"num_split": 1}, {"num_split": 2}, {"num_split": 3}]

    def tuned_factory():
        return tilelang.autotune(configs=configs, warmup=1, rep=2, ref_prog=_decode_reference_half, executor="thread")(
            K.splitkv_decode
        )

    tuned = tuned_factory()
    kernel = tuned(b, h, s, d)
    assert len(tuned.last_result.timings) == 3 and not tuned.last_result.skipped
    q, k, v = K.decode_inputs(b, h, s, d, seed=2)
    torch.testing.assert_close(kernel(q, k, v).float(), K.decode_reference(q, k, v), atol=2e-3, rtol=2e-3)
    result_cache._MEMORY.clear()  # as a new process: the best kernel comes back from disk
    again = tuned_factory()
    kernel2 = again(b, h, s, d)
    assert again.last_result.from_cache
    torch.testing.assert_close(kernel2(q, k, v), kernel(q, k, v), atol=0, rtol=0)


def test_an_on_chip_buffer_of_another_kernel_is_an_error():
    @T.prim_func
    def main(X: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=32):
            a = T.alloc_fragment((64,), T.float32)
            T.copy(X, a)
        with T.Kernel(1, threads=32):
            T.copy(a, X)

    with pytest.raises(TileLangError, match="belongs to the T.Kernel at line") as err:
        tilelang.compile(main, target="c")
    assert "T.alloc_global" in str(err.value)


def test_scratch_sized_by_a_scalar_parameter_cpu():
    @T.prim_func
    def main(X: T.Tensor((64,), T.float32), n: T.int32):
        g = T.alloc_global((n, 4), T.float32)
        with T.Kernel(1, threads=32):
            for i in T.serial(n):
                g[i, 3] = X[i] * 2.0
        with T.Kernel(1, threads=32):
            for i in T.serial(n):
                X[i] = g[i, 3] + 1.0

    kernel = tilelang.compile(main, target="c")
    for n in (10, 64):
        x = torch.randn(64)
        x0 = x.clone()
        kernel(x, n)
        torch.testing.assert_close(x[:n], x0[:n] * 2.0 + 1.0)
        torch.testing.assert_close(x[n:], x0[n:])


def test_a_kernel_under_an_ir_condition_is_an_error():
    @T.prim_func
    def main(X: T.Tensor((8,), T.float32), n: T.int32):
        with T.Kernel(1, threads=32):
            X[0] = 1.0
        if n > 2:
            with T.Kernel(1, threads=32):
                X[1] = 2.0

    with pytest.raises(TileLangError, match="IR-level") as err:
        tilelang.compile(main, target="c")
    assert "Python-level condition" in str(err.value)
