"""Layout pictures: two different layouts give different, non-blank images; the layout
visualization pass configs draw every fragment (by thread) and shared tile (by bank)."""

import sys
from pathlib import Path

import pytest

import tilelang
from tilelang.layout.basic import make_gemm_fragment_8x8, make_gemm_fragment_8x8_transposed
from tilelang.tools import plot_layout

mpl = pytest.importorskip("matplotlib")
from matplotlib.image import imread  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))


def _pixels(path):
    return imread(str(path))


def test_two_layouts_two_pictures(tmp_path):
    a = plot_layout(make_gemm_fragment_8x8(), tmp_path, "a", formats="png,svg")
    b = plot_layout(make_gemm_fragment_8x8_transposed(), tmp_path, "b", formats="png,svg")
    pa, pb = _pixels(tmp_path / "a.png"), _pixels(tmp_path / "b.png")
    assert pa.std() > 0.05 and pb.std() > 0.05  # not blank
    assert pa.shape == pb.shape and abs(pa - pb).mean() > 1e-3
    svg_a, svg_b = (Path(p).read_text() for p in (a[1], b[1]))
    assert svg_a.startswith("<?xml") and svg_a != svg_b
    assert "T0:0" in svg_a  # cells labelled T<thread>:<register>


def test_layout_visualization_draws_fragments_and_shared_banks(tmp_path):
    from test_machine_code import matmul

    cfg = {
        "tl.layout_visualization_enable": True,
        "tl.layout_visualization_formats": "png,txt",
        "tl.dump_ir_path": str(tmp_path),
    }
    tilelang.lower(
        matmul(128, 128, 64), target={"kind": "cuda", "arch": "sm_80"}, pass_configs=cfg, enable_device_compile=False
    )
    names = sorted(p.name for p in (tmp_path / "layouts").iterdir())
    assert {"main.As.png", "main.Bs.png", "main.Cl.png", "main.Cl.txt"} <= set(names)
    shared, frag = _pixels(tmp_path / "layouts" / "main.As.png"), _pixels(tmp_path / "layouts" / "main.Cl.png")
    assert shared.std() > 0.05 and frag.std() > 0.05
