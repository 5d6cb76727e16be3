"""ptxas's figures after a build, and in the editor (#19 item 3): the CUDA backend records registers,
spill stores / loads, shared memory (static + dynamic), blocks per SM and the limiting resource in
the kernel's metadata; the analysis shows them as measured when the cache holds a build of the
same kernel; the background compiler (debounced, cancellable, cached by the generated source)
measures what the editor shows; the kernel-line hint and hover say "measured (ptxas, <arch>)"."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

import tilelang
from tilelang.analysis import analyze_function, analyze_traced
from tilelang.analysis.background_ptxas import BackgroundPtxas
from tilelang.backend.target import nvcc_path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "cuda"), str(ROOT / "tests")]

import catalog  # noqa: E402

needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")
QUICKSTART = ROOT / "examples" / "quickstart.py"
BINDS = dict(M=500, N=300, K=200, block_M=64, block_N=64, block_K=32)


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_build_metadata_and_analysis_carry_ptxas_figures(arch):
    func = catalog.all_funcs()["seed.matmul"]()
    art = tilelang.lower(func, target={"kind": "cuda", "arch": arch})
    m = art.meta
    assert m["registers"] > 0 and m["spill_stores"] >= 0 and m["spill_loads"] >= 0
    assert m["spill_bytes"] == m["spill_stores"] + m["spill_loads"]
    assert m["shared_bytes"] == m["smem"] + m.get("static_smem_bytes", 0)  # the key the post-compile hint reads
    assert m["blocks_per_sm"] >= 1 and m["limiting"] in ("registers", "shared memory", "threads", "blocks")
    res = analyze_traced(func, arch).resources
    assert res.measured and res.source == f"ptxas, {arch}"
    assert (res.regs_per_thread, res.blocks_per_sm, res.shared_bytes) == (
        m["registers"],
        m["blocks_per_sm"],
        m["shared_bytes"],
    )
    est = analyze_traced(func, arch, measured=False).resources
    assert not est.measured and est.source == "estimate"


@needs_nvcc
def test_generate_source_action_reports_shared_memory():
    from tilelang.analysis import generate_source

    gen = generate_source(QUICKSTART.read_text(), str(QUICKSTART), "matmul", "sm_80", BINDS)
    assert gen.ptxas["registers"] > 0 and gen.ptxas["shared_bytes"] > 0 and "blocks_per_sm" in gen.ptxas


@needs_nvcc
def test_background_ptxas_measures_debounces_caches_and_cancels():
    binds = {**BINDS, "M": 333}  # a kernel no other test built: the cache holds no measurement of it
    info = analyze_function(QUICKSTART.read_text(), str(QUICKSTART), "matmul", "sm_80", binds, build_source=True)
    b = info.build
    assert b is not None and b["arch"] == "sm_80" and "__global__" in b["source"]
    done: list = []
    got = threading.Event()
    jobs = BackgroundPtxas(lambda key, stats: (done.append((key, stats)), got.set()), delay_s=0.2)
    try:
        args = (b["source"], b["arch"], b["entry"], b["threads"], b["smem"])
        assert jobs.submit("k", *args) is None
        assert jobs.submit("k", *args) is None  # a newer request replaces the pending one
        assert got.wait(180), "no ptxas result"
        assert jobs.builds == 1 and len(done) == 1 and done[0][0] == "k"
        stats = done[0][1]
        # the same figures a build of this kernel records
        art = tilelang.lower(
            tilelang.analysis.trace_function(QUICKSTART.read_text(), str(QUICKSTART), "matmul", binds)[0],
            target={"kind": "cuda", "arch": "sm_80"},
        )
        assert stats["registers"] == art.meta["registers"] and stats["shared_bytes"] == art.meta["shared_bytes"]
        assert jobs.submit("k", *args) == stats and jobs.builds == 1  # cached by the generated source
        # cancelled before its delay: never built
        assert jobs.submit("other", b["source"] + "\n// edited\n", *args[1:]) is None
        jobs.cancel("other")
        time.sleep(0.6)
        assert jobs.builds == 1
    finally:
        jobs.close()


def test_kernel_line_and_hover_say_measured():
    pytest.importorskip("pygls")
    from tilelang_lsp import render
    from tilelang_lsp.measure import apply_stats

    res = {"target": "sm_90a", "threads": 256, "shared_bytes": 1024, "shared_limit": 232448}
    assert "measured" not in render.kernel_label(res)
    assert render.kernel_label({**res, "regs_per_thread": 150}).endswith("~150 regs (estimate)")
    apply_stats(res, {"registers": 154, "spill_stores": 0, "spill_loads": 0, "static_smem_bytes": 0,
                      "shared_bytes": 99328, "blocks_per_sm": 1, "limiting": "registers", "arch": "sm_90a"})  # fmt: skip
    label = render.kernel_label(res)
    assert "154 regs" in label and "1 block/SM (registers)" in label and label.endswith("measured (ptxas, sm_90a)")
    assert "97 KiB" in label  # shared memory: static + dynamic, as ptxas and the launch see it
    hover = render.resources_markdown(res)
    assert "154/thread" in hover and "measured (ptxas, sm_90a)" in hover
