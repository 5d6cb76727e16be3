"""The explicit Hopper examples on an sm_90a GPU against torch: both warp-specialized
GEMMs of the seed (T.ws + mbarriers + T.tma_copy), the TMA double-buffer Q·Kᵀ, the
persistent warp-specialized GEMM (setmaxnreg, phases across tiles), stream-K, and a
cluster kernel (T.ClusterKernel, T.block_rank_in_cluster, cluster barriers) — at
realistic sizes and at sizes that are not multiples of the tiles.

Kernels are compiled up front in parallel. Marked `cuda`: skipped without a GPU;
skipped on GPUs older than sm_90.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(
        not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0), reason="needs an sm_90 GPU"
    ),
]

from catalog import _example  # noqa: E402
from hopper_kernels import cluster_ranks  # noqa: E402

torch.manual_seed(0)
DEV = "cuda"


def _sms() -> int:
    return torch.cuda.get_device_properties(0).multi_processor_count


def _cases() -> dict:
    ws = _example("hopper/ws_gemm.py").matmul_ws
    ring = _example("hopper/ws_gemm_pipelined.py").matmul_ws_ring
    qk = _example("hopper/tma_double_buffer.py").qk_scores
    pers = _example("hopper/persistent_ws_gemm.py").matmul_persistent_ws
    sms = _sms()
    return {
        "ws_4096": lambda: ws(4096, 4096, 4096, 128, 128, 64),
        "ws_odd": lambda: ws(1000, 1032, 520, 128, 128, 64),
        "ring_4096": lambda: ring(4096, 4096, 4096, 128, 128, 64, 2),
        "ring3_odd": lambda: ring(1000, 1032, 1000, 128, 128, 64, 3),
        "qk_1024": lambda: qk(4, 8, 1024, 128, 128, 128),
        "qk_odd": lambda: qk(2, 3, 1000, 64, 128, 64),
        "persistent_4096": lambda: pers(4096, 4096, 4096, 128, 128, 64, sms, 4),
        "persistent_odd": lambda: pers(1000, 1032, 1000, 128, 128, 64, sms, 3),
    }


@pytest.fixture(scope="module")
def kernels():
    cases = _cases()

    def build(item):
        name, make = item
        try:
            return name, make()
        except Exception as err:  # noqa: BLE001 - reported by the test of this kernel
            return name, err

    with ThreadPoolExecutor(max_workers=int(os.environ.get("TL_TEST_NVCC_JOBS", "8"))) as ex:
        return dict(ex.map(build, cases.items()))


def _get(kernels, name):
    k = kernels[name]
    if isinstance(k, Exception):
        raise k
    return k


def _gemm_inputs(M, N, K):
    return torch.randn(M, K, device=DEV, dtype=torch.float16), torch.randn(K, N, device=DEV, dtype=torch.float16)


def _close(got, ref, K):
    torch.testing.assert_close(got.float(), ref, atol=1e-2 * K**0.5, rtol=1e-2)


@pytest.mark.parametrize(
    "name,shape",
    [
        ("ws_4096", (4096, 4096, 4096)),
        ("ws_odd", (1000, 1032, 520)),
        ("ring_4096", (4096, 4096, 4096)),
        ("ring3_odd", (1000, 1032, 1000)),
        ("persistent_4096", (4096, 4096, 4096)),
        ("persistent_odd", (1000, 1032, 1000)),
    ],
)
def test_warp_specialized_gemm(kernels, name, shape):
    M, N, K = shape
    a, b = _gemm_inputs(M, N, K)
    k = _get(kernels, name)
    for _ in range(2):  # a second launch reuses the barriers' fresh state
        _close(k(a, b), a.float() @ b.float(), K)


@pytest.mark.parametrize("name,shape", [("qk_1024", (4, 8, 1024, 128)), ("qk_odd", (2, 3, 1000, 64))])
def test_tma_double_buffer(kernels, name, shape):
    q = torch.randn(*shape, device=DEV, dtype=torch.float16)
    kk = torch.randn(*shape, device=DEV, dtype=torch.float16)
    got = _get(kernels, name)(q, kk)
    torch.testing.assert_close(got, q.float() @ kk.float().transpose(-1, -2), atol=1e-2 * shape[-1] ** 0.5, rtol=1e-2)


_STREAMK = """
import sys, torch
sys.path.insert(0, {cuda!r})
from catalog import _example
M, N, K = {shape}
sms = torch.cuda.get_device_properties(0).multi_processor_count
k = _example("hopper/streamk_gemm.py").matmul_streamk(M, N, K, 128, 128, 32, sms)
a, b = torch.randn(M, K, device="cuda").half(), torch.randn(K, N, device="cuda").half()
c = torch.zeros(M, N, device="cuda")
k(a, b, c)
torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-2 * K**0.5, rtol=1e-2)
print("ok")
"""


@pytest.mark.parametrize("shape", [(3072, 3072, 4096), (1000, 1000, 1000)])
def test_streamk(shape):
    # in a child process with a time limit: a kernel that never finishes fails this test
    # instead of stopping the whole suite
    import subprocess

    code = _STREAMK.format(cuda=str(ROOT / "tests" / "cuda"), shape=shape)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    limit = float(os.environ.get("TL_TEST_HANG_LIMIT", "90"))
    try:
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"stream-K {shape} did not finish within {limit:.0f} s (a hang on the GPU)")
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]


def test_cluster_kernel():
    x = torch.randn(64, 200, device=DEV)
    y = cluster_ranks(64, 200)(x)
    rank = (torch.arange(64, device=DEV) % 2).float()[:, None]
    torch.testing.assert_close(y, x * 2 + rank, atol=0, rtol=0)
