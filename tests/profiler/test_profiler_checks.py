"""Profiler: inputs, assert_allclose (ratio + worst elements), manual checks, consistency, timing."""

import pytest
import torch

from tilelang.engine.param import KernelParam
from tilelang.ir.dtype import DataType
from tilelang.profiler import Profiler, TensorSupplyType


def P(name, dtype, shape):
    return KernelParam(name, DataType(dtype), tuple(shape))


PARAMS = [P("A", "float32", (16, 8)), P("B", "float32", (8, 4)), P("C", "float32", (16, 4))]


def ref(a, b):
    return a @ b


def profiler(kernel, params=PARAMS, result_idx=(-1,), supply=TensorSupplyType.Normal):
    return Profiler(list(params), list(result_idx), supply, kernel, device="cpu")


def test_inputs_exclude_outputs_and_normalise_result_idx():
    prof = profiler(ref)
    assert prof.result_idx == [2]
    ins = prof._get_inputs()
    assert [tuple(t.shape) for t in ins] == [(16, 8), (8, 4)]
    assert [tuple(t.shape) for t in prof._get_inputs(with_output=True)] == [(16, 8), (8, 4), (16, 4)]
    with pytest.raises(ValueError, match="out of range"):
        Profiler(list(PARAMS), [3], TensorSupplyType.Auto, ref)


def test_assert_allclose_passes_for_correct_kernel():
    profiler(lambda a, b: (a.double() @ b.double()).float()).assert_allclose(ref)


def test_assert_allclose_reports_ratio_and_worst_elements():
    def bad(a, b):
        c = a @ b
        c[3, 1] += 100.0  # the worst
        c[0, 0] += 10.0
        c[5, 2] -= 1.0
        return c

    with pytest.raises(AssertionError) as err:
        profiler(bad).assert_allclose(ref, max_mismatched_ratio=0.01)
    msg = str(err.value)
    assert "3/64 elements mismatched (4.6875%)" in msg
    lines = msg.splitlines()
    assert lines[1].lstrip().startswith("at (3, 1): got") and "abs err 100" in lines[1]
    assert lines[2].lstrip().startswith("at (0, 0)") and lines[3].lstrip().startswith("at (5, 2)")


def test_max_mismatched_ratio_allows_a_few_bad_elements():
    def one_bad(a, b):
        c = a @ b
        c[7, 3] = 1e6
        return c

    profiler(one_bad).assert_allclose(ref, max_mismatched_ratio=0.02)  # 1/64 = 1.6% allowed
    with pytest.raises(AssertionError, match="1/64 elements mismatched"):
        profiler(one_bad).assert_allclose(ref, max_mismatched_ratio=0.01)


def test_tolerances_are_atol_plus_rtol():
    ins = [torch.full((16, 8), 1.0), torch.full((8, 4), 1.0)]  # C = 8 everywhere
    prof = profiler(lambda a, b: a @ b + 0.05)
    prof.assert_allclose(ref, input_tensors=ins, atol=0.0, rtol=0.01)  # 0.05 <= 0.08
    with pytest.raises(AssertionError):
        prof.assert_allclose(ref, input_tensors=ins, atol=0.0, rtol=0.005, max_mismatched_ratio=0.0)


def test_multiple_outputs_compared_pairwise():
    params = PARAMS + [P("D", "float32", (16, 8))]

    def kern(a, b):
        return a @ b, a * 2 + 1e-3 * (a.abs() > 0.5)

    prof = profiler(kern, params, (2, 3))
    with pytest.raises(AssertionError, match=r"output 1: \d+/128 elements mismatched"):
        prof.assert_allclose(lambda a, b: (a @ b, a * 2), atol=1e-4, rtol=0.0, max_mismatched_ratio=0.0)
    with pytest.raises(AssertionError, match="returned 2 outputs but the reference returned 1"):
        prof.assert_allclose(ref)


def test_fp8_outputs_are_upcast():
    params = [P("A", "float32", (8, 8)), P("C", "float8_e4m3fn", (8, 8))]
    prof = profiler(lambda a: a.to(torch.float8_e4m3fn), params, (1,), TensorSupplyType.Integer)
    prof.assert_allclose(lambda a: a)


def test_kernel_without_outputs_is_an_error():
    with pytest.raises(AssertionError, match="out_idx"):
        profiler(lambda a, b: None).assert_allclose(ref)


def test_manual_assert_close_receives_both_output_lists():
    seen = {}

    def check(lib, refs):
        seen["lib"], seen["ref"] = lib, refs
        torch.testing.assert_close(lib[0], refs[0])

    profiler(ref).manual_assert_close(ref, manual_check_prog=check)
    assert len(seen["lib"]) == 1 and seen["lib"][0].shape == (16, 4)
    with pytest.raises(ValueError, match="manual_check_prog"):
        profiler(ref).manual_assert_close(ref)


def test_assert_consistent_detects_nondeterminism():
    profiler(ref).assert_consistent(repeat=3)
    with pytest.raises(AssertionError, match="differs from the first run"):
        profiler(lambda a, b: a @ b + torch.rand(16, 4)).assert_consistent(repeat=2)


def test_run_once_call_and_do_bench():
    prof = profiler(ref)
    assert prof.run_once().shape == (16, 4)
    assert prof.run_once(lambda a, b: a.sum()).shape == ()
    a, b = torch.ones(16, 8), torch.ones(8, 4)
    assert torch.equal(prof(a, b), torch.full((16, 4), 8.0))
    t = prof.do_bench(n_warmup=1, n_repeat=3)
    assert isinstance(t, float) and t > 0
    q = prof.do_bench(lambda a, b: a + 1, n_warmup=1, n_repeat=5, quantiles=[0.2, 0.8])
    assert len(q) == 2 and q[0] <= q[1]
    with pytest.raises(ValueError, match="no kernel callable"):
        Profiler(list(PARAMS), [2]).run_once()


def test_do_bench_dynamic_constraints():
    params = [P("A", "float32", ("m", 4)), P("C", "float32", ("m", 4))]
    prof = profiler(lambda a: a * 2, params, (1,))
    with pytest.raises(ValueError, match="dynamic_symbolic_constraints"):
        prof.do_bench(n_warmup=1, n_repeat=1)
    assert prof.do_bench(n_warmup=1, n_repeat=1, dynamic_symbolic_constraints={"m": 8}) > 0
