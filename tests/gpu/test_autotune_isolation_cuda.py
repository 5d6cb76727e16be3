"""On the GPU, a config whose kernel never finishes is killed with its worker process (which
frees its CUDA context), the tuning goes on, and the winner runs in the tuning process."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "autotuner"))

from autotune_kernels import faulty_factory, scale_ref  # noqa: E402

from tilelang.autotuner import AutoTuner, isolation  # noqa: E402

pytestmark = pytest.mark.cuda


def test_a_hanging_cuda_config_is_killed_and_tuning_goes_on():
    isolation.shutdown_worker()
    good = [dict(block=128), dict(block=256)]
    res = (
        AutoTuner.from_kernel(kernel=faulty_factory, configs=[dict(block=128, fault="hang")] + good)
        .set_compile_args(target="cuda", out_idx=[-1])
        .set_profile_args(ref_prog=scale_ref, timeout=20)
        .run(warmup=2, rep=5, executor="serial")
    )
    assert res.config in good and len(res.timings) == 2
    assert res.skipped[0][1].startswith("timeout") and "killed" in res.skipped[0][1]
    a = torch.randn(1000, device="cuda")
    torch.testing.assert_close(res.kernel(a), scale_ref(a))
