import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for p in (HERE, os.path.join(ROOT, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

import pytest  # noqa: E402


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """tests/cuda needs nvcc, not a GPU. The root conftest skips items whose keywords
    contain "cuda" (the GPU marker) — which includes every test in this directory by
    name; undo that here for tests that do not carry the `cuda` marker themselves."""
    here = os.path.abspath(HERE)
    for item in items:
        if not str(item.fspath).startswith(here) or item.get_closest_marker("cuda") is not None:
            continue
        item.own_markers[:] = [
            m for m in item.own_markers if not (m.name == "skip" and "GPU" in str(m.kwargs.get("reason", "")))
        ]
