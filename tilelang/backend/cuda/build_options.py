"""nvcc options that come from pass configs (`tilelang.PassConfigKey`).

Requires: normalized pass configs (string keys). Guarantees:
`tl.device_compile_flags` (a str is split like a shell would, a list is taken
as is) and `tl.ptxas_register_usage_level` (an int in 0..10, as ptxas
`--register-usage-level`) become nvcc flags; `tl.enable_ptxas_verbose_output`
prints nvcc's and ptxas's output to stderr; `cuda.kernels_output_dir` receives
`<entry>.cu`, the exact source nvcc compiles; `tl.emit_line_directives` turns the
generated `// file.py:N` comments into `#line` directives (`line_directives`).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from ...errors import TileLangError


def nvcc_flags(cfg: dict) -> list[str]:
    out: list[str] = []
    dev = cfg.get("tl.device_compile_flags")
    if dev:
        out += shlex.split(dev) if isinstance(dev, str) else [str(f) for f in dev]
    level = cfg.get("tl.ptxas_register_usage_level")
    if level is not None:
        if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 10:
            raise TileLangError(
                f"pass config tl.ptxas_register_usage_level must be an int in 0..10, got {level!r}",
                None,
                "pass e.g. {PassConfigKey.TL_PTXAS_REGISTER_USAGE_LEVEL: 10}",
            )
        out.append(f"-Xptxas=--register-usage-level={level}")
    return out


def verbose_ptxas(cfg: dict) -> bool:
    return bool(cfg.get("tl.enable_ptxas_verbose_output"))


def write_kernels_output(cfg: dict, entry: str, source: str) -> None:
    out = cfg.get("cuda.kernels_output_dir")
    if out:
        d = Path(os.fspath(out))
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{entry}.cu").write_text(source)


_SPAN_COMMENT = re.compile(r"^(\s*)// ([^/\s]+):(\d+)$")


def line_directives(source: str, line_spans: list) -> str:
    """`tl.emit_line_directives`: every `// file.py:N` span comment of the generated source becomes
    `#line N "/full/path/file.py"`, so nvcc diagnostics and `-lineinfo` (PTX `.loc`) name the
    Python line. `line_spans[i]` is the span of generated line i+1 (`CudaSource.line_spans`);
    a comment whose span does not match it (e.g. a hand-edited source) is left alone."""
    out = []
    for i, text in enumerate(source.split("\n")):
        m = _SPAN_COMMENT.match(text)
        span = line_spans[i] if i < len(line_spans) else None
        if m and span is not None and getattr(span, "file", None) and str(span.line) == m.group(3):
            if os.path.basename(span.file) == m.group(2):
                path = os.path.abspath(span.file).replace("\\", "\\\\").replace('"', '\\"')
                text = f'{m.group(1)}#line {span.line} "{path}"'
        out.append(text)
    return "\n".join(out)
