"""Shared helpers for the examples: pick the device and report a verdict."""

import torch


def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def on_gpu() -> bool:
    return device() == "cuda"


def check(name: str, got: torch.Tensor, ref: torch.Tensor, rtol: float = 1e-2, atol: float = 1e-2) -> None:
    torch.testing.assert_close(got.float(), ref.float(), rtol=rtol, atol=atol)
    print(f"{name}: matches the PyTorch reference ({device()}).")
