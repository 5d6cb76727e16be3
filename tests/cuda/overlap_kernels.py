"""Attention-shaped kernels that probe the conditions of backend/cuda/overlap_gemms.py (shared by the
CPU tests in tests/cuda/test_overlap_gemms.py and the H200 tests in tests/gpu/test_fa_overlap.py).

`attention(variant, seq, heads_per_block)`: per block, a 128-row Q tile against every 128-key
K/V tile (`S = Q·Kᵀ`, then `O += P·V` with P = S in fp16, no softmax), 256 threads, 2 stages.
`heads_per_block` > 1 runs the pipelined loop inside an outer serial loop over heads (the ring
position then carries across executions of the loop). Variants:

- "plain": P in registers — overlapped;
- "early_writes_a": P is a shared tile the loop writes before S — G must not move past it;
- "shared_a": P is a shared tile written from S after S — the write waits for G(k-1);
- "no_early_ring": S reads only loop-invariant tiles (only V streams) — not overlapped;
- "branch_reads_acc": S is a branch that scales the accumulator after its gemm — not overlapped;
- "shared_reduce": a row max over a shared copy of S (a reduction that stages through shared
  memory) — no producer warpgroup;
- "middle_reads_q": a statement after S reads the Q tile (the producer's lead copy) — the
  consumers release Q after the loop, not after the last S;
- "q_written": the kernel scales Q in place before copying it — the copy stays the consumers'
  (a producer's load would race with the write);
- "maybe_empty": block bx runs 7 - bx trips at 1000 keys (none for the last row block) — the
  first and last steps are guarded, and Q is released without a trip.
"""

from __future__ import annotations

import tilelang
import tilelang.language as T

HEADS, DIM, BLOCK = 4, 128, 128


@tilelang.jit(out_idx=[3])
def attention(variant: str, seq: int, heads_per_block: int = 1):
    shape = [1, seq, HEADS, DIM]
    h, f = T.float16, T.float32
    row = T.GemmWarpPolicy.FullRow

    @T.prim_func
    def main(Q: T.Tensor(shape, h), K: T.Tensor(shape, h), V: T.Tensor(shape, h), O: T.Tensor(shape, h)):
        with T.Kernel(T.ceildiv(seq, BLOCK), HEADS // heads_per_block, threads=256) as (bx, byo):
            Qs = T.alloc_shared([BLOCK, DIM], h)
            Ks = T.alloc_shared([BLOCK, DIM], h)
            Vs = T.alloc_shared([BLOCK, DIM], h)
            Os = T.alloc_shared([BLOCK, DIM], h)
            Ps = T.alloc_shared([BLOCK, BLOCK], h)
            s = T.alloc_fragment([BLOCK, BLOCK], f)
            p = T.alloc_fragment([BLOCK, BLOCK], h)
            o = T.alloc_fragment([BLOCK, DIM], f)
            m = T.alloc_fragment([BLOCK], f)
            for oo in T.serial(heads_per_block):
                by = byo * heads_per_block + oo
                if variant == "q_written":
                    for i, j in T.Parallel(BLOCK, DIM):
                        Q[0, bx * BLOCK + i, by, j] = Q[0, bx * BLOCK + i, by, j] * T.cast(2.0, h)
                T.copy(Q[0, bx * BLOCK : (bx + 1) * BLOCK, by, :], Qs)
                T.fill(o, 0)
                trips = T.ceildiv(seq, BLOCK) - 1 - bx if variant == "maybe_empty" else T.ceildiv(seq, BLOCK)
                for k in T.Pipelined(trips, num_stages=2):
                    if variant != "no_early_ring":
                        T.copy(K[0, k * BLOCK : (k + 1) * BLOCK, by, :], Ks)
                    if variant == "early_writes_a":
                        for i, j in T.Parallel(BLOCK, BLOCK):
                            Ps[i, j] = T.cast(k % 3, h)
                    if variant == "branch_reads_acc":
                        if k % 2 == 0:
                            T.gemm(Qs, Ks, s, transpose_B=True, clear_accum=True, policy=row)
                            for i, j in T.Parallel(BLOCK, BLOCK):
                                s[i, j] = s[i, j] * 0.5
                        else:
                            T.gemm(Qs, Ks, s, transpose_B=True, clear_accum=True, policy=row)
                    elif variant == "no_early_ring":
                        T.gemm(Qs, Os, s, transpose_B=True, clear_accum=True, policy=row)
                    else:
                        T.gemm(Qs, Ks, s, transpose_B=True, clear_accum=True, policy=row)
                    if variant == "middle_reads_q":
                        for i, j in T.Parallel(BLOCK, BLOCK):
                            s[i, j] = s[i, j] + T.cast(Qs[i, j], f)
                    if variant == "shared_reduce":
                        T.copy(s, Ps)
                        T.reduce_max(Ps, m, dim=1)
                        for i, j in T.Parallel(BLOCK, BLOCK):
                            s[i, j] = s[i, j] - m[i]
                    T.copy(V[0, k * BLOCK : (k + 1) * BLOCK, by, :], Vs)
                    if variant == "early_writes_a":
                        T.gemm(Ps, Vs, o, policy=row)
                    elif variant == "shared_a":
                        T.copy(s, Ps)
                        T.gemm(Ps, Vs, o, policy=row)
                    else:
                        T.copy(s, p)
                        T.gemm(p, Vs, o, policy=row)
                T.copy(o, Os)
                T.copy(Os, O[0, bx * BLOCK : (bx + 1) * BLOCK, by, :])

    return main


def reference(variant: str, q, k, v):
    """The same computation in float32 with torch (BSHD inputs), for the variants that the GPU
    tests run."""
    import torch

    qf, kf, vf = (x.float().transpose(1, 2) for x in (q, k, v))  # BSHD -> BHSD
    seq = q.shape[1]
    out = torch.zeros_like(qf)
    for t in range(0, seq, BLOCK):
        kt, vt = kf[:, :, t : t + BLOCK], vf[:, :, t : t + BLOCK]
        if variant == "maybe_empty":  # key tile t // BLOCK only for row blocks bx < blocks - 1 - t // BLOCK
            rows = max(0, (-(-seq // BLOCK) - 1 - t // BLOCK) * BLOCK)
            s = qf[:, :, :rows] @ kt.transpose(-1, -2)
            out[:, :, :rows] = out[:, :, :rows] + s.half().float() @ vt
            continue
        s = qf @ kt.transpose(-1, -2)
        if variant == "middle_reads_q":  # the kernel's K tile is zero-padded: no columns past the keys
            s = s + qf[..., : s.shape[-1]]
        if variant == "early_writes_a":
            p = torch.full_like(s, float((t // BLOCK) % 3))
        else:
            p = s.half().float()
        out = out + p @ vt
    return out.transpose(1, 2)
