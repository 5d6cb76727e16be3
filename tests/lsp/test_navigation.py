"""End to end (pytest-lsp): definition, hover, completion and signature help for T.* names,
pass_configs keys, the source-editing quick fixes applied and re-analysed, and the tile-op
source command. Plus unit tests of the name resolution on text that does not parse."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as t
from lsputil import fixture_text, line_of, open_doc, wait_diagnostics
from pytest_lsp import LanguageClient

from tilelang_lsp.navigation import Navigator, import_aliases
from tilelang_lsp.tileop_source import segments

REPO = Path(__file__).resolve().parents[2]

ALIASES = """import tilelang as tl
from tilelang import language as L
import tilelang.language as T
from tilelang.language import gemm as G

@tl.jit(pass_configs={"tl.disable_tma_lower": True, })
def k(A, B, C, block_K: int = 32):
    with T.Kernel(8, threads=128) as bx:
        tl.language.copy(A, B)
        L.copy(A, B)
        G(A, B, C)
        T.Pipelined(4, num_stages=
"""


def pos(text: str, needle: str, word: str, offset: int = 1) -> t.Position:
    line = line_of(text, needle)
    return t.Position(line=line, character=text.splitlines()[line].index(word) + offset)


def at_end(text: str, needle: str) -> t.Position:
    line = line_of(text, needle)
    return t.Position(line=line, character=len(text.splitlines()[line]))


def test_import_forms_resolve_to_the_package_source():
    nav = Navigator()
    assert import_aliases(ALIASES) == {
        "tl": "tilelang", "L": "tilelang.language", "T": "tilelang.language", "G": "tilelang.language.gemm",
    }  # fmt: skip
    ops = str(REPO / "tilelang" / "language" / "ops.py")
    lines = ALIASES.splitlines()
    for needle, word in (("tl.language.copy", "copy"), ("L.copy", "copy"), ("G(A", "G")):
        line = line_of(ALIASES, needle)
        col = lines[line].index(word) + 1
        path, dline, _, _ = nav.definition(ALIASES, line, col)
        assert path == ops, (needle, path)
        name = "gemm" if word == "G" else "copy"
        assert (REPO / "tilelang/language/ops.py").read_text().splitlines()[dline].startswith(f"def {name}(")
    # the file does not parse (the last line is unfinished): the imports are still read
    kernel = nav.definition(ALIASES, line_of(ALIASES, "T.Kernel"), lines[line_of(ALIASES, "T.Kernel")].index("Kernel"))
    assert kernel[0].endswith("language/kernel.py")
    jit = nav.definition(ALIASES, line_of(ALIASES, "@tl.jit"), 5)
    assert jit[0].endswith("jit/jit.py")


def test_every_public_builder_has_a_one_line_summary():
    members = Navigator().index.members("tilelang.language")
    builders = [n for n, s in members.items() if s.callable and s.qualname.startswith("tilelang.language.")]
    assert len(builders) > 100
    missing = [n for n in builders if not members[n].summary and n not in ("binary", "select")]
    assert not missing, missing


def test_generated_source_segments():
    gen = (REPO / "tests/cuda/golden/gemm_64x64x32_2stages.cu").read_text()
    runs = segments(gen, "kernels.py", 28, 28)  # the A copy: prologue and steady state
    assert len(runs) == 2 and all(r[0].strip() == "// kernels.py:28" for r in runs)
    assert all("tma_load(&A_tmap" in "\n".join(r) for r in runs)
    assert not any("B_tmap" in "\n".join(r) for r in runs)
    assert segments(gen, "other.py", 28, 28) == []


@pytest.mark.asyncio
async def test_definition_hover_completion_signature(client: LanguageClient, tmp_path: Path):
    text = fixture_text("quickstart.py")
    uri = open_doc(client, tmp_path, "quickstart.py")
    doc = t.TextDocumentIdentifier(uri=uri)
    loc = await client.text_document_definition_async(
        t.DefinitionParams(text_document=doc, position=pos(text, "T.gemm(A_shared", "gemm"))
    )
    assert loc.uri == (REPO / "tilelang" / "language" / "ops.py").as_uri()
    assert (REPO / "tilelang/language/ops.py").read_text().splitlines()[loc.range.start.line].startswith("def gemm(")

    h = await client.text_document_hover_async(
        t.HoverParams(text_document=doc, position=pos(text, "T.copy(A[by", "copy"))
    )
    assert "def copy(src" in h.contents.value and "Copy a tile from `src` to `dst`" in h.contents.value
    h = await client.text_document_hover_async(
        t.HoverParams(text_document=doc, position=pos(text, "with T.Kernel(", "Kernel"))
    )
    assert "occupancy" in h.contents.value and "class Kernel(*blocks" in h.contents.value  # both kinds of hover

    # completion of `T.` on a new line inside the kernel
    edited = text.replace("        T.clear(C_local)\n", "        T.clear(C_local)\n        T.Pip\n")
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=edited)],
        )
    )
    got = await client.text_document_completion_async(
        t.CompletionParams(text_document=doc, position=at_end(edited, "        T.Pip"))
    )
    items = {i.label: i for i in got.items}
    assert {"copy", "gemm", "Kernel", "Pipelined", "alloc_shared", "float16"} <= set(items)
    assert items["Pipelined"].kind == t.CompletionItemKind.Class and "num_stages" in items["Pipelined"].detail
    assert items["copy"].kind == t.CompletionItemKind.Function

    # signature help: the active parameter follows the cursor
    edited2 = edited.replace("        T.Pip\n", "        T.gemm(A_shared, B_shared, \n")
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=edited2)],
        )
    )
    sig = await client.text_document_signature_help_async(
        t.SignatureHelpParams(text_document=doc, position=at_end(edited2, "T.gemm(A_shared, B_shared, \n".strip()))
    )
    s = sig.signatures[0]
    assert s.label.startswith("gemm(A: Any, B: Any, C: Any") and sig.active_parameter == 2
    assert s.parameters[2].label == "C: Any"
    line = line_of(edited2, "with T.Kernel(")
    col = edited2.splitlines()[line].index("threads=") + len("threads=")
    sig = await client.text_document_signature_help_async(
        t.SignatureHelpParams(text_document=doc, position=t.Position(line=line, character=col))
    )
    assert sig.signatures[0].label.startswith("Kernel(*blocks")
    assert sig.signatures[0].parameters[sig.active_parameter].label.startswith("threads")


@pytest.mark.asyncio
async def test_pass_config_key_completion(client: LanguageClient, tmp_path: Path):
    text = fixture_text("quickstart.py").replace("@tilelang.jit\n", '@tilelang.jit(pass_configs={"tl.dis": True})\n')
    uri = open_doc(client, tmp_path, "quickstart.py", text=text, as_name="pc.py")
    p = pos(text, "pass_configs=", "tl.dis", len("tl.dis"))
    got = await client.text_document_completion_async(
        t.CompletionParams(text_document=t.TextDocumentIdentifier(uri=uri), position=p)
    )
    items = {i.label: i for i in got.items}
    tma = items["tl.disable_tma_lower"]
    assert tma.kind == t.CompletionItemKind.Property and "TL_DISABLE_TMA_LOWER" in tma.detail
    assert "cp.async" in tma.documentation.value
    # the edit replaces what was typed inside the quotes
    assert tma.text_edit.new_text == "tl.disable_tma_lower"
    assert tma.text_edit.range.start.character == p.character - len("tl.dis")
    # at a value position there is no key completion
    p2 = pos(text, "pass_configs=", "True", 2)
    got2 = await client.text_document_completion_async(
        t.CompletionParams(text_document=t.TextDocumentIdentifier(uri=uri), position=p2)
    )
    assert not got2 or not any(i.label == "tl.disable_tma_lower" for i in got2.items)


def _apply(text: str, edits: list[t.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        a = offsets[e.range.start.line] + e.range.start.character
        b = offsets[e.range.end.line] + e.range.end.character
        text = text[:a] + e.new_text + text[b:]
    return text


async def _fixes(client, uri: str, diag: t.Diagnostic) -> list[t.CodeAction]:
    acts = await client.text_document_code_action_async(
        t.CodeActionParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            range=diag.range,
            context=t.CodeActionContext(diagnostics=[diag], only=[t.CodeActionKind.QuickFix]),
        )
    )
    return [a for a in acts or [] if isinstance(a, t.CodeAction)]


@pytest.mark.asyncio
async def test_quick_fixes_applied_then_reanalysed(client: LanguageClient, tmp_path: Path):
    text = fixture_text("oversized.py")
    uri = open_doc(client, tmp_path, "oversized.py")
    ds = await wait_diagnostics(client, uri, lambda ds: any(d.code == "smem-overflow" for d in ds))
    smem = next(d for d in ds if d.code == "smem-overflow")
    acts = await _fixes(client, uri, smem)
    titles = [a.title for a in acts]
    assert titles[0].startswith("use num_stages=1 ") and titles[1].startswith("use block_K=32 "), titles
    assert acts[0].is_preferred and acts[0].kind == t.CodeActionKind.QuickFix
    for version, act in enumerate(acts, start=2):
        (change,) = act.edit.document_changes
        new = _apply(text, list(change.edits))
        assert new.count("\n") == text.count("\n") and "# tilelang: M=4096, N=4096, K=4096" in new
        client.text_document_did_change(
            t.DidChangeTextDocumentParams(
                text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[t.TextDocumentContentChangeWholeDocument(text=new)],
            )
        )
        await wait_diagnostics(client, uri, lambda ds: not any(d.code == "smem-overflow" for d in ds))
    # register pressure: the nearest tile/threads change
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=10),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    ds = await wait_diagnostics(client, uri, lambda ds: any(d.code == "reg-pressure" for d in ds))
    acts = await _fixes(client, uri, next(d for d in ds if d.code == "reg-pressure"))
    assert len(acts) == 1 and acts[0].title.startswith("use block_N=64"), [a.title for a in acts]
    new = _apply(text, list(acts[0].edit.document_changes[0].edits))
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=11),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=new)],
        )
    )
    await wait_diagnostics(client, uri, lambda ds: not any(d.code == "reg-pressure" for d in ds))


@pytest.mark.asyncio
async def test_copy_generated_source_of_a_tile_op(client: LanguageClient, tmp_path: Path):
    text = fixture_text("quickstart.py")
    uri = open_doc(client, tmp_path, "quickstart.py", as_name="tileop.py")
    await wait_diagnostics(client, uri)
    line = line_of(text, "T.gemm(A_shared")
    acts = await client.text_document_code_action_async(
        t.CodeActionParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            range=t.Range(start=t.Position(line=line, character=12), end=t.Position(line=line, character=12)),
            context=t.CodeActionContext(diagnostics=[]),
        )
    )
    (copy,) = [a for a in acts if a.command and a.command.command == "tilelang.copyTileOpSource"]
    assert copy.title.startswith("Copy generated source of this tile op (T.gemm")
    assert list(copy.command.arguments) == [uri, "matmul", line + 1, line + 1]
    res = await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command=copy.command.command, arguments=[*copy.command.arguments, True])
    )
    assert "error" not in res, res
    assert res["text"].splitlines()[0].strip() == f"// tileop.py:{line + 1}"
    assert "gemm" in res["text"] and res["language"] == "cuda"
    assert f"// tileop.py:{line}\n" not in res["text"]  # only this op's lines
