"""The language server with `tilelang.target = "metal"` (issue 21, item 4): the hints show what
the Metal pipeline decided — the simdgroup_matrix gemm, plain loops for T.Pipelined, the
threadgroup memory the launch requests — and exceeding Metal's 32 KiB is an error at the kernel.
The `metal` server fixture is in conftest.py."""

from __future__ import annotations

import pytest
from lsprotocol import types as t
from lsputil import fixture_text, hints_by_line, inlay_hints, labels_on, open_doc, wait_diagnostics
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_quickstart_on_metal(metal: LanguageClient):
    client, root = metal, metal.root
    uri = open_doc(client, root, "quickstart.py", as_name="quickstart_metal.py")
    text = fixture_text("quickstart.py")
    ds = await wait_diagnostics(client, uri)
    assert not [d for d in ds if d.severity == t.DiagnosticSeverity.Error], [d.message for d in ds]
    by_line = hints_by_line(await inlay_hints(client, uri), text)
    assert "simdgroup_matrix 8x8x8" in labels_on(by_line, "T.gemm(A_shared, B_shared, C_local)")
    assert "simdgroup_matrix" in labels_on(by_line, "C_local = T.alloc_fragment")
    assert "×3" not in labels_on(by_line, "A_shared = T.alloc_shared")  # no multi-buffering on Metal
    kernel = labels_on(by_line, "with T.Kernel(")
    assert "128 threads" in kernel and "threadgroup 19 KiB / 32 KiB" in kernel, kernel
    assert "element loop" in labels_on(by_line, "T.copy(A[by * block_M")  # no cp.async on Metal
    assert "element stores" in labels_on(by_line, "T.copy(C_local, C[")


async def test_over_32_kib_is_an_error_at_the_kernel(metal: LanguageClient):
    client, root = metal, metal.root
    text = fixture_text("quickstart.py").replace("block_K=32", "block_K=128")
    uri = open_doc(client, root, "quickstart.py", text=text, as_name="quickstart_metal_big.py")
    ds = await wait_diagnostics(client, uri, lambda ds: any(d.code == "smem-overflow" for d in ds))
    d = next(d for d in ds if d.code == "smem-overflow")
    assert "threadgroup memory" in d.message and "32 KiB" in d.message, d.message
