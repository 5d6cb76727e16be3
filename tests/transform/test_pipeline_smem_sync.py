"""inject_pipeline, inject_sync and plan_shared_memory on the seed kernels.

Three kinds of checks:

* golden printed IR (tests/transform/golden/*.txt; regenerate with
  TL_UPDATE_GOLDEN=1 and review the diff) for the quickstart GEMM (3 stages),
  split-K (num_stages=0), FlashAttention (num_stages 1 and 2), explicit
  stage/order, and a dynamic K;
* execution with the reference interpreter of `tile_interp.py`, which models
  cp.async groups and detects missing barriers at element granularity: the
  transformed kernels must be race-free and give *bit-identical* results to
  the untransformed ones (same float32 accumulation order), for trip counts
  smaller than the stage count and for dynamic trip counts;
* exact shared-memory plans and barrier placements for the common patterns.
"""

import os
from dataclasses import replace

import pytest
import torch

import tilelang.language as T
from tests.transform.kernels import (
    dynamic_tir,
    flash_tir,
    gemm,
    gemm_inputs,
    gemm_offset,
    gemm_stage_order,
    run_gemm,
    seed_gemm_tir,
    seed_two_statement,
)
from tests.transform.tile_interp import InterpError, RaceError, run
from tilelang.errors import DSLError
from tilelang.ir import Call, Evaluate, For, IntImm, LetStmt, Mutator, SeqStmt, Var, collect, free_vars_of, substitute
from tilelang.transform.inject_pipeline import inject_pipeline
from tilelang.transform.inject_sync import inject_sync
from tilelang.transform.plan_shared_memory import plan_shared_memory
from tilelang.transform.verify import verify

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")


def all_passes(f, ctx=None):
    out = plan_shared_memory(inject_sync(inject_pipeline(f, ctx), ctx), ctx)
    verify(out)  # still a well-formed tile-level function
    return out


def check_golden(name: str, text: str) -> None:
    """Compare with tests/transform/golden/<name>.txt (TL_UPDATE_GOLDEN=1 rewrites it)."""
    path = os.path.join(GOLDEN, name + ".txt")
    if os.environ.get("TL_UPDATE_GOLDEN"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text + "\n")
    assert os.path.exists(path), f"missing golden {path}: run with TL_UPDATE_GOLDEN=1 and review it"
    with open(path) as fh:
        expected = fh.read().rstrip("\n")
    assert text == expected, f"printed IR differs from {path} (TL_UPDATE_GOLDEN=1 regenerates it)"


def calls(f, op: str) -> list:
    return collect(f.body, lambda n: isinstance(n, Call) and n.op == op)


def loops(f, kind: str) -> list:
    return collect(f.body, lambda n: isinstance(n, For) and n.kind == kind)


# --------------------------------------------------------------------------
# Golden IR
# --------------------------------------------------------------------------


def test_golden_quickstart_three_stages():
    f = seed_gemm_tir(1000, 1024, 1000, block_M=128, block_N=128, block_K=32)
    before = f.script()
    p = inject_pipeline(f)
    assert f.script() == before  # the input is untouched
    check_golden("quickstart_pipelined", p.script())
    assert inject_sync(p) is p  # the pipeline's barriers are exactly what is needed
    out = plan_shared_memory(p)
    assert out.attrs["pipeline_stages"] == {"A_shared": 3, "B_shared": 3}
    assert dict(out.attrs["smem_offsets"]) == {"A_shared": 0, "B_shared": 3 * 8192}
    assert out.attrs["smem_bytes"] == 3 * (8 * 1024 + 8 * 1024) == 48 * 1024


def test_golden_splitk_num_stages_0():
    from tests.seeds import seed_kernels as sk

    f = sk.matmul_splitk.get_tir(M=64, N=64, K=128, block_M=32, block_N=32, block_K=32, split_k=2)
    out = all_passes(f)
    assert not loops(out, "pipelined") and not calls(out, "tl.cp_async_commit")
    check_golden("splitk_stages0", out.script())
    (loop,) = loops(out, "serial")
    body = loop.body.stmts
    # copy, copy, barrier, gemm, barrier (the next iteration's copies overwrite what the gemm read)
    assert [type(s).__name__ for s in body] == ["Copy", "Copy", "Evaluate", "Gemm", "Evaluate"]


