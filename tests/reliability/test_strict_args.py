"""Issue #22, items 5, 6 and 8: run-time arguments are never coerced or ignored silently,
launch limits are compile-time errors at the `T.Kernel` line, and three errors point at the
line that caused them.

- scalars: an int32 given 2**40 or 3.7, a float32 given 1e40 → OverflowError / TypeError
  naming the parameter; numpy scalars of every numeric dtype are accepted (both the
  generated fast path and the checked path);
- eager calls bind like Python: a misspelt keyword, a parameter given twice, a missing one
  are the TypeErrors Python raises; `compile(M=...)` takes integer sizes ≥ 0 only; lazy
  factories get the same check where a size is used (T.Tensor shapes, the grid, threads);
- threads=2048 and a 786 KiB shared tile fail when lowering for sm_90a / sm_80, at the
  `T.Kernel` line, as `file:line:col: error: ...`;
- error locations: an eager kernel returning its input (the `return` line), a loop variable
  used after its loop (the use), a division by a T.const that is zero (the division).
"""

import linecache
import os

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.errors import DSLError, TileLangError

np = pytest.importorskip("numpy")

FILE = os.path.abspath(__file__)


def line_of(text: str) -> int:
    # the marker's line in a kernel, not a test quoting it
    hits = [n for n, line in enumerate(linecache.getlines(FILE), 1) if text in line and f'"{text}' not in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def col_of(text: str, line: int) -> int:
    return linecache.getline(FILE, line).index(text)


def one_line(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text, text
    return text


# -- kernels ---------------------------------------------------------------------------------


@tilelang.jit
def vector_add(A, B, block_M: int = 64):
    M = T.const("M")
    A: T.Tensor((M,), T.float32)
    B: T.Tensor((M,), T.float32)
    C = T.empty((M,), T.float32)
    with T.Kernel(T.ceildiv(M, block_M), threads=64) as bx:
        for i in T.Parallel(block_M):
            C[bx * block_M + i] = A[bx * block_M + i] + B[bx * block_M + i]
    return C


@tilelang.jit(out_idx=[-1])
def scale_shift(M, block=64, idtype=T.int32, fdtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M,), T.float32), n: idtype, s: fdtype, B: T.Tensor((M,), T.float32)):  # scale_shift A
        with T.Kernel(T.ceildiv(M, block), threads=64) as bx:  # scale_shift kernel
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] * T.cast(s, T.float32) + T.cast(n, T.float32)

    return main


M = 1000  # not a multiple of the 64-element tile


def ref_scale_shift(a: torch.Tensor, n, s) -> torch.Tensor:
    return (a.double() * float(s) + float(n)).float()


@pytest.fixture(scope="module")
def a():
    torch.manual_seed(0)
    return torch.rand(M) + 0.5


# -- scalars: range and type ------------------------------------------------------------------


def calls(kernel):
    """The generated fast path (kernel(...)) and the checked reference path."""
    return [kernel, lambda *args: kernel.adapter.checked_call(args)]


@pytest.mark.parametrize("path", [0, 1])
@pytest.mark.parametrize("n", [2**40, 2**31, -(2**31) - 1, np.int64(2**40)])
def test_int32_out_of_range_is_overflow_error(a, path, n):
    k = scale_shift(M)
    with pytest.raises(OverflowError) as ei:
        calls(k)[path](a, n, 1.5)
    msg = one_line(ei.value)
    assert "`n`" in msg and "int32" in msg and str(int(n)) in msg


@pytest.mark.parametrize("path", [0, 1])
def test_int32_range_ends_are_accepted(a, path):
    k = scale_shift(M)
    for n in (2**31 - 1, -(2**31)):
        out = calls(k)[path](a, n, 1.5)
        torch.testing.assert_close(out, ref_scale_shift(a, n, 1.5), rtol=1e-6, atol=0)


@pytest.mark.parametrize("path", [0, 1])
@pytest.mark.parametrize("n", [3.7, 3.0, np.float32(3.7)])
def test_int_parameter_rejects_floats(a, path, n):
    k = scale_shift(M)
    with pytest.raises(TypeError) as ei:
        calls(k)[path](a, n, 1.5)
    msg = one_line(ei.value)
    assert "`n`" in msg and "integer" in msg


@pytest.mark.parametrize("path", [0, 1])
@pytest.mark.parametrize("s", [1e40, -1e40, 3.5e38, 10**40])
def test_float32_overflow_is_overflow_error(a, path, s):
    k = scale_shift(M)
    with pytest.raises(OverflowError) as ei:
        calls(k)[path](a, 1, s)
    msg = one_line(ei.value)
    assert "`s`" in msg and "float32" in msg


