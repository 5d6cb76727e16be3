"""What the `tl::` CUDA templates the per-thread IR calls hold in registers, for the register
model (`register_model.py`): the operand fragments and shared addresses of the mma.sync gemm
templates (`include/tl/gemm.h`), wgmma's descriptors, the words a copy template stages, and how
many elements of a register array a template reads through a pointer.

Requires: a statement or call of the per-thread IR after `plan_shared_memory`. Guarantees: every
figure is read from the template's name (its integer template arguments) and its pointer
arguments' buffers; None where the call is not one of these templates.
"""

from __future__ import annotations

from typing import Any

from ..ir.buffer import Buffer
from ..ir.expr import BufferLoad, Call, StringImm
from ..ir.stmt import Stmt

WGMMA_WORDS = 18  # wgmma: A/B matrix descriptors (64-bit) of this and the next K-step, the warpgroup's fence state
# `tl::AllReduce` over more than one warp (`include/tl/reduce.h`): after the shuffles it writes its
# partial to the shared scratch and reads the others' back across a barrier, holding the scratch
# address, the thread's warp and lane, its first slot, the running result and the loaded partial
# on top of the value it reduces; calibrated on the catalogue (seed.layer_norm: 26 registers,
# ex.rms_norm: 19, where the peak is at that reduction)
XWARP_REDUCE_WORDS = 8


def gemm_fragments(s: Stmt, in_loop: bool = True) -> tuple[int, str] | None:
    """(operand words the gemm template holds per thread, family) for a statement that is one
    call of a `tl::` gemm template; None for any other statement. `in_loop`: the call is inside
    a rolled loop (a K loop), so its operand addresses change from one call to the next."""
    from ..ir.stmt import Evaluate

    if not isinstance(s, Evaluate) or not isinstance(s.value, Call):
        return None
    call = s.value
    name = call.args[0].value if call.args and isinstance(call.args[0], StringImm) else call.op
    if not isinstance(name, str):
        return None
    if name.startswith("tl::wgmma_gemm_"):
        return WGMMA_WORDS, "wgmma"
    if not (name.startswith("tl::gemm_ss<") or name.startswith("tl::gemm_rs<")):
        return None
    dims = template_ints(name, 5)
    if dims is None:
        return None
    m, n, k, warps_m, warps_n = dims
    elem_bits = gemm_operand_bits(s)
    k_step = {8: 32, 16: 16}.get(elem_bits, 8)  # mma_k_of: 8-bit k32, 16-bit k16, tf32 k8
    m_atoms, n_atoms, k_steps = m // warps_m // 16, n // warps_n // 8, max(1, k // k_step)
    a_words = 0 if name.startswith("tl::gemm_rs<") else 4 * m_atoms  # gemm_rs: A is a register array
    b_words = 2 * n_atoms
    if elem_bits == 32:
        # tf32 reads scalars, every K-step's fragments at once (nothing orders them after the
        # previous mma), one shared address per word
        fragments = (a_words + b_words) * k_steps
        return fragments + fragments // 2, "mma.sync"
    # one K-step's A and B fragments, double-buffered: the next K-step's loads are issued under
    # the current mmas. Outside a loop ptxas schedules the call as straight-line code and reuses
    # one K-step's registers (measured: kz.column_sum_of_gemm, 32 accumulators, 48 registers)
    prefetch = a_words + b_words if k_steps > 1 and in_loop else 0
    fragments = a_words + b_words + prefetch
    # one 32-bit shared address per ldmatrix (A: one x4 per m16 atom, B: one x4 per two n8
    # atoms) of every K-step; outside a loop every address is the shared base plus a constant,
    # folded into the ldmatrix's immediate offset
    addresses = ((0 if a_words == 0 else m_atoms) + -(-n_atoms // 2)) * k_steps if in_loop else 0
    return fragments + addresses, "mma.sync"


def cross_warp_reduce(call: Call) -> bool:
    """`tl.all_reduce(op, threads, scale, ...)` spanning more than one warp (threads * scale > 32:
    through the shared scratch, not shuffles alone)."""
    from ..ir.expr import const_int

    t, sc = (const_int(a) for a in call.args[1:3]) if len(call.args) > 2 else (None, None)
    return t is not None and sc is not None and t * sc > 32


def gemm_operand_bits(s: Stmt) -> int:
    """The element width of a gemm call's A operand (16 when it cannot be read)."""
    call = s.value
    a_buf = pointer_buffer(call.args[1]) if len(call.args) > 1 else None
    return a_buf.dtype.bits if a_buf is not None else 16


def staged_words(name: str) -> int:
    """Words a copy template stages through registers (`tl::copy_vec_pred<16>`: a 16-byte
    load, then a store): its byte count / 4; 0 for anything else (cp.async copies bypass them).
    A copy into a register array is counted as the array's elements instead."""
    if name.startswith("tl::copy_vec") and "<" in name:
        got = template_ints(name, 1)
        return max(1, got[0] // 4) if got else 0
    return 0


def template_ints(name: str, count: int) -> list[int] | None:
    """The first `count` template arguments of `tl::f<a, b, ...>` as ints; None unless they are."""
    inner = name[name.index("<") + 1 :]
    out = []
    for part in inner.split(",")[:count]:
        part = part.strip().rstrip(">").strip()
        if not part.isdigit():
            return None
        out.append(int(part))
    return out if len(out) == count else None


def pointer_buffer(arg: Any) -> Buffer | None:
    """The buffer an `address_of(buf[...])` argument points into."""
    if isinstance(arg, Call) and arg.args and isinstance(arg.args[0], BufferLoad):
        return arg.args[0].buffer
    if isinstance(arg, BufferLoad):
        return arg.buffer
    return None


def pointee_elements(name: str):
    """For a `tl::` template taking a pointer into a register array: a function of that array
    giving how many elements it touches from the pointer (None: unknown, the whole array)."""
    if name.startswith(("tl::copy_vec", "tl::cp_async")) and "<" in name:
        got = template_ints(name, 1)
        return (lambda b: got[0] * 8 // max(8, b.dtype.bits * b.dtype.lanes)) if got else None
    if name.startswith("tl::cvt_pair") or name.endswith("_x2"):
        return lambda b: 2
    if name.endswith("_x4"):
        return lambda b: 4
    return None
