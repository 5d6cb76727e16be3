"""Distributed compilation: a real Dask LocalCluster (2 worker processes) compiles
the configs; the workers have their own kernel cache directory, so the tuning
process only gets the kernels through the artifacts the workers send back."""

import os
import sys

import pytest
import torch
from autotune_kernels import CONFIGS, gemm_lazy, ref_program

import tilelang
from tilelang.backend.registry import get_backend
from tilelang.backend.target import parse

distributed = pytest.importorskip("distributed")


def test_dask_cluster_compiles_configs(tmp_path, monkeypatch):
    built_here = []
    backend = get_backend(parse("c"))
    real_build = backend.build

    def counting_build(*args, **kwargs):
        built_here.append(args[0].name)
        return real_build(*args, **kwargs)

    monkeypatch.setattr(backend, "build", counting_build)
    env = {
        "TILELANG_CACHE_DIR": str(tmp_path / "worker-cache"),
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    cluster = distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0", env=env
    )
    client = distributed.Client(cluster)
    try:
        client.wait_for_workers(2, timeout=120)
        worker_pids = set(client.run(os.getpid).values())
        configs = [c for c in CONFIGS if c["block_K"] == 16][:4]
        tuned = tilelang.autotune(
            configs=configs, warmup=1, rep=2, timeout=60, ref_prog=ref_program, executor=client.get_executor()
        )(gemm_lazy)
        M, N, K = 64, 64, 32  # a problem size no other test compiles
        kernel = tuned(M, N, K)
        res = tuned.last_result
    finally:
        client.close()
        cluster.close()
    pids = {int(w.rsplit(":", 1)[1]) for w in res.compiled_on.values()}
    assert pids <= worker_pids and os.getpid() not in pids
    assert built_here == []  # every kernel came back from a worker: nothing compiled here
    assert res.config in configs and len(res.timings) == 4
    a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
    torch.testing.assert_close(kernel(a, b), ref_program(a, b), atol=0.1, rtol=1e-2)
