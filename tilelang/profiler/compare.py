"""Tolerance comparison that allows a small fraction of mismatches and, on
failure, names the worst elements. Shared by `Profiler.assert_allclose` and
`tilelang.testing.torch_assert_close`."""

from __future__ import annotations

from typing import Any


def _to_tensor(x: Any, device=None):
    import torch

    t = x if isinstance(x, torch.Tensor) else torch.as_tensor(x)
    if device is not None and t.device != device:
        t = t.to(device)
    return t


def _upcast(t):
    """Comparison dtype: float64 for everything (FP8/FP16/BF16/ints upcast)."""
    import torch

    if t.is_complex():
        return t.to(torch.complex128)
    return t.to(torch.float64)


def _format_index(flat: int, shape: tuple[int, ...]) -> str:
    idx = []
    for d in reversed(shape):
        idx.append(flat % d if d else 0)
        flat //= d if d else 1
    return str(tuple(reversed(idx)))


def mismatch_report(
    actual: Any,
    expected: Any,
    *,
    atol: float,
    rtol: float,
    max_mismatched_ratio: float = 0.0,
    equal_nan: bool = True,
    name: str = "output",
    show: int = 5,
) -> str | None:
    """Compare `actual` with `expected` elementwise; None if they agree.

    An element fails when `|a - e| > atol + rtol * |e|` (NaN matches NaN if
    `equal_nan`). The comparison passes if at most `max_mismatched_ratio` of
    the elements fail. Otherwise returns a message with the mismatch ratio and
    the `show` worst elements (index, got, expected, absolute and relative
    error), worst = largest excess over the tolerance.
    """
    import torch

    a = _to_tensor(actual)
    e = _to_tensor(expected, device=a.device)
    if tuple(a.shape) != tuple(e.shape):
        return f"{name}: shape mismatch, got {tuple(a.shape)}, expected {tuple(e.shape)}"
    if a.numel() == 0:
        return None
    a64, e64 = _upcast(a).reshape(-1), _upcast(e).reshape(-1)
    ok = torch.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=equal_nan)
    n_bad = int((~ok).sum().item())
    total = a64.numel()
    ratio = n_bad / total
    if n_bad == 0 or ratio <= max_mismatched_ratio:
        return None
    diff = (a64 - e64).abs()
    excess = diff - (atol + rtol * e64.abs())
    excess = torch.where(torch.isnan(excess), torch.full_like(excess, float("inf")), excess)
    excess = torch.where(ok, torch.full_like(excess, -float("inf")), excess)
    k = min(show, n_bad)
    worst = torch.topk(excess, k).indices.tolist()
    lines = [
        f"{name}: {n_bad}/{total} elements mismatched ({ratio:.4%}), more than the allowed "
        f"{max_mismatched_ratio:.4%} (atol={atol:g}, rtol={rtol:g}). Worst {k}:"
    ]
    shape = tuple(a.shape)
    for i in worst:
        got, exp, ad = a64[i].item(), e64[i].item(), diff[i].item()
        rel = ad / abs(exp) if exp != 0 else float("inf")
        lines.append(
            f"  at {_format_index(i, shape)}: got {got:.6g}, expected {exp:.6g}, abs err {ad:.3g}, rel err {rel:.3g}"
        )
    return "\n".join(lines)


def assert_close(actual: Any, expected: Any, **kwargs: Any) -> None:
    """`mismatch_report` that raises AssertionError with the report on failure."""
    msg = mismatch_report(actual, expected, **kwargs)
    if msg is not None:
        raise AssertionError(msg)
