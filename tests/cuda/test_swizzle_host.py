"""`tl::SmemLayout` (swizzle.h, what gemm.h addresses shared tiles with) equals the
Python layouts of tilelang/layout/swizzle.py element by element: a tiny host
program including swizzle.h is compiled with g++ and prints every offset."""

import itertools
import shutil
import subprocess
from pathlib import Path

import pytest
from sim import smem_offset

from tilelang.layout import SwizzleMode, make_padded_layout, make_swizzle_layout, make_swizzled_layout

INCLUDE = Path(__file__).resolve().parents[2] / "tilelang" / "backend" / "cuda" / "include"
CXX = shutil.which("g++") or shutil.which("c++")

# (rows, cols, element bytes, swizzle bytes)
CASES = [
    (r, c, e, s)
    for (e, dt) in ((2, "float16"), (4, "float32"), (1, "int8"))
    for s in (32, 64, 128)
    for (r, c) in ((8, 64), (32, 64), (64, 32), (128, 32), (16, 128), (32, 256))
    if (c * e) % s == 0
]
DTYPES = {1: "int8", 2: "float16", 4: "float32"}


@pytest.fixture(scope="module")
def host_offsets(tmp_path_factory):
    if CXX is None:
        pytest.skip("no host C++ compiler")
    d = tmp_path_factory.mktemp("swizzle")
    lines = ["#include <cstdio>", '#include "tl/swizzle.h"', "int main() {"]
    for r, c, e, s in CASES + [(64, 40, 2, 0)]:
        lines.append(f'  printf("case {r} {c} {e} {s}\\n");')
        lines.append(f"  for (int i = 0; i < {r}; ++i) for (int j = 0; j < {c}; ++j)")
        lines.append(f'    printf("%d\\n", tl::SmemLayout<{r}, {c}, {e}, {s}>::offset(i, j));')
    lines.append("  return 0;\n}")
    src = d / "swz.cpp"
    src.write_text("\n".join(lines) + "\n")
    exe = d / "swz"
    subprocess.run([CXX, "-std=c++17", "-O1", f"-I{INCLUDE}", str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    table: dict = {}
    cur = None
    for line in out.splitlines():
        if line.startswith("case"):
            cur = tuple(int(x) for x in line.split()[1:])
            table[cur] = []
        else:
            table[cur].append(int(line))
    return table


@pytest.mark.parametrize("r,c,e,s", CASES)
def test_smem_layout_matches_the_python_swizzle(host_offsets, r, c, e, s):
    lay = make_swizzle_layout((r, c), SwizzleMode.from_bytes(s), DTYPES[e])
    assert host_offsets[(r, c, e, s)] == lay.offsets()
    # the simulator's port used by the CPU tests agrees as well
    assert [smem_offset(r, c, e, s, i, j) for i, j in itertools.product(range(r), range(c))] == lay.offsets()


def test_default_gemm_operand_layouts_are_expressible():
    for shape, dt in (((128, 32), "float16"), ((32, 128), "float16"), ((64, 64), "bfloat16"), ((128, 64), "int8"),
                      ((32, 128), "float32")):  # fmt: skip
        lay = make_swizzled_layout(shape, dtype=dt)
        assert lay.meta["swizzle"] != "none"


def test_padded_rows(host_offsets):
    lay = make_padded_layout((64, 40), "float16")  # 80-byte rows padded to an odd multiple of 16 bytes
    stride = lay.output_shape[-1]
    assert [i * stride + j for i in range(64) for j in range(40)] == lay.offsets()
    # tl::SmemLayout with S = 0 takes the storage row length as COLS
    assert host_offsets[(64, 40, 2, 0)] == [i * 40 + j for i in range(64) for j in range(40)]
