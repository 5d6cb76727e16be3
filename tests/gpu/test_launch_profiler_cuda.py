"""The call path on a real GPU: the generated argument checks (errors name the parameter, a
stricter fast check still completes the call), launches on torch's current stream and
inside CUDA-graph capture, dynamic shapes through the fast path, and the profiler's
`do_bench` backends ("event", "cupti" — or its one-time-warning fallback — and
"cudagraph") timing one of our kernels."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

import tilelang  # noqa: E402
import tilelang.language as T  # noqa: E402
from tilelang.profiler import bench as bench_mod  # noqa: E402
from tilelang.profiler import do_bench  # noqa: E402


@tilelang.jit
def axpy(A, B, block: int = 256):
    M = T.const("M")
    A: T.Tensor((M,), T.float32)
    B: T.Tensor((M,), T.float32)
    C = T.empty((M,), T.float32)
    with T.Kernel(T.ceildiv(M, block), threads=block) as bx:
        for i in T.Parallel(block):
            C[bx * block + i] = 2 * A[bx * block + i] + B[bx * block + i]
    return C


@tilelang.jit(out_idx=[-1])
def row_scale(N, block=128):
    m = T.dynamic("m")

    @T.prim_func
    def main(x: T.Tensor((m, N), "float16"), s: T.float32, y: T.Tensor((m, N), "float16")):
        with T.Kernel(m, threads=block) as bx:
            for j in T.Parallel(N):
                y[bx, j] = x[bx, j] * s

    return main


def test_fast_path_results_and_errors():
    k = axpy.compile(M=4096)
    a, b = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    torch.testing.assert_close(k(a, b), 2 * a + b)
    with pytest.raises(TypeError, match="`A`.*float16"):
        k(a.half(), b)
    with pytest.raises(ValueError, match="`B`.*cpu"):
        k(a, b.cpu())
    with pytest.raises(ValueError, match="`A`.*contiguous"):
        k(torch.randn(4096, 2, device="cuda")[:, 0], b)
    with pytest.raises(ValueError, match="`B`"):
        k(a, torch.randn(4095, device="cuda"))
    with pytest.raises(TypeError, match="2 input"):
        k(a)


def test_dynamic_shape_and_scalar_through_the_fast_path():
    k = row_scale(256)
    assert getattr(k.adapter.call, "source", None), "a generated fast path"
    for m in (1, 77, 1000):
        x = torch.randn(m, 256, device="cuda").half()
        torch.testing.assert_close(k(x, 1.5), (x.float() * 1.5).half())
    with pytest.raises(TypeError, match="`s`"):
        k(torch.randn(4, 256, device="cuda").half(), torch.tensor(1.5))


def test_launches_on_the_current_stream_and_in_graph_capture():
    k = axpy.compile(M=1 << 20)
    a, b = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            c = k(a, b)
    torch.cuda.current_stream().wait_stream(s)
    torch.testing.assert_close(c, 2 * a + b)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = k(a, b)
    a.copy_(torch.randn_like(a))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 2 * a + b)


@pytest.mark.parametrize("backend", ["event", "cupti", "cudagraph"])
def test_do_bench_backends(backend):
    k = axpy.compile(M=1 << 22)
    a, b = torch.randn(1 << 22, device="cuda"), torch.randn(1 << 22, device="cuda")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ms = do_bench(lambda: k(a, b), warmup=5, rep=20, backend=backend)
        ms2 = do_bench(lambda: k(a, b), warmup=5, rep=20, backend=backend, return_mode="median")
    fallbacks = [w for w in caught if "falling back to CUDA events" in str(w.message)]
    assert len(fallbacks) <= 1, "the CUPTI fallback warns once"
    # 4M floats: 48 MB moved, ~12 us at 4 TB/s; allow launch-bound and slow readings
    assert 0.003 < ms < 0.5 and 0.003 < ms2 < 0.5, (backend, ms, ms2)
    print(f"do_bench backend={backend}: {ms:.4f} ms mean, {ms2:.4f} ms median; cupti fallback: {bool(fallbacks)}")


def test_cupti_runtime_failure_falls_back_with_one_warning(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")

    monkeypatch.setattr(bench_mod, "_warned_cupti", False)
    monkeypatch.setattr(bench_mod, "cupti_available", lambda: True)
    monkeypatch.setattr(bench_mod, "_kernel_events", broken)
    k = axpy.compile(M=1 << 20)
    a, b = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            assert do_bench(lambda: k(a, b), _n_warmup=2, _n_repeat=5, backend="cupti") > 0
    assert sum("falling back to CUDA events" in str(w.message) for w in caught) == 1


def test_host_overhead_of_a_tiny_kernel():
    import time

    k = axpy.compile(M=128)
    a, b = torch.randn(128, device="cuda"), torch.randn(128, device="cuda")
    for _ in range(200):
        k(a, b)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):  # back to back: the host's time per call (benchmarks/cuda_kernels.py)
        t0 = time.perf_counter()
        for _ in range(2000):
            k(a, b)
        best = min(best, (time.perf_counter() - t0) / 2000 * 1e6)
        torch.cuda.synchronize()
    print(f"host overhead per call: {best:.1f} us")
    assert best < 20, best  # the target is 10 us on the H200; loose here (shared machines)
