"""tilelang.autodd: the delta debugger shrinks a planted bug, keeps frozen code, bounds and reaps
every candidate, and says why it cannot start."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tilelang.autodd import AutoDDError, __freeze__, reduce_source
from tilelang.autodd.rewrites import candidates

ROOT = Path(__file__).resolve().parents[2]

PLANTED = textwrap.dedent(
    """
    import math
    import os

    TABLE = [i * i for i in range(10)]
    SCALE = 3


    def unrelated(x):
        y = x + 1
        z = y * 2
        return math.sqrt(z)


    def check(values, limit):
        total = 0
        for v in values:
            total += v
        if total > limit:
            raise ValueError(f"planted failure: total {total} over {limit}")
        return total


    def report(x):
        print("report", x, os.sep)


    report(unrelated(4))
    print(unrelated(SCALE))
    check(TABLE, 100)
    report(1)
    """
)


def _statements(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip())


def test_planted_bug_shrinks_to_a_few_statements():
    result = reduce_source(PLANTED, "planted failure", timeout=20)
    assert "planted failure" in result.source
    assert result.lines <= 6, result.source
    assert result.lines < result.original_lines
    out = subprocess.run([sys.executable, "-c", result.source], capture_output=True, text=True, timeout=60)
    assert "planted failure" in out.stderr


def test_frozen_code_is_kept():
    src = PLANTED.replace("report(1)\n", "with __freeze__:\n    keep_me = 7\nkept = __freeze__(8)\n")
    src = "from tilelang.autodd import __freeze__\n" + src
    result = reduce_source(src, "planted failure", timeout=20)
    assert "keep_me = 7" in result.source and "kept = __freeze__(8)" in result.source


def test_freeze_does_nothing_at_run_time():
    with __freeze__:
        x = __freeze__(5)
    assert x == 5


def test_candidates_are_coarse_first_and_parse():
    cands = list(candidates(PLANTED))
    assert cands, "no candidate"
    import ast

    for c in cands[:50]:
        ast.parse(c)
    # the first candidates drop whole halves of the module
    assert _statements(cands[0]) < _statements(PLANTED) / 2 + 2


def test_hanging_candidates_are_killed_and_the_search_goes_on():
    src = "n = 0\nwhile n < 3:\n    n += 1\nprint('planted hang test')\n"
    result = reduce_source(src, "planted hang test", timeout=1.5, jobs=2)
    assert result.source.strip() == "print('planted hang test')"


def test_subproc_backend():
    src = "a = 1\nb = 2\nprint('x' * 3, 'planted')\nc = 3\n"
    result = reduce_source(src, "planted", backend="subproc", timeout=30)
    assert result.lines == 1


def test_original_without_the_message_is_an_error():
    with pytest.raises(AutoDDError, match="does not contain"):
        reduce_source("print('fine')\n", "planted", timeout=20)
    with pytest.raises(AutoDDError, match="does not parse"):
        reduce_source("def (:\n", "x", timeout=20)
    with pytest.raises(AutoDDError, match="time limit"):
        reduce_source("while True:\n    pass\n", "x", timeout=1)


def test_command_line_on_a_tilelang_program(tmp_path):
    """The public command line on a GEMM with a wrong B_shared shape: the reduced program keeps
    the gemm and its three buffers and still shows the error."""
    out = tmp_path / "minimized.py"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "tilelang.autodd", str(ROOT / "docs/debugging/autodd_buggy.py")]
        + ["--err-msg", "gemm operand shapes disagree", "-o", str(out), "-j", "2", "--timeout", "30"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = out.read_text()
    assert "T.gemm(A_shared, B_shared, C_local)" in text
    assert _statements(text) <= 25 and "reference" not in text and "describe" not in text
    rerun = subprocess.run([sys.executable, str(out)], capture_output=True, text=True, env=env, timeout=120)
    assert "gemm operand shapes disagree" in rerun.stderr


def test_command_line_errors(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    ok = tmp_path / "ok.py"
    ok.write_text("print('fine')\n")
    proc = subprocess.run(
        [sys.executable, "-m", "tilelang.autodd", str(ok), "--err-msg", "boom", "-o", str(tmp_path / "o.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1 and "does not contain 'boom'" in proc.stderr
    assert not (tmp_path / "o.py").exists()
