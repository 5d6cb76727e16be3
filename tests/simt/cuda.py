"""The CUDA dialect of the SIMT simulator: warps of 32, and the NVIDIA collectives of our header
library, restated from the PTX fragment tables independently of `tilelang.layout`:

* `tl::gemm_ss` / `tl::gemm_rs` compute C += op(A) · op(B) from the shared tiles (addressed with
  a Python port of `tl::SmemLayout`) and scatter the product into the threads' accumulator
  registers with the register convention stated in gemm.h (warp grid, m16n8 atoms row-major,
  c0..c3);
* `tl::wgmma_gemm_ss` / `_rs` (sm_90a) likewise, with the wgmma register tables;
* `tl::cp_async_zfill` (shared with every target in `compiler.py`) lands at once, so the
  cp.async commit / wait and proxy fences are no-ops.
"""

from __future__ import annotations

import re

import torch

from tilelang.ir.expr import Call

from .core import Dialect, SimError, _Clock
from .wave import run


def smem_offset(rows: int, cols: int, e: int, s: int, row: int, col: int) -> int:
    """Python port of tl::SmemLayout<rows, cols, e, s>::offset."""
    if s == 0:
        return row * cols + col
    byte = col * e
    panel, inner = byte // s, byte % s
    a = panel * (rows * s) + row * s + inner
    a ^= ((a >> 7) & (s // 16 - 1)) << 4
    return a // e


def _parse_gemm(fn: str) -> tuple:
    inner = fn[fn.index("<") + 1 : fn.rindex(">")]
    layouts = re.findall(r"tl::SmemLayout<(\d+), (\d+), (\d+), (\d+)>", inner)
    head = re.sub(r"tl::SmemLayout<[^>]*>", "", inner)
    nums = [x.strip() for x in head.split(",") if x.strip()]
    return nums, [tuple(int(v) for v in lay) for lay in layouts]


def _tile(ptr, lay, rows, cols, trans, packed=False):
    lst, base = ptr
    R, C, E, S = lay
    out = torch.zeros(rows, cols, dtype=torch.float64)
    for i in range(rows):
        for j in range(cols):
            r, c = (j, i) if trans else (i, j)
            if packed:  # element (r, c) is nibble c % 2 of byte (r, c // 2) of the byte layout
                v = lst[base + 2 * smem_offset(R, C, E, S, r, c // 2) + c % 2]
            else:
                v = lst[base + smem_offset(R, C, E, S, r, c)]
            if v is None:
                raise SimError("gemm reads uninitialised shared memory")
            out[i, j] = v
    return out


GEMM_FNS = ("tl::gemm_ss", "tl::gemm_rs", "tl::wgmma_gemm_ss", "tl::wgmma_gemm_rs")


def wgmma_gemm(fn: str, per_thread: list, threads: int) -> None:
    """tl::wgmma_gemm_ss / _rs (gemm_sm90.h): warpgroup g = (t - base) / 128 at
    (g % WG_M, g / WG_M); C registers of a warpgroup tile: m64n8 atoms row-major, each in
    the PTX wgmma d order (row 16 w + l/4 + 8 ((i/2) % 2), col 2 (l % 4) + i % 2); RS A:
    k-step s of row atom mi = the 8 halves at 4 (mi K/8 + 2 s), in the mma m16n8k16 A order."""
    nums, lays = _parse_gemm(fn)
    rs = fn.startswith("tl::wgmma_gemm_rs")
    M, N, K, GM, GN = (int(x) for x in nums[:5])
    if rs:
        TA, TB, clear, base = False, nums[6] == "true", nums[7] == "true", int(nums[9])
        (blay,) = lays
    else:
        TA, TB, clear, base = nums[6] == "true", nums[7] == "true", nums[8] == "true", int(nums[10])
        alay, blay = lays
    tm, tn = M // GM, N // GN
    a_ptr, b_ptr, _ = per_thread[base]
    B = _tile(b_ptr, blay, K, N, TB)
    if rs:
        A = torch.zeros(M, K, dtype=torch.float64)
        for t in range(base, base + 128 * GM):
            g, w, lane = (t - base) // 128, ((t - base) % 128) // 32, t % 32
            regs, rbase = per_thread[t][0]
            for mi in range(tm // 64):
                for s_ in range(K // 16):
                    for r in range(8):
                        row = g * tm + 64 * mi + 16 * w + lane // 4 + 8 * ((r // 2) % 2)
                        col = 16 * s_ + 2 * (lane % 4) + r % 2 + 8 * (r // 4)
                        v = regs[rbase + 4 * (mi * K // 8 + 2 * s_) + r]
                        if v is None:
                            raise SimError("wgmma_gemm_rs reads an unwritten A register")
                        A[row, col] = v
    else:
        A = _tile(a_ptr, alay, M, K, TA)
    P = A @ B
    for t in range(base, base + 128 * GM * GN):
        g, w, lane = (t - base) // 128, ((t - base) % 128) // 32, t % 32
        regs, cbase = per_thread[t][2]
        for mi in range(tm // 64):
            for n8 in range(tn // 8):
                for r in range(4):
                    row = (g % GM) * tm + 64 * mi + 16 * w + lane // 4 + 8 * (r // 2)
                    col = (g // GM) * tn + 8 * n8 + 2 * (lane % 4) + r % 2
                    k = cbase + (mi * (tn // 8) + n8) * 4 + r
                    if clear:
                        regs[k] = float(P[row, col])
                    elif regs[k] is None:
                        raise SimError("wgmma accumulates into an unwritten register")
                    else:
                        regs[k] = regs[k] + float(P[row, col])


def gemm(fn: str, per_thread: list, threads: int, packed: bool = False) -> None:
    if fn.startswith("tl::wgmma_gemm"):
        return wgmma_gemm(fn, per_thread, threads)
    nums, lays = _parse_gemm(fn)
    rs = fn.startswith("tl::gemm_rs")
    M, N, K, WM, WN = (int(x) for x in nums[:5])
    if packed:
        K *= 2  # the template's K counts bytes of two 4-bit elements
    if rs:
        TB = nums[5] == "true"
        (blay,) = lays
        TA = False
    else:
        TA, TB = nums[5] == "true", nums[6] == "true"
        alay, blay = lays
    a_ptr, b_ptr, _ = per_thread[0]
    B = _tile(b_ptr, blay, K, N, TB, packed)
    if rs:
        A = torch.zeros(M, K, dtype=torch.float64)
        for t in range(WM * 32):  # warps with wn = 0 hold every row band
            w, lane = t // 32, t % 32
            g, q = lane // 4, lane % 4
            regs, rbase = per_thread[t][0]
            mt, kt = (M // WM) // 16, K // 16
            for mi in range(mt):
                for ki in range(kt):
                    for r in range(8):
                        row = (w % WM) * (M // WM) + mi * 16 + g + 8 * ((r // 2) % 2)
                        col = ki * 16 + 2 * q + r % 2 + 8 * (r // 4)
                        v = regs[rbase + (mi * kt + ki) * 8 + r]
                        if v is None:
                            raise SimError("gemm_rs reads an unwritten A register")
                        A[row, col] = v
    else:
        A = _tile(a_ptr, alay, M, K, TA, packed)
    P = A @ B
    wm_t, wn_t = M // WM, N // WN
    nt = wn_t // 8
    for t in range(threads):
        w, lane = t // 32, t % 32
        if w >= WM * WN:
            continue
        g, q = lane // 4, lane % 4
        regs, cbase = per_thread[t][2]
        for mi in range(wm_t // 16):
            for ni in range(nt):
                for r in range(4):
                    row = (w % WM) * wm_t + mi * 16 + g + 8 * (r // 2)
                    col = (w // WM) * wn_t + ni * 8 + 2 * q + r % 2
                    k = cbase + (mi * nt + ni) * 4 + r
                    if regs[k] is None:
                        raise SimError("gemm accumulates into an unwritten register")
                    regs[k] = regs[k] + float(P[row, col])


def _evaluate(comp, s) -> bool:
    v = s.value
    if not (isinstance(v, Call) and v.op == "tl.call" and v.args[0].value.startswith(GEMM_FNS)):
        return False
    fn = v.args[0].value
    ptrs = ", ".join(comp.expr(a) for a in v.args[1:])
    # packed 4-bit operand tiles: the template counts K and the layouts in bytes
    a0 = v.args[1]
    packed = isinstance(a0, Call) and a0.op == "address_of" and a0.args[0].buffer.dtype.bits < 8
    comp.emit(f"yield ('gemm', {fn!r}, ({ptrs},), {packed})")
    return True


def _call(comp, e) -> str | None:
    if e.op in ("tl.cp_async_commit", "tl.cp_async_wait"):
        return "None"
    if e.op == "tl.call":
        fn = e.args[0].value
        if fn == "tl::fence_proxy_async":  # memory lands at once here: ordering is a no-op
            return "None"
        if fn.startswith("tl::warpgroup_fence_operands<"):  # a compiler-only register fence
            return "None"
    return None


def _gemm_rendezvous(events: list, threads: int) -> list:
    _Clock.thread = _Clock.BLOCK  # the tiles are read on behalf of the whole block
    gemm(events[0][1], [e[2] for e in events], threads, events[0][3])
    return [None] * threads


CUDA = Dialect("cuda", 32, _call, _evaluate, {"gemm": _gemm_rendezvous})


def simulate(func, args: list, arch: str = "sm_80", max_blocks: int | None = None, pass_configs: dict | None = None):
    """Lower `func` for CUDA and run it on CPU tensors; returns the lowered PrimFunc."""
    from tilelang.backend.cuda.pipeline import lower
    from tilelang.backend.target import parse

    lowered = lower(func, {"target": parse({"kind": "cuda", "arch": arch}), "pass_configs": pass_configs or {}})
    run(lowered, args, CUDA, max_blocks)
    return lowered
