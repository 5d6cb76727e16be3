"""The lowering decisions the language server shows are the compiler's: TMA / producer warpgroup /
cp.async per pipelined copy, TMA stores, one-stage prefetch, and the block schedule (persistent,
panel order) — read from the passes, for each target."""

from __future__ import annotations

from pathlib import Path

import pytest

from tilelang.analysis import analyze_function

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "tests" / "cuda" / "kernels.py"
FLASH = ROOT / "examples" / "flash_attention" / "mha_fwd.py"


def decisions(path: Path, function: str, target: str, **bindings) -> list[tuple[str, str]]:
    info = analyze_function(path.read_text(), str(path), function, target=target, bindings=bindings)
    assert not [d for d in info.diagnostics if d.severity == "error"], info.diagnostics
    return [(o.op, o.decision) for o in info.ops]


def gemm(target: str, size: int, bn: int, bk: int, threads: int, stages: int = 3, out: str = "float16"):
    return decisions(KERNELS, "gemm", target, M=size, N=size, K=size, bm=128, bn=bn, bk=bk, stages=stages,
                     threads=threads, out=out)  # fmt: skip


def test_warp_specialized_persistent_gemm():
    ops = gemm("sm_90a", 8192, 256, 64, 256)
    assert ops[0] == (
        "kernel",
        "persistent: 132 resident blocks walk 2048 tiles in row panels, epilogue through shared memory (TMA store)",
    )
    assert ops.count(("copy", "TMA, 3 stages, producer warpgroup")) == 2


def test_fp32_output_is_too_big_to_stage():
    assert gemm("sm_90a", 8192, 256, 64, 256, out="float32")[0] == (
        "kernel",
        "persistent: 132 resident blocks walk 2048 tiles in row panels",
    )


@pytest.mark.parametrize("target, copy", [("sm_90a", "TMA, 3 stages"), ("sm_80", "cp.async 16B, 3 stages")])
def test_several_blocks_per_sm_keep_the_launch_in_panel_order(target, copy):
    ops = gemm(target, 8192, 128, 32, 128)
    assert ops[0] == ("kernel", "block order: panels of 8 block rows (L2 reuse)")
    assert ops.count(("copy", copy)) == 2


def test_small_grids_report_no_schedule_and_without_async_copies_no_pipeline():
    assert all(op != "kernel" for op, _ in gemm("sm_90a", 1024, 128, 32, 128))
    assert ("copy", "global→shared, 16B vectors") in gemm("sm_75", 1024, 128, 32, 128)


def test_flash_attention_one_stage_prefetch_and_tma_store():
    ops = decisions(FLASH, "flashattn", "sm_90a", batch=8, heads=32, seq_len=4096, dim=128, is_causal=False,
                    block_M=128, block_N=128, num_stages=1, threads=128)  # fmt: skip
    assert ops.count(("copy", "TMA, 1 stage, next tile prefetched")) == 2
    assert ("copy", "TMA store") in ops
    assert ("copy", "global→shared, 16B vectors") in ops  # Q: loaded once, before the loop


def test_the_schedule_decision_does_not_import_torch():
    # the language server's analysis must stay light: asking for the SM count must not load torch
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from tilelang.analysis import analyze_function\n"
        f"src = open({str(KERNELS)!r}).read()\n"
        f"info = analyze_function(src, {str(KERNELS)!r}, 'gemm', target='sm_90a', bindings=dict(M=8192, N=8192, "
        "K=8192, bm=128, bn=256, bk=64, stages=3, threads=256, out='float16'))\n"
        "assert info.ops[0].op == 'kernel', info.ops\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_register_pressure_is_a_warning_not_an_error(tmp_path, monkeypatch):
    # the seed FlashAttention config spills (ptxas: 255 registers + local memory) but runs correctly.
    # This is the estimate's warning: an empty cache, so no measured ptxas figure of another test's
    # build of the same kernel (make test's workers share one cache) replaces it
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path))
    info = analyze_function(FLASH.read_text(), str(FLASH), "flashattn", target="sm_90a",
                            bindings=dict(batch=8, heads=32, seq_len=4096, dim=128, is_causal=False, block_M=128,
                                          block_N=128, num_stages=1, threads=128))  # fmt: skip
    (reg,) = [d for d in info.diagnostics if d.code == "reg-pressure"]
    assert reg.severity == "warning" and "spills to local memory" in reg.message


@pytest.mark.parametrize("causal", [False, True])
def test_register_bound_flash_attention_shows_its_row_halves(causal):
    ops = decisions(FLASH, "flashattn", "sm_90a", batch=8, heads=32, seq_len=4096, dim=128, is_causal=causal,
                    block_M=128, block_N=128, num_stages=1, threads=128)  # fmt: skip
    assert ops[0] == (
        "kernel",
        "rows in two halves (its register tiles exceed 255 per thread): wgmma per half, K/V tiles shared",
    )
    assert [d for op, d in ops if op == "gemm"] == [
        "wgmma m64n128k16, 1×1 warpgroups",
        "wgmma m64n128k16, 1×1 warpgroups, A from registers",
    ]
    whole = decisions(FLASH, "flashattn", "sm_80", batch=8, heads=32, seq_len=4096, dim=128, is_causal=causal,
                      block_M=128, block_N=128, num_stages=1, threads=128)  # fmt: skip
    # no wgmma on sm_80: nothing to split for; the causal launch does run its longest blocks first
    assert [d for op, d in whole if op == "kernel"] == (
        ["block order: bx reversed, longest blocks first"] if causal else []
    )


def test_the_register_estimate_counts_the_row_halves_the_compiler_runs():
    def regs(target):
        info = analyze_function(FLASH.read_text(), str(FLASH), "flashattn", target=target,
                                bindings=dict(batch=8, heads=32, seq_len=4096, dim=128, is_causal=False, block_M=128,
                                              block_N=128, num_stages=1, threads=128))  # fmt: skip
        return dict(info.resources.register_arrays)  # the per-thread arrays lower_threads declares

    # whole rows: S 128 + P 64 + O 128 registers per thread; halves: S 64 + P 32 + O as two halves of 64
    whole, halves = regs("sm_80"), regs("sm_90a")
    assert (whole["acc_s"], whole["acc_s_cast"], whole["acc_o"]) == (128, 64, 128)
    assert (halves["acc_s"], halves["acc_s_cast"], halves["acc_o_0"], halves["acc_o_1"]) == (64, 32, 64, 64)
    assert "acc_o" not in halves


@pytest.mark.parametrize(
    "causal, walk", [(False, "in launch order"), (True, "longest first, every other wave reversed")]
)
def test_flash_attention_persistent_with_q_from_the_producer(causal, walk):
    ops = decisions(FLASH, "flashattn", "sm_90a", batch=8, heads=32, seq_len=4096, dim=128, is_causal=causal,
                    block_M=128, block_N=128, num_stages=2, threads=256)  # fmt: skip
    assert ops[0] == ("kernel", f"persistent: 132 resident blocks walk 8192 tiles {walk}")
    assert ops[1] == ("copy", "TMA, producer warpgroup, before the loop's first trip")  # Q
    assert ops.count(("copy", "TMA, 2 stages, producer warpgroup")) == 2  # K, V
