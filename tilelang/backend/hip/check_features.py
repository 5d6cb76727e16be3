"""check_hip_features: what the HIP target has no form for is one clear error at its line.

Requires: tile-level IR (after `verify`), `ctx.target` a HIP `Target`.

Guarantees (the input is returned unchanged): an error when the target's processor is not
one of `target.HIP_ARCHES` (an RDNA GPU found by "auto": waves of 32, no MFMA), and a `HipUnsupportedError` (an `UnsupportedError`)
`file:line:col: unsupported on HIP: <feature> — <what to do>` at the first (in source order)
use of

* a dtype this backend generates no code for: fp8 (`float8_*`: MFMA fp8 exists on gfx94x only
  and is not implemented here), the packed 4-bit types;
* an NVIDIA-only hardware feature: `T.ws` warp specialization, TMA copies, mbarriers and the
  other explicit Hopper synchronisation, `T.wgmma_gemm`, thread-block clusters;
* what the HIP lowering has no rule for: `T.rng_*` (the Philox header is CUDA's),
  `T.call_extern` / `T.import_source` (CUDA source), atomics with a memory order other than
  relaxed, `T.gemm` on dtypes MFMA has no 16x16 form for here (see `gemm.py`).

Why one pass: every later pass may assume a kernel HIP can express, and the user gets one
error naming the feature, not a compiler failure deep in clang."""

from __future__ import annotations

from ...errors import UnsupportedError
from ...ir.dtype import DataType
from ...ir.function import PrimFunc
from ...ir.node import Node
from ...ir.span import Span
from ...ir.stmt import Atomic, Gemm
from ...transform.context import CompileContext
from ..feature_check import HINT_CUDA, FeatureCheck
from ..target import HIP_ARCHES, target_of

# operand dtypes of the MFMA forms gemm.py emits (C: float32 / int32)
GEMM_OPERAND_DTYPES = ("float16", "bfloat16", "float32", "int8")


class HipUnsupportedError(UnsupportedError):
    """A feature HIP has no form for here: `file:line:col: unsupported on HIP: <feature> — <hint>`."""

    kind = "unsupported on HIP"


def _err(feature: str, span: Span, hint: str = HINT_CUDA) -> UnsupportedError:
    return HipUnsupportedError(feature, span, hint)


def check_hip_features(func: PrimFunc, ctx: CompileContext | None = None) -> PrimFunc:
    target = target_of(func, ctx)
    if target is not None and target.arch not in HIP_ARCHES:  # e.g. "auto" on an RDNA GPU
        raise _err(f"AMD processor {target.arch} (this backend generates code for {', '.join(HIP_ARCHES)}: "
                   "CDNA waves of 64 with MFMA)", func.span,
                   'pass target={"kind": "hip", "arch": "gfx90a"} to compile for an Instinct GPU')  # fmt: skip
    return _Check(func.span).run(func)


class _Check(FeatureCheck):
    ERROR = HipUnsupportedError
    NO_WARPGROUPS = "no warpgroups or register re-balancing on AMD"

    def dtype(self, dt: DataType, span: Span, what: str) -> None:
        base = dt.element_of()
        if base.is_float8:
            raise _err(f"{base} ({what}): fp8 is not implemented for HIP", span, "use float16 or bfloat16")
        if base.bits < 8 and base.bits != 1:
            raise _err(f"{base} ({what}): packed 4-bit types are not implemented for HIP", span,
                       "use int8 / float16 tensors")  # fmt: skip

    def check_more(self, n: Node, sp: Span) -> None:
        if isinstance(n, Atomic) and n.memory_order not in (None, "relaxed"):
            raise _err(f"memory_order={n.memory_order!r} on T.atomic_{n.kind}", sp,
                       "drop memory_order, and order with barriers")  # fmt: skip

    def gemm(self, g: Gemm, sp: Span) -> None:
        super().gemm(g, sp)
        adt, bdt, cdt = (r.buffer.dtype.element_of() for r in (g.A, g.B, g.C))
        if adt.base not in GEMM_OPERAND_DTYPES or bdt is not adt:
            raise _err(f"T.gemm on {adt} x {bdt}: MFMA is used here for float16, bfloat16, float32 and int8 "
                       "operands of one dtype", sp, "cast the operands to float16 / bfloat16")  # fmt: skip
        want = "int32" if adt.base == "int8" else "float32"
        if cdt.base != want and not (adt.base == "float16" and cdt.base == "float16"):
            raise _err(f"T.gemm accumulating {adt} into {cdt}: MFMA accumulates {adt} in {want}", sp,
                       f"use a {want} accumulator and cast afterwards")  # fmt: skip
