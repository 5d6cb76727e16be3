"""kernel.show_ptx / show_sass / resource_usage (CUDA, nvcc here; SASS needs cuobjdump or
nvdisasm) and tools.Analyzer (FLOPs and bytes from the IR)."""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import tilelang
import tilelang.language as T
from tilelang.backend.target import nvcc_path, parse
from tilelang.errors import TileLangError
from tilelang.jit.machine_code import MachineCodeMixin
from tilelang.tools.analyzer import Analyzer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cuda"))

needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")


def matmul(M, N, K, bm=64, bn=64, bk=32, dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            As = T.alloc_shared((bm, bk), dtype)
            Bs = T.alloc_shared((bk, bn), dtype)
            Cl = T.alloc_fragment((bm, bn), T.float32)
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], As)
                T.copy(B[k * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cl)
            T.copy(Cl, C[by * bm, bx * bn])

    return main


def lower_triangle_sums(M, bm=64):
    """Block bx reads bx + 1 columns: its trip count depends on the block index."""

    @T.prim_func
    def main(A: T.Tensor((M, M), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            acc = T.alloc_fragment((bm,), T.float32)
            T.clear(acc)
            for j in T.serial(bx + 1):
                for i in T.Parallel(bm):
                    acc[i] += A[bx * bm + i, j]
            T.copy(acc, B[bx * bm])

    return main


class _Built(MachineCodeMixin):
    """What JITKernel carries, from `tilelang.lower` (no GPU needed to build)."""

    def __init__(self, func, arch):
        art = tilelang.lower(func, target={"kind": "cuda", "arch": arch})
        self.built, self.target, self.prim_func = art, parse({"kind": "cuda", "arch": arch}), func
        self.pass_configs, self.compile_flags = {}, []


def _ptxas_v(source: str, arch: str) -> dict:
    """An independent ptxas -v run over the same source: registers, spills, static smem."""
    from tilelang.backend.cuda.compiler import INCLUDE_DIR

    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.cu")
        Path(src).write_text(source)
        num = arch.removeprefix("sm_")
        cmd = [nvcc_path(), "-cubin", "-O3", "-std=c++17", "-lineinfo", "-Xptxas=-v"]
        cmd += [
            "-gencode",
            f"arch=compute_{num},code=sm_{num}",
            f"-I{INCLUDE_DIR}",
            "-o",
            os.path.join(tmp, "k.cubin"),
            src,
        ]
        log = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stderr
    regs = int(re.search(r"Used (\d+) registers", log).group(1))
    st, ld = map(int, re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log).groups())
    m = re.search(r"(\d+) bytes smem", log)
    return {"registers": regs, "spill_stores": st, "spill_loads": ld, "static": int(m.group(1)) if m else 0}


def _reference_kernels():
    from catalog import seed_funcs

    seeds = seed_funcs()
    picked = ("seed.flashattn_causal", "seed.layer_norm")
    return [("gemm", matmul(300, 200, 160)), *[(n, seeds[n]()) for n in picked]]


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_resource_usage_equals_ptxas(arch):
    for name, func in _reference_kernels():
        k = _Built(func, arch)
        ru = k.resource_usage
        ref = _ptxas_v(k.built.kernel_source, arch)
        assert (ru.registers, ru.spill_stores, ru.spill_loads, ru.static_shared_bytes) == (
            ref["registers"],
            ref["spill_stores"],
            ref["spill_loads"],
            ref["static"],
        ), name
        assert ru.dynamic_shared_bytes == k.built.meta["smem"] and ru.max_threads == k.n_max_threads
        assert ru.blocks_per_sm >= 1 and ru.limited_by in ("registers", "shared memory", "threads", "blocks")
        assert ru["registers"] == ru.registers and f"ptxas, {arch}" in str(ru)


@needs_nvcc
def test_show_ptx_contains_the_entry(capsys, tmp_path):
    k = _Built(matmul(300, 200, 160), "sm_90a")
    entry = k.built.meta["entry"]
    ptx = k.get_ptx()
    assert f".entry {entry}" in ptx and ".target sm_90a" in ptx
    k.show_ptx()
    assert entry in capsys.readouterr().out
    k.export_ptx(str(tmp_path / "k.ptx"))
    assert (tmp_path / "k.ptx").read_text() == ptx


@needs_nvcc
def test_show_sass_or_a_clear_message():
    from tilelang.backend.cuda.machine_code import _tool

    k = _Built(matmul(300, 200, 160), "sm_80")
    if _tool("cuobjdump") or _tool("nvdisasm"):
        sass = k.get_sass()
        assert k.built.meta["entry"] in sass and ("HMMA" in sass or "MMA" in sass)
    else:
        with pytest.raises(TileLangError, match="neither cuobjdump nor nvdisasm"):
            k.get_sass()


def test_ptx_is_cuda_only():
    class CKernel(MachineCodeMixin):
        target = parse("c")

    with pytest.raises(TileLangError, match="CUDA only"):
        CKernel().get_ptx()


def test_analyzer_counts_gemm_flops_and_tile_bytes():
    M, N, K = 1024, 512, 256
    r = Analyzer.analysis(matmul(M, N, K), "sm_90a")
    assert r.total_flops == 2 * M * N * K
    blocks = (M // 64) * (N // 64)
    per_block = (K // 32) * (64 * 32 + 32 * 64) * 2 + 64 * 64 * 2
    assert r.total_global_bytes == blocks * per_block
    assert r.exact and r.bound in ("compute", "memory")
    t_mem = r.total_global_bytes / (r.bandwidth_GBps * 1e9)
    t_cmp = r.total_flops / (989e12)
    assert r.estimated_time == pytest.approx(max(t_mem, t_cmp))


def test_analyzer_counts_block_dependent_loops_exactly():
    from tilelang.carver.arch import CUDA

    M = 256
    r = Analyzer(lower_triangle_sums(M), CUDA("sm_80")).ir_pass().calculate()
    assert r.total_flops == 0
    assert r.total_global_bytes == 4 * (64 * (1 + 2 + 3 + 4) + M)


def test_analyzer_on_a_compiled_kernel_and_errors():
    @tilelang.jit(out_idx=[-1], target="c")
    def factory(M, N, K):
        return matmul(M, N, K)

    k = factory(128, 128, 64)
    assert Analyzer.analysis(k, "sm_80").total_flops == 2 * 128 * 128 * 64
    with pytest.raises(TypeError, match="prim_func"):
        Analyzer(object(), "sm_80")


def test_host_source_is_the_generated_entry():
    @tilelang.jit(out_idx=[-1], target="c")
    def factory(M, N, K):
        return matmul(M, N, K)

    k = factory(100, 64, 96)
    host = k.get_host_source()
    assert host.startswith("# host entry of `main`") and "def entry(*args):" in host and "launch(" in host
    assert k.host_source == host
