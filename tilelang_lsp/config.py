"""The `tilelang.*` settings, from workspace/configuration, initializationOptions or didChangeConfiguration."""

from __future__ import annotations

from dataclasses import dataclass, field

TARGETS = ("sm_80", "sm_86", "sm_89", "sm_90a", "hip:gfx942", "metal", "c")
TRUST = ("kernels", "workspace", "none")  # tilelang.analysis.trust: what of the user's file may run (docs/editors.md)


@dataclass
class Settings:
    target: str = "sm_90a"  # tilelang.target
    inlay_hints: dict[str, bool] = field(default_factory=lambda: {"buffers": True, "kernel": True, "ops": True})
    timeout_ms: int = 2000  # tilelang.analysis.timeoutMs
    python: str | None = None  # tilelang.python: interpreter for compile / benchmark subprocesses
    trust: str = "kernels"  # tilelang.analysis.trust

    def update(self, obj) -> set[str]:
        """Merge a settings object (nested or dotted keys, with or without a "tilelang" wrapper).

        Returns the names of the settings that changed."""
        if not isinstance(obj, dict):
            return set()
        if isinstance(obj.get("tilelang"), dict):
            obj = obj["tilelang"]
        flat = _flatten(obj)
        changed = set()

        def put(attr, value):
            if getattr(self, attr) != value:
                setattr(self, attr, value)
                changed.add(attr)

        if isinstance(flat.get("target"), str) and flat["target"]:
            put("target", flat["target"])
        hints = dict(self.inlay_hints)
        for k in ("buffers", "kernel", "ops"):
            if isinstance(flat.get(f"inlayHints.{k}"), bool):
                hints[k] = flat[f"inlayHints.{k}"]
        if isinstance(flat.get("inlayHints.enabled"), bool):
            hints = {k: flat["inlayHints.enabled"] for k in hints}
        put("inlay_hints", hints)
        t = flat.get("analysis.timeoutMs")
        if isinstance(t, int | float) and not isinstance(t, bool) and t > 0:
            put("timeout_ms", int(t))
        if flat.get("analysis.trust") in TRUST:
            put("trust", flat["analysis.trust"])
        if "python" in flat and (flat["python"] is None or isinstance(flat["python"], str)):
            put("python", flat["python"] or None)
        return changed


def _flatten(obj: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out
