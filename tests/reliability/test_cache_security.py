"""The kernel cache is safe to share and impossible to poison (issue #22, item 3).

Each test plants one fault in a cache entry written by a real build — a library with a
constructor, a launch grid that calls `os.system`, malformed metadata, a library of
another kernel, FIFOs and device links, loose permissions, a foreign owner — and then
compiles the same kernel again, as the victim's unchanged script would. The planted
code must never run, the kernel must compute the right numbers (so the entry was
rebuilt, not half-used), and nothing may crash or hang.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import torch

import tilelang
import tilelang.language as T
from tilelang.backend.target import nvcc_path
from tilelang.cache import kernel_cache as kc

from .conftest import time_limit

N = 1000  # not a multiple of the block


@tilelang.jit(out_idx=[-1], target="c")
def axpy(N, block=64):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block)) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * 2.0 + B[bx * block + i]

    return main


@tilelang.jit(out_idx=[-1], target="c")
def axmy(N, block=64):
    """Same signature and entry symbol as `axpy`, different result: a swapped library
    would run without an error and give wrong numbers."""

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block)) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * 3.0 - B[bx * block + i]

    return main


def populate(factory=axpy) -> Path:
    """Build `factory(N)` into the cache without loading it; its entry directory."""
    before = set(_entries())
    tilelang.lower(factory.get_tir(N), target="c")
    (entry,) = set(_entries()) - before or _entries()
    return entry


def _entries() -> list[Path]:
    return sorted(p.parent for p in (kc.cache_dir() / "kernels").glob("*/*/meta.json"))


def run_checked(factory=axpy) -> None:
    """Compile `factory(N)` through the cache, as a user's script does, and check its numbers."""
    kernel = tilelang.compile(factory.get_tir(N), out_idx=[-1], target="c")
    a, b = torch.randn(N), torch.randn(N)
    want = a * 2.0 + b if factory is axpy else a * 3.0 - b
    torch.testing.assert_close(kernel(a, b), want)


def meta_of(entry: Path) -> dict:
    return json.loads((entry / "meta.json").read_text())


def lib_of(entry: Path) -> Path:
    (lib,) = [p for p in entry.iterdir() if p.suffix in (".so", ".cubin")]
    return lib


def write_meta(entry: Path, meta, redigest: bool = True) -> None:
    """Write `meta.json`; with `redigest`, a digest that matches (as a forger would compute it)."""
    if redigest and isinstance(meta, dict) and "digest" in meta:
        from tilelang.cache.entry import digest

        meta["digest"] = digest(meta)
    (entry / "meta.json").write_text(json.dumps(meta))


def sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def constructor_library(tmp_path: Path, marker: Path) -> Path:
    """A shared library exporting the kernel's entry points whose constructor writes `marker`."""
    src = tmp_path / "evil.c"
    src.write_text(
        f"""
        #include <stdio.h>
        #include <stdint.h>
        __attribute__((constructor)) static void planted(void) {{
            FILE* f = fopen("{marker}", "w"); if (f) {{ fputs("ran", f); fclose(f); }}
        }}
        int32_t tl_kernel_main(void** args) {{ return 0; }}
        const char* tl_last_error(void) {{ return ""; }}
        """
    )
    lib = tmp_path / "evil.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return lib


def plant_library(entry: Path, planted: Path, as_name: str | None = None) -> None:
    """Replace the entry's library with `planted` and forge the metadata to match."""
    meta = meta_of(entry)
    target = entry / (as_name or meta["lib_name"])
    lib_of(entry).unlink()
    shutil.copy(planted, target)
    meta["lib_name"], meta["lib_sha256"] = target.name, sha256(target)
    write_meta(entry, meta)


def make_foreign(path: Path) -> None:
    """What another user's write into our cache looks like: a directory they can write to,
    and (when we can say so) a file they own."""
    path.parent.chmod(0o777)
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)


# --------------------------------------------------------------------------------------
# planted code
# --------------------------------------------------------------------------------------


