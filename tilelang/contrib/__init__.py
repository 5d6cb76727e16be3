"""Toolchain helpers (`nvcc`: CUDA toolkit discovery and compute versions)."""

from . import nvcc

__all__ = ["nvcc"]
