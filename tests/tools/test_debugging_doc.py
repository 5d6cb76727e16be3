"""docs/debugging.md's case holds: the planted FlashAttention bug shows only past one key block,
the fix matches, and the generated line under the bug's marker is the one the page quotes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "docs" / "debugging" / "fa_mismatch.py"


@pytest.mark.parametrize(
    "args, verdict", [(["--seq-len", "64"], "(match)"), ([], "(MISMATCH)"), (["--fixed"], "(match)")]
)
def test_the_case_as_the_page_tells_it(args, verdict):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(CASE), *args], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert verdict in proc.stdout


def test_the_quoted_generated_line():
    sys.path.insert(0, str(CASE.parent))
    from fa_mismatch import flashattn

    import tilelang

    doc = (ROOT / "docs" / "debugging.md").read_text()
    bug_line = next(i for i, line in enumerate(CASE.read_text().splitlines(), 1) if "# the bug: the softmax" in line)
    assert f"fa_mismatch.py:{bug_line}" in doc and f"#line={bug_line}" in doc
    art = tilelang.lower(flashattn.get_tir(1, 2, 200, 64), target="sm_90a", enable_device_compile=False)
    lines = art.kernel_source.splitlines()
    at = lines.index(f"      // fa_mismatch.py:{bug_line}")
    assert lines[at + 1].strip() == "rescale[c_4] = tl::exp2(m_prev[c_4] - m[c_4]);"
    assert "rescale[c_4] = tl::exp2(m_prev[c_4] - m[c_4]);" in doc
