"""'Apply the autotuner's best config': a real tuning run on the CPU backend fills the cache,
the server finds the result by the function's identity and rewrites its defaults; after the
edit the function's bindings are the tuned config and the action is no longer offered."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from conftest import start
from lsprotocol import types as t
from lsputil import REPO, SERVER, line_of, wait_diagnostics
from pytest_lsp import ClientServerConfig, LanguageClient

from tilelang_lsp.bindings import analyze_module

CACHE = Path(tempfile.mkdtemp(prefix="tilelang-tuned-"))
ENV = {**os.environ, "PYTHONPATH": str(REPO), "TILELANG_CACHE_DIR": str(CACHE)}

KERNEL = """import tilelang
import tilelang.language as T

CONFIGS = [dict(block_M=32, block_N=64, threads=128), dict(block_M=64, block_N=32, threads=64)]


@tilelang.autotune(configs=CONFIGS, warmup=1, rep=3, executor="thread")
@tilelang.jit(out_idx=[-1], target="c")
def add_rows(M, N, block_M=16, block_N=16, threads=32):  # tuned below
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j] + B[
                    by * block_M + i, bx * block_N + j
                ]

    return main


if __name__ == "__main__":
    kernel = add_rows(200, 100)
"""


@pytest.fixture(scope="module", autouse=True)
def _remove_cache():
    yield
    shutil.rmtree(CACHE, ignore_errors=True)


@pytest.fixture
def tuned(tmp_path: Path, monkeypatch):
    """The kernel file, tuned once in this process with the cache the server reads."""
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(CACHE))
    path = tmp_path / "tuned_kernel.py"
    path.write_text(KERNEL, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("tuned_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tuned_kernel"] = mod
    try:
        spec.loader.exec_module(mod)
        mod.add_rows(200, 100)
        res = mod.add_rows.last_result
    finally:
        sys.modules.pop("tuned_kernel", None)
    assert res.cache_key
    return path, res.config


def test_lookup_finds_the_tuned_function_by_its_text(tuned):
    from tilelang.autotuner.lookup import best_config

    path, config = tuned
    text = path.read_text()
    got = best_config(text, str(path), "add_rows")
    assert got is not None and got["config"] == config and got["latency"] > 0
    # another text of the function (edited since) or another file: no result
    assert best_config(text.replace("# tuned below", "# edited"), str(path), "add_rows") is None
    assert best_config(text, str(path), "other_name") is None
    # the same text in another file has the same tuning key, so the same result
    assert best_config(text, str(path.with_name("other.py")), "add_rows")["config"] == config


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=ENV))
async def tuned_client(lsp_client: LanguageClient, tmp_path: Path):
    await start(
        lsp_client, "visual-studio-code", tmp_path, {"tilelang": {"target": "c", "analysis": {"timeoutMs": 5000}}}
    )
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_apply_best_config_then_reanalyse(tuned, tuned_client: LanguageClient):
    client = tuned_client
    path, config = tuned
    text = path.read_text()
    uri = path.as_uri()
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(
            text_document=t.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    await wait_diagnostics(client, uri)

    async def refactors(text: str) -> list[t.CodeAction]:
        line = line_of(text, "def add_rows")
        acts = await client.text_document_code_action_async(
            t.CodeActionParams(
                text_document=t.TextDocumentIdentifier(uri=uri),
                range=t.Range(start=t.Position(line=line, character=4), end=t.Position(line=line, character=4)),
                context=t.CodeActionContext(diagnostics=[], only=[t.CodeActionKind.Refactor]),
            )
        )
        return [a for a in acts or [] if a.title.startswith("Apply the autotuner's best config")]

    (act,) = await refactors(text)
    for k, v in config.items():
        assert f"{k}={v!r}" in act.title
    (change,) = act.edit.document_changes
    (edit,) = change.edits
    lines = text.splitlines(keepends=True)
    start = sum(len(x) for x in lines[: edit.range.start.line]) + edit.range.start.character
    end = sum(len(x) for x in lines[: edit.range.end.line]) + edit.range.end.character
    new = text[:start] + edit.new_text + text[end:]
    expected = ", ".join(f"{k}={config[k]}" for k in ("block_M", "block_N", "threads"))
    assert f"def add_rows(M, N, {expected}):  # tuned below" in new
    fn = analyze_module(new)[0]
    assert {k: fn.bindings[k] for k in config} == config
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=new)],
        )
    )
    ds = await wait_diagnostics(client, uri, lambda ds: True)
    assert not [d for d in ds if d.severity == t.DiagnosticSeverity.Error], ds
    assert await refactors(new) == []  # the function's text changed: that result is not for it any more
