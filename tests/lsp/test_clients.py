"""End to end with per-test servers: client capability sets and configuration changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as t
from lsputil import fixture_text, hints_by_line, inlay_hints, labels_on, open_doc
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio


async def test_neovim07_capability_gating(nvim07: LanguageClient, tmp_path: Path):
    uri = open_doc(nvim07, tmp_path, "quickstart.py")
    res = await nvim07.workspace_execute_command_async(
        t.ExecuteCommandParams(command="tilelang.showGeneratedSource", arguments=[uri, "matmul"])
    )
    assert "error" not in res, res
    assert res["shown"] is False and Path(res["path"]).exists()
    assert res["path"].endswith("quickstart.matmul.c")  # target "c" came from initializationOptions
    assert not nvim07.shown_documents
    assert any(res["path"] in m.message for m in nvim07.messages)
    hints = await inlay_hints(nvim07, uri)  # the raw request works on 0.7
    assert hints


async def test_settings_toggle_hint_kinds(client: LanguageClient, tmp_path: Path):
    uri = open_doc(client, tmp_path, "quickstart.py")
    text = fixture_text("quickstart.py")
    assert labels_on(hints_by_line(await inlay_hints(client, uri), text), "A_shared = T.alloc_shared")
    client.set_configuration({"inlayHints": {"buffers": False}}, section="tilelang")
    client.workspace_did_change_configuration(t.DidChangeConfigurationParams(settings={}))
    for _ in range(50):  # the server pulls the new value asynchronously
        by_line = hints_by_line(await inlay_hints(client, uri), text)
        if not labels_on(by_line, "A_shared = T.alloc_shared"):
            break
    assert not labels_on(by_line, "A_shared = T.alloc_shared")
    assert labels_on(by_line, "with T.Kernel(")
