"""`KernelParam`: what the runtime, the profiler and the autotuner know about one
kernel parameter — its dtype and shape (ints, or Var names for dynamic dims)."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.dtype import DataType


@dataclass(frozen=True)
class KernelParam:
    name: str
    dtype: DataType
    shape: tuple  # ints, or str names of dynamic dimensions; () for scalars
    is_output: bool = False
    scalar: bool = False

    def torch_dtype(self):
        return self.dtype.as_torch()

    def is_scalar(self) -> bool:
        return self.scalar

    def is_unsigned(self) -> bool:
        return self.dtype.is_uint

    def is_float8(self) -> bool:
        return self.dtype.is_float8

    def is_float4(self) -> bool:
        return self.dtype.is_float4()

    def is_boolean(self) -> bool:
        return self.dtype.is_bool

    def is_dynamic(self) -> bool:
        return any(not isinstance(d, int) for d in self.shape)
