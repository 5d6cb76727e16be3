"""inject_sync: minimal barriers for the common shared-memory patterns.

Each kernel's barrier placement is asserted exactly (as the sequence of
statement kinds), and — where the interpreter can run it — the result is
race-free while the input (no barriers) is not, so the checks can fail.
"""

import warnings

import pytest
import torch

import tilelang.language as T
from tests.transform.tile_interp import RaceError, run
from tilelang.ir import Call, Evaluate, For, IfThenElse, KernelLaunch, SeqStmt, collect, stmts_of
from tilelang.transform.inject_pipeline import inject_pipeline
from tilelang.transform.inject_sync import inject_sync

M = N = 32


def shape_of(stmts) -> list:
    """Statement kinds, `sync` for barriers, nested lists for loops / branches."""
    out = []
    for s in stmts_of(stmts) if not isinstance(stmts, (list, tuple)) else stmts:
        if isinstance(s, SeqStmt):
            out.extend(shape_of(s))
        elif isinstance(s, Evaluate) and isinstance(s.value, Call):
            out.append("sync" if s.value.op == "tl.sync_threads" else s.value.op)
        elif isinstance(s, For) and s.kind != "parallel":
            out.append(["for", *shape_of(s.body)])
        elif isinstance(s, IfThenElse):
            out.append(["if", *shape_of(s.then_body)] + (["else", *shape_of(s.else_body)] if s.else_body else []))
        elif type(s).__name__ != "Allocate":
            out.append("Parallel" if isinstance(s, For) else type(s).__name__)
    return out


def kernel_body(f) -> list:
    (k,) = collect(f.body, lambda n: isinstance(n, KernelLaunch))
    return shape_of(k.body)


def n_syncs(f) -> int:
    return len(collect(f.body, lambda n: isinstance(n, Call) and n.op == "tl.sync_threads"))


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------


