"""Smaller pieces: callable configs, do_not_specialize, the worker entry point
(timeouts, finding the kernel function by module, path or shipped source),
worker sizing, and stable cache keys."""

import dataclasses
import os
from concurrent.futures import Executor, Future

import autotune_kernels
import pytest
import torch
from autotune_kernels import CONFIGS, gemm_lazy, ref_program

import tilelang
from tilelang.autotuner import AutoTuneError, AutoTuner
from tilelang.autotuner.executor import worker_count
from tilelang.autotuner.keys import Unstable, stable
from tilelang.autotuner.locate import FunctionRef
from tilelang.autotuner.spec import CompileJob, TensorStub, run_job, stub_tensors
from tilelang.backend.target import parse


def test_callable_configs_receive_the_call_arguments():
    calls = []

    def configs(M, N, K):
        calls.append((M, N, K))
        return [dict(c, num_stages=2, threads=128) for c in CONFIGS[:2]]

    tuned = tilelang.autotune(configs=configs, warmup=1, rep=2, ref_prog=ref_program)(gemm_lazy)
    kernel = tuned(128, 128, 64)
    assert calls[0] == (128, 128, 64)
    assert kernel.config in configs(128, 128, 64)
    # a tuned parameter given explicitly: the callable still gets the arguments it accepts
    tuned(128, 128, 64, threads=128)
    assert calls[-1] == (128, 128, 64)


def test_do_not_specialize_reuses_the_tuned_config():
    tuned = tilelang.autotune(configs=CONFIGS[:2], warmup=1, rep=2, do_not_specialize=["M"])(gemm_lazy)
    k1 = tuned(128, 128, 64)
    k2 = tuned(64, 128, 64)  # differs only in M: same tuning, kernel compiled for M=64
    assert len(tuned.results) == 1 and k2 is not k1 and k2.config == k1.config
    assert tuned(64, 128, 64) is k2
    a, b = torch.randn(64, 64).half(), torch.randn(64, 128).half()
    torch.testing.assert_close(k2(a, b), ref_program(a, b), atol=0.1, rtol=1e-2)


def _job(**kw):
    ref = FunctionRef.of(autotune_kernels.scale_factory)
    return CompileJob(0, ref, "factory", (), kw, parse("c"), {}, None, 0.5)


def test_worker_entry_point_reports_errors_and_timeouts():
    out = run_job(_job(block=64, delay=3.0))
    assert not out.ok and out.error.startswith("timeout") and out.pid == os.getpid()
    out = run_job(_job(block=0))
    assert not out.ok and out.error.startswith("compile failed")


def test_function_ref_fallbacks(tmp_path):
    ref = FunctionRef.of(autotune_kernels.gemm_lazy)  # through the @jit wrapper
    assert ref.module == "autotune_kernels" and ref.qualname == "gemm_lazy" and ref.file_text
    assert ref.resolve() is autotune_kernels.gemm_lazy.func
    by_path = dataclasses.replace(ref, module="no_such_module_xyz")
    assert by_path.resolve().__name__ == "gemm_lazy"  # loaded from the source file
    by_text = dataclasses.replace(ref, module="no_such_module_xyz", file=str(tmp_path / "gone" / "kernels_copy.py"))
    assert by_text.resolve().__name__ == "gemm_lazy"  # loaded from the shipped source text
    wrong = dataclasses.replace(by_text, source_sha="0" * 64)
    with pytest.raises(ImportError, match="different version"):
        wrong.resolve()

    def local():
        pass

    assert FunctionRef.of(local) is None


def test_tensor_stubs_and_stable_keys():
    t = torch.zeros(3, 4, dtype=torch.float16)
    stub = stub_tensors((t, [t], {"x": t}, 5))
    assert stub[0] == TensorStub((3, 4), "float16", "cpu") and stub[0].dim() == 2 and stub[3] == 5
    assert stable(t) == stable(stub[0]) == {"tensor": [3, 4], "dtype": "float16", "device": "cpu"}
    assert stable(ref_program).startswith("autotune_kernels.ref_program#")
    with pytest.raises(Unstable):
        stable(lambda x: x)
    with pytest.raises(Unstable):
        stable(object())


def test_worker_count_from_env(monkeypatch):
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_COUNTS", "3")
    assert worker_count(10) == 3 and worker_count(2) == 2
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_COUNTS", "-1")
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_UTILITIES", "1.0")
    monkeypatch.setenv("TILELANG_AUTO_TUNING_MAX_CPU_COUNT", "1")
    assert worker_count(10) == 1
    monkeypatch.delenv("TILELANG_AUTO_TUNING_MAX_CPU_COUNT")
    assert worker_count(1000) == os.cpu_count()


class _TamperingExecutor(Executor):
    """Runs jobs in-process, but with a kernel reference no worker can resolve."""

    def __init__(self):
        self.calls = 0

    def submit(self, fn, job):
        self.calls += 1
        fut = Future()
        fut.set_result(fn(dataclasses.replace(job, ref=dataclasses.replace(job.ref, source_sha="0" * 64))))
        return fut


def test_any_executor_and_local_fallback_when_workers_cannot_import():
    ex = _TamperingExecutor()
    res = (
        AutoTuner.from_kernel(kernel=autotune_kernels.scale_factory, configs=[dict(block=64), dict(block=128)])
        .set_compile_args(out_idx=[-1], target="c")
        .set_profile_args(ref_prog=autotune_kernels.scale_ref)
        .run(warmup=1, rep=2, executor=ex)
    )
    assert ex.calls == 2 and set(res.compiled_on.values()) == {"local"} and len(res.timings) == 2


def test_result_cache_switches(monkeypatch):
    args = dict(configs=CONFIGS[:2], warmup=1, rep=2)
    monkeypatch.setenv("TILELANG_AUTO_TUNING_DISABLE_CACHE", "1")
    assert tilelang.autotune(**args)(gemm_lazy).tune(128, 128, 64).cache_key is None
    monkeypatch.delenv("TILELANG_AUTO_TUNING_DISABLE_CACHE")
    res = tilelang.autotune(**args, ref_prog=lambda A, B: A.float() @ B.float())(gemm_lazy).tune(128, 128, 64)
    assert res.cache_key is None  # a lambda has no stable identity
    res = tilelang.autotune(**args, ref_prog=ref_program)(gemm_lazy).tune(128, 128, 64)
    assert res.cache_key is not None  # a module-level function does


class _LostExecutor(Executor):
    """Accepts jobs and never answers (every worker died)."""

    def submit(self, fn, *args):
        return Future()


def test_lost_workers_do_not_hang_the_tuner(monkeypatch):
    from tilelang.autotuner import compiling

    monkeypatch.setattr(compiling, "STALL_MARGIN", 0.5)
    tuner = AutoTuner.from_kernel(kernel=autotune_kernels.scale_factory, configs=[dict(block=64), dict(block=128)])
    with pytest.raises(AutoTuneError, match="compile workers lost"):
        tuner.set_compile_args(out_idx=[-1], target="c").run(timeout=0.5, executor=_LostExecutor())
