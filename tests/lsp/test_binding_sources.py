"""Where compile-time values come from (argparse, main() parameters, autotune configs,
representative values), the per-region parse, and the per-kernel cache — no server, no compiler."""

from __future__ import annotations

import asyncio
import textwrap
import time

from lsputil import FIXTURES

from tilelang_lsp import provenance as P
from tilelang_lsp.bindings import alternative_bindings, analyze_document, analyze_module
from tilelang_lsp.config import Settings
from tilelang_lsp.documents import Analyzer
from tilelang_lsp.regions import parse_document
from tilelang_lsp.session import Session
from tilelang_lsp.worker import WorkerError

HEADER = """
import argparse
import itertools
import tilelang
import tilelang.language as T
"""


def kernels(src: str) -> dict:
    return {k.name: k for k in analyze_module(HEADER + textwrap.dedent(src))}


SRC_ARGPARSE = """
        @tilelang.jit(out_idx=[3])
        def attn(batch, heads, seq_len, dim, is_causal, block_M=64):
            pass

        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--batch", type=int, default=8, help="batch size")
            parser.add_argument("--heads", type=int, default="16")
            parser.add_argument("--seq-len", dest="seq_len", type=int, default=2048)
            parser.add_argument("--dim", type=int, default=128)
            parser.add_argument("--is_causal", action="store_true")
            opts = parser.parse_args()
            B, H = opts.batch, opts.heads
            attn(B, H, opts.seq_len, opts.dim, opts.is_causal, block_M=128)
        """


def test_argparse_defaults_flow_through_args_and_local_names():
    ks = kernels(SRC_ARGPARSE)
    k = ks["attn"]
    assert k.bindings == {
        "batch": 8, "heads": 16, "seq_len": 2048, "dim": 128, "is_causal": False, "block_M": 128,
    }  # fmt: skip
    assert k.sources["block_M"].startswith("call site line")
    line = next(i for i, s in enumerate((HEADER + textwrap.dedent(SRC_ARGPARSE)).splitlines(), 1) if '"--batch"' in s)
    assert k.sources["batch"] == f"argparse default (--batch, line {line})"
    assert k.sources["is_causal"].startswith("argparse default (--is_causal")
    assert k.assumed == []
    assert "batch=8, heads=16" in k.origin_summary() and "from argparse defaults" in k.origin_summary()


def test_main_parameters_from_its_call_site_then_its_defaults():
    ks = kernels(
        """
        @tilelang.jit(out_idx=[-1])
        def softmax(M, N, dtype="float16"):
            pass

        def main(M=4096, N=1024, dtype="bfloat16"):
            kernel = softmax(M, N, dtype)

        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--n", type=int, default=512)
            args = parser.parse_args()
            main(N=args.n)
        """
    )
    k = ks["softmax"]
    assert k.bindings == {"M": 4096, "N": 512, "dtype": "bfloat16"}
    assert k.sources["M"].startswith("call site") and k.sources["N"].startswith("argparse default (--n")


def test_literal_call_site_beats_argparse():
    ks = kernels(
        """
        @tilelang.jit
        def k(n):
            pass

        args = argparse.ArgumentParser().parse_args()
        k(args.n)
        k(64)
        """
    )
    # no add_argument for --n: args.n has no value; the literal call wins either way
    assert ks["k"].bindings == {"n": 64}


def test_autotune_first_config_from_itertools_product():
    ks = kernels(
        """
        from tilelang.autotuner import autotune

        def get_configs():
            block_M = [64, 128]
            block_N = [128, 256]
            stages = [2, 3]
            _configs = list(itertools.product(block_M, block_N, stages))
            return [{"block_M": c[0], "block_N": c[1], "num_stages": c[2]} for c in _configs]

        CONFIGS = [dict(block_M=32, block_N=32, num_stages=1)]

        @autotune(configs=get_configs(), warmup=3)
        @tilelang.jit(out_idx=[-1])
        def a(M, block_M, block_N, num_stages):
            pass

        @tilelang.autotune(configs=CONFIGS)
        @tilelang.jit(out_idx=[-1])
        def b(M, block_M, block_N, num_stages=4):
            pass

        a(1024)
        b(1024)
        """
    )
    assert ks["a"].bindings == {"M": 1024, "block_M": 64, "block_N": 128, "num_stages": 2}
    assert ks["a"].sources["block_N"] == P.AUTOTUNE
    assert ks["b"].bindings == {"M": 1024, "block_M": 32, "block_N": 32, "num_stages": 4}  # the default wins


