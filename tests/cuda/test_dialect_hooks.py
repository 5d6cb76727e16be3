"""The CUDA dialect of the C-family printer (backend/cfamily) is the base of the other GPU
dialects (HIP, Metal): a subclass that overrides the thread-model spellings, the shared-memory
declaration, the headers and the entry signature changes exactly those lines of the source."""

import kernels as KZ
import pytest

import tilelang
from tilelang.backend.c import codegen as C
from tilelang.backend.cfamily import CFamilyPrinter
from tilelang.backend.cuda import codegen as G


class _Renamed(G.CudaDialect):
    """A dialect that spells the GPU hooks differently (the shape of a HIP or Metal dialect)."""

    THREAD_INDEX = "tid"
    BARRIER = "group_barrier()"
    HEADER_DIR = "other"

    def block_index(self, axis: str) -> str:
        return f"gid.{axis}"

    def shared_decl(self) -> str:
        return "group uint8_t smem[];"

    def entry_head(self, entry, params, k) -> None:
        self.emit(f"kernel void {entry}({', '.join(params)}) {{")


@pytest.fixture(scope="module")
def lowered():
    func = KZ.debug_print_assert.get_tir(64)  # shared memory, a barrier, T.print (block and thread)
    gemm = KZ.gemm.get_tir(128, 128, 64, 64, 64, 32, "float16")
    arch = {"kind": "cuda", "arch": "sm_80"}
    return [tilelang.lower(f, target=arch, enable_device_compile=False) for f in (func, gemm)]


def test_generate_is_the_cuda_dialect(lowered):
    for art in lowered:
        assert G.generate(art.lowered).source == art.kernel_source
        assert G._Gen is G.CudaDialect and issubclass(G.CudaDialect, CFamilyPrinter)
        assert issubclass(C._CGen, CFamilyPrinter)


def test_a_subclass_changes_only_its_hooks(lowered):
    for art in lowered:
        base = art.kernel_source
        other = _Renamed(art.lowered).run().source
        assert "threadIdx" not in other and "blockIdx" not in other and "__syncthreads" not in other
        assert '#include "other/common.h"' in other and "kernel void " in other
        if "smem" in base:
            assert "group uint8_t smem[];" in other
        respelled = (
            base.replace("threadIdx.x", "tid")
            .replace("blockIdx.", "gid.")
            .replace("__syncthreads()", "group_barrier()")
            .replace('#include "tl/', '#include "other/')
            .replace("extern __shared__ __align__(1024) uint8_t smem[];", "group uint8_t smem[];")
        )
        # the entry signature is the only other difference
        keep = lambda text: [line for line in text.splitlines() if "kernel" not in line and "__restrict__" not in line]  # noqa: E731
        assert keep(other) == keep(respelled)
