"""P·V one trip late in warp-specialized FlashAttention (backend/cuda/overlap_gemms.py, the
overlapped form of inject_pipeline) and the turns of two consumer warpgroups: the order of the
generated waits, releases and turns, an nvcc build for sm_90a, the kernels left alone, and
warp_specialize's guards (cross-warp reductions on the consumers' barrier, turns dropped around
a block barrier). The numerics run on the H200 (tests/gpu/test_fa_overlap.py)."""

from __future__ import annotations

import os
import sys

import pytest

import tilelang
from tilelang.backend.cuda.ops import all_reduce_call, all_reduce_fields
from tilelang.backend.cuda.warp_specialize import _barrier_inside_turns, _DropTurns, _NamedBarriers
from tilelang.backend.target import nvcc_path
from tilelang.ir.dtype import DataType
from tilelang.ir.expr import Call, FloatImm, StringImm
from tilelang.ir.stmt import Evaluate, SeqStmt

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.dirname(__file__))
from flash_attention import mha_fwd  # noqa: E402

SM90A = {"kind": "cuda", "arch": "sm_90a"}


def _source(seq=1000, causal=False, bm=128, bn=128, stages=2, threads=256, build=False, cfg=None) -> str:
    func = mha_fwd.flashattn.get_tir(2, 4, seq, 128, causal, block_M=bm, block_N=bn, num_stages=stages, threads=threads)
    art = tilelang.lower(func, target=SM90A, enable_device_compile=build, pass_configs=cfg or {})
    return art.kernel_source


def _order(src: str, marks: list) -> list:
    """Positions of `marks` in `src`, each searched after the previous one (-1: missing)."""
    out, at = [], 0
    for m in marks:
        at = src.find(m, at)
        out.append(at)
        if at < 0:
            break
        at += len(m)
    return out


@pytest.mark.parametrize("causal", [False, True])
def test_the_steady_loop_issues_both_gemms_then_waits_for_the_first(causal):
    src = _source(causal=causal)
    consumer = src[src.index("warpgroup_reg_alloc") :]
    loop = consumer[consumer.index("for (int k_1 = 0;") :]
    marks = [
        "tl::mbarrier_wait(&k_full[(k_1 + 1) % 2]",  # this trip's K tile
        "tl::pingpong_wait();",
        "tl::wgmma_gemm_ss<",  # S = Q·Kᵀ, left in flight
        "tl::mbarrier_wait(&k_late_full[k_1 % 2]",  # the previous trip's V tile
        "tl::wgmma_gemm_rs<",  # O += P·V of the previous trip, in flight too
        "tl::pingpong_pass();",
        "tl::wgmma_wait<1>();",  # S has retired (groups retire in order)
        "tl::warpgroup_fence_operands<64>(&acc_s[0]);",
        "tl::mbarrier_arrive_per_warp(&k_empty[(k_1 + 1) % 2]);",  # K released at once
        "tl::AllReduce<tl::MaxOp",  # the softmax runs under P·V
        "tl::wgmma_wait<0>();",
        "tl::warpgroup_fence_operands<64>(&acc_o[0]);",
        "tl::warpgroup_fence_operands<64>(&acc_s_cast[0]);",
        "tl::mbarrier_arrive_per_warp(&k_late_empty[k_1 % 2]);",
        "tl::cvt_pair<tl::half_t>(&acc_s_cast",  # P of this trip, once P·V has read the last
    ]
    assert -1 not in _order(loop, marks), _order(loop, marks)
    # both gemms of the trip are asynchronous: WAIT=false in their template arguments
    assert loop.count(", false, 0>(&Q_shared") == (2 if causal else 1)
    assert ", false, false, 0>(&acc_s_cast[0], &V_shared[k_1 % 2 * 16384]" in loop


def test_first_and_last_trips_and_the_producer():
    src = _source()
    consumer = src[src.index("warpgroup_reg_alloc") :]
    first = [
        "tl::named_barrier_sync(1, 256);",  # the consumers' barrier before any turn
        "tl::mbarrier_wait(&k_full[0], 0);",
        "tl::pingpong_first();",
        "tl::wgmma_gemm_ss<",
        "tl::pingpong_pass();",
        "tl::wgmma_wait<0>();",
        "tl::mbarrier_arrive_per_warp(&k_empty[0]);",
        "for (int k_1 = 0; k_1 < 7; ++k_1)",  # 8 trips of 128 keys for 1000: 7 after the first
    ]
    assert -1 not in _order(consumer, first), _order(consumer, first)
    tail = consumer[consumer.rindex("tl::mbarrier_wait(&k_late_full") :]
    last = ["[1], 1);", "tl::pingpong_wait();", "tl::wgmma_gemm_rs<", "tl::pingpong_last();", "k_late_empty[1]"]
    assert -1 not in _order(tail, last)
    assert ", false, true, 0>(&acc_s_cast" in tail  # the last P·V waits for itself
    producer = src[src.index("if (tx == 256)") : src.index("warpgroup_reg_alloc")]
    ring = [
        "tl::mbarrier_wait(&k_empty[k % 2]",
        "tl::tma_load(&K_tmap, &k_full[k % 2]",
        "tl::mbarrier_arrive(&k_full[k % 2]);",
        "tl::mbarrier_wait(&k_late_empty[k % 2]",
        "tl::tma_load(&V_tmap, &k_late_full[k % 2]",
        "tl::mbarrier_arrive(&k_late_full[k % 2]);",
    ]
    assert -1 not in _order(producer, ring), _order(producer, ring)


