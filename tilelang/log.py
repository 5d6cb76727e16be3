"""`tilelang.set_log_level`: the level of the `tilelang` logger (and its children)."""

from __future__ import annotations

import logging

_FORMAT = "%(asctime)s [TileLang:%(name)s:%(levelname)s]: %(message)s"


def set_log_level(level: int | str) -> None:
    """Set the `tilelang` logger's level: a name ("DEBUG", "info", ...) or a `logging` int.

    When neither that logger nor the root logger has a handler yet, a stderr handler
    is added so the messages the new level lets through are actually shown."""
    if isinstance(level, str):
        name = level.strip().upper()
        value = logging.getLevelName(name)
        if not isinstance(value, int):
            raise ValueError(f"unknown log level {level!r}; use DEBUG, INFO, WARNING, ERROR or CRITICAL")
        level = value
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"set_log_level expects a level name or int, got {level!r}")
    logger = logging.getLogger("tilelang")
    logger.setLevel(level)
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(_FORMAT))
        logger.addHandler(handler)
