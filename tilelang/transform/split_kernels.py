"""split_kernels: a function with several `T.Kernel` blocks (or `T.alloc_global` scratch)
becomes a sequence of single-kernel functions plus the scratch buffers the host allocates.

Why: every pass, code generator and launch check is written for one `KernelLaunch` per
function (layout inference, pipelining, sync, shared-memory planning, launch limits,
widen_indices ...). Splitting before the pipeline lets each kernel go through the whole
per-kernel pipeline unchanged; the host side (`backend/launch_plan.py`) launches the kernels
in program order on one stream and owns the scratch.

Requires: a traced PrimFunc whose top level is a sequence of `T.alloc_global` allocations,
scalar `LetStmt`s and `KernelLaunch`es (what the frontend builds for public multi-kernel
programs such as split-KV FlashDecoding). A `T.alloc_global` inside a kernel (Python lets a
later kernel name it too) is one buffer for the whole call, like one before the kernels; its
shape may not depend on block or loop variables.
Guarantees: `split_kernels` returns None for a function with one kernel and no scratch (it is
compiled exactly as before). Otherwise a `KernelSplit` whose kernels are PrimFuncs with one
`KernelLaunch` each, in program order; their parameters are the original parameters followed
by the scratch buffers (in allocation order), `attrs["kernel_index"]` is their position when
there are several (the code generators name the entries `<name>_kernel`, `<name>_kernel_1`,
... as the public API does), their dynamic dimensions are the original
function's, in the same order (so every kernel takes the same argument list), and each body
keeps the scalar `LetStmt`s that preceded its launch. Anything else at the top level — a
launch under an IR `if` or loop, host statements between kernels, scratch whose shape the host
cannot compute — is an error at its line. Never mutates its input.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from ..errors import UnsupportedError, VerifyError
from ..ir.buffer import Buffer
from ..ir.expr import const_int
from ..ir.function import PrimFunc
from ..ir.node import FrozenDict
from ..ir.stmt import Allocate, Evaluate, KernelLaunch, LetStmt, SeqStmt, Stmt, seq
from ..ir.visitor import SplicingMutator, collect, free_vars_of
from .view_alias import is_view


@dataclass(frozen=True)
class KernelSplit:
    kernels: tuple  # PrimFunc per T.Kernel block, in program order
    scratch: tuple  # global Buffers from T.alloc_global, in allocation order
    n_params: int  # parameters of the original function (the scratch follows them)


def needs_split(func: PrimFunc) -> bool:
    """True when `func` has more than one kernel or any `T.alloc_global` scratch."""
    return split_kernels(func) is not None


def _top(body: Stmt) -> list:
    out: list = []
    for s in body.stmts if isinstance(body, SeqStmt) else (body,):
        if isinstance(s, SeqStmt):
            out.extend(_top(s))
        else:
            out.append(s)
    return out


_SPLITS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def split_kernels(func: PrimFunc) -> KernelSplit | None:
    """The single-kernel functions and scratch of `func` (module docstring), or None.
    Memoised per function: the JIT, the cache and the analysis each ask (IR is immutable)."""
    try:
        return _SPLITS[func]
    except KeyError:
        pass
    out = _split(func)
    _SPLITS[func] = out
    return out


def _split(func: PrimFunc) -> KernelSplit | None:
    top = _top(func.body)
    launches = [s for s in top if isinstance(s, KernelLaunch)]
    scratch_allocs = [s for s in top if _is_scratch(s)]
    everywhere = collect(func.body, lambda n: isinstance(n, KernelLaunch))
    inner = collect(func.body, _is_scratch)
    if len(everywhere) <= 1 and not inner:
        return None  # one kernel (under an IR `if` too: verify reports that, as before)
    if len(everywhere) != len(launches):
        nested = next(k for k in everywhere if not any(k is t for t in launches))
        raise UnsupportedError(
            "a T.Kernel under an IR-level `if` or loop cannot be launched from the host",
            nested.span,
            "choose between kernels with a Python-level condition on compile-time values",
        )
    if len(inner) > len(scratch_allocs):  # T.alloc_global inside a T.Kernel: one buffer for the call
        hoist = _Hoist()
        top = [hoist.visit(s) if isinstance(s, KernelLaunch) else s for s in top]
        launches = [s for s in top if isinstance(s, KernelLaunch)]
        scratch_allocs = scratch_allocs + hoist.found
    scratch = tuple(a.buffer for a in scratch_allocs)
    _check_scratch(func, scratch_allocs)
    _check_kernel_locals(launches)
    lets: list = []
    kernels: list = []
    attrs = FrozenDict({k: v for k, v in func.attrs.items() if k != "out_idx"})
    params = tuple(func.params) + scratch
    for s in top:
        if isinstance(s, KernelLaunch):
            # entries are named as the public API names them: main_kernel, main_kernel_1, ...
            k_attrs = attrs.set(kernel_index=len(kernels)) if len(launches) > 1 else attrs
            kernels.append(PrimFunc(func.name, params, seq(*lets, s), k_attrs, func.span))
        elif isinstance(s, LetStmt):
            lets.append(s)
        elif _is_scratch(s):
            continue
        elif isinstance(s, Evaluate) and const_int(s.value) is not None:
            continue
        else:
            raise VerifyError(
                f"{type(s).__name__} outside T.Kernel: between kernel launches only T.alloc_global "
                "and scalar definitions may appear",
                s.span,
                "move the statement inside a `with T.Kernel(...)` block",
            )
    dyn = func.dynamic_vars()
    for k in kernels:
        got = k.dynamic_vars()
        if len(got) != len(dyn) or any(a is not b for a, b in zip(got, dyn)):
            raise UnsupportedError(  # pragma: no cover - _check_scratch refuses such shapes first
                "T.alloc_global shapes may only use the parameters' dimensions and scalar parameters", func.span
            )
    return KernelSplit(tuple(kernels), scratch, len(func.params))


def _is_scratch(n: object) -> bool:
    """A `T.alloc_global` buffer: global storage the host allocates per call — not a view
    (`T.Tensor(shape, dtype, buf.data)` / `T.view`), which is another name for its base's."""
    return isinstance(n, Allocate) and n.buffer.scope == "global" and not is_view(n)


