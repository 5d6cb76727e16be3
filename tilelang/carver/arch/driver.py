"""Live CUDA device queries through torch (no CUDA driver bindings needed).

Every function raises RuntimeError with a hint when no CUDA device is visible.
"""

from __future__ import annotations

from typing import Any


def _props(device_id: int = 0) -> Any:
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError(
            "no CUDA device is visible (torch.cuda.is_available() is False); "
            "tilelang.carver.arch.driver needs a GPU — use an arch table entry such as CUDA('sm_80') instead"
        )
    if not 0 <= device_id < torch.cuda.device_count():
        raise RuntimeError(f"CUDA device {device_id} does not exist ({torch.cuda.device_count()} visible)")
    return torch.cuda.get_device_properties(device_id)


def get_cuda_device_properties(device_id: int = 0) -> Any:
    """torch's device-properties object for `device_id`."""
    return _props(device_id)


def get_device_name(device_id: int = 0) -> str:
    return _props(device_id).name


def get_num_sms(device_id: int = 0) -> int:
    """Number of streaming multiprocessors."""
    return int(_props(device_id).multi_processor_count)


def get_compute_capability(device_id: int = 0) -> tuple[int, int]:
    p = _props(device_id)
    return int(p.major), int(p.minor)


def get_l2_cache_size(device_id: int = 0) -> int:
    """L2 cache size in bytes."""
    return int(_props(device_id).L2_cache_size)


def get_shared_memory_per_block(device_id: int = 0, format: str = "bytes") -> int:
    """Default (non-opt-in) shared memory per block."""
    return _scale(int(getattr(_props(device_id), "shared_memory_per_block", 48 * 1024)), format)


def get_max_dynamic_shared_size_bytes(device_id: int = 0, format: str = "bytes") -> int:
    """Largest dynamic shared memory a block can opt in to."""
    p = _props(device_id)
    value = getattr(p, "shared_memory_per_block_optin", 0) or getattr(p, "shared_memory_per_block", 48 * 1024)
    return _scale(int(value), format)


def get_shared_memory_per_sm(device_id: int = 0, format: str = "bytes") -> int:
    p = _props(device_id)
    value = getattr(p, "shared_memory_per_multiprocessor", 0) or get_max_dynamic_shared_size_bytes(device_id)
    return _scale(int(value), format)


def get_registers_per_sm(device_id: int = 0) -> int:
    return int(getattr(_props(device_id), "regs_per_multiprocessor", 65536))


def get_max_threads_per_sm(device_id: int = 0) -> int:
    return int(getattr(_props(device_id), "max_threads_per_multi_processor", 2048))


def _scale(value: int, format: str) -> int:
    div = {"bytes": 1, "kb": 1024, "mb": 1024 * 1024}.get(format.lower())
    if div is None:
        raise ValueError(f"format must be 'bytes', 'kb' or 'mb', got {format!r}")
    return value // div
