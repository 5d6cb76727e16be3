"""Golden test of the generated C for a small kernel (spans, fp16 handling,
versioned tile copies, a reduction, floor division, a guard).

Regenerate after an intended change with `TL_UPDATE_GOLDEN=1 pytest tests/backend_c/test_codegen_golden.py`
and review the diff."""

import os

import torch

from tilelang.backend.c import generate
from tilelang.ir import BufferStore, Copy, LetStmt, Reduce, Span, Var, cast
from tilelang.transform.legalize_memory_access import legalize_memory_access
from tilelang.transform.lower_tile_ops import lower_tile_ops
from tilelang.transform.verify import verify

from .irb import alloc, full, kernel, loops, region, tensor

GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "row_softmax_like.c")


def row_kernel():
    """Per row block: load an fp16 tile (70 columns, tiles of 32 rows), take the
    row max in float32, write x - max (fp16) and the block's row index // 3."""
    R, W, bm = 100, 70, 32
    X, Y = tensor("X", (R, W), "float16"), tensor("Y", (R, W), "float16")
    Idx = tensor("Idx", (R,), "int32")
    s = lambda line: Span("kernel.py", line)  # noqa: E731

    def body(bx):
        F, a1 = alloc("tile", (bm, W), "float16", "shared.dyn")
        M, a2 = alloc("row_max", (bm,), "float32")
        a1 = type(a1)(a1.buffer, a1.init, a1.annotations, span=s(10))
        a2 = type(a2)(a2.buffer, a2.init, a2.annotations, span=s(11))
        base = Var("base")

        def sub(i, j):
            return BufferStore(Y, (base + i, j), cast(cast(F[i, j], "float32") - M[i], "float16"), span=s(15))

        def idx(i):
            return BufferStore(Idx, (base + i,), (base + i) // 3, span=s(16))

        return [
            a1, a2,
            LetStmt(base, bx * bm, span=s(12)),
            Copy(region(X, (base, bm), (0, W)), full(F), span=s(13)),
            Reduce("max", full(F), full(M), 1, span=s(14)),
            loops([bm, W], sub),
            loops([bm], idx),
        ]  # fmt: skip

    f = kernel("row_kernel", (X, Y, Idx), ((R + bm - 1) // bm,), body)
    return type(f)(f.name, f.params, f.body, f.attrs, span=Span("kernel.py", 5))


def lowered():
    f = row_kernel()
    ctx = {"target": "c"}
    return legalize_memory_access(lower_tile_ops(verify(f, ctx), ctx), ctx)


def test_generated_source_matches_golden():
    src = generate(lowered()).source
    if os.environ.get("TL_UPDATE_GOLDEN"):
        with open(GOLDEN, "w") as f:
            f.write(src)
    with open(GOLDEN) as f:
        want = f.read()
    assert src == want, "generated C changed; rerun with TL_UPDATE_GOLDEN=1 and review the diff"


def test_golden_kernel_runs(build_unsimplified):
    _, run = build_unsimplified(row_kernel())
    x = torch.randn(100, 70).half()
    y = torch.empty(100, 70, dtype=torch.float16)
    idx = torch.empty(100, dtype=torch.int32)
    run(x, y, idx)
    ref = (x.float() - x.float().amax(1, keepdim=True)).half()
    assert torch.equal(y, ref)
    assert torch.equal(idx, torch.arange(100, dtype=torch.int32) // 3)


def test_line_spans_map_generated_lines_to_user_lines():
    src = generate(lowered())
    lines = src.source.splitlines()
    n = next(i for i, t in enumerate(lines) if "fmaxf(" in t) + 1
    assert src.span_of_line(n).line == 14
