"""Input supply and the standalone do_bench (CPU path, statistics, cupti fallback)."""

import warnings

import pytest
import torch

import tilelang.profiler.bench as bench
from tilelang.engine.param import KernelParam
from tilelang.ir.dtype import DataType
from tilelang.profiler import TensorSupplyType, do_bench, get_tensor_supply


def P(name, dtype, shape, **kw):
    return KernelParam(name, DataType(dtype), tuple(shape), **kw)


def gen(kind, dtype, shape=(64, 64), **kw):
    return get_tensor_supply(kind, device="cpu", **kw)(P("x", dtype, shape))


def test_supply_enum_values():
    assert [m.value for m in TensorSupplyType] == [1, 2, 3, 4, 5, 6, 7]
    assert get_tensor_supply(7, device="cpu")(P("x", "float32", (4,))).dtype == torch.float32
    assert gen("uniform", "int8").eq(1).all()
    with pytest.raises(ValueError, match="unknown tensor supply type"):
        get_tensor_supply("gaussian")


def test_auto_supply_rules():
    f16 = gen(TensorSupplyType.Auto, "float16")
    assert f16.dtype == torch.float16 and f16.shape == (64, 64) and f16.device.type == "cpu"
    assert f16.abs().max() <= 1 and f16.std() > 0.3
    u8 = gen(TensorSupplyType.Auto, "uint8")
    assert set(u8.unique().tolist()) <= {0, 1, 2} and len(u8.unique()) == 3
    i32 = gen(TensorSupplyType.Auto, "int32")
    assert set(i32.unique().tolist()) == {-2, -1, 0, 1, 2}
    f64 = gen(TensorSupplyType.Auto, "float64")  # "others": randint[-2, 3)
    assert set(f64.unique().tolist()) == {-2.0, -1.0, 0.0, 1.0, 2.0}
    b = gen(TensorSupplyType.Auto, "bool")
    assert b.dtype == torch.bool and b.any() and not b.all()
    f8 = gen(TensorSupplyType.Auto, "float8_e4m3fn").float()
    assert f8.min() >= -128 and f8.max() <= 128 and f8.abs().max() > 16


def test_integer_uniform_normal_randn_zero_one():
    x = gen(TensorSupplyType.Integer, "float16").float()
    assert torch.equal(x, x.round()) and set(x.unique().tolist()) == {-2.0, -1.0, 0.0, 1.0, 2.0}
    u = gen(TensorSupplyType.Uniform, "float32", (10000,))
    assert u.min() >= -1 and u.max() <= 1 and abs(u.mean()) < 0.05
    assert gen(TensorSupplyType.Uniform, "int8").eq(1).all()
    n = gen(TensorSupplyType.Normal, "float32", (20000,))
    assert abs(n.mean() + 1) < 0.05 and abs(n.std() - 1) < 0.05
    assert gen(TensorSupplyType.Normal, "int32").eq(1).all()
    r = gen(TensorSupplyType.Randn, "bfloat16", (20000,)).float()
    assert abs(r.mean()) < 0.05 and abs(r.std() - 1) < 0.05
    assert gen(TensorSupplyType.Zero, "float16").eq(0).all()
    assert gen(TensorSupplyType.One, "int8").eq(1).all()


def test_dynamic_dims_need_constraints():
    p = P("A", "float16", ("m", 16))
    with pytest.raises(ValueError, match=r"dynamic dimension 'm'.*dynamic_symbolic_constraints"):
        get_tensor_supply(TensorSupplyType.Auto, device="cpu")(p)
    t = get_tensor_supply(TensorSupplyType.Auto, {"m": 48}, device="cpu")(p)
    assert t.shape == (48, 16)


def test_scalar_param_gets_python_number():
    v = get_tensor_supply(TensorSupplyType.One, device="cpu")(P("alpha", "float32", (), scalar=True))
    assert v == 1.0 and isinstance(v, float)


def test_summarize_modes_and_quantiles():
    xs = [4.0, 1.0, 3.0, 2.0]
    assert bench.summarize(xs, None, "mean") == 2.5
    assert bench.summarize(xs, None, "median") == 2.5
    assert bench.summarize(xs, None, "min") == 1.0
    assert bench.summarize(xs, None, "max") == 4.0
    assert bench.summarize(xs, [0.0, 0.5, 1.0], "mean") == [1.0, 2.5, 4.0]
    assert bench.summarize(xs, [0.5], "mean") == [2.5]
    with pytest.raises(ValueError, match="return_mode"):
        bench.summarize(xs, None, "avg")


class FakeClock:
    """perf_counter replacement: each call of the timed function advances it by the next duration."""

    def __init__(self, durations_ms):
        self.now, self.durations, self.calls = 0.0, list(durations_ms), 0

    def perf_counter(self):
        return self.now

    def fn(self):
        self.now += self.durations[min(self.calls, len(self.durations) - 1)] / 1e3
        self.calls += 1


def test_cpu_bench_budget_and_counts(monkeypatch):
    clock = FakeClock([2.0])
    monkeypatch.setattr(bench, "time", clock)
    # estimate 2 ms -> warmup 10 ms = 5 calls, rep 20 ms = 10 calls; plus 1 + 5 estimation calls
    assert do_bench(clock.fn, warmup=10, rep=20, device="cpu") == pytest.approx(2.0)
    assert clock.calls == 1 + 5 + 5 + 10
    clock2 = FakeClock([2.0])
    monkeypatch.setattr(bench, "time", clock2)
    do_bench(clock2.fn, warmup=10, rep=20, _n_warmup=3, _n_repeat=7, device="cpu")
    assert clock2.calls == 1 + 5 + 3 + 7


