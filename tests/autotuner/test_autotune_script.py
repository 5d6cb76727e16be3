"""The tutorial's autotune snippet as a plain script (no `if __name__ == "__main__"`
guard, tuning at module level) runs unchanged with a 2-process compile pool:
workers load only the script's definitions, so they never re-run the tuning."""

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent(
    """
    import os
    import torch
    import tilelang
    import tilelang.language as T
    from tilelang.autotuner import set_autotune_inputs

    def matmul_configs(M, N, K):
        return [
            dict(block_M=BM, block_N=BN, block_K=BK, num_stages=S, threads=TH)
            for BM in [32, 64]
            for BN in [64]
            for BK in [32]
            for S in [2]
            for TH in [128]
        ]

    @tilelang.autotune(configs=matmul_configs, warmup=25, rep=100, timeout=60)
    @tilelang.jit(out_idx=[-1])
    def matmul(M: int, N: int, K: int,
               block_M: int = 128, block_N: int = 128, block_K: int = 32,
               threads: int = 128, num_stages: int = 3, dtype=T.float16, accum_dtype=T.float32):
        @T.prim_func
        def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
                A_shared = T.alloc_shared((block_M, block_K), dtype)
                B_shared = T.alloc_shared((block_K, block_N), dtype)
                C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
                T.clear(C_local)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
                T.copy(C_local, C[by * block_M, bx * block_N])
        return main

    M, N, K = 128, 128, 96
    a = torch.randn(M, K).half()
    b = torch.randn(K, N).half()
    c = torch.empty(M, N).half()
    with set_autotune_inputs(a, b, c):      # 固定输入，保证各 config 可比
        tuned = matmul(M, N, K)             # 编译+验证+benchmark 全部 config，返回最优
    err = (tuned(a, b).float() - a.float() @ b.float()).abs().max().item()
    where = sorted(set(matmul.last_result.compiled_on.values()))
    print("RESULT", tuned.config["block_M"], err, os.getpid(), ",".join(where))
    """
)


def test_seed_snippet_runs_as_an_unguarded_script(tmp_path):
    script = tmp_path / "seed_autotune.py"
    script.write_text(SCRIPT)
    env = dict(os.environ)
    env.update(
        PYTHONPATH=ROOT,
        TILELANG_AUTO_TUNING_CPU_COUNTS="2",
        TILELANG_DEFAULT_TARGET="c",
        TILELANG_CACHE_DIR=str(tmp_path / "cache"),
    )
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    _, block_m, err, pid, where = line.split()
    assert int(block_m) in (32, 64) and float(err) < 0.1
    pids = {int(w.rsplit(":", 1)[1]) for w in where.split(",")}
    assert len(pids) >= 1 and int(pid) not in pids  # compiled by the pool's workers, not the script
