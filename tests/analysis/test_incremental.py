"""Keystroke analysis reuses the compiler's run when the traced IR did not change (issue 19
item 7): a comment or a blank edit re-traces the kernel but does not lower it again, and the
report is the one a fresh run gives; a real change (and a moved kernel) lowers again."""

from __future__ import annotations

import dataclasses

import tilelang.analysis.compiled as compiled
from tilelang.analysis import analyze_function

SOURCE = """
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def scale(N, block=128):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            tile = T.alloc_shared((block,), "float32")
            T.copy(A[bx * block], tile)
            for i in T.Parallel(block):
                B[bx * block + i] = tile[i] * 2.0  # EDIT
    return main
"""


def _report(source: str, path: str) -> dict:
    return dataclasses.asdict(analyze_function(source, path, "scale", "sm_80", {"N": 1000}))


def test_an_edit_that_keeps_the_ir_reuses_the_pipeline_run(monkeypatch, tmp_path):
    runs = []
    real = compiled.run_pipeline_for_analysis
    monkeypatch.setattr(compiled, "run_pipeline_for_analysis", lambda *a, **k: runs.append(1) or real(*a, **k))
    path = str(tmp_path / "k.py")
    first = _report(SOURCE, path)
    assert len(runs) == 1
    again = _report(SOURCE.replace("# EDIT", "# a comment typed in"), path)
    assert len(runs) == 1 and again == first  # the same facts, from the earlier run
    _report(SOURCE.replace("* 2.0", "* 3.0"), path)
    assert len(runs) == 2  # a new IR (the report may well be the same: the constant is no fact)
    moved = _report("\n\n" + SOURCE, path)  # every span moved: lowered again, locations follow
    assert len(runs) == 3
    assert [b["loc"]["line"] for b in moved["buffers"]] == [b["loc"]["line"] + 2 for b in first["buffers"]]
    monkeypatch.setattr(compiled, "_MEMO", type(compiled._MEMO)())
    assert _report(SOURCE.replace("# EDIT", "# a comment typed in"), path) == first  # = a fresh run
