import pytest

import tilelang.backend.c as cb


@pytest.fixture(scope="session")
def c_build_dir(tmp_path_factory):
    """Compiled kernels are cached per test session in one temporary directory."""
    return str(tmp_path_factory.mktemp("c-kernels"))


@pytest.fixture
def build(c_build_dir):
    """build(func, **ctx) -> (artifact, run) where run(*args) executes the kernel."""

    def _build(func, **ctx):
        art = cb.build(func, {"build_dir": c_build_dir, **ctx})
        return art, cb.CKernel(art)

    return _build


@pytest.fixture
def build_unsimplified(c_build_dir):
    """Like `build`, but without the simplify pass: checks code generation alone."""
    from tilelang.transform.legalize_memory_access import legalize_memory_access
    from tilelang.transform.lower_tile_ops import lower_tile_ops
    from tilelang.transform.verify import verify

    def _build(func, **ctx):
        ctx = {"build_dir": c_build_dir, "target": "c", **ctx}
        lowered = legalize_memory_access(lower_tile_ops(verify(func, ctx), ctx), ctx)
        src = cb.generate(lowered)
        lib = cb.compile_source(src.source, func.name, ctx, src.line_spans)
        art = cb.CArtifact(src.source, lib, src.entry, lowered)
        return art, cb.CKernel(art)

    return _build
