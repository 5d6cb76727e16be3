"""What `lower_threads` records about each global → shared tile copy it lowered: how many bytes
one thread moves per access (`tl::cp_async_zfill<N>` / `tl::copy_vec_pred<N>` chunks, read off the
statement the copy rule returned), refining the mode `inject_pipeline` recorded (`ir/decisions.py`)."""

from __future__ import annotations

import re
from typing import Any

from ...ir.decisions import CopyDecision, Decisions
from ...ir.expr import Call, StringImm
from ...ir.stmt import Copy
from ...ir.visitor import collect

_CHUNK = re.compile(r"tl::(cp_async_zfill|copy_vec_pred)<(\d+)>")


def copy_record(op: Copy, lowered: Any, earlier: Decisions) -> CopyDecision | None:
    """The record of tile copy `op` lowered to `lowered`, or None for copies that are not
    global → shared or that an earlier pass already made TMA copies."""
    if op.src.buffer.scope != "global" or not op.dst.buffer.is_shared:
        return None
    prev = earlier.copy_at(op.span)
    if prev is not None and prev.mode.startswith("tma"):
        return None
    widths = []
    for c in collect(lowered, lambda n: isinstance(n, Call) and n.op == "tl.call"):
        name = c.args[0].value if c.args and isinstance(c.args[0], StringImm) else ""
        if m := _CHUNK.match(name):
            widths.append((m.group(1), int(m.group(2))))
    if widths:
        kind, nbytes = widths[0]
        mode = "cp.async" if kind == "cp_async_zfill" else "vector"
    else:
        mode, nbytes = "element", 0  # element stores: vectorize.py may still widen them
    if prev is not None:
        return CopyDecision(op.span, prev.mode if mode != "element" else mode, prev.stages, prev.prefetch, nbytes,
                            "lower_threads")  # fmt: skip
    return CopyDecision(op.span, mode, 1, False, nbytes, "lower_threads")