def test_a_planted_library_with_a_constructor_never_runs(cache, builds, tmp_path):
    entry = populate()
    marker = tmp_path / "constructor-ran"
    plant_library(entry, constructor_library(tmp_path, marker))
    make_foreign(lib_of(entry))
    run_checked()
    assert not marker.exists(), "the planted library's constructor ran"
    assert builds.n == 2


@pytest.mark.parametrize("where", ["absolute", "parent"])
def test_a_lib_name_that_is_a_path_is_never_followed(cache, builds, tmp_path, where):
    entry = populate()
    marker = tmp_path / "constructor-ran"
    evil = constructor_library(tmp_path, marker)
    meta = meta_of(entry)
    meta["lib_name"] = str(evil) if where == "absolute" else os.path.relpath(evil, entry)
    meta["lib_sha256"] = sha256(evil)
    write_meta(entry, meta)
    run_checked()
    assert not marker.exists(), f"a lib_name pointing outside the entry ({meta['lib_name']}) was loaded"
    assert builds.n == 2


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")
def test_an_edited_launch_grid_is_never_evaluated(cache, builds, tmp_path, fake_cuda):
    """The CUDA grid was Python source `eval`'d at load: `__import__('os').system(...)` ran."""
    from tilelang.backend.registry import get_backend
    from tilelang.backend.target import parse
    from tilelang.jit.kernel import compile_options

    func = dyn_scale.get_tir(block=128)
    target = parse({"kind": "cuda", "arch": "sm_80"})
    tilelang.lower(func, target=target)
    (entry,) = _entries()
    marker = tmp_path / "grid-ran"
    meta = meta_of(entry)
    meta["backend_meta"]["grid"][0] = f"__import__('os').system('touch {marker}') or 1"
    write_meta(entry, meta)
    if hasattr(kc, "load_kernel"):
        built, launch = kc.load_kernel(get_backend(target), func, target, compile_options(func, None, None))
    else:  # the loader before the fix
        built = kc.load_or_build(get_backend(target), func, target, compile_options(func, None, None))
        launch = get_backend(target).load(built)
    assert not marker.exists(), "a grid expression from the cache was evaluated"
    assert all(not isinstance(g, str) for g in built.meta["grid"]), "the grid is data"
    assert builds.n == 2 and meta_of(entry)["backend_meta"]["grid"] == built.meta["grid"]
    fake_cuda.n_slots = 3
    launch([FakeTensor(0x1000), FakeTensor(0x2000)], [300])
    assert fake_cuda.launches[0][0] == (3, 1, 1)  # ceildiv(300, 128)


@tilelang.jit
def dyn_scale(block: int = 128):
    m = T.dynamic("m")

    @T.prim_func
    def main(x: T.Tensor((m,), "float32"), y: T.Tensor((m,), "float32")):
        with T.Kernel(T.ceildiv(m, block), threads=block) as bx:
            for i in T.Parallel(block):
                y[bx * block + i] = x[bx * block + i] * 2.0

    return main


class FakeTensor:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def data_ptr(self) -> int:
        return self.ptr


