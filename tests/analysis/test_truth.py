"""What the editor shows equals what the compiler does (#19): for every reference kernel (the CUDA
catalogue: the seed tutorials and every example) × {sm_80, sm_90a} × the pass configs that change
decisions, the analysis report (`tilelang.analysis.analyze_traced`) is compared with the build of
the same kernel under the same configs — its lowered IR and its generated CUDA source: threads,
the dynamic shared memory the launch requests (after planning, with reuse), the copy engines
(TMA / cp.async / synchronous), the ring depths, the tensor-core instructions and the grid of
persistent schedules. No nvcc needed: the source is generated, not compiled."""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import pytest

import tilelang
from tilelang.analysis import analyze_function, analyze_traced
from tilelang.ir.expr import const_int
from tilelang.ir.stmt import Allocate
from tilelang.ir.visitor import collect

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "cuda"), str(ROOT / "tests")]

import catalog  # noqa: E402

NO_TMA_NO_WS = {"tl.disable_tma_lower": True, "tl.disable_warp_specialized": True}
CONFIGS = {
    "sm_80": [{}, {"tl.disable_shared_memory_reuse": True}],
    "sm_90a": [{}, NO_TMA_NO_WS, {"tl.disable_warp_specialized": True}, {"tl.disable_wgmma": True}],
}
CASES = [(name, arch, i) for name in catalog.all_funcs() for arch in CONFIGS for i in range(len(CONFIGS[arch]))]
_FUNCS = catalog.all_funcs()


