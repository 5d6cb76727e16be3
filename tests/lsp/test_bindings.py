"""tilelang_lsp.bindings: kernel discovery and static parameter binding (no compiler, no server)."""

from __future__ import annotations

import textwrap

import pytest
from lsputil import fixture_text

from tilelang_lsp.bindings import analyze_module


def kernels(src: str) -> dict:
    return {k.name: k for k in analyze_module(textwrap.dedent(src))}


def test_quickstart_compile_kwargs_and_module_constants():
    (k,) = analyze_module(fixture_text("quickstart.py"))
    assert k.name == "matmul" and k.kind == "jit"
    assert k.tensor_params == ["A", "B"] and k.consts == ["M", "N", "K"]
    assert k.bindings == {"M": 1024, "N": 1024, "K": 1024, "block_M": 128, "block_N": 128, "block_K": 32}
    assert k.unresolved == []
    assert k.sources["block_K"].startswith("call site line ")
    assert "M = N = K = 1024" in k.context


def test_flashattention_positional_call_site_and_defaults():
    (k,) = analyze_module(fixture_text("flashattn.py"))
    assert k.bindings == {
        "batch": 8, "heads": 32, "seq_len": 4096, "dim": 128, "is_causal": False,
        "block_M": 128, "block_N": 128, "num_stages": 1, "threads": 128,
    }  # fmt: skip
    assert k.sources["num_stages"] == "default" and k.sources["batch"].startswith("call site")
    assert k.tensor_params == []


DECORATORS = """
import tilelang
import tilelang as tl
import tilelang.language as T
from tilelang import jit
from tilelang import jit as J
from tilelang.autotuner import autotune

@tilelang.jit
def a(x): pass

@tilelang.jit(out_idx=[-1], target="cuda")
def b(x): pass

@jit
def c(x): pass

@J(out_idx=[2])
def d(x): pass

@tl.jit
def e(x): pass

@tilelang.autotune(configs=[{"x": 1}], warmup=10)
@tilelang.jit(out_idx=[-1])
def f(x): pass

@autotune(configs=get_configs())
@tilelang.jit
def g(x): pass

def factory(M, N):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float16")):
        pass
    return main

@T.prim_func
def prim(A: T.Tensor((128,), "float32")):
    pass

def plain(x): pass

@other.jit
def not_ours(x): pass

class K:
    @tilelang.jit
    def method(self): pass

def outer():
    @tilelang.jit
    def inner(x): pass
"""


def test_kernel_discovery():
    ks = kernels(DECORATORS)
    assert sorted(ks) == ["a", "b", "c", "d", "e", "f", "factory", "g", "prim"]
    assert ks["factory"].kind == "factory" and ks["prim"].kind == "prim_func" and ks["f"].kind == "jit"
    assert ks["prim"].tensor_params == ["A"] and ks["prim"].unresolved == []
    assert ks["factory"].unresolved == [] and ks["factory"].assumed == ["M", "N"]  # representative values


def test_precedence_call_site_then_default_then_comment():
    ks = kernels(
        """
        import tilelang
        import tilelang.language as T

        # unrelated comment
        # tilelang: block=32, stages=2, M=999
        @tilelang.jit
        def k(A, block=64, stages=3, M=None):
            N = T.const("N")
            A: T.Tensor((N,), T.float32)

        k.compile(N=4096, stages=4)
        """
    )
    k = ks["k"]
    assert k.bindings == {"N": 4096, "stages": 4, "block": 64, "M": None}
    assert k.sources == {"N": "call site line 12", "stages": "call site line 12", "block": "default", "M": "default"}


def test_comment_fills_what_nothing_else_gives():
    ks = kernels(
        """
        import tilelang

        # tilelang: M=1024, N=M // 2, dtype="bfloat16"
        # tilelang: shape=(64, 64)
        @tilelang.jit(out_idx=[-1])
        def k(M, N, dtype, shape, K):
            pass
        """
    )
    k = ks["k"]
    # N=M//2 reads M, not a constant: N and K get representative values, marked assumed
    assert {n: v for n, v in k.bindings.items() if n not in k.assumed} == {
        "M": 1024,
        "dtype": "bfloat16",
        "shape": (64, 64),
    }
    assert k.sources["M"] == "comment line 4" and k.sources["shape"] == "comment line 5"
    assert k.assumed == ["N", "K"] and k.sources["N"] == "assumed" and k.unresolved == []
    assert k.start_line == 4