class _Hoist(SplicingMutator):
    """Takes the T.alloc_global allocations out of a kernel (they become parameters)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list = []

    def visit_Allocate(self, n: Allocate) -> Stmt:
        if not _is_scratch(n):
            return n
        self.found.append(n)
        return SeqStmt(())


def _check_kernel_locals(launches: list) -> None:
    """A buffer allocated inside one T.Kernel lives in that kernel's blocks only."""
    for k in launches:
        owned = {id(a.buffer): a.buffer for a in collect(k.body, lambda n: isinstance(n, Allocate))}
        for other in launches:
            if other is k:
                continue
            used = collect(other.body, lambda n, owned=owned: isinstance(n, Buffer) and id(n) in owned)
            if used:
                b = used[0]
                raise VerifyError(
                    f"buffer `{b.name}` ({b.scope}) belongs to the T.Kernel at line {k.span.line} and is used "
                    f"in the T.Kernel at line {other.span.line}: on-chip buffers live only in their own kernel",
                    other.span,
                    "pass values between kernels through global memory: a T.alloc_global buffer or a parameter",
                )


def _check_scratch(func: PrimFunc, allocs: list) -> None:
    """Scratch shapes must be computable by the host from the call's arguments."""
    known = set(func.scalar_params) | set(func.dynamic_vars())
    for a in allocs:
        b = a.buffer
        for d in b.shape:
            if not d.dtype.is_integer:
                raise VerifyError(f"T.alloc_global `{b.name}` has a non-integer dimension `{d}`", a.span)
            unknown = [v for v in free_vars_of(d) if v not in known]
            if unknown:
                raise UnsupportedError(
                    f"the shape of T.alloc_global `{b.name}` depends on `{unknown[0].name}`, which the host "
                    "cannot compute before the launch",
                    a.span,
                    "size it with compile-time values, tensor dimensions or scalar parameters",
                )
