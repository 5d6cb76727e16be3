"""The host side of a function with several `T.Kernel` blocks or `T.alloc_global` scratch.

`transform/split_kernels.py` cuts such a function into single-kernel functions; this module
is the backend the JIT, `tilelang.lower` and the kernel cache see for it (`backend_for`): a
wrapper over the target's own backend that

- lowers every kernel through the target's whole per-kernel pipeline (`inner.lower`),
- builds them as one translation unit — one library / cubin with one entry per kernel
  (`inner.build_joined`), so the cache entry keeps its one-library layout —,
- and loads a launcher that allocates the scratch for each call (torch's caching allocator:
  on the kernels' device and current stream; host memory for the CPU backend) and calls the
  kernels' own launchers in program order (one native launch each, on torch's current
  stream). The scratch tensors die when the call returns; torch's stream-ordered allocator
  hands their memory out again only to work ordered after these kernels.

Launch metadata ("launch plan", JSON in the cache entry, never `eval`'d):
`{"kernels": [<the target's per-kernel meta>...], "scratch": [{"name", "shape": [int tree...],
"dtype"}...], "n_params": <parameters of the original function>, "n_dyn": <dynamic dims>}`;
a scratch shape is an `ir.int_tree` over the original scalar parameters and dynamic
dimensions. `check_plan_meta` validates all of it (each kernel's part with the target's own
`check_meta`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import UnsupportedError
from ..ir.dtype import DataType
from ..ir.function import PrimFunc
from ..ir.int_tree import compile_tree, host_leaves, to_tree
from ..transform.split_kernels import KernelSplit, split_kernels
from .meta_schema import field, is_int, is_list_of, need
from .registry import BuiltKernel

MAX_KERNELS = 64


def backend_for(backend: Any, func: PrimFunc) -> Any:
    """`backend` itself for a single-kernel function without scratch, else its `PlanBackend`."""
    if isinstance(backend, PlanBackend):
        return backend
    split = split_kernels(func)
    return backend if split is None else PlanBackend(backend, split)


def scratch_meta(func: PrimFunc, scratch: tuple) -> list:
    """Name, shape (int trees) and dtype of each scratch buffer."""
    names = host_leaves(func)
    out = []
    for b in scratch:
        try:
            shape = [to_tree(d, names) for d in b.shape]
        except (TypeError, KeyError) as err:
            raise UnsupportedError(f"cannot compute the shape of T.alloc_global `{b.name}` on the host") from err
        out.append({"name": b.name, "shape": shape, "dtype": str(b.dtype)})
    return out


class PlanBackend:
    """The target's backend, for a function split into several kernels (module docstring)."""

    builds_from_lowered = True

    def __init__(self, inner: Any, split: KernelSplit) -> None:
        if not hasattr(inner, "build_joined"):
            raise UnsupportedError(
                f"the {inner.kind!r} backend cannot build several T.Kernel blocks or T.alloc_global scratch",
                split.kernels[0].span,
            )
        self.inner, self.split = inner, split
        self.kind, self.device_kind, self.source_ext = inner.kind, inner.device_kind, inner.source_ext

    def _plan_meta(self, func: PrimFunc, metas: list) -> dict:
        return {
            "kernels": metas,
            "scratch": scratch_meta(func, self.split.scratch),
            "n_params": self.split.n_params,
            "n_dyn": len(func.dynamic_vars()),
        }

    def lower(self, func: PrimFunc, target: Any, options: dict) -> BuiltKernel:
        pres = [self.inner.lower(k, target, options) for k in self.split.kernels]
        built = BuiltKernel(
            "\n".join(p.kernel_source for p in pres),
            None,
            self._plan_meta(func, [p.meta for p in pres]),
            pres[0].lowered,
        )
        built.kernel_builds = pres  # type: ignore[attr-defined]  # every kernel's lowering, for build
        return built

    def build(
        self, func: PrimFunc, target: Any, options: dict, workdir: str, pre: BuiltKernel | None = None
    ) -> BuiltKernel:
        pres = getattr(pre, "kernel_builds", None)
        if pres is None:
            pres = [self.inner.lower(k, target, options) for k in self.split.kernels]
        source, lib, metas = self.inner.build_joined(pres, func.name, target, options, workdir)
        built = BuiltKernel(source, lib, self._plan_meta(func, metas), pres[0].lowered)
        built.kernel_builds = pres  # type: ignore[attr-defined]
        return built

    def load(self, built: BuiltKernel) -> Callable[[list, list], None]:
        m = built.meta
        launches = [self.inner.load(BuiltKernel("", built.lib_path, km)) for km in m["kernels"]]
        return plan_launcher(launches, m["scratch"], int(m["n_params"]), int(m["n_dyn"]), self.device_kind)

    def check_meta(self, meta: dict) -> None:
        check_plan_meta(meta, self.inner.check_meta, len(self.split.scratch), len(self.split.kernels))

    def cache_salt(self, target: Any) -> str:
        return self.inner.cache_salt(target)