def test_cpu_bench_return_modes(monkeypatch):
    # 6 untimed calls (1 + 5 estimate) of 1 ms, 1 warmup, then timed 5, 1, 3 ms
    durations = [1.0] * 7 + [5.0, 1.0, 3.0]
    results = {}
    for mode in ("mean", "median", "min", "max"):
        clock = FakeClock(durations)
        monkeypatch.setattr(bench, "time", clock)
        results[mode] = do_bench(clock.fn, _n_warmup=1, _n_repeat=3, return_mode=mode, device="cpu")
    assert results == pytest.approx({"mean": 3.0, "median": 3.0, "min": 1.0, "max": 5.0})
    clock = FakeClock(durations)
    monkeypatch.setattr(bench, "time", clock)
    assert do_bench(clock.fn, _n_warmup=1, _n_repeat=3, quantiles=[0.0, 1.0], device="cpu") == pytest.approx([1.0, 5.0])


def test_cpu_bench_real_clock_and_errors():
    a = torch.randn(64, 64)
    t = do_bench(lambda: a @ a, _n_warmup=2, _n_repeat=5)
    assert isinstance(t, float) and t > 0
    with pytest.raises(ValueError, match="backend"):
        do_bench(lambda: None, backend="nvtx")
    with pytest.raises(ValueError, match="return_mode"):
        do_bench(lambda: None, return_mode="p99")


def test_early_stop_baseline(monkeypatch):
    clock = FakeClock([5.0])
    monkeypatch.setattr(bench, "time", clock)
    assert do_bench(clock.fn, early_stop_baseline=1.0, device="cpu") == pytest.approx(5.0)
    assert clock.calls == 6  # no warm-up or timed calls


def test_device_choice_follows_closure_tensors(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    cpu_tensor = torch.ones(2)
    assert bench._use_cuda(lambda: cpu_tensor + 1, None) is False
    assert bench._use_cuda(lambda: None, None) is True
    assert bench._use_cuda(lambda: None, "cpu") is False
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert bench._use_cuda(lambda: None, None) is False


def test_cupti_fallback_warns_once(monkeypatch):
    monkeypatch.setattr(bench, "cupti_available", lambda: False)
    monkeypatch.setattr(bench, "_warned_cupti", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert bench.resolve_backend("cupti") == "event"
        assert bench.resolve_backend("cupti") == "event"
    msgs = [w for w in caught if "CUPTI" in str(w.message)]
    assert len(msgs) == 1 and issubclass(msgs[0].category, RuntimeWarning)


def test_cupti_kept_when_available(monkeypatch):
    monkeypatch.setattr(bench, "cupti_available", lambda: True)
    monkeypatch.setattr(bench, "_warned_cupti", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bench.resolve_backend("cupti") == "cupti"
        assert bench.resolve_backend("cudagraph") == "cudagraph"
    with pytest.raises(ValueError, match="backend"):
        bench.resolve_backend("bogus")


class FakeCudaTimeline:
    """Stands in for torch.cuda on a CPU-only machine: events read a virtual clock that
    each kernel call advances; the L2 flush buffer counts its zero_() calls."""

    def __init__(self, kernel_ms):
        self.now, self.kernel_ms, self.calls, self.flushes, self.log = 0.0, kernel_ms, 0, 0, []
        timeline = self

        class Event:
            def __init__(self, enable_timing=False):
                self.t = None

            def record(self, stream=None):
                self.t = timeline.now
                timeline.log.append("record")

            def elapsed_time(self, other):
                return other.t - self.t

        class Cache:
            def zero_(self):
                timeline.flushes += 1
                timeline.log.append("flush")

        self.Event, self.cache = Event, Cache()

    def fn(self):
        self.now += self.kernel_ms
        self.calls += 1
        self.log.append("call")


def test_event_backend_control_flow(monkeypatch):
    import contextlib

    tl = FakeCudaTimeline(kernel_ms=0.5)
    monkeypatch.setattr(torch.cuda, "Event", tl.Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "device", lambda d: contextlib.nullcontext())
    monkeypatch.setattr(bench, "_flush_buffer", lambda size, fast: tl.cache)
    t = do_bench(tl.fn, warmup=2, rep=3, device="cuda")
    # 1 call, 5 estimate calls (0.5 ms each), warmup 2 ms = 4 calls, rep 3 ms = 6 timed calls
    assert tl.calls == 1 + 5 + 4 + 6 and t == pytest.approx(0.5)
    assert tl.flushes == 5 + 6  # before each estimate call and each timed call
    assert tl.log[-24:] == ["flush", "record", "call", "record"] * 6  # each timed launch has its own events
    tl2 = FakeCudaTimeline(kernel_ms=0.5)
    monkeypatch.setattr(torch.cuda, "Event", tl2.Event)
    monkeypatch.setattr(bench, "_flush_buffer", lambda size, fast: tl2.cache)
    do_bench(tl2.fn, _n_warmup=2, _n_repeat=3, device="cuda", return_mode="max")
    assert tl2.calls == 1 + 5 + 2 + 3
