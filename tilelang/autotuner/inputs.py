"""`set_autotune_inputs` / `get_autotune_inputs`: fix the tensors every
candidate config is checked and timed on.

    with set_autotune_inputs(a, b, c):   # or set_autotune_inputs([a, b, c])
        kernel = matmul(M, N, K)

Inside the block these tensors take priority over `supply_prog` and
`supply_type`. They may be the kernel's inputs only, or all of its parameters
(outputs included, as in the seed tutorial); outputs are dropped then.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

_INPUTS: ContextVar[tuple | None] = ContextVar("tilelang_autotune_inputs", default=None)


class set_autotune_inputs:  # noqa: N801 - upstream name, used as a context manager
    """Context manager: tune on exactly these tensors."""

    def __init__(self, *tensors: Any) -> None:
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            tensors = tuple(tensors[0])
        self.tensors = tuple(tensors)
        self._token: Token | None = None

    def __enter__(self) -> set_autotune_inputs:
        self._token = _INPUTS.set(self.tensors)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._token is not None:
            _INPUTS.reset(self._token)
            self._token = None


def get_autotune_inputs() -> tuple | None:
    """The tensors set by the innermost active `set_autotune_inputs`, or None."""
    return _INPUTS.get()
