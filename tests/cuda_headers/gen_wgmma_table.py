"""Generate the register-list table embedded in tl/wgmma.h.

wgmma accumulators are 2 .. 128 registers per thread, and inline PTX needs the
operand numbers as literal text ("{%0, %1, ...}", then "%R", "%R+1", ... for the
operands that follow the accumulators).  The C preprocessor cannot count, so
the table of those strings is generated here and pasted between the
"BEGIN GENERATED" / "END GENERATED" markers of tl/wgmma.h.

    python tests/cuda_headers/gen_wgmma_table.py          # print the table
    python tests/cuda_headers/gen_wgmma_table.py --write  # update wgmma.h in place

tests/cuda_headers/test_compile.py checks that the header matches this output.
"""

from __future__ import annotations

import sys
from pathlib import Path

HEADER = Path(__file__).resolve().parents[2] / "tilelang" / "backend" / "cuda" / "include" / "tl" / "wgmma.h"
BEGIN = "// BEGIN GENERATED REGISTER TABLE (tests/cuda_headers/gen_wgmma_table.py)"
END = "// END GENERATED REGISTER TABLE"

# Operands that follow the accumulators: at most 4 A registers + desc B +
# scale-d + 3 immediates = 9.
NUM_TRAILING = 9


def register_counts() -> list[int]:
    """Accumulator register counts per thread that some wgmma shape needs.

    f32 / s32 accumulators: N / 2 registers, N = 8, 16, ..., 256 (multiples of 4).
    f16 accumulators: N / 4 registers (even numbers 2 .. 64).
    """
    counts = {n // 2 for n in range(8, 257, 8)} | {n // 4 for n in range(8, 257, 8)}
    return sorted(counts)


def constraint_expr(count: int) -> str:
    """Flat constraint list c(d[0]), ..., c(d[count-1]).

    (A nested binary decomposition is shorter to write but makes the host
    preprocessor several times slower on this table.)
    """
    return ", ".join(f"c(d[{i}])" for i in range(count))


def table() -> str:
    lines = [BEGIN]
    for r in register_counts():
        regs = ", ".join(f"%{i}" for i in range(r))
        trailing = ", ".join(f'"%{r + i}"' for i in range(NUM_TRAILING))
        lines.append(f"#define TL_WG_CONS{r}(c, d) {constraint_expr(r)}")
        lines.append(f'#define TL_WG_R{r}(EMIT, ...) EMIT(__VA_ARGS__, "{{{regs}}}", {trailing}, TL_WG_CONS{r})')
    lines.append(END)
    return "\n".join(lines) + "\n"


def splice(text: str) -> str:
    start = text.index(BEGIN)
    stop = text.index(END) + len(END) + 1
    return text[:start] + table() + text[stop:]


def main(argv: list[str]) -> int:
    if "--write" in argv:
        HEADER.write_text(splice(HEADER.read_text()))
    else:
        sys.stdout.write(table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
