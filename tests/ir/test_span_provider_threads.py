"""The span provider is per thread: kernels are lowered concurrently (compile thread pools,
the language server), and one thread's span must never stamp another thread's nodes or
outlive its block."""

import threading

from tilelang.ir import node as ir_node
from tilelang.ir.expr import Var
from tilelang.ir.span import NO_SPAN, Span
from tilelang.ir.stmt import Evaluate
from tilelang.tileop.base import op_span


def test_interleaved_threads_keep_their_own_spans():
    spans = {name: Span(f"{name}.py", 1, 0, 1, 1) for name in ("a", "b")}
    inside = threading.Barrier(2)
    leave_a = threading.Event()
    got: dict = {}

    def work(name: str) -> None:
        with op_span(spans[name]):
            inside.wait()  # both threads are inside their block at once
            if name == "b":
                leave_a.set()  # a leaves first: non-LIFO across threads
            else:
                leave_a.wait()
            got[name] = Evaluate(Var("x")).span
        got[name + "_after"] = Evaluate(Var("y")).span

    threads = [threading.Thread(target=work, args=(n,)) for n in spans]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got["a"] == spans["a"] and got["b"] == spans["b"]
    assert got["a_after"] == NO_SPAN and got["b_after"] == NO_SPAN
    assert ir_node.current_span() == NO_SPAN