def test_representative_values_keep_the_factorys_asserts_true():
    ks = kernels(
        """
        @tilelang.jit(out_idx=[-1])
        def attn(batch, heads, kv_heads, seq_len, dim, block_M, block_N, is_causal, dtype, accum_dtype, sm_scale: float):
            assert dim in (64, 256), "dim must be 64 or 256"
            assert block_M <= 64
            assert seq_len % (block_N * 8) == 0
            assert heads % kv_heads == 0
            if is_causal:
                assert block_M == block_N
        """
    )
    k = ks["attn"]
    b = k.bindings
    assert k.assumed == list(b) and all(k.sources[n] == P.ASSUMED for n in b)
    assert b["dim"] in (64, 256) and b["block_M"] <= 64 and b["seq_len"] % (b["block_N"] * 8) == 0
    assert b["heads"] % b["kv_heads"] == 0
    assert b["is_causal"] is False and b["dtype"] == "float16" and b["accum_dtype"] == "float32"
    assert b["sm_scale"] == 1.0 and b["batch"] == 1
    assert k.origin_summary().startswith("assuming batch=1")
    alt = alternative_bindings(k)  # another choice that still satisfies the asserts
    assert alt is not None and alt != b and alt["dim"] in (64, 256) and alt["block_M"] <= 64


def test_syntax_error_in_one_region_keeps_the_other_kernels():
    src = (FIXTURES / "quickstart.py").read_text()
    broken = src.replace("M = N = K = 1024", "M = N = K = (1024") + textwrap.dedent(
        """

        @tilelang.jit
        def typing_here(A, block: int = 64):
            N = T.const("N")
            x = T.alloc_shared((block,), T.float32
            y = 1
        """
    )
    doc = parse_document(broken)
    assert doc.syntax is not None
    names = [k.name for k in analyze_document(doc)]
    assert names == ["matmul"]  # found in its own region; the broken ones are blanked
    assert len(doc.full_source().splitlines()) == len(broken.splitlines())
    assert any(a <= broken.splitlines().index("def typing_here(A, block: int = 64):") + 1 <= b for a, b in doc.broken)


def test_request_source_holds_the_kernel_and_what_it_reads():
    src = textwrap.dedent(
        """
        import tilelang
        import tilelang.language as T
        import os

        TILE = 64
        UNUSED = 3
        dtype = T.float16

        def helper(n):
            return n * SCALE

        SCALE = 2

        @tilelang.jit
        def a(M):
            @T.prim_func
            def main(X: T.Tensor((M,), dtype)):
                with T.Kernel(helper(M) // TILE):
                    pass
            return main

        @tilelang.jit
        def b(M):
            pass
        """
    )
    doc = parse_document(src)
    (ka, kb) = analyze_document(doc)
    req = doc.request_source(ka.node, ka.start_line, ka.end_line)
    assert len(req.splitlines()) == len(src.splitlines())  # same line numbers
    assert "TILE = 64" in req and "SCALE = 2" in req and "def helper" in req and "dtype = T.float16" in req
    assert "UNUSED" not in req and "def b(" not in req
    assert "UNUSED" not in ka.context and "SCALE = 2" in ka.context


class CountingWorker:
    """Answers every analyze request with an empty KernelInfo and counts them."""

    def __init__(self, error_when=None):
        self.requests: list[dict] = []
        self.error_when = error_when

    def call(self, request, timeout, cancel=None):
        self.requests.append(request)
        diags = []
        if self.error_when and self.error_when(eval(request["bindings"])):  # noqa: S307 - our own repr
            where = {"line": 3, "col": 0, "end_line": 3, "end_col": 1}
            diags = [{"severity": "error", "message": "too big", "loc": where, "code": "smem-overflow", "related": []}]
        info = {"function": request["function"], "loc": None, "buffers": [], "diagnostics": diags}
        return {"result": info}