@pytest.mark.parametrize("num_stages", [1, 2])
def test_golden_flash_attention(num_stages):
    f = flash_tir(256, 64, False, num_stages, block=64)
    out = all_passes(f)
    check_golden(f"flashattn_stages{num_stages}", out.script())
    (loop,) = loops(out, "serial")
    syncs = [s for s in loop.body.stmts if isinstance(s, Evaluate) and s.value.op == "tl.sync_threads"]
    if num_stages == 1:  # single-stage prefetch: K and V refilled after their gemms (own commit groups)
        assert out.attrs["pipeline_stages"] == {"K_shared": 1, "V_shared": 1}
        assert len(syncs) == 4  # after each wait, and after each gemm (before its tile is refilled)
        assert [c.args[0].value for c in calls(out, "tl.cp_async_wait")] == [1, 1]
    else:
        assert out.attrs["pipeline_stages"] == {"K_shared": 2, "V_shared": 2}
        assert len(syncs) == 2  # after the wait, and at the end of the body
        assert [c.args[0].value for c in calls(out, "tl.cp_async_wait")] == [1]


def test_golden_stage_order_seed():
    from tests.seeds import seed_kernels as sk

    f = sk.matmul_stage_order.get_tir(256, 256, 256)
    out = all_passes(f)
    check_golden("stage_order_120", out.script())
    (loop,) = loops(out, "serial")
    names = [type(s).__name__ if not isinstance(s, Evaluate) else s.value.op for s in loop.body.stmts]
    # the gemm is issued first, then the next tiles' copies; the wait covers every earlier group
    assert names == ["tl.cp_async_wait", "tl.sync_threads", "Gemm", "IfThenElse", "tl.cp_async_commit"]
    assert calls(out, "tl.cp_async_wait")[0].args[0].value == 0


def test_golden_dynamic_k():
    a, b = gemm_inputs(70, 40, 50)
    out = all_passes(dynamic_tir(a, b, 3))
    check_golden("dynamic_k_stages3", out.script())
    # the first prologue copy is provably needed (k >= 1); the second one is guarded
    guards = [s.cond for s in collect(out.body, lambda n: type(n).__name__ == "IfThenElse")]
    (loop,) = loops(out, "serial")
    assert len(guards) == 2
    assert [v.name for v in free_vars_of(guards[0])] == ["k"]  # prologue: only the trip count
    assert any(v is loop.var for v in free_vars_of(guards[1]))  # steady state: ko + 2 < n


# --------------------------------------------------------------------------
# Execution: pipelined == unpipelined, race-free
# --------------------------------------------------------------------------


