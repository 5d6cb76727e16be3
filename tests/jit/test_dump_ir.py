"""IR dumps after every pass (tl.enable_dump_ir) and the lowering trace (TL_LOWER_TRACE)."""

import torch

import tilelang
import tilelang.language as T


def test_dump_ir_and_lower_trace(tmp_path, monkeypatch):
    monkeypatch.setenv("TL_LOWER_TRACE", "html")
    monkeypatch.setenv("TL_LOWER_TRACE_DIR", str(tmp_path / "trace"))
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    dump = tmp_path / "dump"

    @tilelang.jit(
        pass_configs={tilelang.PassConfigKey.TL_ENABLE_DUMP_IR: True, tilelang.PassConfigKey.TL_DUMP_IR_DIR: str(dump)}
    )
    def add_one(A):
        M = T.const("M")
        A: T.Tensor((M,), T.float32)
        B = T.empty((M,), T.float32)
        with T.Kernel(T.ceildiv(M, 32)) as bx:
            for i in T.Parallel(32):
                B[bx * 32 + i] = A[bx * 32 + i] + 1
        return B

    a = torch.randn(100)
    torch.testing.assert_close(add_one(a), a + 1)
    names = sorted(p.name for p in dump.iterdir())
    assert names[0] == "00_input.py" and any("lower_tile_ops" in n for n in names)
    html = (tmp_path / "trace" / "add_one.c.html").read_text()
    assert "legalize_memory_access" in html and "generated source" in html
