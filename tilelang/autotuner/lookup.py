"""Find a cached tuning result by the tuned function's identity, for tools (the language server).

A cache entry's key (results.tuning_key) hashes the call's arguments and the device,
which an editor cannot know; so `save` also records which function was tuned: its
file, name and `function_digest` of its source. `best_config(source, path, function)`
returns the best config of the newest complete entry whose function has exactly the
current text of that function (one tuned from the same file first), or None. Entries are read under the
cache's trust rules (cache.py); nothing is executed.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..cache import kernel_cache as kc
from ..cache import trust
from .cache import _JSON_LIMIT, enabled, entry_dir

MAX_ENTRIES = 4096  # entries looked at per lookup (newest first)


def function_digest(source: str, function: str) -> str | None:
    """sha256 of the top-level function `function` of `source`, decorators included, as
    lines of the file (so the same text gives the same digest at save and lookup time)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    node = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == function), None
    )
    if node is None:
        return None
    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
    lines = source.splitlines()[first - 1 : node.end_lineno]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def identity(raw: Any) -> dict:
    """{"function", "file", "digest"} of a tuned top-level function ({} when it has no file)."""
    import inspect

    try:
        path = inspect.getsourcefile(raw)
        name = raw.__name__
        if not path or raw.__qualname__ != name:
            return {}
        digest = function_digest(Path(path).read_text(encoding="utf-8"), name)
    except (OSError, TypeError, AttributeError, UnicodeDecodeError):
        return {}
    return {"function": name, "file": os.path.realpath(path), "digest": digest} if digest else {}


def best_config(source: str, path: str, function: str) -> dict | None:
    """{"config", "latency", "entry"} of the newest matching entry, or None."""
    if not enabled():
        return None
    digest = function_digest(source, function)
    if digest is None:
        return None
    base = entry_dir("x").parent
    try:
        entries = sorted(base.iterdir(), key=lambda d: d.stat().st_mtime, reverse=True)[:MAX_ENTRIES]
    except OSError:
        return None
    real = os.path.realpath(path)
    found = None
    for d in entries:
        try:
            trust.check_chain(kc.cache_root(), d)
            best = json.loads(trust.read_file(d / "best_config.json", _JSON_LIMIT))
            tuned = best.get("tuned") if type(best) is dict else None
            if type(tuned) is not dict or tuned.get("function") != function or tuned.get("digest") != digest:
                continue
            latency = json.loads(trust.read_file(d / "latency.json", _JSON_LIMIT))  # present = complete
        except (OSError, ValueError):
            continue
        config = best.get("config")
        if isinstance(config, list):  # stable() writes dicts as [[key, value], ...]
            try:
                config = {k: v for k, v in config}
            except (TypeError, ValueError):
                continue
        if not isinstance(config, dict):
            continue
        got = {"config": config, "latency": latency.get("latency") if type(latency) is dict else None, "entry": d.name}
        # the tuning key hashes the function's text, not its file: the same text elsewhere got the
        # same result; an entry tuned from this very file is preferred
        if tuned.get("file") == real:
            return got
        found = found or got
    return found
