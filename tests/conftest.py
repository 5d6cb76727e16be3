import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Tests use a private kernel cache so they never read a stale or foreign one."""
    if "TILELANG_CACHE_DIR" not in os.environ:
        if os.environ.get("PYTEST_XDIST_WORKER"):
            # pytest-xdist workers (make test runs two) share one private cache: a kernel one
            # worker built is a hit for the other, as in a user's single process
            shared = tmp_path_factory.getbasetemp().parent / "tilelang-cache"
            shared.mkdir(exist_ok=True)
            os.environ["TILELANG_CACHE_DIR"] = str(shared)
        else:
            os.environ["TILELANG_CACHE_DIR"] = str(tmp_path_factory.mktemp("tilelang-cache"))
    yield


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)