def test_one_consumer_warpgroup_takes_no_turns():
    src = _source(bm=64, bn=128, threads=128)
    assert "k_late_full" in src and "tl::wgmma_wait<1>();" in src
    assert "pingpong" not in src


def test_kernels_left_alone():
    # two blocks per SM fit once O overlays Q: plain rings, no producer warpgroup
    assert "late_full" not in _source(bn=64)
    assert "late_full" not in _source(cfg={"tl.disable_warp_specialized": True})
    # rows in two halves (register-bound): several gemms per trip
    assert "late_full" not in _source(threads=128)
    # a GEMM: one consumer
    import kernels as KZ

    func = KZ.gemm.get_tir(
        1024, 1024, 1024, 128, 256, 64, "float16", "float32", "float16", False, False, "Square", 3, 256
    )
    src = tilelang.lower(func, target=SM90A, enable_device_compile=False).kernel_source
    assert "late_full" not in src and "pingpong" not in src


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")
@pytest.mark.parametrize("causal", [False, True])
def test_nvcc_builds_the_overlapped_kernel(causal):
    src = _source(causal=causal, build=True)
    assert "tl::pingpong_pass();" in src


def _sum(threads: int, scale: int, barrier: tuple = (0, 0, 1)) -> Evaluate:
    """A reduction of one float over groups of `threads` threads `scale` apart."""
    return Evaluate(all_reduce_call("tl::SumOp", threads, scale, barrier, FloatImm(1.0, DataType("float32"))))


def _call(name: str) -> Evaluate:
    return Evaluate(Call("tl.call", (StringImm(name),), DataType("int32")))


def test_turns_are_dropped_around_a_block_barrier():
    sync = Evaluate(Call("tl.sync_threads", (), DataType("int32")))
    ok = SeqStmt((sync, _call("tl::pingpong_first"), _call("tl::pingpong_pass"), _call("tl::pingpong_last"), sync))
    assert not _barrier_inside_turns(ok)
    bad = SeqStmt((_call("tl::pingpong_first"), sync, _call("tl::pingpong_pass")))
    assert _barrier_inside_turns(bad)
    cross = SeqStmt((_call("tl::pingpong_wait"), _sum(4, 32), _call("tl::pingpong_pass")))
    assert _barrier_inside_turns(cross)  # a reduction across warps synchronises the block
    quad = SeqStmt((_call("tl::pingpong_wait"), _sum(4, 1), _call("tl::pingpong_pass")))
    assert not _barrier_inside_turns(quad)
    dropped = _DropTurns().visit(bad)
    assert "pingpong" not in str(dropped) and "sync_threads" in str(dropped)


def test_cross_warp_reductions_get_the_consumers_barrier():
    out = _NamedBarriers(256).visit(_sum(4, 32))
    assert all_reduce_fields(out.value) == ("tl::SumOp", 4, 32, (0, 256, 1))
    ranged = _sum(4, 32, (128, 128, 2))  # a T.ws region's own: kept
    assert _NamedBarriers(256).visit(ranged) is ranged


def _probe(variant: str, heads_per_block: int = 1) -> str:
    import overlap_kernels as OK

    func = OK.attention.get_tir(variant, 1000, heads_per_block)
    return tilelang.lower(func, target=SM90A, enable_device_compile=False).kernel_source


def test_the_producer_keeps_its_ring_position_across_an_outer_loop():
    src = _probe("plain", heads_per_block=2)
    producer = src[src.index("if (tx == 256)") : src.index("warpgroup_reg_alloc")]
    consumer = src[src.index("warpgroup_reg_alloc") :]
    assert "late_full" in src
    assert "k_ring_pos = k_ring_pos + 8;" in producer  # each role advances its own copy
    assert "k_ring_pos = k_ring_pos + 8;" in consumer