def test_float32_largest_value_and_explicit_inf_pass(a):
    k = scale_shift(M)
    fmax = float(torch.finfo(torch.float32).max)
    torch.testing.assert_close(k(a * 0, 0, fmax), torch.zeros(M))  # 0 * FLT_MAX
    assert torch.isinf(k(a, 0, float("inf"))).all()


@pytest.mark.parametrize(
    "idtype,bad,good",
    [
        (T.int8, [128, -129], [127, -128]),
        (T.uint8, [-1, 256], [0, 255]),
        (T.int16, [2**15], [-(2**15)]),
        (T.int64, [2**63, -(2**63) - 1], [2**40]),
        (T.uint32, [-1, 2**32], [2**32 - 1]),
    ],
)
def test_integer_ranges_per_dtype(a, idtype, bad, good):
    k = scale_shift(M, idtype=idtype)
    for v in bad:
        with pytest.raises(OverflowError, match="`n`"):
            k(a, v, 1.0)
    for v in good:
        torch.testing.assert_close(k(a, v, 1.0), ref_scale_shift(a, v, 1.0), rtol=1e-6, atol=0)


def test_float16_parameter_range(a):
    k = scale_shift(M, fdtype=T.float16)
    with pytest.raises(OverflowError, match="`s`.*float16"):
        k(a, 0, 70000.0)
    torch.testing.assert_close(k(a, 0, 65504.0), ref_scale_shift(a, 0, 65504.0), rtol=1e-3, atol=0)
    torch.testing.assert_close(k(a, 1, 0.5), ref_scale_shift(a, 1, 0.5))


NUMPY_INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
NUMPY_FLOATS = ["float16", "float32", "float64"]


@pytest.mark.parametrize("path", [0, 1])
@pytest.mark.parametrize("int_name", NUMPY_INTS)
@pytest.mark.parametrize("float_name", NUMPY_FLOATS)
def test_numpy_scalars_of_every_numeric_dtype(a, path, int_name, float_name):
    k = scale_shift(M)
    n = getattr(np, int_name)(7)
    s = getattr(np, float_name)(-1.25)
    out = calls(k)[path](a, n, s)
    torch.testing.assert_close(out, ref_scale_shift(a, 7, -1.25))


def test_numpy_int_for_float_parameter_and_numpy_bool(a):
    k = scale_shift(M)
    torch.testing.assert_close(k(a, np.bool_(True), np.int32(3)), ref_scale_shift(a, 1, 3))


def test_a_tensor_is_not_a_scalar(a):
    k = scale_shift(M)
    with pytest.raises(TypeError, match="`n`.*scalar"):
        k(a, torch.tensor(3), 1.0)


# -- eager calls bind like Python ----------------------------------------------------------------


def tensors(n: int = M):
    torch.manual_seed(1)
    return torch.randn(n), torch.randn(n), torch.randn(n)


def test_eager_call_still_runs():
    x, y, _ = tensors()
    torch.testing.assert_close(vector_add(x, y), x + y)
    torch.testing.assert_close(vector_add(x, y, block_M=128), x + y)
    torch.testing.assert_close(vector_add(B=y, A=x), x + y)


def test_misspelt_keyword_is_type_error():
    x, y, _ = tensors()
    vector_add(x, y)  # warm the call cache: the bad call must not hit it
    with pytest.raises(TypeError) as ei:
        vector_add(x, y, blockM=64)
    assert one_line(ei.value).startswith("vector_add() got an unexpected keyword argument 'blockM'")
    assert "block_M" in str(ei.value)  # the suggestion
    with pytest.raises(TypeError, match="unexpected keyword argument 'N'"):
        vector_add.compile(M=M, N=3)


def test_parameter_given_twice_is_type_error():
    x, y, z = tensors()
    with pytest.raises(TypeError) as ei:
        vector_add(x, y, A=z)
    assert one_line(ei.value) == "vector_add() got multiple values for argument 'A'"
    with pytest.raises(TypeError, match="multiple values for argument 'block_M'"):
        vector_add(x, y, 64, block_M=64)


def test_missing_and_extra_positional_arguments():
    x, y, _ = tensors()
    with pytest.raises(TypeError) as ei:
        vector_add(x)
    assert one_line(ei.value) == "vector_add() missing 1 required positional argument: 'B'"
    with pytest.raises(TypeError) as ei:
        vector_add(x, y, 64, 1)
    assert one_line(ei.value) == "vector_add() takes from 2 to 3 positional arguments but 4 were given"


