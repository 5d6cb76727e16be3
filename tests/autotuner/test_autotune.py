"""Autotuner end to end on the CPU backend: lazy and eager GEMM over 8 configs
(one extra invalid config), the result cache, the bypass rule,
set_autotune_inputs, timeouts, early stop, and the error when all fail."""

import shutil
import time

import pytest
import torch
from autotune_kernels import CONFIGS, INVALID, gemm_eager, gemm_lazy, ref_program, scale_factory, scale_ref

import tilelang
from tilelang.autotuner import AutoTuneError, AutoTuner, get_autotune_inputs, set_autotune_inputs, transfer
from tilelang.autotuner import cache as result_cache
from tilelang.autotuner.executor import discard_process_pool

M, N, K = 128, 128, 64


@pytest.fixture(scope="module", autouse=True)
def _pool_teardown():
    yield
    discard_process_pool()


def _inputs(m=M, n=N, k=K):
    g = torch.Generator().manual_seed(0)
    a = torch.randn(m, k, generator=g).half()
    b = torch.randn(k, n, generator=g).half()
    return a, b


def _assert_gemm(c, a, b):
    torch.testing.assert_close(c, ref_program(a, b), atol=1e-2 * K**0.5, rtol=1e-2)


def _check_result(res, skipped_invalid=True):
    assert res.config in CONFIGS
    assert len(res.timings) == len(CONFIGS)
    assert res.latency == min(t for _, t in res.timings)
    if skipped_invalid:
        assert len(res.skipped) == 1 and res.skipped[0][0] == INVALID
        assert "must be positive" in res.skipped[0][1]


def test_lazy_gemm_tunes_and_caches(monkeypatch):
    # the process pool is exercised by test_autotune_script.py (and Dask by test_autotune_dask.py);
    # here the two configs per worker thread keep the test fast on a 2-core CI box
    configs = CONFIGS + [INVALID]
    tuned = tilelang.autotune(configs=configs, warmup=1, rep=3, ref_prog=ref_program, executor="thread")(gemm_lazy)
    kernel = tuned(M, N, K)
    res = tuned.last_result
    _check_result(res)
    assert not res.from_cache and res.cache_key is not None
    assert set(res.compiled_on.values()) == {"local"}
    assert kernel is res.kernel and kernel.config == res.config
    a, b = _inputs()
    _assert_gemm(kernel(a, b), a, b)
    assert tuned(M, N, K) is kernel  # in-memory: no second tuning
    assert tuned(M=M, N=N, K=K) is kernel  # the same call, normalised against the signature
    assert len(tuned.results) == 1

    # a new process would start with an empty memory cache: only the disk entry is left
    result_cache._MEMORY.clear()
    again = tilelang.autotune(configs=configs, warmup=1, rep=3, ref_prog=ref_program)(gemm_lazy)
    t0 = time.perf_counter()
    kernel2 = again(M, N, K)
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.0, f"cached tuning took {elapsed:.2f} s"
    assert again.last_result.from_cache and again.last_result.config == res.config
    assert again.last_result.skipped == res.skipped
    _assert_gemm(kernel2(a, b), a, b)
    entry = result_cache.entry_dir(res.cache_key)
    assert {"best_config.json", "latency.json"} <= {p.name for p in entry.iterdir()}

    # the kernel cache lost the best kernel: the tuning-cache entry carries its build
    options = transfer.build_options(kernel.prim_func, {}, None)
    shutil.rmtree(transfer._entry(transfer.kernel_key(kernel.prim_func, kernel.target, options)))
    result_cache._MEMORY.clear()
    built = []
    real_build = kernel.backend.build
    monkeypatch.setattr(kernel.backend, "build", lambda *a, **kw: built.append(1) or real_build(*a, **kw))
    third = tilelang.autotune(configs=configs, warmup=1, rep=3, ref_prog=ref_program)(gemm_lazy)
    _assert_gemm(third(M, N, K)(a, b), a, b)
    assert third.last_result.from_cache and built == []


