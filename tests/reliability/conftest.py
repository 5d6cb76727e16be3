"""Fixtures for the reliability tests: a private kernel cache per test, a count of real
builds, and a time limit for code that must not hang."""

from __future__ import annotations

import contextlib
import signal

import pytest

from tilelang.backend.registry import get_backend
from tilelang.backend.target import parse


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh, empty kernel cache root for this test."""
    root = tmp_path / "cache"
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(root))
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("TILELANG_CACHE_TRUST_GROUP", raising=False)
    return root


class BuildCounter:
    def __init__(self) -> None:
        self.n = 0


@pytest.fixture
def builds(monkeypatch):
    """How many times a backend really built a kernel (a cache hit builds nothing)."""
    counter = BuildCounter()
    for kind in ("c", "cuda"):
        backend = get_backend(parse(kind if kind == "c" else {"kind": "cuda", "arch": "sm_80"}))
        real = type(backend).build

        def build(*args, _real=real, _backend=backend, **kwargs):
            counter.n += 1
            return _real(_backend, *args, **kwargs)

        monkeypatch.setattr(backend, "build", build)
    return counter


class Hung(BaseException):
    """Raised into code that ran past its limit (a BaseException: no `except OSError` or
    `except Exception` in the code under test can mistake it for a recoverable error)."""


@contextlib.contextmanager
def time_limit(seconds: int):
    """Fail (instead of hanging the suite) if the block runs longer than `seconds`."""

    def expired(signum, frame):
        raise Hung(f"still running after {seconds} s: this would hang")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
