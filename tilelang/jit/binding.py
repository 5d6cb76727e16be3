"""Binding a call's arguments to an eager kernel's parameters, by Python's rules.

Requires: the `inspect.Signature` of the decorated function. Guarantees:
`bind_call(name, sig, args, kwargs)` returns (values of the parameters that were given,
keywords that name no parameter) or raises the `TypeError` CPython raises for the same
call — too many positional arguments, a parameter given twice (positionally and by
keyword: `vector_add(x, y, A=z)`), a positional-only parameter given by keyword. The
keywords that name no parameter are left to the caller: an eager kernel accepts them only
as the values of its `T.const` symbols, and `unexpected_keyword` is the error for the rest.
`missing_arguments` words the error for required parameters that got no value.
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any

_P = inspect.Parameter


def bind_call(name: str, sig: inspect.Signature, args: tuple, kwargs: dict) -> tuple[dict, dict]:
    params = list(sig.parameters.values())
    if any(p.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD) for p in params):
        try:  # *args / **kwargs: Python's own binder (no keyword is left over)
            bound = sig.bind_partial(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{name}() {err}") from None
        return dict(bound.arguments), {}
    positional = [p for p in params if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)]
    if len(args) > len(positional):
        required = sum(1 for p in positional if p.default is _P.empty)
        takes = f"from {required} to {len(positional)}" if required != len(positional) else str(len(positional))
        plural = "s" if len(positional) != 1 else ""
        raise TypeError(
            f"{name}() takes {takes} positional argument{plural} but {len(args)} "
            f"{'was' if len(args) == 1 else 'were'} given"
        )
    given = {p.name: a for p, a in zip(positional, args)}
    extra: dict[str, Any] = {}
    by_name = sig.parameters
    for key, value in kwargs.items():
        p = by_name.get(key)
        if p is None:
            extra[key] = value
        elif p.kind is _P.POSITIONAL_ONLY:
            raise TypeError(f"{name}() got some positional-only arguments passed as keyword arguments: '{key}'")
        elif key in given:
            raise TypeError(f"{name}() got multiple values for argument '{key}'")
        else:
            given[key] = value
    return given, extra


def missing_arguments(name: str, sig: inspect.Signature, missing: list[str]) -> TypeError:
    """CPython's error for required parameters without a value (positional ones first)."""
    kinds = {n: sig.parameters[n].kind for n in missing}
    pos = [n for n in missing if kinds[n] is not _P.KEYWORD_ONLY]
    names = pos or missing
    what = "positional" if pos else "keyword-only"
    quoted = [f"'{n}'" for n in names]
    listed = (
        quoted[0]
        if len(quoted) == 1
        else ", ".join(quoted[:-1]) + ("," if len(quoted) > 2 else "") + f" and {quoted[-1]}"
    )
    plural = "s" if len(names) != 1 else ""
    return TypeError(f"{name}() missing {len(names)} required {what} argument{plural}: {listed}")


def unexpected_keyword(name: str, key: str, known: list[str]) -> TypeError:
    """CPython's error for a keyword that names no parameter (and, for an eager kernel, no
    `T.const`), with the closest known name as a suggestion."""
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" — did you mean '{close[0]}'?" if close else ""
    return TypeError(f"{name}() got an unexpected keyword argument '{key}'{hint}")


def const_value(kernel: str, name: str, value: Any) -> int:
    """The value of `T.const` `name` given as a keyword (`kernel.compile(M=1024)`): a size, so
    an integer ≥ 0 (numpy integers included) — never truncated from a float."""
    v = value.item() if type(value).__module__ == "numpy" and hasattr(value, "item") else value
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(
            f"{kernel}(): T.const `{name}` must be an integer size, got {type(value).__name__} {value!r}"
            + (f" — pass {name}={int(v)} if that is meant" if isinstance(v, float) and v.is_integer() else "")
        )
    n = v.__index__()
    if n < 0:
        raise ValueError(f"{kernel}(): T.const `{name}` is a size and must be ≥ 0, got {n}")
    return n