@pytest.mark.parametrize("K,stages", [(16, 3), (48, 3), (112, 3), (16, 4), (80, 2)])
def test_pipelined_gemm_matches_unpipelined(K, stages):
    f = gemm(64, 32, K, stages=stages)
    a, b = gemm_inputs(64, 32, K)
    ref, _ = run_gemm(f, a, b, race_check=False)
    torch.testing.assert_close(ref, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    out = inject_sync(inject_pipeline(f))
    got, stats = run_gemm(out, a, b)
    assert torch.equal(got, ref)
    n = -(-K // 16)
    assert stats["async_copies"] == 2 * n * 2  # every tile fetched exactly once (2 blocks)
    assert stats["waits"] == n * 2


def test_dynamic_trip_count_one_kernel_many_k():
    a0, b0 = gemm_inputs(40, 32, 50)
    f = all_passes(dynamic_tir(a0, b0, 3))
    for K in (5, 16, 17, 33, 50, 100):
        a, b = gemm_inputs(40, 32, K, seed=K)
        c = torch.zeros(40, 32, dtype=torch.float16)
        run(f, a, b, c)
        torch.testing.assert_close(c.float(), (a.float() @ b.float()).half().float(), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("num_stages,causal", [(1, False), (1, True), (2, False), (2, True), (3, True)])
def test_flash_attention_executes(num_stages, causal):
    f = flash_tir(80, 32, causal, num_stages)
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 80, 1, 32, generator=g).half() for _ in range(3))
    ref = torch.zeros(1, 80, 1, 32, dtype=torch.float16)
    run(f, q, k, v, ref, race_check=False)
    out = torch.zeros_like(ref)
    run(all_passes(f), q, k, v, out)
    assert torch.equal(out, ref)
    sdpa = torch.nn.functional.scaled_dot_product_attention(
        *(x.transpose(1, 2).float() for x in (q, k, v)), is_causal=causal
    ).transpose(1, 2)
    torch.testing.assert_close(out.float(), sdpa, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize(
    "stage,order",
    [
        ([0, 0, 1], [1, 2, 0]),
        ([0, 0, 1], [0, 1, 2]),
        ([0, 1, 2], [0, 1, 2]),
        ([0, 0, 2], [2, 0, 1]),
        ([1, 1, 1], [0, 1, 2]),
    ],
)
@pytest.mark.parametrize("K", [16, 96])
def test_stage_order_executes(stage, order, K):
    f = gemm_stage_order(32, 32, K, stage, order)
    a, b = gemm_inputs(32, 32, K)
    ref, _ = run_gemm(f, a, b, race_check=False)
    out = all_passes(f)
    got, stats = run_gemm(out, a, b)
    assert torch.equal(got, ref)
    depth = max(stage) + 1
    if min(stage) < max(stage):
        assert out.attrs["pipeline_stages"]["A_s"] == depth
    else:
        assert "pipeline_stages" not in out.attrs and stats["async_copies"] == 0


@pytest.mark.parametrize("stages", [3, 1])
def test_loop_not_starting_at_zero(stages):
    f = gemm_offset(stages=stages)
    out = all_passes(f)
    (loop,) = loops(out, "serial")
    assert loop.start.value == 3
    a, b = gemm_inputs(32, 32, 80)
    ref, _ = run_gemm(f, a, b, race_check=False)
    got, _ = run_gemm(out, a, b)
    assert torch.equal(got, ref)


def test_seed_stage_order_two_statements():
    f = seed_two_statement(32, 32, 64)
    out = all_passes(f)
    assert out.attrs["pipeline_stages"] == {"A_shared": 2}
    a, _ = gemm_inputs(32, 32, 64)
    b = torch.randn(16, 32).half()
    ref = torch.zeros(32, 32)
    run(f, a, b, ref, race_check=False)
    got = torch.zeros(32, 32)
    run(out, a, b, got)
    assert torch.equal(got, ref)


def test_mixed_dtype_copy_stays_synchronous():
    f = gemm(64, 32, 48, stages=3, a_dtype="float32")
    out = inject_pipeline(f)
    copies = collect(out.body, lambda n: type(n).__name__ == "Copy" and n.src.buffer.scope == "global")
    a_copies = [c for c in copies if c.src.buffer.name == "A"]
    assert a_copies and all(not c.annotations.get("async") for c in a_copies)
    assert out.attrs["pipeline_stages"] == {"B_s": 3}
    synced = inject_sync(out)
    a, b = gemm_inputs(64, 32, 48, a_dtype=torch.float32)
    ref, _ = run_gemm(f, a, b, race_check=False)
    got, _ = run_gemm(synced, a, b)
    assert torch.equal(got, ref)
    with pytest.raises(RaceError):  # the synchronous copy needs the barrier inject_sync added
        run_gemm(out, a, b)


def test_no_async_on_old_or_cpu_targets():
    from tilelang.backend.target import Target

    f = gemm(64, 32, 48)
    for ctx in (
        {"target": Target("cuda", "sm_75")},
        {"target": "c"},
        {"pass_configs": {"tl.enable_async_copy": False}},
    ):
        out = inject_pipeline(f, ctx)
        assert not loops(out, "pipelined") and not calls(out, "tl.cp_async_commit"), ctx
    assert calls(inject_pipeline(f, {"target": Target("cuda", "sm_80")}), "tl.cp_async_commit")


# --------------------------------------------------------------------------
# The interpreter catches broken schedules (so the checks above can fail)
# --------------------------------------------------------------------------


class _Edit(Mutator):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def visit_SeqStmt(self, n):
        out = []
        for s in n.stmts:
            s = self.visit(s)
            out.extend(self.fn(s))
        return SeqStmt(tuple(out), n.span)


def _is(s, op):
    return isinstance(s, Evaluate) and isinstance(s.value, Call) and s.value.op == op


@pytest.mark.parametrize("breakage", ["wait_too_lax", "no_sync_after_wait", "no_trailing_sync", "no_commit_in_loop"])
def test_interpreter_detects_broken_pipelines(breakage):
    f = inject_pipeline(gemm(32, 32, 96, stages=3))
    a, b = gemm_inputs(32, 32, 96)
    run_gemm(f, a, b)  # the real schedule is fine

    def edit(s):
        if breakage == "wait_too_lax" and _is(s, "tl.cp_async_wait"):
            return [replace(s, value=replace(s.value, args=(IntImm(3),)))]
        if breakage == "no_sync_after_wait" and _is(s, "tl.sync_threads") and edit.first:
            edit.first = False
            return []
        if breakage == "no_trailing_sync" and _is(s, "tl.sync_threads"):
            edit.seen += 1
            return [] if edit.seen == 2 else [s]
        if breakage == "no_commit_in_loop" and _is(s, "tl.cp_async_commit"):
            edit.seen += 1
            return [] if edit.seen == 3 else [s]
        return [s]

    edit.first, edit.seen = True, 0
    broken = f.with_body(_Edit(edit).visit(f.body))
    with pytest.raises((RaceError, InterpError)):
        run_gemm(broken, a, b)


# --------------------------------------------------------------------------
# Scalar aliases, errors
# --------------------------------------------------------------------------


def _with_alias(f, impure=False):
    """Rewrite the pipelined loop's body to go through `kk = ko + 1` (pure) or
    through a value loaded from memory (impure)."""

    class _M(Mutator):
        def visit_For(self, n):
            if n.kind != "pipelined":
                return self.generic_visit(n)
            kk = Var("kk")
            if impure:
                a = f.buffer_params[0]
                value = n.var + 1 + T.cast(a[0, 0] * 0, "int32")  # depends on a load
            else:
                value = n.var + 1
            body = substitute(n.body, {n.var: kk - 1})
            return replace(n, body=SeqStmt((LetStmt(kk, value, n.span), *body.stmts), n.span))

    return f.with_body(_M().visit(f.body))


def test_pure_alias_is_replayed_in_producers():
    f = _with_alias(gemm(32, 32, 64, stages=3))
    out = inject_pipeline(f)
    assert out.attrs["pipeline_stages"] == {"A_s": 3, "B_s": 3}
    text = out.script()
    assert "kk: int32 = ko + 1" in text  # kept once for the consumers
    assert "A[by * 32:by * 32 + 32, (ko + 2 + 1 - 1) * 16:" in text  # replayed for iteration ko + 2
    a, b = gemm_inputs(32, 32, 64)
    ref, _ = run_gemm(gemm(32, 32, 64), a, b, race_check=False)
    got, _ = run_gemm(inject_sync(out), a, b)
    assert torch.equal(got, ref)


def test_impure_alias_blocks_prefetch():
    f = _with_alias(gemm(32, 32, 64, stages=3), impure=True)
    out = inject_pipeline(f)
    assert "pipeline_stages" not in out.attrs and not calls(out, "tl.cp_async_commit")
    assert loops(out, "serial")


def _loop_line(f):
    (loop,) = loops(f, "pipelined")
    return loop.span.line


@pytest.mark.parametrize(
    "stage,order,num_stages,message",
    [
        ([0, 1], [0, 1], 0, "3 schedulable statement"),
        ([0, 0, 1], [0, 0, 1], 0, "permutation"),
        ([0, 0, 1], [0, 1, 2], 3, "contradicts"),
        ([1, 0, 0], [0, 1, 2], 0, "earlier stage"),
        ([0, 0, 0], [0, 2, 1], 0, "ordered before"),
        ([0, 1, 1], [0, 2, 1], 0, "ordered before"),
    ],
)
def test_stage_order_errors(stage, order, num_stages, message):
    try:
        f = gemm_stage_order(32, 32, 64, stage, order, num_stages=num_stages)
    except DSLError as e:  # the frontend may already reject it
        assert message in ("permutation",) or "entries" in str(e)
        return
    with pytest.raises(DSLError) as ei:
        inject_pipeline(f)
    assert message in ei.value.message
    assert ei.value.span.line == _loop_line(f)


# --------------------------------------------------------------------------
# The C backend (bit-identical to the unpipelined kernel)
# --------------------------------------------------------------------------


def _strip_async_calls(f):
    ops = ("tl.cp_async_commit", "tl.cp_async_wait", "tl.sync_threads")
    return f.with_body(_Edit(lambda s: [] if any(_is(s, op) for op in ops) else [s]).visit(f.body))


def _c_compile(f):
    import tilelang

    return tilelang.compile(f, target="c")


def test_c_backend_runs_pipelined_gemm():
    f = seed_gemm_tir(64, 64, 40, block_M=32, block_N=32, block_K=16)  # 3 trips, 3 stages
    a, b = gemm_inputs(64, 64, 40)
    ref = _c_compile(f)(a, b)
    got = _c_compile(_strip_async_calls(all_passes(f)))(a, b)
    assert torch.equal(got, ref)
    torch.testing.assert_close(got.float(), torch.relu(a.float() @ b.float()), rtol=2e-2, atol=2e-2)


def test_c_backend_accepts_pipeline_intrinsics():
    f = seed_gemm_tir(64, 64, 40, block_M=32, block_N=32, block_K=16)
    a, b = gemm_inputs(64, 64, 40)
    got = _c_compile(all_passes(f))(a, b)
    torch.testing.assert_close(got.float(), torch.relu(a.float() @ b.float()), rtol=2e-2, atol=2e-2)
