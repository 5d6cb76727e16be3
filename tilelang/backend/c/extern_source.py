"""`T.import_source` on the C backend: the user's source after a few definitions that let a
plain CUDA device function compile as C (qualifiers defined away)."""

from __future__ import annotations

PORTABILITY = [
    "// T.import_source (CUDA function qualifiers have no meaning in C)",
    "#ifndef __device__",
    "#define __device__",
    "#endif",
    "#ifndef __host__",
    "#define __host__",
    "#endif",
    "#ifndef __forceinline__",
    "#define __forceinline__ static inline __attribute__((always_inline, unused))",
    "#endif",
]


def prelude(sources: tuple) -> list[str]:
    """The lines emitted before the entry function: PORTABILITY, then each source once."""
    out = list(PORTABILITY)
    for src in sources:
        out.extend(src.rstrip("\n").split("\n"))
        out.append("")
    return out
