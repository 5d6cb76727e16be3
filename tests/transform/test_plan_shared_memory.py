"""plan_shared_memory: sizes, alignment, lifetimes (loops, branches), reuse and its barriers."""

from dataclasses import replace

import pytest
import torch

import tilelang.language as T
from tests.transform.tile_interp import run
from tilelang.errors import DSLError
from tilelang.ir import Allocate, Call, Evaluate, KernelLaunch, Mutator, Var, collect
from tilelang.layout import make_swizzled_layout
from tilelang.transform.inject_pipeline import inject_pipeline
from tilelang.transform.inject_sync import inject_sync
from tilelang.transform.plan_shared_memory import plan_shared_memory

NO_REUSE = {"pass_configs": {"tl.disable_shared_memory_reuse": True}}


def offsets(f) -> dict:
    return dict(f.attrs["smem_offsets"])


def n_syncs(f) -> int:
    return len(collect(f.body, lambda n: isinstance(n, Call) and n.op == "tl.sync_threads"))


def buffer(f, name):
    (a,) = [a for a in collect(f.body, lambda n: isinstance(n, Allocate)) if a.buffer.name == name]
    return a.buffer


# --------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------


@T.prim_func
def phases(A: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32")):
    """X lives through the loop (used before and inside it); Y only in the loop;
    Z and W only after it, in the two branches of one `if`."""
    with T.Kernel(2, threads=128) as bx:
        X = T.alloc_shared((64,), "float32")  # 256 B
        Y = T.alloc_shared((64,), "float32")  # 256 B
        Z = T.alloc_shared((32,), "float32")  # 128 B
        W = T.alloc_shared((32,), "float32")  # 128 B
        f = T.alloc_fragment((64,), "float32")
        T.copy(A, X)
        for k in T.serial(2):
            T.copy(X, Y)
            for i in T.Parallel(64):
                f[i] = Y[i] + k
            T.copy(f, X)
        if bx == 0:
            T.copy(X[0:32], Z)
            T.copy(Z, C[0:32])
        else:
            T.copy(X[32:64], W)
            T.copy(W, C[32:64])


@T.prim_func
def odd_sizes(A: T.Tensor((8,), "int8"), C: T.Tensor((8,), "int8")):
    with T.Kernel(1, threads=128) as bx:  # noqa: F841
        a = T.alloc_shared((3,), "int8")
        b = T.alloc_shared((5,), "float16")
        c = T.alloc_shared((7,), "int8")
        bar = T.alloc_barrier([128, 128])  # noqa: F841
        T.copy(A[0:3], a)
        T.copy(A[0:5], b)
        T.copy(A[0:7], c)
        T.copy(a, C[0:3])
        T.copy(b, C[0:5])
        T.copy(c, C[0:7])
        T.copy(A[0:3], a)  # a, b, c all live at once


@T.prim_func
def gemm_operands(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
    with T.Kernel(1, threads=128) as bx:  # noqa: F841
        P = T.alloc_shared((2100,), "float32")  # 8400 B, not a gemm operand
        A_s = T.alloc_shared((64, 64), "float16")  # swizzled via layout_map
        B_s = T.alloc_shared((64, 64), "float16")  # gemm operand without a known layout
        C_l = T.alloc_fragment((64, 64), "float32")
        T.copy(A[0, 0:64], P[0:64])
        T.copy(A, A_s)
        T.copy(B, B_s)
        T.gemm(A_s, B_s, C_l, clear_accum=True)
        T.copy(P[0:64], C[0, 0:64])
        T.copy(C_l, C)


# --------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------


def test_quickstart_totals():
    from tests.transform.kernels import seed_gemm_tir

    f = inject_pipeline(seed_gemm_tir(1024, 1024, 1024, block_M=128, block_N=128, block_K=32))
    for ctx in (None, NO_REUSE):
        out = plan_shared_memory(f, ctx)
        assert offsets(out) == {"A_shared": 0, "B_shared": 24576}
        assert out.attrs["smem_bytes"] == 48 * 1024
    assert (
        plan_shared_memory(seed_gemm_tir(1024, 1024, 1024, block_M=128, block_N=128, block_K=32)).attrs["smem_bytes"]
        == 16 * 1024
    )


def test_lifetimes_with_loops_and_branches():
    out = plan_shared_memory(inject_sync(phases))
    # X: statements 0..2 (the loop uses it); Y: the loop only; Z, W: the `if` only.
    # Y (placed after X by size order) cannot share with X; Z and W live together
    # (both in the one `if`) but may reuse Y's bytes, since Y is dead after the loop.
    assert offsets(out) == {"X": 0, "Y": 256, "Z": 256, "W": 384}
    assert out.attrs["smem_bytes"] == 512
    assert offsets(plan_shared_memory(phases, NO_REUSE)) == {"X": 0, "Y": 256, "Z": 512, "W": 640}
    assert plan_shared_memory(phases, NO_REUSE).attrs["smem_bytes"] == 768


def test_reuse_inserts_barrier_only_when_missing():
    synced = inject_sync(phases)
    out = plan_shared_memory(synced)
    # Z/W start reusing Y right after the loop; the loop's last read of Y needs a barrier first
    (k,) = collect(out.body, lambda n: isinstance(n, KernelLaunch))
    top = [type(s).__name__ for s in k.body.stmts if not isinstance(s, Allocate)]
    assert top == ["Copy", "Evaluate", "For", "Evaluate", "IfThenElse"]
    assert n_syncs(out) == n_syncs(synced) + 1
    assert n_syncs(plan_shared_memory(synced, NO_REUSE)) == n_syncs(synced)
    a = torch.randn(64)
    c = torch.zeros(64)
    run(out, a, c)
    torch.testing.assert_close(c, a + 1)  # second block: + 0 + 1


def test_flash_attention_output_tile_reuses_q():
    from tests.transform.kernels import flash_tir

    f = inject_sync(inject_pipeline(flash_tir(256, 64, False, 1, block=64)))
    out = plan_shared_memory(f)
    assert offsets(out) == {"Q_shared": 0, "K_shared": 8192, "V_shared": 16384, "O_shared": 0}
    assert out.attrs["smem_bytes"] == 24576
    assert n_syncs(out) == n_syncs(f) + 1  # before O_shared is first written
    off = plan_shared_memory(f, NO_REUSE)
    assert off.attrs["smem_bytes"] == 32768 and n_syncs(off) == n_syncs(f)


def test_alignment_and_sizes():
    out = plan_shared_memory(odd_sizes)
    # by decreasing size: the two mbarriers (16 B, 8-aligned), b (10 B), c (7 B), a (3 B), 16-aligned
    assert offsets(out) == {"a": 48, "b": 16, "c": 32, "bar": 0}
    assert out.attrs["smem_bytes"] == 48 + 3
    o = offsets(plan_shared_memory(odd_sizes, NO_REUSE))  # declaration order
    assert o == {"a": 0, "b": 16, "c": 32, "bar": 40}


def test_swizzled_gemm_operand_alignment():
    A_s, B_s = buffer(gemm_operands, "A_s"), buffer(gemm_operands, "B_s")
    f = gemm_operands.with_attrs(layout_map={A_s: make_swizzled_layout(A_s)})
    o = offsets(plan_shared_memory(f, NO_REUSE))
    assert o["P"] == 0
    assert o["A_s"] == 9216  # 8400 rounded up to the 128B swizzle's 1024-byte repeat
    assert o["B_s"] == 9216 + 8192  # gemm operand: 128-byte aligned (already)
    o2 = offsets(plan_shared_memory(gemm_operands, NO_REUSE))  # no layouts known
    assert o2["A_s"] == 8448 and o2["B_s"] == 8448 + 8192  # 128-byte aligned gemm operands
    assert B_s is not None


def test_pipeline_keeps_layouts_and_alignment():
    from tests.transform.kernels import gemm

    f = gemm(64, 64, 128, bm=64, bn=64, bk=64, stages=3)
    A_s = buffer(f, "A_s")
    f = f.with_attrs(layout_map={A_s: make_swizzled_layout(A_s)})
    p = inject_pipeline(f)
    (new_a,) = [b for b in p.attrs["layout_map"]]
    assert new_a is buffer(p, "A_s") and tuple(int(d.value) for d in new_a.shape) == (3, 64, 64)
    assert p.attrs["layout_map"][new_a].shape == (3, 64, 64)
    assert A_s in f.attrs["layout_map"]  # the input's map is untouched
    out = plan_shared_memory(p)
    assert offsets(out)["A_s"] % 1024 == 0 and out.attrs["smem_bytes"] == 3 * 8192 * 2


def test_barriers_never_share_and_take_8_bytes():
    @T.prim_func
    def two_phases(A: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as bx:  # noqa: F841
            X = T.alloc_shared((4,), "float32")
            bar = T.alloc_barrier([128, 128, 128])  # noqa: F841
            Y = T.alloc_shared((4,), "float32")
            T.copy(A[0:4], X)
            T.copy(X, C[0:4])
            T.copy(A[4:8], Y)
            T.copy(Y, C[4:8])

    out = plan_shared_memory(two_phases)
    assert offsets(out) == {"X": 32, "bar": 0, "Y": 32}  # X and Y share; the barriers share with nothing
    assert out.attrs["smem_bytes"] == 32 + 16
    assert n_syncs(out) == 1  # between the last read of X and the first write of Y


def test_non_constant_shape_is_an_error():
    class _Dyn(Mutator):
        def visit_Allocate(self, n):
            if n.buffer.name == "X":
                return replace(n, buffer=replace(n.buffer, shape=(Var("n"),)))
            return n

    f = phases.with_body(_Dyn().visit(phases.body))
    with pytest.raises(DSLError, match="non-constant shape"):
        plan_shared_memory(f)


def test_kernel_without_shared_memory():
    @T.prim_func
    def add(A: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:  # noqa: F841
            for i in T.Parallel(64):
                C[i] = A[i] + 1

    out = plan_shared_memory(add)
    assert out.attrs["smem_bytes"] == 0 and offsets(out) == {}
    assert not collect(out.body, lambda n: isinstance(n, Evaluate))