def test_only_changed_kernels_are_analysed_again():
    text = (FIXTURES / "many_kernels.py").read_text()
    worker = CountingWorker()
    an = Analyzer(worker)
    first = an.analyse("/w/many.py", text, 1, "sm_90a", 5.0)
    n = len(first.functions)
    assert n >= 20 and len(worker.requests) == n
    lines = text.split("\n")
    # a comment outside every kernel, then a line inserted at the top: nothing to re-analyse
    an.analyse("/w/many.py", text + "\n# note\n", 2, "sm_90a", 5.0)
    moved = an.analyse("/w/many.py", "# header\n" + text, 3, "sm_90a", 5.0)
    assert len(worker.requests) == n
    assert [f.fn.def_line for f in moved.functions] == [f.fn.def_line + 1 for f in first.functions]
    # one character inside one kernel: that kernel only, and its request does not carry the other kernels
    target = first.functions[5].fn
    at = next(i for i in range(target.def_line, target.end_line) if "T.alloc" in lines[i])
    lines[at] += "  # edited"
    an.analyse("/w/many.py", "\n".join(lines), 4, "sm_90a", 5.0)
    assert len(worker.requests) == n + 1 and worker.requests[-1]["function"] == target.name
    others = [f.fn.name for f in first.functions if f.fn.name != target.name]
    assert not any(f"def {name}(" in worker.requests[-1]["source"] for name in others)


def test_an_error_only_the_assumed_values_cause_is_a_hint():
    src = textwrap.dedent(
        """
        import tilelang
        @tilelang.jit
        def k(block_M, n=4):
            pass
        """
    )
    worker = CountingWorker(error_when=lambda b: b["block_M"] >= 128)  # the first choice is 128
    res = Analyzer(worker).analyse("/w/k.py", src, 1, "sm_90a", 5.0)
    (d,) = res.functions[0].info["diagnostics"]
    assert d["severity"] == "hint" and "assumed" in d["message"] and "block_M=128" in d["message"]
    # the same error with a value the user wrote stays an error
    res = Analyzer(worker).analyse("/w/k.py", src + "k(256)\n", 1, "sm_90a", 5.0)
    assert res.functions[0].info["diagnostics"][0]["severity"] == "error"
    # and so does one that happens whatever the assumed value
    always = CountingWorker(error_when=lambda b: True)
    res = Analyzer(always).analyse("/w/k.py", src, 1, "sm_90a", 5.0)
    assert res.functions[0].info["diagnostics"][0]["severity"] == "error"


def test_trust_none_sends_nothing_to_the_worker():
    text = (FIXTURES / "quickstart.py").read_text()
    worker = CountingWorker()
    res = Analyzer(worker).analyse("/w/q.py", text, 1, "sm_90a", 5.0, trust="none")
    assert worker.requests == []
    bufs = {b["name"]: b for b in res.functions[0].info["buffers"]}
    assert bufs["A_shared"]["shape"] == [128, 32] and bufs["A_shared"]["dtype"] == "float16"
    assert bufs["A_shared"]["bytes"] == 128 * 32 * 2 and bufs["C_local"]["scope"] == "local.fragment"


class SlowWorker(CountingWorker):
    """Takes `seconds` per request unless cancelled (polling `cancel` as the real worker does)."""

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds = seconds
        self.cancelled: list[str] = []

    def call(self, request, timeout, cancel=None):
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            if cancel is not None and cancel():
                self.cancelled.append(request["source"])
                raise WorkerError("cancelled", "a newer version replaced this request")
            time.sleep(0.005)
        return super().call(request, timeout, cancel)


def test_an_edit_of_the_kernel_being_analysed_cancels_it_and_one_pass_follows():
    src = textwrap.dedent(
        """
        import tilelang
        import tilelang.language as T

        @tilelang.jit
        def k(A, block_M: int = 64):
            M = T.const("M")
            A: T.Tensor((M,), T.float16)
            with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
                s = T.alloc_shared((block_M,), T.float16)  # EDIT

        k.compile(M=1024)
        """
    )
    worker = SlowWorker(seconds=1.0)

    async def edit_while_analysing() -> tuple[Session, float]:
        session = Session(Analyzer(worker), Settings(), lambda state: None)
        session.open("file:///w/k.py", "/w/k.py", src, 1)
        await asyncio.sleep(0.2)  # the first analysis is running
        t0 = time.monotonic()
        session.change("file:///w/k.py", src.replace("# EDIT", "# EDITED"), 2)
        state = await session.current("file:///w/k.py")
        return state, time.monotonic() - t0

    state, took = asyncio.run(edit_while_analysing())
    assert state.analysed_version == 2 and state.last.functions[0].info is not None
    assert len(worker.cancelled) == 1 and "# EDIT\n" in worker.cancelled[0]  # version 1 stopped
    assert [("# EDITED" in r["source"]) for r in worker.requests] == [True]  # one finished request
    assert took < 1.8  # version 1 was not waited for (1 s each)
