"""`Hint`: one recommended tile configuration.

Typical use (upstream-compatible):

    block_M, block_N = hint.block
    warp_m, warp_n = hint.warp
    block_K = hint.rstep[0]
    threads = (block_M // warp_m) * (block_N // warp_n) * 32
    num_stages = hint.pipeline_stage

or simply `hint.to_config()` -> {"block_M", "block_N", "block_K", "num_stages", "threads"}.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .rasterization import NoRasterization, Rasterization, rasterization_from_dict


@dataclass(frozen=True)
class IntrinInfo:
    """Which matrix instruction a tensor-core hint assumes."""

    in_dtype: str
    out_dtype: str
    trans_a: bool = False
    trans_b: bool = True
    instruction: str = "mma"
    shape: tuple[int, int, int] = (16, 8, 16)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["shape"] = list(self.shape)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> IntrinInfo:
        return cls(**{**d, "shape": tuple(d.get("shape", (16, 8, 16)))})


@dataclass
class Hint:
    """A tile configuration. `block` is the tile per block on the spatial axes,
    `warp` the tile per warp (tensor-core hints), `thread` the threads per
    spatial axis (SIMT hints), `rstep` the per-iteration step of each reduce
    axis (block_K), `reduce_thread` threads cooperating on each reduce axis.
    `score` is the objective the recommender assigned (lower is better;
    not an upstream field)."""

    block: list[int] = field(default_factory=list)
    warp: list[int] = field(default_factory=list)
    thread: list[int] = field(default_factory=list)
    rstep: list[int] = field(default_factory=list)
    reduce_thread: list[int] = field(default_factory=list)
    use_tc: bool = False
    intrin_info: IntrinInfo | None = None
    rasterization_plan: Rasterization = field(default_factory=NoRasterization)
    pipeline_stage: int = 1
    use_async: bool = False
    schedule_stages: list[int] | None = None
    block_reduction_depth: int | None = None
    split_k_factor: int = 1
    cached_tensors: list[str] = field(default_factory=list)
    output_strides: dict[str, list[int]] = field(default_factory=dict)
    vectorize: dict[str, int] = field(default_factory=dict)
    shared_scope: str = "shared"
    opt_shapes: dict[str, int] = field(default_factory=dict)
    pass_context: dict[str, Any] = field(default_factory=dict)
    arch: Any = None
    score: float | None = None

    # -- derived ------------------------------------------------------------------
    @property
    def warp_size(self) -> int:
        return getattr(self.arch, "warp_size", 32) if self.arch is not None else 32

    @property
    def num_warps(self) -> int:
        """Warps per block: block/warp grid for tensor-core hints, threads/warp_size otherwise."""
        if self.use_tc and self.warp:
            return math.prod(b // w for b, w in zip(self.block, self.warp))
        return max(1, math.ceil(self.threads / self.warp_size))

    @property
    def threads(self) -> int:
        """Threads per block."""
        if self.use_tc and self.warp:
            return self.num_warps * self.warp_size
        return math.prod(self.thread or [1]) * math.prod(self.reduce_thread or [1])

    def to_config(self) -> dict[str, Any]:
        """Kernel keyword arguments for this hint.

        2-D block with one reduce axis (GEMM): block_M, block_N, block_K,
        num_stages, threads. 1-D block with one reduce axis (GEMV): block_N,
        block_K, num_stages, threads. Otherwise: block, rstep (if any),
        num_stages, threads.
        """
        if len(self.block) == 2 and len(self.rstep) == 1:
            cfg = {"block_M": self.block[0], "block_N": self.block[1], "block_K": self.rstep[0]}
        elif len(self.block) == 1 and len(self.rstep) == 1:
            cfg = {"block_N": self.block[0], "block_K": self.rstep[0]}
        else:
            cfg = {"block": list(self.block)}
            if self.rstep:
                cfg["rstep"] = list(self.rstep)
        cfg["num_stages"] = self.pipeline_stage
        cfg["threads"] = self.threads
        return cfg

    # -- serialisation ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible dict; the arch is stored as its target string."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "arch":
                v = getattr(v, "target", v) if v is not None else None
            elif f.name == "rasterization_plan":
                v = v.to_dict()
            elif f.name == "intrin_info":
                v = v.to_dict() if v is not None else None
            elif isinstance(v, (list, dict)):
                v = type(v)(v)
            out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Hint:
        """Inverse of `to_dict` (unknown keys are an error; an arch string is resolved with get_arch)."""
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown Hint fields: {sorted(unknown)}")
        kw = dict(d)
        if "rasterization_plan" in kw and not isinstance(kw["rasterization_plan"], Rasterization):
            kw["rasterization_plan"] = rasterization_from_dict(kw["rasterization_plan"])
        if isinstance(kw.get("intrin_info"), dict):
            kw["intrin_info"] = IntrinInfo.from_dict(kw["intrin_info"])
        if isinstance(kw.get("arch"), str):
            from ..arch import get_arch

            kw["arch"] = get_arch(kw["arch"])
        return cls(**kw)

    def __repr__(self) -> str:
        parts = [f"block={self.block}"]
        if self.warp:
            parts.append(f"warp={self.warp}")
        if self.thread:
            parts.append(f"thread={self.thread}")
        if self.rstep:
            parts.append(f"rstep={self.rstep}")
        if self.reduce_thread:
            parts.append(f"reduce_thread={self.reduce_thread}")
        parts.append(f"pipeline_stage={self.pipeline_stage}")
        parts.append(f"threads={self.threads}")
        if self.score is not None:
            parts.append(f"score={self.score:.4g}")
        return f"Hint({', '.join(parts)})"
