"""The compiler driver: caching, atomic placement, readable compile errors,
and the backend object the JIT registry loads."""

import os

import pytest
import torch

from tilelang.backend.c import CCompileError, compile_source
from tilelang.ir import Span


def test_compile_error_names_kernel_generated_line_and_user_span(tmp_path):
    src = "int ok(void) { return 0; }\n// kernel.py:7\nint broken(void) { return undefined_thing; }\n"
    spans = [None, Span("kernel.py", 7), Span("kernel.py", 7)]
    with pytest.raises(CCompileError) as info:
        compile_source(src, "my_kernel", {"build_dir": str(tmp_path)}, spans)
    msg = str(info.value)
    assert "my_kernel" in msg and "undefined_thing" in msg
    assert "generated line 3: int broken(void) { return undefined_thing; }" in msg
    assert info.value.span.line == 7
    assert not [f for f in os.listdir(tmp_path) if f.endswith((".so", ".tmp"))]  # nothing half-written is left


def test_same_source_is_compiled_once(tmp_path):
    src = '#include "tl_cpu.h"\nint f(void) { return 1; }\n'
    a = compile_source(src, "k", {"build_dir": str(tmp_path)})
    mtime = os.stat(a).st_mtime_ns
    b = compile_source(src, "k", {"build_dir": str(tmp_path)})
    assert a == b and os.stat(b).st_mtime_ns == mtime
    c = compile_source(src, "k", {"build_dir": str(tmp_path), "compile_flags": ["-DX=1"]})
    assert c != a  # flags are part of the key


def test_registry_backend_builds_loads_and_runs():
    from tilelang.backend.registry import get_backend
    from tilelang.backend.target import parse

    from .test_legalize import vector_add

    backend = get_backend(parse("cpu"))
    assert (backend.kind, backend.device_kind, backend.source_ext) == ("c", "cpu", "c")
    func = vector_add(300)
    lowered = backend.lower(func, parse("c"), {})
    assert lowered.lib_path is None and "tl_kernel_vadd" in lowered.kernel_source
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        built = backend.build(func, parse("c"), {"pass_configs": {}, "compile_flags": []}, d)
        launch = backend.load(built)
        a, b, c = torch.randn(300), torch.randn(300), torch.empty(300)
        launch([a, b, c], [])
        assert torch.equal(c, a + b)
    assert backend.cache_salt(parse("c"))