def check_plan_meta(
    meta: dict, check_kernel: Callable[[dict], None], n_scratch: int, n_kernels: int | None = None
) -> None:
    """Raise ValueError unless `meta` is a launch plan `PlanBackend.build` could have written
    (for a function of `n_kernels` kernels and `n_scratch` scratch buffers)."""
    need(type(meta) is dict, "a launch plan is a JSON object")
    kernels = field(meta, "kernels", lambda x: is_list_of(x, lambda k: type(k) is dict, MAX_KERNELS), "a list")
    need(len(kernels) >= 1, "a launch plan has at least one kernel")
    need(n_kernels is None or len(kernels) == n_kernels, f"the plan has {len(kernels)} kernels, not {n_kernels}")
    n_params = field(meta, "n_params", lambda x: is_int(x, 0, 1 << 16), "a count")
    n_dyn = field(meta, "n_dyn", lambda x: is_int(x, 0, 1 << 16), "a count", optional=True) or 0
    scratch = field(meta, "scratch", lambda x: is_list_of(x, lambda s: type(s) is dict), "a list")
    need(len(scratch) == n_scratch, f"the plan has {len(scratch)} scratch buffers, not {n_scratch}")
    for s in scratch:
        shape = field(s, "shape", lambda x: type(x) is list and len(x) <= 8, "a list of dimensions")
        for d in shape:
            compile_tree(d, n_params, n_dyn)  # ValueError for a malformed tree
        dt = field(s, "dtype", lambda x: type(x) is str, "a dtype")
        try:
            DataType(dt).as_torch()
        except Exception as err:  # noqa: BLE001 - whatever an unknown dtype raises, the entry is rebuilt
            raise ValueError(f"launch metadata: scratch dtype {dt!r:.40} is not a torch dtype") from err
    for k in kernels:
        check_kernel(k)


def plan_launcher(launches: list, scratch: list, n_params: int, n_dyn: int, device_kind: str) -> Callable:
    """`launch(values, dyn)`: allocate the scratch, then run `launches` in order over the
    parameters followed by the scratch. Generated once per kernel with no loops: one
    `torch.empty` per scratch buffer and one call per kernel."""
    import torch

    from ..jit.adapter import default_device

    device = default_device(device_kind)
    ns: dict[str, Any] = {"empty": torch.empty, "device": device}
    allocs = []
    for i, s in enumerate(scratch):
        dims = [compile_tree(d, n_params, n_dyn) for d in s["shape"]]
        ns[f"dt{i}"] = DataType(s["dtype"]).as_torch()
        consts = [getattr(f, "const", None) for f in dims]
        if all(c is not None for c in consts):
            ns[f"shape{i}"] = tuple(int(c) for c in consts)
            shape = f"shape{i}"
        else:
            for j, f in enumerate(dims):
                ns[f"d{i}_{j}"] = f
            shape = "(" + "".join(f"d{i}_{j}(values, dyn), " for j in range(len(dims))) + ")"
        allocs.append(f"empty({shape}, dtype=dt{i}, device=device)")
    lines = ["def launch(values, dyn):", f"    args = [*values, {', '.join(allocs)}]"]
    for j, fn in enumerate(launches):
        ns[f"k{j}"] = fn
        lines.append(f"    k{j}(args, dyn)")
    exec(compile("\n".join(lines), "<launch plan>", "exec"), ns)  # noqa: S102 - our own text, no data from disk
    launch = ns["launch"]
    launch.kernels = launches  # type: ignore[attr-defined]
    return launch


def plan_kernels(func: PrimFunc) -> list[PrimFunc]:
    """The single-kernel functions `func` runs, in order (itself when it is one already)."""
    split = split_kernels(func)
    return [func] if split is None else list(split.kernels)
