"""The machine-code half of `JITKernel`'s introspection: PTX, SASS and the resource report
(public names: `show_ptx`, `export_ptx`, `show_sass`, `export_sass`, `resource_usage`,
`n_max_threads`). CUDA only for PTX/SASS; `resource_usage` reports the compiler's own figures on
every target (ptxas's on CUDA, `tilelang.backend.cuda.machine_code`)."""

from __future__ import annotations

from typing import Any

from ..errors import TileLangError


class MachineCodeMixin:
    """Needs `self.built` (kernel_source, lib_path, meta), `self.target`, `self.pass_configs`,
    `self.compile_flags`, `self.prim_func`."""

    built: Any
    target: Any
    pass_configs: dict
    compile_flags: list
    prim_func: Any

    def _require_cuda(self, what: str) -> None:
        if getattr(self.target, "kind", None) != "cuda":
            raise TileLangError(
                f"{what} is CUDA only; this kernel was built for target {self.target}",
                None,
                "compile it with target='cuda' (or an sm_XX arch) to see its PTX / SASS",
            )

    def get_ptx(self) -> str:
        """nvcc's PTX for this kernel's generated source, with the build's flags."""
        from ..backend.cuda.backend import _fast_math
        from ..backend.cuda.build_options import nvcc_flags
        from ..backend.cuda.machine_code import ptx

        self._require_cuda("show_ptx()")
        cached = getattr(self, "_ptx_text", None)
        if cached is not None:
            return cached
        cfg = dict(self.pass_configs or {})
        extra = list(self.compile_flags or []) + nvcc_flags(cfg)
        arch = self.built.meta.get("arch") or self.target.arch or "sm_80"
        text = ptx(self.built.kernel_source, arch, _fast_math(cfg), extra, self.built.meta.get("entry", "kernel"))
        self._ptx_text = text  # one nvcc run per kernel
        return text

    def show_ptx(self) -> None:
        print(self.get_ptx())

    def export_ptx(self, path: str) -> None:
        with open(path, "w") as f:
            f.write(self.get_ptx())

    def get_sass(self) -> str:
        """The SASS of the built cubin (cuobjdump or nvdisasm)."""
        from ..backend.cuda.machine_code import sass

        self._require_cuda("show_sass()")
        return sass(self.built.lib_path, self.built.meta.get("entry", "kernel"))

    def show_sass(self) -> None:
        print(self.get_sass())

    def export_sass(self, path: str) -> None:
        with open(path, "w") as f:
            f.write(self.get_sass())

    @property
    def resource_usage(self) -> Any:
        """Registers, spills, shared memory (static + dynamic), threads and blocks/SM with the
        limiting resource: `ResourceUsage` (ptxas's figures) on CUDA, a dict on other targets."""
        meta = self.built.meta
        if getattr(self.target, "kind", None) == "cuda":
            from ..backend.cuda.machine_code import resource_usage

            return resource_usage(meta)
        return {"target": str(self.target), "threads": self.n_max_threads, "shared_bytes": meta.get("smem", 0)}

    @property
    def n_max_threads(self) -> int | None:
        """Threads per block of the launch."""
        threads = self.built.meta.get("threads")
        if threads is not None:
            return int(threads)
        from ..ir.stmt import KernelLaunch
        from ..ir.visitor import collect

        launches = collect(self.prim_func.body, lambda n: isinstance(n, KernelLaunch)) if self.prim_func else []
        counts = [t[0] * t[1] * t[2] for t in (tuple(k.threads) + (1, 1, 1) for k in launches)]
        return max(counts) if counts else None
