"""Run every benchmark that fits this machine and print their tables.

CPU machine: front-end speed, CPU backend (GEMM GFLOP/s, vector add vs torch),
language-server latency. GPU machine: additionally the CUDA kernels vs torch.
Tables are meant to be pasted into benchmarks/RESULTS.md with the device and date.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def is_hopper() -> bool:
    import torch

    return torch.cuda.get_device_capability()[0] == 9


def main() -> int:
    scripts = ["frontend_speed.py", "cpu_backend.py"]
    if has_gpu():
        scripts += ["cuda_kernels.py", "gemv.py"]
        if is_hopper():  # the wgmma / TMA / warp-specialization benchmarks need sm_90a
            scripts += ["hopper.py", "hopper_tma_paths.py", "hopper_explicit.py", "gemm_clocks.py"]
    else:
        scripts += ["lsp_latency.py"]
    env = dict(os.environ, PYTHONPATH=ROOT)
    print(
        f"# {datetime.date.today()} — {platform.node()} ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)\n"
    )
    status = 0
    for s in scripts:
        path = os.path.join(HERE, s)
        if not os.path.exists(path):
            continue
        print(f"## {s}\n", flush=True)
        status |= subprocess.run([sys.executable, path], env=env, cwd=ROOT).returncode
        print(flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