def test_eager_gemm():
    tuned = tilelang.autotune(configs=CONFIGS, warmup=1, rep=3, ref_prog=ref_program)(gemm_eager)
    a, b = _inputs()
    c = tuned(a, b)  # tunes, then runs the best kernel
    _assert_gemm(c, a, b)
    res = tuned.last_result
    _check_result(res, skipped_invalid=False)
    kernel = tuned(a, b, __return_kernel=True)
    assert kernel is res.kernel and kernel.config == res.config
    assert tuned.compile(a, b) is kernel
    assert len(tuned.results) == 1


def test_bypass_rule_compiles_the_given_config():
    lazy = tilelang.autotune(configs=CONFIGS)(gemm_lazy)
    k = lazy(M, N, K, block_M=32)
    assert lazy.results == {} and k.config is None
    a, b = _inputs()
    _assert_gemm(k(a, b), a, b)
    eager = tilelang.autotune(configs=CONFIGS)(gemm_eager)
    _assert_gemm(eager(a, b, block_N=32), a, b)
    assert eager.results == {}


def test_set_autotune_inputs_has_priority():
    a, b = _inputs()
    c = torch.empty(M, N)
    seen = []

    def ref(A, B):
        seen.append((A, B))
        return A.float() @ B.float()

    def supply(params):
        raise AssertionError("supply_prog must not be used inside set_autotune_inputs")

    tuned = tilelang.autotune(configs=CONFIGS[:2], warmup=1, rep=2, ref_prog=ref, supply_prog=supply)(gemm_lazy)
    assert get_autotune_inputs() is None
    with set_autotune_inputs(a, b, c):  # all params, as in the seed: the output is dropped
        assert get_autotune_inputs() == (a, b, c)
        kernel = tuned(M, N, K)
    assert get_autotune_inputs() is None
    assert seen and all(x is a and y is b for x, y in seen)
    assert tuned.last_result.cache_key is None  # a local ref_prog has no stable identity: not cached
    assert len(tuned.last_result.timings) == 2
    _assert_gemm(kernel(a, b), a, b)
    with set_autotune_inputs([a, b]):
        assert get_autotune_inputs() == (a, b)


def test_unknown_config_key_is_an_error():
    tuned = tilelang.autotune(configs=[dict(block_M=32, block_Q=1)])(gemm_lazy)
    with pytest.raises(ValueError, match="block_Q"):
        tuned(M, N, K)


def test_all_configs_failing_raises_with_reasons():
    bad = [INVALID, dict(block_M=0, block_N=32, block_K=16)]
    tuned = tilelang.autotune(configs=bad, executor="serial")(gemm_lazy)
    with pytest.raises(AutoTuneError, match="all 2 configs failed") as info:
        tuned(M, N, K)
    assert [cfg for cfg, _ in info.value.skipped] == bad
    assert all(reason for _, reason in info.value.skipped)


def test_programmatic_timeout_and_early_stop():
    fast, slow, late = dict(block=64), dict(block=64, repeat=50000), dict(block=64, delay=12.0)

    def tuner(configs):
        return (
            AutoTuner.from_kernel(kernel=scale_factory, configs=configs)
            .set_compile_args(out_idx=[-1], target="c")
            .set_profile_args(ref_prog=scale_ref)
        )

    warm = tuner([fast, slow]).run(warmup=1, rep=2, timeout=120, executor="serial")  # fills the kernel cache
    assert warm.config == fast and len(warm.timings) == 2
    res = tuner([fast, slow, late]).run(
        warmup=1, rep=2, timeout=5, early_stop=True, early_stop_factor=2.0, executor="serial"
    )
    assert res.config == fast
    reasons = dict((tuple(sorted(c.items())), r) for c, r in res.skipped)
    assert reasons[tuple(sorted(late.items()))].startswith("timeout")
    assert reasons[tuple(sorted(slow.items()))].startswith("early stop")
    assert res.libcode and res.func is not None and res.kernel.config == fast
