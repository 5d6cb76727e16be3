"""The server keeps answering: random edits, kernels that hang, crash or raise at trace time."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest
from lsprotocol import types as t
from lsputil import fixture_text, hints_by_line, inlay_hints, labels_on, line_of, open_doc, wait_diagnostics
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio


def _edit(text: str, rng: random.Random) -> tuple[str, t.TextDocumentContentChangePartial]:
    """A random one-character edit; most of them retype a digit, which keeps the file valid
    Python but gives the kernel odd sizes (so the analysis itself gets exercised)."""
    lines = text.split("\n")
    digits = [(i, j) for i, s in enumerate(lines) for j, c in enumerate(s) if c.isdigit()]
    if digits and rng.random() < 0.8:
        line, col = rng.choice(digits)
        ch = rng.choice("0123456789")
        lines[line] = lines[line][:col] + ch + lines[line][col + 1 :]
        rng_ = t.Range(start=t.Position(line=line, character=col), end=t.Position(line=line, character=col + 1))
        return "\n".join(lines), t.TextDocumentContentChangePartial(range=rng_, text=ch)
    line = rng.randrange(len(lines))
    col = rng.randrange(len(lines[line]) + 1)
    if rng.random() < 0.5 and col < len(lines[line]):
        new = lines[line][:col] + lines[line][col + 1 :]
        end, ins = t.Position(line=line, character=col + 1), ""
    else:
        ins = rng.choice("abcxyzMNK0123456789_ ()[],.:=+-*\n")
        new = lines[line][:col] + ins + lines[line][col:]
        end = t.Position(line=line, character=col)
    change = t.TextDocumentContentChangePartial(
        range=t.Range(start=t.Position(line=line, character=col), end=end), text=ins
    )
    lines[line] = new
    return "\n".join(lines), change


async def test_500_random_edits(client: LanguageClient, tmp_path: Path):
    original = fixture_text("quickstart.py")
    uri = open_doc(client, tmp_path, "quickstart.py")
    await wait_diagnostics(client, uri)
    rng = random.Random(1234)
    text, pending = original, []
    for version in range(2, 502):
        if version % 10 == 5:  # start over now and then, so most versions still parse and get analysed
            text, change = original, t.TextDocumentContentChangeWholeDocument(text=original)
        else:
            text, change = _edit(text, rng)
        client.text_document_did_change(
            t.DidChangeTextDocumentParams(
                text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change]
            )
        )
        if version % 10 == 0:
            pending.append(asyncio.ensure_future(inlay_hints(client, uri)))
            pos = t.Position(line=rng.randrange(40), character=rng.randrange(20))
            hover = t.HoverParams(text_document=t.TextDocumentIdentifier(uri=uri), position=pos)
            pending.append(asyncio.ensure_future(client.text_document_hover_async(hover)))
            await asyncio.sleep(0.02 if version % 20 else 0.3)  # sometimes long enough for a pass to finish
    answers = await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), 120)
    failures = [a for a in answers if isinstance(a, BaseException)]
    assert not failures, failures[:3]
    assert len(answers) == 100
    # the server still works: restore the file and get the right hints back
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=600),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=original)],
        )
    )
    by_line = hints_by_line(await inlay_hints(client, uri), original)
    assert "float16[128, 32]" in labels_on(by_line, "A_shared = T.alloc_shared")


async def test_hanging_kernel_times_out_others_still_hinted(strict_client: LanguageClient, tmp_path: Path):
    client = strict_client
    text = fixture_text("hang.py")
    await wait_diagnostics(client, open_doc(client, tmp_path, "quickstart.py"))  # the worker is warm now
    start = time.monotonic()
    uri = open_doc(client, tmp_path, "hang.py")
    ds = await wait_diagnostics(client, uri, lambda ds: any(d.code == "timeout" for d in ds), timeout=20)
    elapsed = time.monotonic() - start
    d = next(d for d in ds if d.code == "timeout")
    assert d.range.start.line == line_of(text, "def spins(")
    # the 1 s limit, then `fine` on the warm spare process (no tilelang re-import), then the publish
    assert elapsed < 1.0 + 2.0, elapsed
    by_line = hints_by_line(await inlay_hints(client, uri), text)
    assert "float32[128]" in labels_on(by_line, "tile = T.alloc_shared")
    # editing the healthy kernel does not re-run the hanging one (its timeout is cached)
    line = line_of(text, "def fine(A, block: int = 128)")
    col = text.splitlines()[line].index("128")
    change = t.TextDocumentContentChangePartial(
        range=t.Range(start=t.Position(line=line, character=col), end=t.Position(line=line, character=col + 3)),
        text="64",
    )
    start = time.monotonic()
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=2), content_changes=[change]
        )
    )
    edited = text.replace("def fine(A, block: int = 128)", "def fine(A, block: int = 64)")
    by_line = hints_by_line(await inlay_hints(client, uri), edited)
    assert time.monotonic() - start < 1.0
    assert "float32[64]" in labels_on(by_line, "tile = T.alloc_shared")


async def test_crashing_and_raising_kernels(strict_client: LanguageClient, tmp_path: Path):
    client = strict_client
    text = fixture_text("crash.py")
    uri = open_doc(client, tmp_path, "crash.py")
    ds = await wait_diagnostics(client, uri, lambda ds: len(ds) >= 2, timeout=30)
    crash = [d for d in ds if d.code == "crash" and d.range.start.line == line_of(text, "def dies(")]
    assert crash, [(d.code, d.range.start.line, d.message) for d in ds]
    raised = [d for d in ds if "boom at trace time" in d.message]
    assert raised and line_of(text, "def raises(") <= raised[0].range.start.line <= line_of(
        text, 'raise RuntimeError("boom'
    )
    by_line = hints_by_line(await inlay_hints(client, uri), text)
    assert "float32[128]" in labels_on(by_line, "tile = T.alloc_shared")
    # restartServer answers and the analysis comes back
    res = await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="tilelang.restartServer", arguments=[])
    )
    assert res["pid"] > 0
    assert await inlay_hints(client, uri)