def test_const_keyword_binds_and_must_agree_with_the_tensors():
    x, y, _ = tensors()
    torch.testing.assert_close(vector_add(x, y, M=M), x + y)
    with pytest.raises(ValueError, match="`A`"):
        vector_add(x, y, M=M + 1)


def test_compile_target_keyword_is_used_not_ignored():
    x, y, _ = tensors()
    k = vector_add.compile(M=M, target="c")
    assert k.target.kind == "c"
    torch.testing.assert_close(k(x, y), x + y)
    with pytest.raises(ValueError, match="unknown target 'nonsense'"):  # was silently ignored
        vector_add.compile(M=M, target="nonsense")
    assert scale_shift.compile(M, target="c").target.kind == "c"


@pytest.mark.parametrize("bad", [1024.7, 1024.0, True, "1024"])
def test_const_size_must_be_an_integer(bad):
    with pytest.raises(TypeError) as ei:
        vector_add.compile(M=bad)
    msg = one_line(ei.value)
    assert "`M`" in msg and "integer" in msg


def test_const_size_must_not_be_negative():
    with pytest.raises(ValueError) as ei:
        vector_add.compile(M=-5)
    msg = one_line(ei.value)
    assert "`M`" in msg and "-5" in msg


def test_const_size_from_numpy_integer_runs():
    x, y, _ = tensors()
    k = vector_add.compile(M=np.int64(M))
    torch.testing.assert_close(k(x, y), x + y)


@tilelang.jit
def trimmed(A):
    M = T.const("M")
    A: T.Tensor((M,), T.float32)
    C = T.empty((M - 16,), T.float32)  # trimmed output
    with T.Kernel(T.ceildiv(M - 16, 64), threads=64) as bx:
        for i in T.Parallel(64):
            if bx * 64 + i < M - 16:
                C[bx * 64 + i] = A[bx * 64 + i + 16]
    return C


def test_negative_size_after_substitution():
    x = torch.randn(M)
    torch.testing.assert_close(trimmed(x), x[16:])
    with pytest.raises(DSLError) as ei:
        trimmed.compile(M=8)
    assert ei.value.span.line == line_of("# trimmed output")
    assert "`C`" in str(ei.value) and "-8" in str(ei.value) and "M=8" in str(ei.value)


def test_lazy_factory_sizes():
    at_tensor = line_of("# scale_shift A")
    at_kernel = line_of("# scale_shift kernel")
    for bad, line in ((100.5, at_tensor), (-5, at_tensor)):
        with pytest.raises(DSLError) as ei:
            scale_shift(bad)
        assert ei.value.span.file == FILE and ei.value.span.line == line
        assert "dimension 0" in str(ei.value) and str(bad) in str(ei.value)
    with pytest.raises(DSLError) as ei:  # a negative tile makes a negative grid
        scale_shift(M, block=-32)
    assert ei.value.span.line == at_kernel and "grid dimension 0" in str(ei.value)


@tilelang.jit(out_idx=[-1])
def copy_threads(M, threads):
    @T.prim_func
    def main(A: T.Tensor((M,), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, 128), threads=threads) as bx:  # copy_threads kernel
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i]

    return main


def test_threads_must_be_a_positive_integer():
    for bad, what in ((128.5, "a float"), (0, "≥ 1"), (-64, "≥ 1"), (np.int64(64) * 1.5, "a float")):
        with pytest.raises(DSLError) as ei:
            copy_threads.get_tir(M, bad)
        assert ei.value.span.line == line_of("# copy_threads kernel")
        assert "threads[0] of T.Kernel" in str(ei.value) and what in str(ei.value)
    torch.testing.assert_close(copy_threads(M, np.int64(256))(a := torch.randn(M)), a)


# -- launch limits at compile time ----------------------------------------------------------------


@tilelang.jit(out_idx=[-1])
def shared_roundtrip(M, N, block_M=128):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:  # shared_roundtrip kernel
            S = T.alloc_shared((block_M, N), T.float32)
            T.copy(A[bx * block_M, 0], S)
            T.copy(S, B[bx * block_M, 0])

    return main


def lower_for(func, arch: str):
    return tilelang.lower(func, target={"kind": "cuda", "arch": arch}, enable_device_compile=False)


