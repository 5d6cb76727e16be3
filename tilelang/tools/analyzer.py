"""`tilelang.tools.Analyzer`: the roofline of a kernel — FLOPs and global-memory bytes counted
from its tile-level IR, against the target's peak compute and DRAM bandwidth.

    from tilelang.carver.arch import CUDA
    result = Analyzer.analysis(kernel_or_prim_func, CUDA("sm_90a"))
    result.total_flops, result.total_global_bytes, result.estimated_time, result.tflops

What is counted, per block and summed over the grid (a loop whose trip count depends on the block
index — causal attention — is evaluated for every block):
- `T.gemm`: 2·M·N·K.
- global memory: every `T.copy` / `T.atomic_*` / `T.fill` / `T.reduce` region on a global buffer,
  and every element a `T.Parallel` or serial loop loads from or stores to a global buffer.
  Bytes are what the kernel asks for, not what the caches deliver (re-reads count again).
The estimate is max(bytes / DRAM bandwidth, FLOPs / peak), the peak being the tensor-core rate of
the gemm operands' dtype (dense, boost clock, from the vendors' data sheets) or the CUDA-core fp32
rate when the kernel has no gemm.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..arith.analyzer import Analyzer as ArithAnalyzer
from ..ir.buffer import Buffer, BufferRegion
from ..ir.expr import BufferLoad, const_int
from ..ir.function import PrimFunc
from ..ir.stmt import (
    Atomic,
    Copy,
    Fill,
    For,
    Gemm,
    IfThenElse,
    KernelLaunch,
    Reduce,
    SeqStmt,
    Stmt,
    TmaCopy,
)
from ..ir.visitor import collect, substitute, uses_var

# Dense peak TFLOP/s by compute capability and operand class ("fp32" = CUDA cores, no tensor cores).
PEAK_TFLOPS: dict[int, dict[str, float]] = {
    70: {"16bit": 125.0, "fp32": 15.7},
    75: {"16bit": 65.0, "8bit": 130.0, "fp32": 8.1},
    80: {"16bit": 312.0, "tf32": 156.0, "8bit": 624.0, "fp64": 19.5, "fp32": 19.5},
    86: {"16bit": 71.0, "tf32": 35.6, "8bit": 284.0, "fp32": 35.6},
    89: {"16bit": 165.2, "tf32": 82.6, "8bit": 660.6, "fp32": 82.6},
    90: {"16bit": 989.0, "tf32": 494.0, "8bit": 1979.0, "fp64": 67.0, "fp32": 67.0},
    100: {"16bit": 2250.0, "tf32": 1100.0, "8bit": 4500.0, "fp64": 40.0, "fp32": 80.0},
}
_EXACT_BLOCK_LIMIT = 1 << 16  # grids up to this many blocks get block-dependent trip counts exactly


@dataclass(frozen=True)
class AnalysisResult:
    total_flops: int
    total_global_bytes: int
    estimated_time: float  # seconds
    tflops: float  # FLOPs / estimated time
    bandwidth_GBps: float  # the DRAM bandwidth used for the estimate
    bound: str = ""  # "compute" or "memory": which side of the roofline the kernel is on
    exact: bool = True  # False when a trip count was bounded above instead of counted


def _operand_class(dtype: Any) -> str:
    name = str(dtype)
    if name in ("float16", "bfloat16"):
        return "16bit"
    if name.startswith("float8") or name in ("int8", "uint8"):
        return "8bit"
    if name == "float32":
        return "tf32"
    if name == "float64":
        return "fp64"
    return "fp32"


def _region_elems(r: BufferRegion) -> int | None:
    n = 1
    for e in r.extents:
        v = const_int(e)
        if v is None:
            return None
        n *= v
    return n


class Analyzer:
    """FLOPs, global bytes and a roofline time estimate of one kernel (see the module docstring)."""

    def __init__(self, fn: Any, device: Any) -> None:
        func = fn
        for attr in ("prim_func", "func"):
            if not isinstance(func, PrimFunc) and isinstance(getattr(func, attr, None), PrimFunc):
                func = getattr(func, attr)
        if not isinstance(func, PrimFunc):
            raise TypeError(
                f"Analyzer needs a T.prim_func or a compiled kernel, not {type(fn).__name__} "
                "(call a lazy @tilelang.jit factory with its sizes first)"
            )
        if isinstance(device, str):
            from ..carver.arch import CUDA

            device = CUDA(device)
        self.fn, self.device = func, device
        self.total_flops = 0
        self.total_global_bytes = 0
        self.exact = True
        self._gemm_class: str | None = None
        self._block_ranges: list = []  # (block var, grid extent) of the kernel being counted

    # -- counting ----------------------------------------------------------------------
    def _trips(self, extent: Any, block_env: dict) -> int:
        v = const_int(substitute(extent, block_env) if block_env else extent)
        if v is None:
            v = const_int(ArithAnalyzer().simplify(substitute(extent, block_env)))
        if v is None:
            an = ArithAnalyzer()
            for var, n in self._block_ranges:
                an.bind_range(var, 0, n)
            _lo, hi = an.const_int_bound(extent)
            if not isinstance(hi, int):
                raise ValueError(
                    f"Analyzer: the trip count `{extent}` is not known at compile time — bind the sizes "
                    "(compile the kernel for concrete shapes) before analysing it"
                )
            self.exact = False
            v = int(hi)
        return max(0, v)

    def _global_bytes(self, r: BufferRegion) -> int:
        if r.buffer.scope != "global":
            return 0
        n = _region_elems(r)
        if n is None:
            raise ValueError(f"Analyzer: the region of `{r.buffer.name}` has a size unknown at compile time")
        return n * r.buffer.dtype.bytes

    def _count(self, s: Stmt | None, env: dict) -> tuple[int, int]:
        """(flops, bytes) of one execution of `s` in one block."""
        if s is None:
            return 0, 0
        if isinstance(s, SeqStmt):
            f = b = 0
            for x in s.stmts:
                df, db = self._count(x, env)
                f, b = f + df, b + db
            return f, b
        if isinstance(s, For):
            trips = self._trips(s.extent, env)
            df, db = self._count(s.body, env)
            return df * trips, db * trips
        if isinstance(s, IfThenElse):  # both sides could run: count the larger (an upper bound)
            a, b = self._count(s.then_body, env), self._count(s.else_body, env)
            if s.else_body is not None:
                self.exact = False
            return max(a[0], b[0]), max(a[1], b[1])
        if isinstance(s, Gemm):
            c = [const_int(e) for e in s.C.extents[-2:]]
            a = [const_int(e) for e in s.A.extents[-2:]]
            k = a[0] if s.transpose_A else a[-1]
            if None in c or k is None:
                raise ValueError("Analyzer: a T.gemm with shapes unknown at compile time")
            self._gemm_class = self._gemm_class or _operand_class(s.A.buffer.dtype)
            flops = 2 * c[0] * c[1] * k
            return flops, self._global_bytes(s.A) + self._global_bytes(s.B) + self._global_bytes(s.C)
        if isinstance(s, Copy | TmaCopy):
            return 0, self._global_bytes(s.src) + self._global_bytes(s.dst)
        if isinstance(s, Reduce):
            return 0, self._global_bytes(s.src) + self._global_bytes(s.dst)
        if isinstance(s, Fill):
            return 0, self._global_bytes(s.dst)
        if isinstance(s, Atomic):
            extra = self._global_bytes(s.value) if isinstance(s.value, BufferRegion) else 0
            return 0, 2 * self._global_bytes(s.dst) + extra  # read-modify-write
        body = getattr(s, "body", None)
        own = self._element_bytes(s)
        if isinstance(body, Stmt):
            df, db = self._count(body, env)
            return df, db + own
        return 0, own

    def _element_bytes(self, s: Stmt) -> int:
        """Global elements one statement itself loads or stores (not its nested statements)."""
        total = 0
        buf = getattr(s, "buffer", None)
        if isinstance(buf, Buffer) and buf.scope == "global" and hasattr(s, "indices"):
            total += buf.dtype.bytes
        for name in ("value", "cond", "init"):
            e = getattr(s, name, None)
            if e is None or isinstance(e, Stmt | BufferRegion):
                continue
            for ld in collect(e, lambda n: isinstance(n, BufferLoad)):
                if getattr(ld.buffer, "scope", "") == "global":
                    total += ld.buffer.dtype.bytes
        return total

    def _kernel(self, k: KernelLaunch) -> None:
        grid = [const_int(g) for g in k.grid]
        if None in grid:
            raise ValueError("Analyzer: the grid size is not known at compile time — bind the sizes first")
        self._block_ranges = list(zip(k.block_vars, grid))
        blocks = 1
        for g in grid:
            blocks *= g
        depends = any(
            uses_var(f.extent, v) for f in collect(k.body, lambda n: isinstance(n, For)) for v in k.block_vars
        )
        if depends and blocks <= _EXACT_BLOCK_LIMIT:
            import itertools

            for idx in itertools.product(*(range(g) for g in grid)):
                env = {v: i for v, i in zip(k.block_vars, idx)}
                f, b = self._count(k.body, env)
                self.total_flops += f
                self.total_global_bytes += b
            return
        f, b = self._count(k.body, {})
        self.total_flops += f * blocks
        self.total_global_bytes += b * blocks

    def ir_pass(self) -> Analyzer:
        """Count FLOPs and bytes over every kernel of the function."""
        self.total_flops = self.total_global_bytes = 0
        for k in collect(self.fn.body, lambda n: isinstance(n, KernelLaunch)):
            self._kernel(k)
        return self

    # -- the roofline -----------------------------------------------------------------
    def _peak_tflops(self) -> float:
        version = getattr(self.device, "sm_version", None)
        if version is None:
            raise ValueError(
                f"Analyzer: no compute peak known for the device {getattr(self.device, 'name', self.device)!r}"
            )
        base = max((v for v in PEAK_TFLOPS if v <= version), default=None)
        if base is None:
            raise ValueError(f"Analyzer: no compute peak known for sm_{version}; known: {sorted(PEAK_TFLOPS)}")
        table = PEAK_TFLOPS[base]
        return table.get(self._gemm_class or "fp32", table["fp32"])

    def calculate(self) -> AnalysisResult:
        bandwidth = float(self.device.bandwidth[0])  # DRAM GB/s
        peak = self._peak_tflops()
        mem_time = self.total_global_bytes / (bandwidth * 1e9) if bandwidth else 0.0
        compute_time = self.total_flops / (peak * 1e12)
        t = max(mem_time, compute_time)
        return AnalysisResult(
            total_flops=int(self.total_flops),
            total_global_bytes=int(self.total_global_bytes),
            estimated_time=float(t),
            tflops=float(self.total_flops / t / 1e12) if t else 0.0,
            bandwidth_GBps=bandwidth,
            bound="compute" if compute_time >= mem_time else "memory",
            exact=self.exact,
        )

    @classmethod
    def analysis(cls, fn: Any, device: Any) -> AnalysisResult:
        return cls(fn, device).ir_pass().calculate()


__all__ = ["PEAK_TFLOPS", "AnalysisResult", "Analyzer"]
