"""Every catalogue kernel (seeds, examples, extras) on the GPU equals the same kernel on the CPU
backend on the same random inputs (see catalog_vs_cpu.py, which `make gpu-sanitize` runs)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_vs_cpu import check, names  # noqa: E402

pytestmark = pytest.mark.cuda


@pytest.mark.parametrize("name", sorted(names()))
def test_gpu_equals_cpu_backend(name):
    check(name, names()[name])