def test_literals_constants_and_arithmetic():
    ks = kernels(
        """
        import torch
        import tilelang
        import tilelang.language as T

        BLOCK = 64
        M = N = 1024
        H, D = 8, 128
        SCALE = 1.0 / D ** 0.5
        NAME = "k" + "1"
        again = 1
        again = 2
        rt = int(input())

        @tilelang.jit
        def k(a, b, c, d, e, f, g, h, i, j, l, m):
            pass

        k(BLOCK * 2, (M, N), [H, D], -BLOCK, T.float16, torch.bfloat16, SCALE, NAME, again, rt, None, M // BLOCK)
        """
    )
    k = ks["k"]
    assert {n: v for n, v in k.bindings.items() if n not in k.assumed} == {
        "a": 128, "b": (1024, 1024), "c": [8, 128], "d": -64, "e": "float16", "f": "bfloat16",
        "g": 1.0 / 128**0.5, "h": "k1", "l": None, "m": 16,
    }  # fmt: skip
    # a reassigned name and a run-time value are never read: they get representative values, marked assumed
    assert k.assumed == ["i", "j"] and k.sources["i"] == k.sources["j"] == "assumed"


def test_tensor_parameters_are_not_compile_time_values():
    ks = kernels(
        """
        import tilelang
        import tilelang.language as T

        @tilelang.jit
        def k(X: T.Tensor((128,), "float32"), Y, Z: T.Tensor[(128,), "float32"], n: int = 4):
            Y: T.Tensor((128,), T.float32)

        k(1, 2, 3, 5)
        """
    )
    k = ks["k"]
    assert k.tensor_params == ["X", "Y", "Z"]
    assert k.bindings == {"n": 5}


def test_const_symbols_from_torch_tensor_shapes():
    ks = kernels(
        """
        import torch
        import tilelang
        import tilelang.language as T

        @tilelang.jit
        def vector_add(A, B, block_M: int = 128):
            M = T.const("M")
            A: T.Tensor((M,), T.float32)
            B: T.Tensor((M,), T.float32)

        M = 1024
        a = torch.randn(M, device="cuda")
        b = torch.randn(M, device="cuda")
        c = vector_add(a, b)
        """
    )
    assert ks["vector_add"].bindings == {"M": 1024, "block_M": 128}


def test_call_sites_in_functions_use_their_local_constants():
    ks = kernels(
        """
        import argparse
        import tilelang

        @tilelang.jit(out_idx=[3])
        def attn(batch, heads, seq_len, dim, block_M=64):
            attn(1, 2, 3, 4)  # its own body is not a call site

        def main():
            args = argparse.ArgumentParser().parse_args()
            batch, heads = 4, 16
            kernel = attn(batch, heads, args.seq_len, 64, block_M=128)

        if __name__ == "__main__":
            main()
        """
    )
    k = ks["attn"]
    assert k.bindings == {"batch": 4, "heads": 16, "dim": 64, "block_M": 128, "seq_len": 4096}
    assert k.assumed == ["seq_len"]  # `--seq_len` has no add_argument: a representative value


def test_first_call_site_wins_and_lines_are_reported():
    ks = kernels(
        """
        import tilelang

        @tilelang.jit
        def k(n, m=1):
            pass

        k(8)
        k(16, m=2)
        """
    )
    k = ks["k"]
    assert k.bindings == {"n": 8, "m": 2}
    assert k.sources == {"n": "call site line 8", "m": "call site line 9"}
    assert (k.def_line, k.end_line) == (5, 6)


def test_syntax_error_is_raised():
    with pytest.raises(SyntaxError):
        analyze_module("def f(:\n")


def test_no_kernels():
    assert analyze_module("import os\nprint(os.getcwd())\n") == []
