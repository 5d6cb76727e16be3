"""Block rasterization plans: the order in which output tiles are assigned to
blocks. Grouping tiles into panels lets neighbouring blocks share A/B tiles in
L2 (what `T.use_swizzle(panel_size=...)` does in a kernel)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NoRasterization:
    """Row-major block order."""

    def to_dict(self) -> dict:
        return {"kind": "none"}

    def __repr__(self) -> str:
        return "NoRasterization()"


@dataclass(frozen=True)
class Rasterization2DRow:
    """Visit tiles in row panels `panel_width` tiles tall."""

    panel_width: int = 10

    def to_dict(self) -> dict:
        return {"kind": "row", "panel_width": self.panel_width}


@dataclass(frozen=True)
class Rasterization2DColumn:
    """Visit tiles in column panels `panel_width` tiles wide."""

    panel_width: int = 10

    def to_dict(self) -> dict:
        return {"kind": "column", "panel_width": self.panel_width}


Rasterization = NoRasterization | Rasterization2DRow | Rasterization2DColumn


def rasterization_from_dict(d: dict | None) -> Rasterization:
    """Inverse of `.to_dict()`; None gives NoRasterization."""
    if not d or d.get("kind", "none") == "none":
        return NoRasterization()
    cls = {"row": Rasterization2DRow, "column": Rasterization2DColumn}.get(d["kind"])
    if cls is None:
        raise ValueError(f"unknown rasterization kind {d['kind']!r}")
    return cls(int(d.get("panel_width", 10)))
