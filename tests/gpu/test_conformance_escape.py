"""GPU twin of tests/conformance/test_escape_hatches.py: device functions given as source
and called by name (with pointers), a bare extern call and T.evaluate, T.assume'd windows,
the warp-specialized GEMM without setmaxnreg, and a cluster barrier that the partner block
arrives on — run on CUDA and compared with torch."""

from __future__ import annotations

import pytest
import torch
from conformance import escape_kernels as K

pytestmark = pytest.mark.cuda


def _hopper() -> bool:
    return torch.cuda.get_device_capability()[0] >= 9


@pytest.mark.parametrize("M,N", [(5, 130), (77, 1001)])
def test_extern_device_function_cuda(M, N):
    a = torch.randn(M, N, device="cuda")
    torch.testing.assert_close(K.extern_axpb(M, N, 2.0, 1.0)(a), 2 * a + 1)


def test_extern_with_pointers_cuda():
    a = torch.randn(9, 37, device="cuda")
    torch.testing.assert_close(K.extern_rows(9, 37, 3.0)(a), 3 * a)


def test_bare_extern_call_runs_cuda():
    c = torch.zeros(1, dtype=torch.int32, device="cuda")
    K.extern_counter(4, 3)(c)
    assert int(c.item()) == 13


@pytest.mark.parametrize("assume", [False, True])
def test_assumed_window_cuda(assume):
    a = torch.randn(1000, device="cuda")
    torch.testing.assert_close(K.window(1000, 6, assume)(a, 123), a[123:129])


def test_ws_gemm_without_setmaxnreg_cuda():
    M, N, K_ = 1000, 1030, 512
    a = torch.randn(M, K_, device="cuda").half()
    b = torch.randn(K_, N, device="cuda").half()
    for disable in (False, True):
        c = K.ws_gemm(M, N, K_, disable)(a, b)
        torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=0.1, rtol=1e-2)


def test_cluster_barrier_remote_arrive_cuda():
    if not _hopper():
        pytest.skip("clusters need sm_90a")
    a = torch.randn(2, 64, device="cuda")
    for remote in (True, False):
        torch.testing.assert_close(K.cluster_pingpong(64, remote)(a), a)
