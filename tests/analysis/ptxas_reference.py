"""The committed ptxas register counts of the estimate test's builds (`ptxas_reference.json`), so
`tests/analysis/test_estimate.py` does not run ptxas ~100 times on every CI run.

Each entry is keyed by the build's name and architecture and holds the SHA-256 of everything
ptxas's answer depends on (`build_key`: the generated CUDA source, the architecture, the nvcc
release, our header library, the fast-math switch and the extra nvcc flags) with the register
count ptxas reported for that build (`tilelang.lower`'s `meta["registers"]`, after the
launch-bounds retry the build may make). A key that no longer matches — the code generator, a
header, the toolkit or the kernel changed — is a stale entry: the test compiles that build
instead and fails `test_ptxas_reference_is_current` until the table is regenerated with

    PYTHONPATH=. python tests/analysis/ptxas_reference.py

(all builds compiled with ptxas, `TL_TEST_NVCC_JOBS` in parallel, ~2.5 min on 2 cores).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("ptxas_reference.json")


@lru_cache(maxsize=1)
def nvcc_release() -> str:
    """`nvcc --version`'s release ("13.0.88"): the toolkit identity that is the same on every
    machine with that release (the kernel cache's key uses the binary's path and mtime)."""
    from tilelang.backend.target import nvcc_path

    path = nvcc_path()
    if path is None:
        return "no-nvcc"
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1]


def build_key(func, arch: str) -> tuple[str, str]:
    """(key, generated source) of `func` built for `arch`: the source is generated without
    compiling it (no nvcc); the key hashes every input of ptxas's register count."""
    import tilelang
    from tilelang.backend.cuda.backend import _fast_math, header_digest
    from tilelang.backend.cuda.build_options import nvcc_flags
    from tilelang.jit.kernel import compile_options

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        art = tilelang.lower(func, target={"kind": "cuda", "arch": arch}, enable_device_compile=False)
    options = compile_options(func, None, None)
    cfg = dict(options.get("pass_configs") or {})
    flags = list(options.get("compile_flags") or []) + nvcc_flags(cfg)
    parts = [arch, nvcc_release(), header_digest(), str(_fast_math(cfg)), " ".join(flags), art.kernel_source]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest(), art.kernel_source


def ptxas_registers(func, arch: str) -> int:
    """ptxas's register count for the build of `func` for `arch` (through the kernel cache)."""
    import tilelang

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        art = tilelang.lower(func, target={"kind": "cuda", "arch": arch})
    return int(art.meta["registers"])


def load() -> dict:
    """{"name|arch": {"key": sha, "registers": n}} from the committed table ({} when absent)."""
    if not TABLE.exists():
        return {}
    return json.loads(TABLE.read_text())["builds"]


def case_id(name: str, arch: str) -> str:
    return f"{name}|{arch}"


def regenerate(cases: dict) -> dict:
    """Compile every build of `cases` ({(name, arch): PrimFunc}) with ptxas and write the table."""

    def one(item):
        (name, arch), func = item
        key, _ = build_key(func, arch)
        return case_id(name, arch), {"key": key, "registers": ptxas_registers(func, arch)}

    jobs = int(os.environ.get("TL_TEST_NVCC_JOBS", "2"))
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        builds = dict(sorted(ex.map(one, cases.items())))
    TABLE.write_text(json.dumps({"nvcc": nvcc_release(), "builds": builds}, indent=1) + "\n")
    return builds


def main() -> None:
    root = Path(__file__).resolve().parents[2]
    sys.path[:0] = [str(root / "tests" / "analysis"), str(root / "tests" / "cuda"), str(root / "tests")]
    import test_estimate

    cases = test_estimate.all_builds()
    builds = regenerate(cases)
    print(f"wrote {TABLE} ({len(builds)} builds, nvcc {nvcc_release()})")


if __name__ == "__main__":
    main()