@pytest.fixture
def fake_cuda(monkeypatch):
    """The CUDA driver replaced by tests/cuda/test_runtime.py's recording fake (no GPU)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cuda"))
    from test_runtime import FakeDriver

    from tilelang.backend.cuda import runtime

    drv = FakeDriver()
    monkeypatch.setattr(runtime, "_driver", lambda: drv)
    monkeypatch.setattr(torch.cuda, "init", lambda: None)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: type("S", (), {"cuda_stream": 0})())
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: real_empty(*a))
    return drv


# --------------------------------------------------------------------------------------
# malformed, mismatched, unreadable entries
# --------------------------------------------------------------------------------------


def _no_args(meta: dict) -> dict:
    del meta["backend_meta"]["args"]
    return meta


def _entry_symbol(meta: dict) -> dict:
    meta["backend_meta"]["entry"] = "tl_kernel_renamed"
    return meta


def _old_format(meta: dict) -> dict:
    return {k: meta[k] for k in ("backend_meta", "source_sha256", "lib_name", "lib_sha256")}


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda m: [], id="meta-is-a-list"),
        pytest.param(lambda m: {**m, "lib_name": 5}, id="lib_name-is-an-int"),
        pytest.param(_no_args, id="no-backend_meta.args"),
        pytest.param(lambda m: {**m, "backend_meta": {**m["backend_meta"], "n_dyn": "two"}}, id="n_dyn-a-string"),
        pytest.param(_entry_symbol, id="renamed-entry-symbol"),
        pytest.param(_old_format, id="previous-format"),
    ],
)
def test_malformed_metadata_is_rebuilt(cache, builds, edit):
    entry = populate()
    write_meta(entry, edit(meta_of(entry)))
    run_checked()
    assert builds.n == 2
    run_checked()  # the rebuilt entry is a good one: a hit
    assert builds.n == 2


def test_undigested_metadata_edit_is_rebuilt(cache, builds):
    entry = populate()
    meta = meta_of(entry)
    meta["backend_meta"]["n_dyn"] = 1  # plausible, wrong, and not covered by a new digest
    write_meta(entry, meta, redigest=False)
    run_checked()
    assert builds.n == 2


def test_a_library_swapped_from_another_entry_is_rejected(cache, builds):
    entry = populate(axpy)
    other = populate(axmy)
    assert entry != other
    lib = lib_of(entry)
    lib.write_bytes(lib_of(other).read_bytes())
    meta = meta_of(entry)
    meta["lib_sha256"] = sha256(lib)  # checksum updated; the digest binds it to this entry's key
    write_meta(entry, meta, redigest=False)
    run_checked(axpy)
    assert builds.n == 3


def test_an_entry_copied_whole_from_another_key_is_rejected(cache, builds):
    entry = populate(axpy)
    other = populate(axmy)
    shutil.rmtree(entry)
    shutil.copytree(other, entry)  # self-consistent, digest and all — but another kernel's
    run_checked(axpy)
    assert builds.n == 3


@pytest.mark.parametrize("which", ["library", "meta", "source"])
def test_a_fifo_in_an_entry_does_not_hang(cache, builds, which):
    entry = populate()
    path = {"library": lib_of(entry), "meta": entry / "meta.json", "source": entry / "kernel.c"}[which]
    path.unlink()
    os.mkfifo(path)
    with time_limit(30):
        run_checked()
    assert builds.n == 2


@pytest.mark.parametrize("which", ["library", "source"])
def test_a_dev_zero_symlink_in_an_entry_does_not_hang(cache, builds, which):
    entry = populate()
    path = lib_of(entry) if which == "library" else entry / "kernel.c"
    path.unlink()
    path.symlink_to("/dev/zero")
    with time_limit(30):
        run_checked()
    assert builds.n == 2


def test_a_symlinked_entry_directory_is_not_followed(cache, builds, tmp_path):
    entry = populate()
    elsewhere = tmp_path / "elsewhere"
    shutil.move(entry, elsewhere)
    entry.symlink_to(elsewhere, target_is_directory=True)
    run_checked()
    assert builds.n == 2


# --------------------------------------------------------------------------------------
# ownership and permissions
# --------------------------------------------------------------------------------------


def test_cache_directories_and_files_are_owner_only(cache):
    old = os.umask(0o002)  # a umask that would make them group-writable
    try:
        entry = populate()
    finally:
        os.umask(old)
    d = entry
    while d != cache.parent:
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
        d = d.parent
    for f in entry.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f


@pytest.mark.parametrize("mode", [0o770, 0o777])
def test_a_group_or_world_writable_entry_is_rebuilt(cache, builds, mode):
    entry = populate()
    entry.chmod(mode)
    run_checked()
    assert builds.n == 2
    assert stat.S_IMODE(entry.stat().st_mode) == 0o700, "the rebuilt entry is owner-only again"


@pytest.mark.parametrize("mode", [0o620, 0o602])
def test_a_group_or_world_writable_file_is_rebuilt(cache, builds, mode):
    entry = populate()
    lib_of(entry).chmod(mode)
    run_checked()
    assert builds.n == 2


def test_a_writable_cache_directory_means_no_cache(cache, builds, caplog):
    """Another user who can write `kernels/<xx>/` can swap whole entries: nothing below it
    is used or written, and the kernel still works (built privately)."""
    entry = populate()
    entry.parent.chmod(0o777)
    before = {p: p.stat().st_mtime_ns for p in entry.iterdir()}
    with caplog.at_level(logging.WARNING, logger="tilelang"):
        run_checked()
        run_checked()
    assert builds.n == 3
    assert {p: p.stat().st_mtime_ns for p in entry.iterdir()} == before, "nothing written into it"
    assert "world-writable" in caplog.text


def _foreign_entry(monkeypatch, entry: Path) -> None:
    """Pretend every file of `entry` (and the directory) belongs to another user of our group."""
    from tilelang.cache import trust

    real = trust.owner_of
    monkeypatch.setattr(trust, "owner_of", lambda st, path: 4242 if str(entry) in str(path) else real(st, path))


def test_an_entry_owned_by_another_user_is_rebuilt(cache, builds, monkeypatch):
    entry = populate()
    _foreign_entry(monkeypatch, entry)
    run_checked()
    assert builds.n == 2


def test_trust_group_opt_in_shares_entries_with_the_group(cache, builds, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_TRUST_GROUP", "1")
    entry = populate()
    assert stat.S_IMODE(entry.stat().st_mode) == 0o2770 and stat.S_IMODE(lib_of(entry).stat().st_mode) == 0o660
    _foreign_entry(monkeypatch, entry)
    run_checked()
    assert builds.n == 1, "a group member's entry is used when the group is trusted"
    entry.chmod(0o2777)
    run_checked()
    assert builds.n == 2, "never a world-writable one"


def test_without_the_opt_in_a_group_writable_entry_of_our_group_is_not_used(cache, builds, monkeypatch):
    entry = populate()
    entry.chmod(0o2770)
    _foreign_entry(monkeypatch, entry)
    run_checked()
    assert builds.n == 2


def test_a_planted_native_launcher_is_never_imported(cache, tmp_path, monkeypatch):
    """The CUDA launcher extension is cached too: a library planted under its name is rebuilt."""
    from tilelang.backend.cuda import native_launch

    path, _ = native_launch._library_path()
    marker = tmp_path / "constructor-ran"
    shutil.copy(constructor_library(tmp_path, marker), path)
    make_foreign(Path(path))
    for name, value in (("_tried", False), ("_module", None), ("_reason", None), ("_builder", None)):
        monkeypatch.setattr(native_launch, name, value)
    native_launch.extension()
    assert not marker.exists(), "a planted launcher library was imported"


def test_a_planted_c_build_directory_library_is_rebuilt(cache, tmp_path):
    """`tilelang.backend.c.build` reuses libraries in `<cache root>/c` by name: only ours."""
    from tilelang.backend import c as cbackend

    func = axpy.get_tir(N)
    art = cbackend.build(func)
    marker = tmp_path / "constructor-ran"
    Path(art.lib_path).unlink()
    shutil.copy(constructor_library(tmp_path, marker), art.lib_path)
    Path(art.lib_path).chmod(0o666)
    again = cbackend.build(func)
    kernel = cbackend.CKernel(again)
    a, b, c = torch.randn(N), torch.randn(N), torch.zeros(N)
    kernel(a, b, c)
    torch.testing.assert_close(c, a * 2.0 + b)
    assert not marker.exists()


# --------------------------------------------------------------------------------------
# CUDA entries (nvcc, no GPU)
# --------------------------------------------------------------------------------------

needs_nvcc = pytest.mark.skipif(nvcc_path() is None, reason="nvcc not found")


@needs_nvcc
def test_a_cuda_entry_round_trips_as_data(cache, builds):
    target = {"kind": "cuda", "arch": "sm_80"}
    first = tilelang.lower(dyn_scale.get_tir(block=128), target=target)
    again = tilelang.lower(dyn_scale.get_tir(block=128), target=target)
    assert builds.n == 1, "the second lowering is a cache hit"
    (entry,) = _entries()
    stored = meta_of(entry)["backend_meta"]
    assert stored["grid"] == [["floordiv", ["add", ["d", 0], 127], 128]]
    assert again.meta == first.meta and again.lib_path.endswith(".cubin")


def _set(path: str, value):
    def edit(meta: dict) -> dict:
        *parents, last = path.split(".")
        d = meta
        for p in parents:
            d = d[p] if not p.isdigit() else d[int(p)]
        d[int(last) if last.isdigit() else last] = value
        return meta

    return edit


@needs_nvcc
@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(_set("grid.0", "__import__('os').getpid()"), id="grid-source"),
        pytest.param(_set("grid.0", ["getattr", ["d", 0], "x"]), id="grid-unknown-op"),
        pytest.param(_set("grid.0", ["d", 5]), id="grid-leaf-out-of-range"),
        pytest.param(_set("grid", [1, 1, 1, 1]), id="grid-four-dims"),
        pytest.param(_set("args.0", "ptr; import os"), id="unknown-arg-kind"),
        pytest.param(_set("n_params", 9), id="n_params-past-args"),
        pytest.param(_set("threads", 0), id="no-threads"),
        pytest.param(_set("smem", -1), id="negative-smem"),
        pytest.param(_set("entry", "k(); system"), id="entry-not-an-identifier"),
        pytest.param(_set("tensor_maps", ['{"param": 7}']), id="tensor-map-bad"),
        pytest.param(_set("cluster", [2, 1]), id="cluster-two-dims"),
        pytest.param(_set("registers", "many"), id="registers-not-int"),
    ],
)
def test_malformed_cuda_metadata_is_refused(cuda_meta, edit):
    from tilelang.backend.cuda.backend import check_cuda_meta

    check_cuda_meta(json.loads(json.dumps(cuda_meta)))  # the real one passes
    with pytest.raises(ValueError):
        check_cuda_meta(edit(json.loads(json.dumps(cuda_meta))))


@pytest.fixture(scope="module")
def cuda_meta(tmp_path_factory):
    from tilelang.backend.cuda.backend import make_backend
    from tilelang.backend.target import parse

    built = make_backend().build(
        dyn_scale.get_tir(block=128), parse({"kind": "cuda", "arch": "sm_80"}), {}, str(tmp_path_factory.mktemp("b"))
    )
    return built.meta


def test_real_tma_and_cluster_metadata_passes_the_schema():
    """The schema refuses what `build` cannot write, and nothing it can: a kernel whose real
    metadata failed it would be rebuilt on every run."""
    import sys

    sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("cuda", ".")]
    from hopper_kernels import cluster_ranks
    from tma_kernels import gemm_func

    from tilelang.backend.cuda.backend import check_cuda_meta

    for func in (gemm_func(256, 200, 128), cluster_ranks.get_tir(64, 200)):
        art = tilelang.lower(func, target={"kind": "cuda", "arch": "sm_90a"}, enable_device_compile=False)
        assert art.meta.get("tensor_maps") or art.meta.get("cluster")
        check_cuda_meta(json.loads(json.dumps(art.meta)))


def test_a_planted_autotuner_source_copy_is_never_executed(tmp_path, monkeypatch):
    """Autotune workers load the kernel's shipped source text from a file; it was written to a
    fixed folder in the shared /tmp, where another user's planted copy ran instead."""
    import dataclasses
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "autotuner"))
    import autotune_kernels

    from tilelang.autotuner.locate import FunctionRef

    ref = FunctionRef.of(autotune_kernels.gemm_lazy)
    by_text = dataclasses.replace(ref, module="no_such_module_xyz", file=str(tmp_path / "gone" / "kernels_copy.py"))
    shared_tmp = tmp_path / "shared-tmp"
    monkeypatch.setattr(tempfile, "tempdir", str(shared_tmp))
    marker = tmp_path / "planted-ran"
    planted = shared_tmp / "tilelang-autotune-src" / ref.source_sha[:16] / "kernels_copy.py"
    planted.parent.mkdir(parents=True)
    # definitions are executed when the copy is loaded: a default argument runs code
    planted.write_text(f"def _planted(x=open({str(marker)!r}, 'w').write('ran')):\n    pass\n" + ref.file_text)
    assert by_text.resolve().__name__ == "gemm_lazy"
    assert not marker.exists(), "a source file planted in the shared temporary directory was executed"
