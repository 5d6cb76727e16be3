"""Helpers shared by the language-server tests."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from pathlib import Path

from lsprotocol import types as t
from pytest_lsp import LanguageClient

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]
# `TILELANG_LSP_TEST_SERVER` (a shell-style command) replaces the server command, e.g. an installed `tilelang-lsp`
SERVER = shlex.split(os.environ.get("TILELANG_LSP_TEST_SERVER", "")) or [
    sys.executable,
    "-m",
    "tilelang_lsp",
    "--stdio",
]


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def open_doc(client: LanguageClient, root: Path, name: str, text: str | None = None, as_name: str | None = None) -> str:
    """Write a fixture (or `text`) into the workspace as `as_name` and open it; returns its uri."""
    path = root / (as_name or name)
    path.write_text(text if text is not None else fixture_text(name), encoding="utf-8")
    uri = path.as_uri()
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(
            text_document=t.TextDocumentItem(uri=uri, language_id="python", version=1, text=path.read_text("utf-8"))
        )
    )
    return uri


async def wait_diagnostics(client: LanguageClient, uri: str, pred=lambda ds: True, timeout: float = 30.0):
    """Wait until the diagnostics published for `uri` satisfy `pred`; return them."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if uri in client.diagnostics and pred(list(client.diagnostics[uri])):
            return list(client.diagnostics[uri])
        left = deadline - loop.time()
        if left <= 0:
            raise AssertionError(f"diagnostics for {uri} never matched; last: {client.diagnostics.get(uri)}")
        try:
            await asyncio.wait_for(client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), left)
        except asyncio.TimeoutError:
            pass


async def inlay_hints(client: LanguageClient, uri: str) -> list[t.InlayHint]:
    got = await client.text_document_inlay_hint_async(
        t.InlayHintParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            range=t.Range(start=t.Position(line=0, character=0), end=t.Position(line=10_000, character=0)),
        )
    )
    return list(got or [])


def hints_by_line(hints: list[t.InlayHint], text: str) -> dict[str, list[str]]:
    """{source line stripped: [labels]} — easier to assert on than positions."""
    lines = text.splitlines()
    out: dict[str, list[str]] = {}
    for h in hints:
        label = h.label if isinstance(h.label, str) else "".join(p.value for p in h.label)
        out.setdefault(lines[h.position.line].strip(), []).append(label)
    return out


def line_of(text: str, needle: str) -> int:
    """0-based index of the first line containing `needle`."""
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


def labels_on(by_line: dict[str, list[str]], needle: str) -> str:
    """All hint labels on source lines containing `needle`, joined."""
    return " | ".join(label for line, labels in by_line.items() if needle in line for label in labels)
