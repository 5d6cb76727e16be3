"""Unit tests of the server's pure layers: settings, rendering helpers, cached-location shifting."""

from __future__ import annotations

from tilelang_lsp.bindings import KernelFunction
from tilelang_lsp.config import Settings
from tilelang_lsp.documents import DocResult, FunctionResult, shift_locs
from tilelang_lsp.render import buffer_label, char_col, code_end, diagnostics, fmt_bytes, hints


def test_settings_nested_dotted_and_wrapped():
    s = Settings()
    assert s.update({"tilelang": {"target": "sm_80", "inlayHints": {"ops": False}}}) == {"target", "inlay_hints"}
    assert s.target == "sm_80" and s.inlay_hints == {"buffers": True, "kernel": True, "ops": False}
    assert s.update({"analysis.timeoutMs": 500, "python": "/usr/bin/python3"}) == {"timeout_ms", "python"}
    assert s.update({"analysis": {"timeoutMs": "fast"}, "target": 3}) == set()  # wrong types are ignored
    assert s.update(None) == set() and s.timeout_ms == 500


def test_formatting_helpers():
    assert [fmt_bytes(n) for n in (512, 8192, 12800, 3 << 20, None)] == ["512 B", "8 KiB", "12.5 KiB", "3 MiB", "?"]
    assert code_end('x = f("#not", 1)  # comment') == len('x = f("#not", 1)')
    assert code_end("    y = 2   ") == 9
    line = "s = '数据' + T.alloc(x)"
    assert char_col(line, len("s = '数据' + ".encode())) == len("s = '数据' + ")


def _buf(**kw):
    base = {
        "name": "A_shared", "scope": "shared.dyn", "dtype": "float16", "shape": [128, 32],
        "shape_text": ["block_M", "block_K"], "bytes": 8192, "stages": 3, "layout": "swizzle 64B",
        "layout_detail": "", "regs_per_thread": None, "loc": {"line": 3, "col": 15, "end_line": 3, "end_col": 40},
    }  # fmt: skip
    return {**base, **kw}


def test_buffer_labels():
    assert buffer_label(_buf(), [])[0] == "shared.dyn float16[128, 32] 8 KiB ×3 · swizzle 64B"
    frag = _buf(scope="local.fragment", dtype="float32", shape=[128, 128], bytes=65536, stages=1, layout="4 warps 2×2")
    assert buffer_label(frag, [])[0] == "fragment float32[128, 128] · 4 warps 2×2"
    frag["regs_per_thread"] = 128
    assert buffer_label(frag, [])[0].endswith("· 128 regs/thread")
    label, tip = buffer_label(_buf(shape=[None, 32], bytes=None), ["block_M"])
    assert label.startswith("shared.dyn float16[block_M, 32] ? ×3") and "(block_M unresolved)" in label
    assert "# tilelang: block_M=" in tip


def test_hints_and_multiline_diagnostics_are_placed_on_one_line():
    lines = [
        "def k():",
        "    with T.Kernel(1, threads=128):",
        "        A_shared = T.alloc_shared((128, 32))  # tile",
        "        pass",
    ]
    fn = KernelFunction("k", "jit", 1, 1, 4, [], [], [])
    info = {
        "buffers": [_buf()], "ops": [], "unresolved": [],
        "kernel_loc": {"line": 2, "col": 4, "end_line": 4, "end_col": 12},
        "resources": {"threads": 128, "shared_bytes": 24576, "shared_limit": 232448},
        "diagnostics": [{"severity": "warning", "message": "m", "code": "reg-pressure", "related": [],
                         "loc": {"line": 2, "col": 4, "end_line": 4, "end_col": 12}}],
    }  # fmt: skip
    doc = DocResult(1, functions=[FunctionResult(fn, info)])
    hs = hints(doc, lines, {"buffers": True, "kernel": True, "ops": True}, {"k": ["bench 1.000 ms"]})
    got = {(h.line, h.col, h.label) for h in hs}
    assert (
        2,
        len("        A_shared = T.alloc_shared((128, 32))"),
        "shared.dyn float16[128, 32] 8 KiB ×3 · swizzle 64B",
    ) in got
    assert (1, len(lines[1]), "128 threads · shared 24 KiB / 227 KiB · bench 1.000 ms") in got
    (d,) = diagnostics(doc, lines)
    assert (d.line, d.col, d.end_line, d.end_col) == (1, 4, 1, len(lines[1]))
    only_kernel = hints(doc, lines, {"buffers": False, "kernel": True, "ops": False})
    assert [h.kind for h in only_kernel] == ["kernel"]


def test_shift_locs_moves_every_location():
    info = {"loc": {"line": 5, "col": 0, "end_line": 9, "end_col": 3}, "buffers": [{"loc": {"line": 6, "end_line": 6}}],
            "diagnostics": [{"related": [["x", {"line": 7, "end_line": 8}]]}], "resources": {"threads": 128}}  # fmt: skip
    moved = shift_locs(info, 2)
    assert moved["loc"]["line"] == 7 and moved["loc"]["end_line"] == 11
    assert moved["buffers"][0]["loc"]["line"] == 8 and moved["diagnostics"][0]["related"][0][1]["end_line"] == 10
    assert info["loc"]["line"] == 5 and moved["resources"] == {"threads": 128}