def _build(func, arch, cfg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # tl.disable_tma_lower is deprecated upstream
        return tilelang.lower(
            func, target={"kind": "cuda", "arch": arch}, pass_configs=cfg, enable_device_compile=False
        )


def _report(func, arch, cfg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return analyze_traced(func, arch, cfg)


@pytest.mark.parametrize("name, arch, which", CASES)
def test_report_equals_the_build(name, arch, which):
    cfg = CONFIGS[arch][which]
    func = _FUNCS[name]()
    info = _report(func, arch, cfg)
    assert not [d for d in info.diagnostics if d.severity == "error"], info.diagnostics
    art = _build(func, arch, cfg)
    src, res = art.kernel_source, info.resources
    launch = re.search(r"// Launch: grid \((.*)\), block \((\d+)\), dynamic shared memory (\d+) bytes", src)
    assert launch, src[:400]
    # threads and the shared memory the launch requests (planned, with reuse)
    assert res.threads == art.meta["threads"] == int(launch.group(2))
    assert res.shared_bytes == art.meta["smem"] == int(launch.group(3))
    # the register arrays the report counts are the ones the source declares (warp-specialized
    # kernels declare them per role, so the source may hold several of one name)
    for reg_name, _ in res.register_arrays:  # an array `float x[n];`, or a scalar `float x = ...;`
        assert re.search(rf"\b\w+ {re.escape(reg_name)}(\[\d+\])?( = [^;]+)?;", src), f"{reg_name} not in the source"
    # copy engines: claimed only where the source issues them, and every engine the source uses is claimed
    copies = [o.decision for o in info.ops if o.op == "copy"]
    claims_tma = any(d.startswith("TMA") and d != "TMA store" for d in copies)
    assert claims_tma == ("tl::tma_load" in src), (copies, "tma_load" in src)
    assert any(d == "TMA store" for d in copies) == ("tl::tma_store(" in src or "tl::tma_store<" in src)
    assert any(d.startswith("cp.async") for d in copies) == ("tl::cp_async_zfill" in src), copies
    for d in copies:
        if m := re.match(r"cp\.async (\d+)B", d):
            assert f"tl::cp_async_zfill<{m.group(1)}>" in src
    # ring depths: a multi-buffered tile's planned bytes are its stages × one tile
    planned = {a.buffer.name: a.buffer for a in collect(art.lowered.body, lambda n: isinstance(n, Allocate))}
    for b in info.buffers:
        if b.scope.startswith("shared") and b.stages > 1 and b.bytes:
            got = planned[b.name]
            n = 1
            for dim in got.shape:
                n *= const_int(dim)
            assert n * got.dtype.bits // 8 == b.bytes * b.stages, (b.name, b.stages)
    # tensor-core instructions
    gemms = [o.decision for o in info.ops if o.op == "gemm"]
    assert any(g.startswith("wgmma") for g in gemms) == ("tl::wgmma_gemm" in src)
    assert any(g.startswith("mma.sync") for g in gemms) == bool(re.search(r"tl::gemm_(ss|rs|sr)\b", src))
    for g in gemms:
        if m := re.match(r"mma\.sync (m16n8k\d+), (\d+)×(\d+) warps", g):
            assert int(m.group(2)) * int(m.group(3)) * 32 <= res.threads
    # schedules: a persistent kernel launches one block per SM
    for o in info.ops:
        if o.op == "kernel" and o.decision.startswith("persistent"):
            blocks = re.match(r"persistent: (\d+) resident blocks", o.decision).group(1)
            assert launch.group(1) == blocks


def test_disabled_tma_and_warp_specialization_report_cp_async():
    # was: "TMA, 3 stages" while the build used cp.async
    func = _FUNCS["seed.matmul"]()
    info = _report(func, "sm_90a", NO_TMA_NO_WS)
    copies = [o.decision for o in info.ops if o.op == "copy" and "fragment" not in o.decision]
    assert copies == ["cp.async 16B, 3 stages", "cp.async 16B, 3 stages"], copies
    assert "tl::cp_async_zfill<16>" in _build(func, "sm_90a", NO_TMA_NO_WS).kernel_source


def test_kernel_decorator_pass_configs_reach_the_analysis(tmp_path):
    src = (ROOT / "examples" / "quickstart.py").read_text()
    src = src.replace("@tilelang.jit", '@tilelang.jit(pass_configs={"tl.disable_tma_lower": True, '
                      'tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})', 1)  # fmt: skip
    path = tmp_path / "quickstart_no_tma.py"
    path.write_text(src)
    binds = dict(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        info = analyze_function(src, str(path), "matmul", target="sm_90a", bindings=binds)
    copies = [o.decision for o in info.ops if o.op == "copy" and "fragment" not in o.decision]
    assert copies and all(d.startswith("cp.async") for d in copies), copies


def test_flash_attention_shared_memory_counts_reuse():
    # was: 64 KiB (four 16 KiB tiles, and Q's two row halves not counted); the build plans
    # 49,168 B: O_shared's tile goes where another tile's lifetime has ended
    path = ROOT / "examples" / "flash_attention" / "mha_fwd.py"
    binds = dict(batch=1, heads=2, seq_len=512, dim=64, is_causal=False, block_M=128, block_N=128, num_stages=1,
                 threads=128)  # fmt: skip
    info = analyze_function(path.read_text(), str(path), "flashattn", target="sm_90a", bindings=binds)
    res = info.resources
    flashattn = catalog._example("flash_attention/mha_fwd.py").flashattn
    art = _build(flashattn.get_tir(**binds), "sm_90a", {})
    assert res.shared_bytes == art.meta["smem"] == 49168
    assert any(n.startswith("O_shared (shares bytes with ") for n, _ in res.shared_breakdown), res.shared_breakdown


def test_warp_specialized_gemm_counts_the_producer_and_the_real_register_tile():
    # was: 256 threads, ~96 registers, C_local 64 regs/thread, 2 blocks/SM; the build launches 384
    # threads (a producer warpgroup), declares `float C_l[128]` per consumer thread, 1 block/SM
    path = ROOT / "tests" / "cuda" / "kernels.py"
    binds = dict(M=8192, N=8192, K=8192, bm=128, bn=256, bk=64, stages=3, threads=256, out="float16")
    info = analyze_function(path.read_text(), str(path), "gemm", target="sm_90a", bindings=binds)
    import kernels as KZ  # tests/cuda/kernels.py

    art = _build(KZ.gemm.get_tir(**binds), "sm_90a", {})
    res = info.resources
    assert res.threads == art.meta["threads"] == 384
    assert dict(res.register_arrays)["C_l"] == 128 and "float C_l[128];" in art.kernel_source
    assert res.blocks_per_sm == 1 and res.shared_bytes == art.meta["smem"]