@pytest.mark.parametrize("variant", ["early_writes_a", "no_early_ring", "branch_reads_acc"])
def test_loops_the_overlap_would_change_keep_their_order(variant):
    assert "late_full" not in _probe(variant)


def test_a_write_of_the_late_gemms_operand_waits_for_it():
    src = _probe("shared_a")
    loop = src[src.index("for (int k_1 = 0;") :]
    late_gemm = loop.index("(&Ps[0], &Vs[")  # G(k-1) reads P from shared memory
    wait_all = loop.index("tl::wgmma_wait<0>();", late_gemm)
    first_store = loop.index("&Ps[", late_gemm + 10)
    assert late_gemm < wait_all < first_store
    assert "pingpong" not in src  # the store's block barrier falls inside a turn: turns dropped


def test_a_reduction_staged_through_shared_memory_keeps_the_plain_ring():
    src = _probe("shared_reduce")
    assert "late_full" not in src and "warpgroup_reg_alloc" not in src


def test_the_producer_loads_q_before_the_loop():
    """The copy of Q before the loop becomes a TMA load the producer issues on a barrier of its
    own; the consumers wait for it before the first Q·Kᵀ and copy nothing themselves. The loop
    runs once per block: nothing waits for Q to be free."""
    src = _source()
    producer = src[src.index("if (tx == 256)") : src.index("warpgroup_reg_alloc")]
    consumer = src[src.index("warpgroup_reg_alloc") :]
    marks = ["tl::tma_load(&Q_tmap, &k_lead_full[0]", "tl::mbarrier_arrive(&k_lead_full[0]);", "&K_tmap"]
    assert min(_order(producer, marks)) >= 0
    assert min(_order(consumer, ["tl::mbarrier_wait(&k_lead_full[0], 0);", "tl::wgmma_gemm_ss<"])) >= 0
    assert "Q_shared[" not in consumer[: consumer.index("tl::wgmma_gemm_ss<")]
    assert "k_lead_empty" not in src


@pytest.mark.parametrize("variant, early", [("plain", True), ("middle_reads_q", False)])
def test_across_an_outer_loop_q_is_released_when_nothing_reads_it_anymore(variant, early):
    """With the loop run once per head, the producer reloads Q after the consumers release it:
    right after the last trip's Q·Kᵀ retired, or after the loop when a later statement reads Q."""
    src = _probe(variant, heads_per_block=2)
    producer = src[src.index("if (tx == 256)") : src.index("warpgroup_reg_alloc")]
    consumer = src[src.index("warpgroup_reg_alloc") :]
    assert min(_order(producer, ["if (k_lead_runs >= 1)", "&k_lead_empty[0]", "&Q_tmap", "&K_tmap"])) >= 0
    release = consumer.index("tl::mbarrier_arrive_per_warp(&k_lead_empty[0]);")
    last_gemm = consumer.rindex("tl::wgmma_gemm_rs<")  # the final step's P·V
    assert (release < last_gemm) == early
    assert "k_lead_runs = k_lead_runs + 1;" in producer and "k_lead_runs = k_lead_runs + 1;" in consumer


def test_a_q_the_kernel_writes_stays_the_consumers_copy():
    src = _probe("q_written")
    assert "late_full" in src and "lead_full" not in src


def test_a_loop_that_may_not_run_guards_its_first_and_last_steps():
    """Block bx runs 7 - bx trips: none for bx = 7, whose consumers must neither wait for a K tile
    the producer never loads nor keep Q (reviewed: the analyzer once proved the trip count
    positive from the loop variable's own range and dropped these guards)."""
    src = _probe("maybe_empty", heads_per_block=2)
    consumer = src[src.index("warpgroup_reg_alloc") :]
    first = consumer.index("if (bx < 7) {")
    assert first < consumer.index("tl::mbarrier_wait(&k_full[")
    assert "if (bx >= 7) {\n        tl::mbarrier_arrive_per_warp(&k_lead_empty[0]);" in consumer


@pytest.mark.parametrize("variant", ["plain", "middle_reads_q", "maybe_empty"])
def test_probe_references_match_the_tile_program(variant):
    """The torch references the H200 tests compare the probes with, checked against the tile
    program itself (tile interpreter, 300 keys: a partial last tile)."""
    import overlap_kernels as OK
    import torch

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from tests.transform.tile_interp import run

    gen = torch.Generator().manual_seed(0)
    q, k, v = (0.1 * torch.randn(1, 300, OK.HEADS, OK.DIM, generator=gen).half() for _ in range(3))
    out = torch.zeros(1, 300, OK.HEADS, OK.DIM).half()
    run(OK.attention.get_tir(variant, 300, 2), q, k, v, out, race_check=False)
    torch.testing.assert_close(out.float(), OK.reference(variant, q, k, v), atol=2e-3, rtol=2e-3)
