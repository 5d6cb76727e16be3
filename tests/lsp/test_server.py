"""End to end: a pytest-lsp client against `python -m tilelang_lsp --stdio` and the real analysis."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types as t
from lsputil import fixture_text, hints_by_line, inlay_hints, labels_on, line_of, open_doc, wait_diagnostics
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")  # one server for the module: `shared`


def errors(ds):
    return [d for d in ds if d.severity == t.DiagnosticSeverity.Error]


async def test_quickstart_hints(shared: LanguageClient):
    client, tmp_path = shared, shared.root
    uri = open_doc(client, tmp_path, "quickstart.py", as_name="quickstart_hints.py")
    text = fixture_text("quickstart.py")
    ds = await wait_diagnostics(client, uri)
    assert not errors(ds), [d.message for d in ds]
    by_line = hints_by_line(await inlay_hints(client, uri), text)
    a = labels_on(by_line, "A_shared = T.alloc_shared")
    assert "shared.dyn float16[128, 32]" in a
    assert "KiB" in a and "×3" in a  # 8 KiB per stage, three stages
    c = labels_on(by_line, "C_local = T.alloc_fragment")
    assert "fragment float32[128, 128]" in c
    assert "warps" in c and "regs/thread" in c
    k = labels_on(by_line, "with T.Kernel(")
    assert "128 threads" in k and "shared" in k
    assert labels_on(by_line, "T.gemm(A_shared, B_shared, C_local)")  # lowering decision
    assert labels_on(by_line, "T.copy(A[by * block_M")


async def test_flashattention_hints_from_call_site(shared: LanguageClient):
    client, tmp_path = shared, shared.root
    uri = open_doc(client, tmp_path, "flashattn.py", as_name="flashattention_hints_from_call_site.py")
    text = fixture_text("flashattn.py")
    ds = await wait_diagnostics(client, uri)
    # 128×128 tiles with 128 threads may legitimately raise register pressure; nothing else
    assert not [d for d in errors(ds) if d.code != "reg-pressure"], [d.message for d in ds]
    by_line = hints_by_line(await inlay_hints(client, uri), text)
    # block_M=128, block_N=128, dim=128 come from `flashattn(8, 32, 4096, 128, False, block_M=128, block_N=128)`
    assert "shared.dyn float16[128, 128]" in labels_on(by_line, "Q_shared = T.alloc_shared")
    assert "fragment float32[128, 128]" in labels_on(by_line, "acc_s = T.alloc_fragment")
    assert "fragment float16[128, 128]" in labels_on(by_line, "acc_s_cast = T.alloc_fragment")
    assert "fragment float32[128]" in labels_on(by_line, "scores_max = T.alloc_fragment")
    assert "128 threads" in labels_on(by_line, "with T.Kernel(")


async def test_oversized_gemm_overflows(shared: LanguageClient):
    client, tmp_path = shared, shared.root
    uri = open_doc(client, tmp_path, "oversized.py", as_name="oversized_gemm_overflows.py")
    ds = await wait_diagnostics(client, uri, lambda ds: len(ds) > 0)
    codes = {d.code for d in ds}
    assert "smem-overflow" in codes, [(d.code, d.message) for d in ds]
    assert "reg-pressure" in codes, [(d.code, d.message) for d in ds]
    smem = next(d for d in ds if d.code == "smem-overflow")
    assert smem.severity == t.DiagnosticSeverity.Error and smem.source == "tilelang"


async def test_reduce_shape_error_at_its_line(shared: LanguageClient):
    client, tmp_path = shared, shared.root
    uri = open_doc(client, tmp_path, "reduce_error.py", as_name="reduce_shape_error_at_its_line.py")
    text = fixture_text("reduce_error.py")
    ds = await wait_diagnostics(client, uri, lambda ds: any(d.code == "dsl-error" for d in ds))
    d = next(d for d in ds if d.code == "dsl-error")
    assert d.range.start.line == line_of(text, "T.reduce_sum(")
    assert d.severity == t.DiagnosticSeverity.Error


async def test_syntax_error_reported_then_cleared(shared: LanguageClient):
    client, tmp_path = shared, shared.root
    uri = open_doc(client, tmp_path, "quickstart.py", as_name="syntax_error_reported_then_cleared.py")
    text = fixture_text("quickstart.py")
    await wait_diagnostics(client, uri)
    line = line_of(text, "T.clear(C_local)")
    broken = t.TextDocumentContentChangePartial(
        range=t.Range(start=t.Position(line=line, character=0), end=t.Position(line=line, character=0)),
        text="        x = (\n",
    )
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=2), content_changes=[broken]
        )
    )
    ds = await wait_diagnostics(client, uri, lambda ds: any(d.code == "syntax" for d in ds))
    assert len(ds) == 1 and ds[0].severity == t.DiagnosticSeverity.Error
    hints = await inlay_hints(client, uri)  # never an error while the file does not parse
    assert isinstance(hints, list)
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    ds = await wait_diagnostics(client, uri, lambda ds: not any(d.code == "syntax" for d in ds))
    assert not errors(ds)


async def test_hover_buffer_and_kernel(shared: LanguageClient):
    client, tmp_path = shared, shared.root
    uri = open_doc(client, tmp_path, "quickstart.py", as_name="hover_buffer_and_kernel.py")
    text = fixture_text("quickstart.py")
    await wait_diagnostics(client, uri)

    async def hover(needle: str, word: str) -> str:
        line = line_of(text, needle)
        col = text.splitlines()[line].index(word) + 1
        h = await client.text_document_hover_async(
            t.HoverParams(
                text_document=t.TextDocumentIdentifier(uri=uri), position=t.Position(line=line, character=col)
            )
        )
        assert h is not None, f"no hover on {word}"
        return h.contents.value

    a = await hover("A_shared = T.alloc_shared", "A_shared")
    assert "A_shared" in a and "float16[128, 32]" in a and "8 KiB" in a
    use = await hover("T.gemm(A_shared", "C_local")  # a use, not the allocation
    assert "float32[128, 128]" in use
    k = await hover("with T.Kernel(", "Kernel")
    assert "occupancy" in k and "limited by" in k


async def test_code_actions_and_compile_command(shared: LanguageClient):
    client, tmp_path = shared, shared.root
    uri = open_doc(client, tmp_path, "quickstart.py", as_name="code_actions_and_compile_command.py")
    text = fixture_text("quickstart.py")
    line = line_of(text, "T.gemm(")
    acts = await client.text_document_code_action_async(
        t.CodeActionParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            range=t.Range(start=t.Position(line=line, character=8), end=t.Position(line=line, character=8)),
            context=t.CodeActionContext(diagnostics=[]),
        )
    )
    cmds = {a.command.command: a for a in acts or [] if a.command}
    assert set(cmds) == {
        "tilelang.showGeneratedSource",
        "tilelang.benchmarkKernel",
        "tilelang.showLoweringTrace",
        "tilelang.copyTileOpSource",  # the cursor is on a tile op (test_navigation.py runs it)
    }
    assert list(cmds["tilelang.showGeneratedSource"].command.arguments) == [uri, "matmul"]
    outside = await client.text_document_code_action_async(
        t.CodeActionParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            range=t.Range(start=t.Position(line=0, character=0), end=t.Position(line=0, character=0)),
            context=t.CodeActionContext(diagnostics=[]),
        )
    )
    assert not outside

    res = await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="tilelang.showGeneratedSource", arguments=[uri, "matmul"])
    )
    assert "error" not in res, res
    dumped = tmp_path / ".tilelang" / "dump" / "code_actions_and_compile_command.matmul.cu"
    assert Path(res["path"]) == dumped and dumped.stat().st_size > 0
    assert dumped.as_uri() in [d.uri for d in client.shown_documents]
    if res["ptxas"]:  # nvcc was found: registers / spills / shared memory appear on the kernel line
        by_line = hints_by_line(await inlay_hints(client, uri), text)
        assert "ptxas: " in labels_on(by_line, "with T.Kernel(")


async def test_benchmark_reports_progress(shared: LanguageClient):
    client, tmp_path = shared, shared.root
    text = (
        fixture_text("quickstart.py")
        .replace("M = N = K = 1024", "M = N = K = 128")
        .replace("block_M=128", "block_M=64")
    )
    uri = open_doc(client, tmp_path, "quickstart.py", text, as_name="benchmark_reports_progress.py")
    res = await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="tilelang.benchmarkKernel", arguments=[uri, "matmul"])
    )
    assert "error" not in res, res
    assert res["latency_ms"] > 0
    (reports,) = [r for r in client.progress_reports.values() if "Benchmarking matmul" in getattr(r[0], "title", "")]
    kinds = [type(r).__name__ for r in reports]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    assert "WorkDoneProgressReport" in kinds
    assert any("matmul: " in m.message and " ms" in m.message for m in client.messages)
    hints = hints_by_line(await inlay_hints(client, uri), text)
    assert "ms" in labels_on(hints, "with T.Kernel(")


async def test_unwritten_parameter_gets_an_assumed_value_shown_on_the_def_line(shared: LanguageClient):
    client, tmp_path = shared, shared.root
    text = fixture_text("quickstart.py").replace("block_M=128, ", "")
    uri = open_doc(client, tmp_path, "quickstart.py", text, as_name="unresolved_parameter_shown_symbolically.py")
    await wait_diagnostics(client, uri)
    by_line = hints_by_line(await inlay_hints(client, uri), text)
    a = labels_on(by_line, "A_shared = T.alloc_shared")
    assert "float16[128, 32]" in a and "unresolved" not in a
    assert "assuming block_M=128" in labels_on(by_line, "def matmul(")
    line = line_of(text, "def matmul(")
    h = await client.text_document_hover_async(
        t.HoverParams(text_document=t.TextDocumentIdentifier(uri=uri), position=t.Position(line=line, character=6))
    )
    assert "block_K = 32" in h.contents.value and "block_M = 128` (assumed)" in h.contents.value


async def test_benchmark_cancel_kills_the_job(shared: LanguageClient):
    client, tmp_path = shared, shared.root
    uri = open_doc(
        client, tmp_path, "hang.py", as_name="benchmark_cancel_kills_the_job.py"
    )  # `spins` never finishes tracing
    task = asyncio.ensure_future(
        client.workspace_execute_command_async(
            t.ExecuteCommandParams(command="tilelang.benchmarkKernel", arguments=[uri, "spins"])
        )
    )
    for _ in range(200):
        if any("spins" in getattr(r[0], "title", "") for r in client.progress_reports.values()):
            break
        await asyncio.sleep(0.05)
    (token,) = [k for k, r in client.progress_reports.items() if "spins" in getattr(r[0], "title", "")]
    client.window_work_done_progress_cancel(t.WorkDoneProgressCancelParams(token=token))
    res = await asyncio.wait_for(task, 10)
    assert res == {"error": "cancelled"}
    assert type(client.progress_reports[token][-1]).__name__ == "WorkDoneProgressEnd"
