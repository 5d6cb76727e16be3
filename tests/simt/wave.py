"""Running a lowered kernel: the grid of blocks, each block's threads stepped together from one
rendezvous (barrier, reduction, shuffle, target collective) to the next, and the warp / wave
collectives every target shares (`AllReduce` groups, shuffles within `Dialect.wave_size` lanes)."""

from __future__ import annotations

from typing import Any

import torch

from tilelang.ir.buffer import Buffer
from tilelang.ir.expr import Var
from tilelang.ir.stmt import KernelLaunch, SeqStmt

from .compiler import Compiler
from .core import Dialect, SimError, _Clock, _max, _min


def all_reduce(kind: str, k_threads: int, k_scale: int, values: list) -> list:
    groups: dict = {}
    for t, v in enumerate(values):
        groups.setdefault((t % k_scale, t // (k_threads * k_scale)), []).append(v)
    comb = {"sum": lambda a, b: a + b, "max": _max, "min": _min, "and": lambda a, b: a & b,
            "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}[kind]  # fmt: skip
    res = {}
    for key, vs in groups.items():
        if any(v is None for v in vs):
            raise SimError("AllReduce of an unwritten value")
        acc = vs[0]
        for v in vs[1:]:
            acc = comb(acc, v)
        res[key] = acc
    return [res[(t % k_scale, t // (k_threads * k_scale))] for t in range(len(values))]


def shuffle(events: list, wave_size: int = 32) -> list:
    """tl::shfl_lane<kind>(v, lane, width) of every thread (CUDA's __shfl_*_sync, HIP's __shfl_*:
    the source lane is computed within groups of `width` lanes of the thread's warp / wave of
    `wave_size` lanes; out of range: its own)."""
    out = []
    for t, (_, kind, _, lane, width) in enumerate(events):
        if width > wave_size:
            raise SimError(f"a shuffle over {width} lanes: a {'warp' if wave_size == 32 else 'wave'} has {wave_size}")
        pos, start = t % wave_size % width, t - t % wave_size % width
        if kind == 0:
            src = start + (pos ^ lane) if (pos ^ lane) < width else t
        elif kind == 1:
            src = t + lane if pos + lane < width else t
        elif kind == 2:
            src = t - lane if pos - lane >= 0 else t
        else:
            src = start + lane % width
        if src >= len(events) or events[src][2] is None:
            raise SimError(f"thread {t} shuffles from lane {src}, which has no value")
        out.append(events[src][2])
    return out


def _eval_int(e: Any, env: dict) -> int:
    from tilelang.jit.adapter import eval_int

    return eval_int(e, env)


def run(lowered, args: list, dialect: Dialect, max_blocks: int | None = None) -> None:
    """Run the lowered kernel on CPU torch tensors `args` (all parameters, in order)."""
    kernels = [s for s in _walk(lowered.body) if isinstance(s, KernelLaunch)]
    (kernel,) = kernels
    params = list(lowered.params)
    dyn = lowered.dynamic_vars()
    env: dict = {}
    for p, a in zip(params, args):
        if isinstance(p, Buffer):
            for d, n in zip(p.shape, a.shape):
                if isinstance(d, Var):
                    env[d] = int(n)
        else:
            env[p] = a
    comp = Compiler(lowered, dialect)
    thread_fn, src = comp.compile(kernel, params, dyn)
    mem = []
    for p, a in zip(params, args):
        if isinstance(p, Buffer):
            mem.append(a.detach().reshape(-1).to(torch.float64 if a.dtype.is_floating_point else torch.int64).tolist())
        else:
            mem.append(a)
    dyn_vals = [env[v] for v in dyn]
    grid = [_eval_int(g, env) for g in kernel.grid]
    T = kernel.num_threads
    blocks = [(x, y, z) for z in range(grid[2] if len(grid) > 2 else 1) for y in range(grid[1] if len(grid) > 1 else 1)
              for x in range(grid[0])]  # fmt: skip
    if max_blocks is not None:
        blocks = blocks[:max_blocks]
    for blk in blocks:
        smem: dict = {}
        bv = list(blk[: len(kernel.block_vars)])
        gens = [thread_fn(t, blk, smem, *mem, *dyn_vals, *bv) for t in range(T)]
        run_block(gens, T, dialect)
    for p, a, m in zip(params, args, mem):
        if isinstance(p, Buffer):
            vals = [0 if v is None else v for v in m]
            a.copy_(torch.tensor(vals, dtype=torch.float64).reshape(a.shape).to(a.dtype))


def run_block(gens: list, T: int, dialect: Dialect) -> None:
    """Step the threads of one block from rendezvous to rendezvous until all of them finish."""
    sends: list = [None] * T
    _Clock.epoch += 1  # a fresh block: nothing of another block's shared memory is visible
    while True:
        events = []
        done = 0
        for t, g in enumerate(gens):
            _Clock.thread = t
            try:
                ev = g.send(sends[t])
            except StopIteration:
                ev = None
                done += 1
            events.append(ev)
        if done == T:
            return
        if done:
            waiting = next(e for e in events if e is not None)
            raise SimError(f"{done} of {T} threads finished while others wait at {waiting[0]}")
        kinds = {e[0] for e in events}
        if len(kinds) != 1:
            raise SimError(f"threads diverge at a rendezvous: {sorted(kinds)}")
        kind = events[0][0]
        if kind == "sync":
            sites = sorted({e[1] for e in events})
            if len(sites) != 1:
                raise SimError(f"threads wait at different barriers (__syncthreads() statements {sites})")
            _Clock.epoch += 1
            sends = [None] * T
        elif kind == "red":
            _, op, kt, ks, _, scratch = events[0]
            if kt * ks > dialect.wave_size and not scratch:
                raise SimError(f"AllReduce over {kt} threads {ks} apart spans several {dialect.wave_size}-lane "
                               "warps / waves but has no scratch buffer: shuffles cannot reach across them")  # fmt: skip
            sends = all_reduce(op, kt, ks, [e[4] for e in events])
        elif kind == "shfl":
            sends = shuffle(events, dialect.wave_size)
        elif kind in dialect.rendezvous:
            sends = dialect.rendezvous[kind](events, T)
        else:
            raise SimError(f"unknown rendezvous {kind}")


def _walk(s: Any) -> list:
    if isinstance(s, SeqStmt):
        out = []
        for x in s.stmts:
            out.extend(_walk(x))
        return out
    return [s]
