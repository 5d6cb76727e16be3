"""check_metal_features: what Metal has no form for is one clear error at its line.

Requires: tile-level IR (after `verify`), `ctx.target` a Metal `Target`.

Guarantees (the input is returned unchanged): a `MetalUnsupportedError` (an `UnsupportedError`)
`file:line:col: unsupported on Metal: <feature> — <what to do>` at the first
(in source order) use of

* a dtype Metal has no type for: fp8 (`float8_*`), the 4-bit types, `float64` (Apple GPUs have
  no double precision), `bfloat16` below MSL 3.1 (target attr `msl`);
* a CUDA-only hardware feature: `T.ws` warp specialization, TMA copies, mbarriers and the
  other explicit Hopper synchronisation (`T.mbarrier_*`, `T.set_max_nreg`, named barriers),
  `T.wgmma_gemm`, thread-block clusters (`T.ClusterKernel`);
* what the Metal lowering has no rule for: `T.print` / `T.device_assert` (Metal has no
  printf and no trap), `T.rng_*`, `T.call_extern` / `T.import_source` (CUDA source),
  atomics other than add / sub / max / min / exchange-free forms on 32-bit types, and any
  memory order but relaxed (MSL atomics are relaxed only), `T.gemm` on integer or float64
  operands (simdgroup_matrix holds half, float and bfloat only).

Why one pass: every later pass may assume a kernel that Metal can express, and the user gets
one error naming the feature, not a confusing failure deep in a later pass."""

from __future__ import annotations

from ...errors import UnsupportedError
from ...ir.dtype import DataType
from ...ir.function import PrimFunc
from ...ir.node import Node
from ...ir.span import Span
from ...ir.stmt import Atomic, DeviceAssert, Gemm, Print
from ...transform.context import CompileContext
from ..feature_check import HINT_CUDA, FeatureCheck
from ..target import metal_features, parse, target_of

# atomics MSL has on `device atomic_int` / `atomic_uint` (all) and `atomic_float` (add / sub only)
_INT_ATOMICS = ("add", "sub", "max", "min", "and", "or", "xor")
_FLOAT_ATOMICS = ("add", "sub")


def check_metal_features(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    target = target_of(func, ctx) or parse("metal")
    return _Check(metal_features(target), func.span).run(func)


class MetalUnsupportedError(UnsupportedError):
    """A feature Metal has no form for: `file:line:col: unsupported on Metal: <feature> — <hint>`."""

    kind = "unsupported on Metal"


def _err(feature: str, span: Span, hint: str = HINT_CUDA) -> UnsupportedError:
    return MetalUnsupportedError(feature, span, hint)


class _Check(FeatureCheck):
    ERROR = MetalUnsupportedError
    NO_WARPGROUPS = "Metal has no warpgroups or register re-balancing"
    IMPORT_SOURCE = "T.import_source (CUDA source cannot be compiled as MSL)"

    def __init__(self, features: frozenset, span: Span) -> None:
        super().__init__(span)
        self.features = features

    def dtype(self, dt: DataType, span: Span, what: str) -> None:
        base = dt.element_of()
        if base.is_float8:
            raise _err(f"{base} ({what}): Metal has no 8-bit float type", span, "use float16 or float32")
        if base.bits < 8 and base.bits != 1:
            raise _err(f"{base} ({what}): Metal has no 4-bit types", span, "use int8 / float16 tensors")
        if base.base == "float64":
            raise _err(f"float64 ({what}): Apple GPUs have no double precision", span, "use float32")
        if base.base == "bfloat16" and "bfloat" not in self.features:
            raise _err(f"bfloat16 ({what}) needs MSL 3.1", span,
                       "compile for target {'kind': 'metal', 'msl': '3.1'} (macOS 14+), or use float16")  # fmt: skip

    def check_more(self, n: Node, sp: Span) -> None:
        if isinstance(n, Print):
            raise _err("T.print (Metal has no printf)", sp, "debug on target='c' or target='cuda'")
        if isinstance(n, DeviceAssert):
            raise _err("T.device_assert (Metal kernels cannot trap)", sp, "check on target='c' or target='cuda'")
        if isinstance(n, Atomic):
            self.atomic(n, sp)

    def gemm(self, g: Gemm, sp: Span) -> None:
        super().gemm(g, sp)
        for r in (g.A, g.B, g.C):
            dt = r.buffer.dtype
            if not dt.is_float or dt.bits not in (16, 32):
                raise _err(f"T.gemm on {dt} (`{r.buffer.name}`): simdgroup_matrix holds half, float and bfloat",
                           sp, "use float16 / float32 operands, or a T.Parallel loop")  # fmt: skip

    def atomic(self, a: Atomic, sp: Span) -> None:
        if a.memory_order not in (None, "relaxed"):
            raise _err(f"memory_order={a.memory_order!r} on T.atomic_{a.kind} (MSL atomics are relaxed only)", sp,
                       "drop memory_order, and order with barriers")  # fmt: skip
        dt = a.dst.buffer.dtype
        if a.dst.buffer.scope != "global":
            raise _err(f"T.atomic_{a.kind} on {a.dst.buffer.scope} memory", sp, "use a device (global) tensor")
        ok = _FLOAT_ATOMICS if dt.base == "float32" else _INT_ATOMICS if dt.base in ("int32", "uint32") else ()
        if a.kind not in ok:
            raise _err(f"T.atomic_{a.kind} on {dt} (Metal has atomic_int / atomic_uint, and atomic_float add/sub)",
                       sp, "accumulate in float32 or int32 with T.atomic_add")  # fmt: skip