def assert_at_kernel_line(err: TileLangError, marker: str) -> None:
    line = line_of(marker)
    col = col_of("with T.Kernel", line)
    assert err.span.file == FILE and err.span.line == line
    assert f"{FILE}:{line}:{col + 1}: error:" in str(err)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_threads_2048_is_a_compile_time_error(arch):
    with pytest.raises(TileLangError) as ei:
        lower_for(copy_threads.get_tir(1000, 2048), arch)
    assert_at_kernel_line(ei.value, "# copy_threads kernel")
    assert "2048 threads" in str(ei.value) and "1024" in str(ei.value) and arch in str(ei.value)


@pytest.mark.parametrize("arch,limit", [("sm_90a", "227 KiB"), ("sm_80", "163 KiB")])
def test_786_kib_of_shared_memory_is_a_compile_time_error(arch, limit):
    func = shared_roundtrip.get_tir(1000, 1572)  # 128 x 1572 float32 = 786 KiB
    with pytest.raises(TileLangError) as ei:
        lower_for(func, arch)
    assert_at_kernel_line(ei.value, "# shared_roundtrip kernel")
    msg = str(ei.value)
    assert "786 KiB" in msg and limit in msg and "`S`" in msg


def test_shared_limit_is_per_architecture():
    func = shared_roundtrip.get_tir(1000, 400)  # 200 KiB: fits sm_90a's 227 KiB, not sm_80's 163 KiB
    art = lower_for(func, "sm_90a")
    assert art.meta["smem"] == 128 * 400 * 4
    with pytest.raises(TileLangError, match="163 KiB"):
        lower_for(func, "sm_80")


def test_limits_allow_1024_threads():
    art = lower_for(copy_threads.get_tir(1000, 1024), "sm_90a")
    assert art.meta["threads"] == 1024


def test_registers_times_threads_checked_against_the_register_file():
    from tilelang.backend.cuda.check_launch_limits import check_built

    art = lower_for(copy_threads.get_tir(1000, 1024), "sm_90a")
    check_built(art.lowered, "sm_90a", {"registers": 64})  # 64 x 1024 = the whole register file: fits
    with pytest.raises(TileLangError) as ei:
        check_built(art.lowered, "sm_90a", {"registers": 72})
    assert_at_kernel_line(ei.value, "# copy_threads kernel")
    assert "72 registers" in str(ei.value) and "65536" in str(ei.value)
    with pytest.raises(TileLangError, match="static"):  # ptxas's static shared memory counts too
        check_built(art.lowered, "sm_80", {"static_smem_bytes": 164 * 1024})


# -- error locations ----------------------------------------------------------------------------


@tilelang.jit
def returns_input(A):
    M = T.const("M")
    A: T.Tensor((M,), T.float32)
    C = T.empty((M,), T.float32)
    with T.Kernel(T.ceildiv(M, 64), threads=64) as bx:
        for i in T.Parallel(64):
            C[bx * 64 + i] = A[bx * 64 + i]
    return A  # returns_input return


@tilelang.jit(out_idx=[-1])
def loop_var_after_loop(M):
    @T.prim_func
    def main(A: T.Tensor((M,), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=32):
            for i in T.serial(M):
                B[i] = A[i]
            B[0] = A[i]  # loop_var_after_loop use

    return main


@tilelang.jit
def divide_by_const(A, block: int = 64):
    M, D = T.const("M, D")
    A: T.Tensor((M,), T.float32)
    C = T.empty((M,), T.float32)
    with T.Kernel(T.ceildiv(M, block), threads=64) as bx:
        for i in T.Parallel(block):
            C[bx * block + i] = A[(bx * block + i) // D]  # divide_by_const division
    return C


def test_returning_an_input_points_at_the_return():
    with pytest.raises(DSLError) as ei:
        returns_input.compile(M=1000)
    line = line_of("# returns_input return")
    assert ei.value.span.line == line and ei.value.span.col == col_of("return A", line)
    assert "`A`" in str(ei.value)


def test_loop_variable_after_its_loop_points_at_the_use():
    with pytest.raises(TileLangError) as ei:
        loop_var_after_loop(100)
    line = line_of("# loop_var_after_loop use")
    assert ei.value.span.line == line and ei.value.span.col == col_of("A[i]", line)
    assert "`i`" in str(ei.value)


def test_division_by_zero_const_points_at_the_division():
    with pytest.raises(DSLError) as ei:
        divide_by_const.compile(M=1000, D=0)
    line = line_of("# divide_by_const division")
    assert ei.value.span.file == FILE and ei.value.span.line == line
    assert ei.value.span.col == col_of("(bx * block + i) // D", line)
    assert "division by zero" in str(ei.value) and "<unknown>" not in str(ei.value)
    x = torch.randn(1000)
    torch.testing.assert_close(divide_by_const(x, D=3), x[torch.arange(1000) // 3])
