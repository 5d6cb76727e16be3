"""A built CUDA kernel's machine code and resources: PTX, SASS, and the ptxas figures.

- `ptx(source, arch)`: nvcc's PTX for the generated source, with the flags the build used.
- `sass(cubin)`: the SASS of the built cubin, from `cuobjdump -sass` or `nvdisasm` — whichever the
  toolkit has; a clear error naming both when neither is installed.
- `resource_usage(meta)`: registers, spill stores/loads, static and dynamic shared memory, threads,
  and resident blocks per SM with the resource that limits them — ptxas's own figures and the
  occupancy `backend.measured_meta` recorded in the kernel's metadata at build time (also on a
  cache hit).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from typing import Any

from ...errors import TileLangError
from ..toolrun import run_tool
from .compiler import nvcc_command


@dataclass(frozen=True)
class ResourceUsage:
    """What one built kernel uses per thread / per block, as ptxas reported it."""

    arch: str
    registers: int | None  # per thread
    spill_stores: int | None  # bytes
    spill_loads: int | None  # bytes
    static_shared_bytes: int  # __shared__ arrays (ptxas)
    dynamic_shared_bytes: int  # the planned dynamic block (launch parameter)
    max_threads: int  # threads per block
    blocks_per_sm: int | None  # resident blocks per SM
    limited_by: str | None  # "registers" / "shared memory" / "threads" / "blocks"
    source: str = "ptxas"

    @property
    def shared_bytes(self) -> int:
        return self.static_shared_bytes + self.dynamic_shared_bytes

    @property
    def spill_bytes(self) -> int | None:
        if self.spill_stores is None or self.spill_loads is None:
            return None
        return self.spill_stores + self.spill_loads

    def __getitem__(self, key: str) -> Any:  # dict-style access, as `kernel.resource_usage["registers"]`
        return getattr(self, key)

    def as_dict(self) -> dict:
        return {**asdict(self), "shared_bytes": self.shared_bytes, "spill_bytes": self.spill_bytes}

    def __str__(self) -> str:
        occ = (
            f"{self.blocks_per_sm} block(s)/SM, limited by {self.limited_by}"
            if self.blocks_per_sm
            else "occupancy unknown"
        )
        spills = "" if not self.spill_bytes else f", spills {self.spill_stores} B stored / {self.spill_loads} B loaded"
        return (
            f"{self.registers} registers/thread{spills}, shared memory {self.static_shared_bytes} B static + "
            f"{self.dynamic_shared_bytes} B dynamic, {self.max_threads} threads; {occ} ({self.source}, {self.arch})"
        )


def resource_usage(meta: dict) -> ResourceUsage:
    arch = meta.get("arch") or "sm_80"
    regs = meta.get("registers")
    threads = int(meta.get("threads", 0) or 0)
    static = int(meta.get("static_smem_bytes", 0) or 0)
    dynamic = int(meta.get("smem", 0) or 0)
    from .backend import measured_meta

    occ = meta
    if "blocks_per_sm" not in meta and regs is not None and threads:  # an entry built before the key was recorded
        occ = measured_meta(arch, threads, dynamic, meta)
    stores, loads = meta.get("spill_stores"), meta.get("spill_loads")
    if stores is None and meta.get("spill_bytes") == 0:
        stores = loads = 0
    return ResourceUsage(
        arch, regs, stores, loads, static, dynamic, threads, occ.get("blocks_per_sm"), occ.get("limiting")
    )


def ptx(source: str, arch: str, fast_math: bool = False, extra: list[str] | None = None, name: str = "kernel") -> str:
    """nvcc's PTX for `source` (the same flags as the cubin build, `-ptx` instead of `-cubin`)."""
    with tempfile.TemporaryDirectory(prefix="tilelang-ptx-") as tmp:
        src, out = os.path.join(tmp, f"{name}.cu"), os.path.join(tmp, f"{name}.ptx")
        with open(src, "w") as f:
            f.write(source)
        cmd = [c for c in nvcc_command(src, out, arch, fast_math, extra) if c != "-Xptxas=-v"]
        cmd[cmd.index("-cubin")] = "-ptx"
        proc = run_tool(cmd, "nvcc", name)
        if proc.returncode != 0:
            raise TileLangError(f"nvcc could not produce PTX for `{name}`:\n{proc.stderr[-2000:]}", None)
        with open(out) as f:
            return f.read()


def _tool(name: str) -> str | None:
    from ...contrib.nvcc import find_cuda_path

    found = shutil.which(name)
    if found:
        return found
    home = find_cuda_path()
    if home:
        cand = os.path.join(home, "bin", name)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def sass(cubin: str, name: str = "kernel") -> str:
    """The SASS of a built cubin (cuobjdump -sass, else nvdisasm)."""
    if not cubin or not os.path.isfile(cubin):
        raise TileLangError(f"`{name}` has no built cubin to disassemble (compile it for a CUDA target first)", None)
    for tool, args in (("cuobjdump", ["-sass"]), ("nvdisasm", ["-c"])):
        path = _tool(tool)
        if path is None:
            continue
        proc = run_tool([path, *args, cubin], tool, name)
        if proc.returncode == 0:
            return proc.stdout
        raise TileLangError(f"{tool} failed on `{name}`:\n{proc.stderr[-2000:]}", None)
    raise TileLangError(
        f"cannot show the SASS of `{name}`: neither cuobjdump nor nvdisasm is installed",
        None,
        "install the CUDA toolkit's binary utilities (cuda-cuobjdump / cuda-nvdisasm) or set CUDA_HOME",
    )
