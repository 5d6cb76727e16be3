"""HIP C++ code generation for AMDGPU: the CUDA printer's statements and expressions (HIP is
CUDA's dialect of C++) with our own device headers (`include/tl_hip/*.h`), LDS for shared
memory and the MFMA intrinsics of `gemm.py`.

Input: a PrimFunc after the HIP pipeline (`pipeline.lower`): one `KernelLaunch` whose body is
a `For(kind="thread")` over `threadIdx.x`, no tile ops, LDS buffers flattened and placed
(`attrs["smem_offsets"]`, `attrs["smem_bytes"]`). Output: one translation unit

    #include "tl_hip/common.h"   (hip_runtime.h, tl::half_t = _Float16, tl::bfloat16_t, math)
    extern "C" __global__ void __launch_bounds__(THREADS) <name>_kernel(params..., dyn dims...)

parameters as for CUDA (`T* __restrict__` buffers, scalars by value, one `int64_t` per dynamic
dimension); `extern __shared__ __attribute__((aligned(16))) uint8_t smem[]` — the dynamic LDS
block, every LDS buffer at its planned offset (16-byte alignment: the widest access is a
16-byte `ds_read_b128` / `ds_write_b128`); `threadIdx.x` / `blockIdx.*`; `__syncthreads()`
(`s_barrier`); reductions as `tl::AllReduce` (`tl_hip/reduce.h`: `__shfl_xor` with width 64);
atomics as `tl::atomic_*` (`atomicAdd` ...); `T.print` as device `printf`; `T.device_assert`
as `tl::device_assert_fail` (printf + trap); `hip.mfma` calls as `tl::mfma_*` (`tl_hip/mfma.h`).

The dialect derives from the CUDA one (`backend/cuda/codegen.py: CudaDialect`), whose thread
model it shares; it changes the header table and directory, the LDS declaration, and the call
handlers of what AMD has no form for (cp.async, TMA, clusters, named barriers: each an
`unsupported on HIP` error — the pipeline never produces them)."""

from __future__ import annotations

from ...ir.expr import Call
from ...ir.function import PrimFunc
from ...transform.context import CompileContext
from ..cuda.codegen import CudaDialect, CudaSource
from ..cuda.ops import BLOCK_BARRIER, all_reduce_fields
from .check_features import HipUnsupportedError
from .gemm import MFMA_OP, mfma_function

# header of tl_hip/ -> name prefixes whose use requires it (common.h always comes first)
HIP_HEADERS = [
    ("mfma.h", ("tl::mfma_",)),
    ("copy.h", ("tl::copy_vec", "tl::cvt_pair")),
    ("reduce.h", ("tl::AllReduce", "tl::shfl")),
    ("atomic.h", ("tl::atomic_",)),
    ("debug.h", ("tl::device_assert_fail",)),
]


def generate(func: PrimFunc, ctx: CompileContext | None = None) -> CudaSource:
    """The HIP source of lowered `func` (text, entry, threads, LDS bytes, line spans)."""
    return HipDialect(func).run()


class HipDialect(CudaDialect):
    TARGET = "HIP"
    HEADERS = HIP_HEADERS
    HEADER_DIR = "tl_hip"
    RESERVED = CudaDialect.RESERVED | frozenset("hipThreadIdx_x hipBlockIdx_x warpSize __builtin_amdgcn".split())
    CALLS = {
        **CudaDialect.CALLS,
        MFMA_OP: "call_mfma",
        "tl.cp_async_commit": "call_not_on_hip",
        "tl.cp_async_wait": "call_not_on_hip",
        "tl.tensor_map": "call_not_on_hip",
        "tl.block_rank_in_cluster": "call_not_on_hip",
        "tl.store_nibble_pair": "call_not_on_hip",
        "tl.call_extern": "call_not_on_hip",
        "tl.call_pure_extern": "call_not_on_hip",
    }
    CALL_PREFIXES = (("tl.philox_", "call_not_on_hip"), ("tl.atomic_", "call_atomic"))

    def shared_decl(self) -> str:
        return "extern __shared__ __attribute__((aligned(16))) uint8_t smem[];"

    def call_not_on_hip(self, e: Call) -> str:
        raise HipUnsupportedError(f"`{e.op}` in generated code (no HIP form)", None,
                                  "this is a lowering bug for target='hip': please report it")  # fmt: skip

    def call_tl(self, e: Call) -> str:
        fn = e.args[0].value
        if fn.startswith("tl::cp_async") or fn.startswith("tl::gemm_") or fn.startswith("tl::wgmma"):
            raise HipUnsupportedError(f"`{fn}` (a CUDA library call) in generated HIP code", None,
                                      "this is a lowering bug for target='hip': please report it")  # fmt: skip
        return super().call_tl(e)

    def call_all_reduce(self, e: Call) -> str:
        self.use("tl::AllReduce")
        op_class, threads, scale, barrier = all_reduce_fields(e)
        if barrier != BLOCK_BARRIER:
            raise HipUnsupportedError("a reduction over part of the workgroup (named barrier)", None)
        return f"tl::AllReduce<{op_class}, {threads}, {scale}>::run({self.call_args(e, 6)})"

    def call_mfma(self, e: Call) -> str:
        fn = mfma_function(e)
        self.use(fn)
        return f"{fn}({self.call_args(e, 1)})"