@T.prim_func
def epilogue(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        frag = T.alloc_fragment((M, N), "float32")
        S = T.alloc_shared((M, N), "float32")
        T.copy(A, frag)
        for i, j in T.Parallel(M, N):
            frag[i, j] = frag[i, j] * 2
        T.copy(frag, S)
        T.copy(S, C)


@T.prim_func
def reduce_through_shared(A: T.Tensor((M, N), "float32"), R: T.Tensor((M,), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        r = T.alloc_fragment((M,), "float32")
        T.copy(A, S)
        T.reduce_sum(S, r, dim=1)
        for i, j in T.Parallel(M, N):
            S[i, j] = S[i, j] - r[i] / N
        T.reduce_max(S, r, dim=1)
        T.copy(r, R)


@T.prim_func
def consecutive_reads(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        f1 = T.alloc_fragment((M, N), "float32")
        f2 = T.alloc_fragment((M, N), "float32")
        T.copy(A, S)
        T.copy(S, f1)
        T.copy(S, f2)
        for i, j in T.Parallel(M, N):
            f1[i, j] = f1[i, j] + f2[i, j]
        T.copy(f1, C)


@T.prim_func
def loop_carried(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        f = T.alloc_fragment((M, N), "float32")
        T.copy(A, S)
        for k in T.serial(3):
            T.copy(S, f)  # reads early in iteration k + 1 what ...
            for i, j in T.Parallel(M, N):
                f[i, j] = f[i, j] * 0.5 + k
            T.copy(f, S)  # ... is written late in iteration k
        T.copy(S, C)


@T.prim_func
def read_only_loop(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        f = T.alloc_fragment((M, N), "float32")
        T.clear(f)
        T.copy(A, S)
        for k in T.serial(4):
            for i, j in T.Parallel(M, N):
                f[i, j] = f[i, j] + S[i, j] * k
        T.copy(f, C)


@T.prim_func
def uniform_branch(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(2, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        f = T.alloc_fragment((M, N), "float32")
        T.copy(A, S)
        if bx == 0:
            T.copy(S, f)
            for i, j in T.Parallel(M, N):
                f[i, j] = f[i, j] + 1
            T.copy(f, S)
        T.copy(S, C[0:M, 0:N])


@T.prim_func
def divergent_branch(A: T.Tensor((M, N), "float32"), F: T.Tensor((1,), "int32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        f = T.alloc_fragment((M, N), "float32")
        g = T.alloc_fragment((1,), "int32")
        T.clear(f)
        T.copy(F, g)
        T.copy(A, S)
        if g[0] > 0:  # a fragment element: held by one thread, per-thread value
            T.copy(S, f)
        T.copy(f, C)


@T.prim_func
def divergent_hazard(A: T.Tensor((M, N), "float32"), F: T.Tensor((1,), "int32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        flag = T.alloc_var("int32")
        for i in T.Parallel(1):
            flag = F[i]  # assigned per thread: not uniform
        if flag > 0:
            T.copy(A, S)
            T.copy(S, C)


divergent_hazard_if_line = next(
    i for i, line in enumerate(open(__file__).read().splitlines(), 1) if line.strip() == "if flag > 0:"
)


@T.prim_func
def uniform_conditions(A: T.Tensor((M, N), "float32"), F: T.Tensor((4,), "int32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        trips = T.alloc_var("int32")
        trips = F[1] + 1  # assigned at tile level from a uniform address: uniform
        if F[0] > 0:  # every thread reads the same word
            T.copy(A, S)
            T.copy(S, C)
        for _k in T.serial(trips):
            T.copy(A, S)
            T.copy(S, C)


@T.prim_func
def serial_gemm(A: T.Tensor((M, 64), "float16"), B: T.Tensor((64, N), "float16"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        A_s = T.alloc_shared((M, 16), "float16")
        B_s = T.alloc_shared((16, N), "float16")
        C_l = T.alloc_fragment((M, N), "float32")
        T.clear(C_l)
        for ko in T.serial(4):
            T.copy(A[0, ko * 16], A_s)
            T.copy(B[ko * 16, 0], B_s)
            T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C)


# --------------------------------------------------------------------------
# Placement
# --------------------------------------------------------------------------


def test_copy_then_gemm_and_next_copy_in_loop():
    out = inject_sync(serial_gemm)
    # copy → gemm needs one barrier; the next iteration's copies overwrite what the gemm read
    assert kernel_body(out) == ["Fill", ["for", "Copy", "Copy", "sync", "Gemm", "sync"], "Copy"]
    a, b = rand(M, 64).half(), rand(64, N, seed=1).half()
    c = torch.zeros(M, N)
    run(out, a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    with pytest.raises(RaceError):
        run(serial_gemm, a, b, torch.zeros(M, N))


def test_fragment_shared_global_epilogue():
    out = inject_sync(epilogue)
    assert kernel_body(out) == ["Copy", "Parallel", "Copy", "sync", "Copy"]
    a, c = rand(M, N), torch.zeros(M, N)
    run(out, a, c)
    assert torch.equal(c, a * 2)
    with pytest.raises(RaceError):
        run(epilogue, a, torch.zeros(M, N))


def test_reduce_through_shared():
    out = inject_sync(reduce_through_shared)
    assert kernel_body(out) == ["Copy", "sync", "Reduce", "sync", "Parallel", "sync", "Reduce", "Copy"]
    a, r = rand(M, N), torch.zeros(M)
    run(out, a, r)
    torch.testing.assert_close(r, (a - a.sum(1, keepdim=True) / N).amax(1))


def test_consecutive_reads_share_one_barrier():
    out = inject_sync(consecutive_reads)
    assert kernel_body(out) == ["Copy", "sync", "Copy", "Copy", "Parallel", "Copy"]


def test_loop_carried_barrier_at_end_of_body():
    out = inject_sync(loop_carried)
    assert kernel_body(out) == ["Copy", "sync", ["for", "Copy", "Parallel", "sync", "Copy", "sync"], "Copy"]
    a, c = rand(M, N), torch.zeros(M, N)
    run(out, a, c)
    ref = a.clone()
    for k in range(3):
        ref = ref * 0.5 + k
    torch.testing.assert_close(c, ref)


def test_hazard_into_a_loop_is_settled_before_it():
    out = inject_sync(read_only_loop)
    assert kernel_body(out) == ["Fill", "Copy", "sync", ["for", "Parallel"], "Copy"]
    a, c = rand(M, N), torch.zeros(M, N)
    run(out, a, c)
    torch.testing.assert_close(c, a * 6)


def test_uniform_branch_gets_barriers_inside():
    out = inject_sync(uniform_branch)
    assert kernel_body(out) == ["Copy", ["if", "sync", "Copy", "Parallel", "sync", "Copy"], "sync", "Copy"]
    a = rand(M, N)
    c = torch.zeros(M, N)
    run(out, a, c)  # both blocks write C; the last (bx == 1) leaves A unchanged
    assert torch.equal(c, a)


def test_divergent_branch_barrier_goes_outside():
    out = inject_sync(divergent_branch)
    assert kernel_body(out) == ["Fill", "Copy", "Copy", "sync", ["if", "Copy"], "Copy"]


def test_global_loads_and_tile_level_scalars_are_uniform():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = inject_sync(uniform_conditions)
    # barriers inside the `if` and the loop; the `if`'s read of S is settled before the loop
    assert kernel_body(out) == [
        "BufferStore",
        ["if", "Copy", "sync", "Copy"],
        "sync",
        ["for", "Copy", "sync", "Copy", "sync"],
    ]


def test_divergent_branch_with_internal_hazard_is_an_error():
    # no barrier can go inside (some threads would skip it) and the branch needs one: never
    # emit it without — stop at the branch's line
    from tilelang.errors import TileLangError

    with pytest.raises(TileLangError, match="may differ between the threads") as e:
        inject_sync(divergent_hazard)
    assert e.value.span.line == divergent_hazard_if_line
    assert "`flag`" in str(e.value)


def test_pipeline_barriers_are_not_duplicated():
    from tests.transform.kernels import gemm, gemm_stage_order

    for f in (
        gemm(64, 64, 64, stages=3),
        gemm(64, 64, 64, stages=2),
        gemm_stage_order(32, 32, 64, [0, 0, 1], [1, 2, 0]),
    ):
        p = inject_pipeline(f)
        assert n_syncs(p) > 0
        assert inject_sync(p) is p


def test_disabled_by_pass_config():
    for ctx in ({"pass_configs": {"tl.disable_thread_storage_sync": True}},):
        assert inject_sync(epilogue, ctx) is epilogue
    f = epilogue.with_attrs(pass_configs={"tl.disable_thread_storage_sync": True})
    assert inject_sync(f) is f


def test_input_is_not_mutated_and_spans_survive():
    before = loop_carried.script()
    out = inject_sync(loop_carried)
    assert loop_carried.script() == before
    syncs = collect(out.body, lambda n: isinstance(n, Evaluate) and isinstance(n.value, Call))
    assert syncs and all(s.span.line > 0 for s in syncs)


def test_no_warnings_on_seed_kernels():
    from tests.transform.kernels import flash_tir

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for ns in (1, 2):
            inject_sync(inject_pipeline(flash_tir(64, 32, True, ns)))


# --------------------------------------------------------------------------
# Uniformity through thread-private buffers (issue #17)
# --------------------------------------------------------------------------


def _syncs_in(s) -> int:
    return len(collect(s, lambda n: isinstance(n, Call) and n.op == "tl.sync_threads"))


@T.prim_func
def local_counter_loop(A: T.Tensor((M, N), "float32"), F: T.Tensor((2,), "int32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(2, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        f = T.alloc_fragment((M, N), "float32")
        n = T.alloc_local((2,), "int32")
        n[0] = F[0] + bx  # every thread stores the same value: uniform
        n[1] = n[0] * 2
        for _k in T.serial(n[1]):
            T.copy(A, S)
            T.copy(S, f)
        T.copy(f, C)


@T.prim_func
def partly_parallel_local(A: T.Tensor((M, N), "float32"), F: T.Tensor((2,), "int32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        n = T.alloc_local((2,), "int32")
        n[0] = F[0]
        for i in T.Parallel(1):
            n[1] = F[i + 1]  # one element written per thread: the whole array is per-thread
        for _k in T.serial(n[0]):
            T.copy(A, S)
            T.copy(S, C)


@T.prim_func
def local_from_fragment(A: T.Tensor((M, N), "float32"), F: T.Tensor((1,), "int32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        g = T.alloc_fragment((1,), "int32")
        n = T.alloc_var("int32")
        T.copy(F, g)
        n = g[0]
        while n > 0:
            n = n - 1
            T.copy(A, S)
            T.copy(S, C)


@T.prim_func
def divergent_break(A: T.Tensor((M, N), "float32"), F: T.Tensor((4,), "int32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        stop = T.alloc_var("int32")
        for i in T.Parallel(1):
            stop = F[i]
        for k in T.serial(4):  # uniform bounds, but the break below is not
            if k == stop:
                break
            T.copy(A, S)
            T.copy(S, C)


@T.prim_func
def written_global_cond(A: T.Tensor((M, N), "float32"), F: T.Tensor((1,), "int32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        F[0] = 1  # thread 0 stores it: the other threads may still read the old value
        if F[0] > 0:
            T.copy(A, S)
            T.copy(S, C)


@T.prim_func
def shared_flag_cond(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        flag = T.alloc_shared((1,), "int32")
        flag[0] = 1
        if flag[0] > 0:  # read by every thread: after the barrier that publishes thread 0's store
            T.copy(A, S)
            T.copy(S, C)


def test_local_array_assigned_at_tile_level_is_uniform():
    out = inject_sync(local_counter_loop)
    (loop,) = [s for s in collect(out.body, lambda n: isinstance(n, For) and n.kind == "serial")]
    assert _syncs_in(loop) == 2  # RAW inside the trip, WAR of the next trip's copy


@pytest.mark.parametrize(
    "func,name",
    [(partly_parallel_local, "`n`"), (local_from_fragment, "`n`"), (divergent_break, "`stop`"),
     (written_global_cond, "`F`")],
)  # fmt: skip
def test_per_thread_control_needing_a_barrier_is_an_error(func, name):
    from tilelang.errors import TileLangError

    with pytest.raises(TileLangError, match="may differ between the threads") as e:
        inject_sync(func)
    assert name in str(e.value) and e.value.span.line > 0


def test_condition_reading_shared_memory_waits_for_its_store():
    out = inject_sync(shared_flag_cond)
    assert kernel_body(out) == ["BufferStore", "sync", ["if", "Copy", "sync", "Copy"]]


@T.prim_func
def filled_local_bound(A: T.Tensor((M, N), "float32"), F: T.Tensor((1,), "int32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, 1, threads=128) as (bx, by):
        S = T.alloc_shared((M, N), "float32")
        n = T.alloc_local((1,), "int32")
        T.fill(n, F[0])  # every thread fills the whole (private) array with one value
        for _k in T.serial(n[0]):
            T.copy(A, S)
            T.copy(S, C)


def test_tile_level_fill_of_a_local_is_uniform():
    out = inject_sync(filled_local_bound)
    (loop,) = [s for s in collect(out.body, lambda n: isinstance(n, For) and n.kind == "serial")]
    assert _syncs_in(loop) == 2


@T.prim_func
def region_counter(A: T.Tensor((M, N), "float32"), F: T.Tensor((1,), "int32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, threads=256) as _bx:
        S = T.alloc_shared((M, N), "float32")
        f = T.alloc_fragment((M, N), "float32")
        with T.ws(1):
            n = T.alloc_var("int32")
            n = F[0]  # set by every thread of the region: uniform among them
            for _k in T.serial(n):
                T.copy(A, S)
                T.copy(S, f)
            T.copy(f, C)


@T.prim_func
def region_value_outside(A: T.Tensor((M, N), "float32"), F: T.Tensor((1,), "int32"), C: T.Tensor((M, N), "float32")):
    with T.Kernel(1, threads=256) as _bx:
        S = T.alloc_shared((M, N), "float32")
        n = T.alloc_var("int32")
        with T.ws(1):
            n = F[0]  # only warpgroup 1 holds it
        for _k in T.serial(n):  # run by the whole block
            T.copy(A, S)
            T.copy(S, C)


def test_region_local_control_is_uniform_within_the_region():
    from tilelang.ir.stmt import WarpSpecialize

    out = inject_sync(region_counter)
    (ws,) = collect(out.body, lambda n: isinstance(n, WarpSpecialize))
    (loop,) = [s for s in collect(ws, lambda n: isinstance(n, For) and n.kind == "serial")]
    assert _syncs_in(loop) == 2


def test_region_value_used_by_the_block_is_an_error():
    from tilelang.errors import TileLangError

    with pytest.raises(TileLangError, match="T.ws"):
        inject_sync(region_value_outside)
