"""Fixtures for the language-server tests: a pytest-lsp client per test (see lsputil.SERVER)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Union

import pytest_lsp
from lsprotocol import types as t
from lsputil import REPO, SERVER
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

CONFIG = ClientServerConfig(server_command=SERVER, server_env={**os.environ, "PYTHONPATH": str(REPO)})


def prepare(lsp_client: LanguageClient) -> None:
    @lsp_client.feature(t.CLIENT_REGISTER_CAPABILITY)
    def _register(params: t.RegistrationParams):
        return None

    # lsprotocol 2025.0.0 decodes a CodeAction carrying `command` as a Command (see lsp_notes.md)
    conv = lsp_client.protocol._converter
    conv.register_structure_hook(
        Union[t.Command, t.CodeAction],  # noqa: UP007 - must be the same object lsprotocol registered
        lambda o, _: conv.structure(o, t.Command if isinstance(o.get("command"), str) else t.CodeAction),
    )


async def start(lsp_client: LanguageClient, caps: str, root: Path, options: dict | None = None) -> None:
    prepare(lsp_client)
    await lsp_client.initialize_session(
        t.InitializeParams(
            capabilities=client_capabilities(caps),
            root_uri=root.as_uri(),
            workspace_folders=[t.WorkspaceFolder(uri=root.as_uri(), name="ws")],
            initialization_options=options,
        )
    )


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient, tmp_path: Path):
    """A VS Code-like client whose workspace is a fresh temporary folder."""
    lsp_client.set_configuration({"target": "sm_90a"}, section="tilelang")
    await start(lsp_client, "visual-studio-code", tmp_path, {"tilelang": {"analysis": {"timeoutMs": 5000}}})
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def shared(lsp_client: LanguageClient, tmp_path_factory):
    """One VS Code-like server for a whole module (tests must open uniquely named files)."""
    root = tmp_path_factory.mktemp("ws")
    lsp_client.root = root
    await start(lsp_client, "visual-studio-code", root, {"tilelang": {"analysis": {"timeoutMs": 5000}}})
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def metal(lsp_client: LanguageClient, tmp_path_factory):
    """One VS Code-like server with `tilelang.target = "metal"` for a whole module (test_metal_target.py)."""
    root = tmp_path_factory.mktemp("ws")
    lsp_client.root = root
    lsp_client.set_configuration({"target": "metal"}, section="tilelang")
    await start(
        lsp_client, "visual-studio-code", root, {"tilelang": {"target": "metal", "analysis": {"timeoutMs": 8000}}}
    )
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def nvim07(lsp_client: LanguageClient, tmp_path: Path):
    """Neovim 0.7's capabilities: no showDocument, no workspace/configuration (settings via init options)."""
    options = {"tilelang": {"target": "c", "analysis": {"timeoutMs": 5000}}}
    await start(lsp_client, "neovim@v0.7.0", tmp_path, options)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def strict_client(lsp_client: LanguageClient, tmp_path: Path):
    """A VS Code-like client with a 1 s analysis time limit."""
    await start(lsp_client, "visual-studio-code", tmp_path, {"tilelang": {"analysis": {"timeoutMs": 1000}}})
    yield
    await lsp_client.shutdown_session()


# -- test_real_files.py: one server per fixture, for the whole module ------------------------------
@pytest_lsp.fixture(config=CONFIG, scope="module")
async def real(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("real")
    lsp_client.root = root
    await start(lsp_client, "visual-studio-code", root, {"tilelang": {"analysis": {"timeoutMs": 20000}}})
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def workspace_trust(lsp_client: LanguageClient, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("workspace_trust")
    opts = {"tilelang": {"analysis": {"timeoutMs": 20000, "trust": "workspace"}}}
    await start(lsp_client, "visual-studio-code", tmp_path, opts)
    lsp_client.root = tmp_path
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def no_trust(lsp_client: LanguageClient, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("no_trust")
    await start(lsp_client, "visual-studio-code", tmp_path, {"tilelang": {"analysis": {"trust": "none"}}})
    lsp_client.root = tmp_path
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def strict(lsp_client: LanguageClient, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("strict")
    await start(lsp_client, "visual-studio-code", tmp_path, {"tilelang": {"analysis": {"timeoutMs": 3000}}})
    lsp_client.root = tmp_path
    yield
    await lsp_client.shutdown_session()
