"""A config whose kernel crashes or hangs costs the tuning that config only: candidates run
in a benchmark worker process that is killed (with its process group) on a timeout and
replaced after a crash, so the configs timed after it are timed on a quiet machine."""

import torch
from autotune_kernels import faulty_factory, scale_factory, scale_ref

from tilelang.autotuner import AutoTuner, isolation
from tilelang.autotuner.executor import discard_process_pool


def _tune(configs, timeout=20):
    return (
        AutoTuner.from_kernel(kernel=faulty_factory, configs=configs)
        .set_compile_args(target="c", out_idx=[-1])
        .set_profile_args(ref_prog=scale_ref, timeout=timeout)
        .run(warmup=1, rep=3, executor="serial")
    )


def _gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] == "Z"  # a zombie burns nothing
    except FileNotFoundError:
        return True


def test_a_crashing_and_a_hanging_config_are_skipped_and_tuning_goes_on(monkeypatch):
    isolation.shutdown_worker()
    killed = []
    kill = isolation.BenchWorker.kill

    def spy(self):
        if self.proc is not None:
            killed.append(self.proc.pid)
        kill(self)

    monkeypatch.setattr(isolation.BenchWorker, "kill", spy)
    good = [dict(block=128), dict(block=64)]
    hang, crash = dict(block=128, fault="hang"), dict(block=64, fault="crash")
    res = _tune([hang, crash] + good, timeout=15)
    assert res.config in good and len(res.timings) == 2
    reasons = dict((cfg["fault"], why) for cfg, why in res.skipped)
    assert set(reasons) == {"hang", "crash"}
    assert reasons["hang"].startswith("timeout") and "killed" in reasons["hang"], reasons
    assert reasons["crash"].startswith("benchmark failed") and "crashed" in reasons["crash"], reasons
    assert "SIGFPE" in reasons["crash"], reasons
    # the worker that hung was killed, not abandoned: it burns nothing while the others are timed
    assert len(killed) == 2 and isolation._WORKER.proc.pid not in killed
    assert all(_gone(pid) for pid in killed)
    a = torch.randn(1000)
    torch.testing.assert_close(res.kernel(a), scale_ref(a))


def test_a_wrong_kernel_fails_the_check_in_the_tuning_process():
    def wrong_ref(a):
        return a * 3

    res = (
        AutoTuner.from_kernel(kernel=faulty_factory, configs=[dict(block=128)])
        .set_compile_args(target="c", out_idx=[-1])
        .set_profile_args(ref_prog=wrong_ref)  # a local function: never has to be pickled
    )
    try:
        res.run(warmup=1, rep=2, executor="serial")
    except Exception as err:  # noqa: BLE001
        assert "check failed" in str(err) and "mismatched" in str(err), err
    else:
        raise AssertionError("a kernel that disagrees with ref_prog must be skipped")


def _tune_scale(configs, timeout):
    return (
        AutoTuner.from_kernel(kernel=scale_factory, configs=configs)
        .set_compile_args(target="c", out_idx=[-1])
        .set_profile_args(ref_prog=scale_ref, timeout=timeout)
        .run(warmup=1, rep=2, executor="process")
    )


def test_compile_workers_hung_or_crashed_are_replaced(monkeypatch):
    monkeypatch.setenv("TILELANG_AUTO_TUNING_CPU_COUNTS", "2")
    discard_process_pool()
    good = [dict(block=64), dict(block=128), dict(block=256)]
    res = _tune_scale([dict(block=32, delay=600.0), dict(block=32, die=True)] + good, timeout=15)
    reasons = {tuple(sorted(cfg)): why for cfg, why in res.skipped}
    assert len(res.timings) == 3 and res.config in good, res.skipped
    assert reasons[("block", "delay")].startswith("timeout"), reasons
    assert "crashed" in reasons[("block", "die")], reasons
    host_pid = res.compiled_on[0]  # the worker that ran the hung trace was killed, not left sleeping
    assert _gone(int(host_pid.rsplit(":", 1)[1])), host_pid
    discard_process_pool()
