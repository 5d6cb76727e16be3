"""Lowering traces on every target (TL_LOWER_TRACE, tools.lower_trace) and pass timing."""

import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.tools.lower_trace import generated_line_sources, lower_trace
from tilelang.tools.pass_timing import pass_timing
from tilelang.transform.simplify import simplify
from tilelang.transform.verify import verify

ROOT = Path(__file__).resolve().parents[2]
VOID = {"meta", "br", "img", "hr", "input", "link"}


class _Checker(HTMLParser):
    """Well-formedness: every element closed in order; collects data-l of the generated lines."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        d = dict(attrs)
        if "id" in d:
            self.ids.add(d["id"])
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
        else:
            self.stack.pop()


def _check_html(text: str) -> _Checker:
    c = _Checker()
    c.feed(text)
    c.close()
    assert not c.errors and not c.stack, (c.errors[:5], c.stack[:5])
    return c


def scale_rows(M, N, block=32):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(M, block), threads=64) as bx:
            S = T.alloc_shared((block, N), T.float32)
            T.copy(A[bx * block, 0], S)
            for i, j in T.Parallel(block, N):
                S[i, j] = S[i, j] * 2.5 + 1  # the traced line
            T.copy(S, B[bx * block, 0])

    return main


TRACED_LINE = next(
    i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1) if "# the traced line" in line
)


def _lines_for(page: str, n: int) -> list[str]:
    import html as html_mod
    import re

    return [
        html_mod.unescape(m)
        for m in re.findall(rf"<div class='l' data-l='{n}'>(?:<span class='n'>\d+</span>)?(.*?)</div>", page)
    ]


@pytest.mark.parametrize("target", ["c", "sm_80", "sm_90a"])
def test_trace_page_every_pass_and_source_mapping(tmp_path, monkeypatch, target):
    monkeypatch.setenv("TL_LOWER_TRACE", "1")
    monkeypatch.setenv("TL_LOWER_TRACE_DIR", str(tmp_path / "trace"))
    dump = tmp_path / "dump"
    cfg = {"tl.enable_dump_ir": True, "tl.dump_ir_path": str(dump)}
    art = tilelang.lower(scale_rows(70, 33), target=target, pass_configs=cfg, enable_device_compile=False)
    name = "c" if target == "c" else "cuda"  # one page per kernel and target kind
    page = (tmp_path / "trace" / f"main.{name}.html").read_text()
    _check_html(page)
    passes = [p.stem.split("_", 1)[1] for p in sorted(dump.iterdir())]
    assert len(passes) > 5
    for p in passes:
        assert f". {p} — " in page, p
    # the traced source line maps to IR lines of several stages and to generated-source lines
    hits = _lines_for(page, TRACED_LINE)
    assert any("2.5" in h for h in hits), hits[:5]
    gen = art.kernel_source.splitlines()
    src_map = generated_line_sources(art.kernel_source, __file__)
    mapped = [gen[i] for i, n in enumerate(src_map) if n == TRACED_LINE]
    assert any("2.5" in line for line in mapped), mapped
    assert "id='generated'" in page


_LOWER_ONCE = (
    f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
    "from test_lower_trace import scale_rows\n"
    "import tilelang\n"
    "tilelang.lower(scale_rows(40, 20), target='c', enable_device_compile=False)\n"
)


def test_terminal_trace_prints_diffs(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), TL_LOWER_TRACE="terminal", TILELANG_DISABLE_CACHE="1")
    code = _LOWER_ONCE
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "===== 0. input" in proc.stderr and "@@" in proc.stderr and "===== generated source =====" in proc.stderr


def test_programmatic_lower_trace(tmp_path):
    func = scale_rows(70, 33)
    out = tmp_path / "report.html"
    records = lower_trace(func, [verify, ("simplify", simplify)], mode="both", html_path=str(out))
    assert [r["name"] for r in records] == ["verify", "simplify"]
    assert all({"ms", "changed", "diff", "ir"} <= set(r) for r in records)
    _check_html(out.read_text())
    with pytest.raises(TypeError, match="prim_func"):
        lower_trace(object(), [verify])
    with pytest.raises(ValueError, match="mode"):
        lower_trace(func, verify, mode="pdf")


def test_pass_timing_collects_every_compile(monkeypatch):
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")

    @tilelang.jit(out_idx=[-1], target="c")
    def factory(M, N):
        return scale_rows(M, N)

    with pass_timing(report=False) as timing:
        k = factory(37, 19)
    a = torch.randn(37, 19)
    torch.testing.assert_close(k(a), a * 2.5 + 1)
    rows = timing.slowest(3)
    assert rows and rows[0][2] >= rows[-1][2] and rows[0][1] == "c"
    assert "pass timing" in timing.report()


def test_pass_timing_env(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), TL_PASS_TIMING="1", TILELANG_DISABLE_CACHE="1")
    code = _LOWER_ONCE
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "pass timing (main, c)" in proc.stderr


def test_editor_trace_action_is_the_page():
    """The language server's "Show lowering trace" writes this page (analysis.lowering_trace)."""
    from tilelang.analysis import lowering_trace

    path = ROOT / "examples" / "quickstart.py"
    sizes = {"M": 1024, "N": 1024, "K": 1024, "block_M": 128, "block_N": 128, "block_K": 32}
    gen = lowering_trace(path.read_text(), str(path), "matmul", "sm_90a", sizes)
    assert gen.language == "html" and gen.extension == "trace.html"
    _check_html(gen.text)
    assert ". infer_layout — " in gen.text and "id='generated'" in gen.text and "quickstart.py" in gen.text
