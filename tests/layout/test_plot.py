"""plot_layout: renders with matplotlib, explains itself without it."""

import builtins

import pytest

from tilelang.layout import make_mma_accumulator_fragment, make_swizzled_layout, plot_layout


def test_plot_fragment_and_layout(tmp_path):
    pytest.importorskip("matplotlib")
    frag = make_mma_accumulator_fragment(16, 8, 1)
    out = tmp_path / "acc.png"
    fig = plot_layout(frag, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "accumulator" in fig.axes[0].get_title()
    lay = make_swizzled_layout((16, 64), dtype="float16")
    fig2 = plot_layout(lay, tmp_path / "sw.svg", dtype="float16")
    assert (tmp_path / "sw.svg").read_text().startswith("<?xml")
    assert fig2.axes[0].images[0].get_array().max() == 31  # coloured by bank


def test_plot_without_matplotlib_says_how_to_fix(monkeypatch):
    real_import = builtins.__import__

    def no_mpl(name, *args, **kw):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plot_layout(make_mma_accumulator_fragment(16, 8, 1), None)


def test_plot_rejects_3d():
    pytest.importorskip("matplotlib")
    with pytest.raises(ValueError, match="1-D or 2-D"):
        plot_layout(make_swizzled_layout((2, 8, 64), dtype="float16"))
