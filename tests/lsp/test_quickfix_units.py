"""The libcst rewrites of quickfix.py on files with comments and odd formatting, and the fix
searches against the real analysis (in-process): each fix is applied and re-analysed."""

from __future__ import annotations

import pytest
from lsputil import fixture_text

from tilelang_lsp import quickfix as Q
from tilelang_lsp.bindings import analyze_module

analysis = pytest.importorskip("tilelang.analysis")


def apply(text: str, edits) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    for sl, sc, el, ec, new in sorted(edits, reverse=True):
        a, b = offsets[sl] + sc, offsets[el] + ec
        text = text[:a] + new + text[b:]
    return text


def diags_of(text: str, name: str, target: str = "sm_90a") -> list[dict]:
    from tilelang_lsp.child import _jsonable

    fn = next(f for f in analyze_module(text) if f.name == name)
    info = analysis.analyze_function(text, "/tmp/quickfix_unit.py", name, target=target, bindings=fn.bindings)
    return _jsonable(info)["diagnostics"]


def codes(diags: list[dict]) -> set[str]:
    return {d["code"] for d in diags}


ODD = """import tilelang
import tilelang.language as T
#  a comment that must stay
# tilelang: M=4096 ,N = 4096,  K=4096<TRAIL>
@tilelang.jit
def big_gemm(A, B,
             block_M: int = 256,   # rows
             block_N: int=256, block_K :int = 128,
             num_stages: int = (4)):  # pipelining depth
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), T.float16)
    B: T.Tensor((K, N), T.float16)
    C = T.empty((M, N), T.float16)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M),
                  threads = 128) as (bx, by):   # odd spacing
        A_shared = T.alloc_shared((block_M, block_K), T.float16)
        B_shared = T.alloc_shared((block_K, block_N), T.float16)
        C_local = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C
""".replace("<TRAIL>", "   ")  # trailing blanks after the comment, as typed


def test_set_default_keeps_formatting_and_comments():
    fn = next(f for f in analyze_module(ODD) if f.name == "big_gemm")
    site, write = Q.locate(ODD, fn, "block_K")
    assert site.kind == "default" and site.value == 128
    new = write(64)
    assert new == ODD.replace("block_K :int = 128", "block_K :int = 64")
    (edit,) = Q.text_edits(ODD, new)
    assert apply(ODD, [edit]) == new and edit[4] == "64"
    # a parenthesized default is replaced as a whole expression, the comment after it stays
    site, write = Q.locate(ODD, fn, "num_stages")
    assert write(2) == ODD.replace("num_stages: int = (4)):", "num_stages: int = 2):")


def test_body_literal_and_comment_sites():
    fn = next(f for f in analyze_module(ODD) if f.name == "big_gemm")
    site, write = Q.locate(ODD, fn, "threads")
    assert site.kind == "literal" and site.value == 128
    assert write(256) == ODD.replace("threads = 128", "threads = 256")
    site, write = Q.locate(ODD, fn, "K")
    assert site.kind == "comment" and site.value == 4096
    new = write(2048)
    assert "# tilelang: M=4096, N=4096, K=2048\n" in new and "#  a comment that must stay" in new
    assert analyze_module(new)[0].bindings["K"] == 2048
    assert new.replace("# tilelang: M=4096, N=4096, K=2048", "") == ODD.replace(
        "# tilelang: M=4096 ,N = 4096,  K=4096   ", ""
    )


def test_call_site_keyword_and_positional():
    text = fixture_text("quickstart.py")
    fn = next(f for f in analyze_module(text) if f.name == "matmul")
    site, write = Q.locate(text, fn, "block_K")
    assert site.kind == "call" and site.value == 32
    assert write(16) == text.replace("block_N=128, block_K=32)", "block_N=128, block_K=16)")
    text2 = text.replace(
        "matmul.compile(M=M, N=N, K=K, block_M=128, block_N=128, block_K=32)", "matmul(a, b, 128, 128,  32)"
    )
    fn2 = next(f for f in analyze_module(text2) if f.name == "matmul")
    site, write = Q.locate(text2, fn2, "block_K")
    assert site.kind == "call" and write(64).count("matmul(a, b, 128, 128,  64)") == 1


def test_smem_fix_is_the_largest_value_that_fits_and_reanalyses_clean():
    fixes = Q.smem_fixes(ODD, "big_gemm", lambda t: diags_of(t, "big_gemm"))
    titles = [f.title for f in fixes]
    assert titles[0].startswith("use num_stages=1 ") and titles[1].startswith("use block_K=32 "), titles
    for fix in fixes:
        new = apply(ODD, fix.edits)
        assert new == fix.text
        assert "smem-overflow" not in codes(diags_of(new, "big_gemm"))
        assert "#  a comment that must stay" in new and "# pipelining depth" in new
    # the value one step larger still overflows: the fix is the largest that fits
    bigger = Q.locate(ODD, analyze_module(ODD)[0], "block_K")[1](64)
    assert "smem-overflow" in codes(diags_of(bigger, "big_gemm"))


def test_spill_fix_removes_the_register_report():
    fixes = Q.spill_fixes(ODD, "big_gemm", lambda t: diags_of(t, "big_gemm"))
    assert len(fixes) == 1, [f.title for f in fixes]
    new = apply(ODD, fixes[0].edits)
    assert "reg-pressure" in codes(diags_of(ODD, "big_gemm"))
    assert "reg-pressure" not in codes(diags_of(new, "big_gemm"))


def test_no_fix_without_the_diagnostic():
    text = fixture_text("quickstart.py")
    assert Q.smem_fixes(text, "matmul", lambda t: diags_of(t, "matmul")) == []


def test_pin_writes_the_assumed_values_next_to_the_decorator():
    fn = next(f for f in analyze_module(ODD) if f.name == "big_gemm")
    assert Q.pin_fix(ODD, "big_gemm") is None  # everything is written in the file already
    fn.bindings.update({"dtype": "float16"})
    fn.sources["dtype"] = "assumed (representative value)"
    fix = Q.pin_fix(ODD, "big_gemm", fn)
    new = apply(ODD, fix.edits)
    assert "# tilelang: M=4096, N=4096, K=4096, dtype='float16'\n@tilelang.jit" in new
    # a kernel without a comment gets a new one directly above its first decorator
    plain = ODD.replace("# tilelang: M=4096 ,N = 4096,  K=4096   \n", "")
    fn = next(f for f in analyze_module(plain) if f.name == "big_gemm")
    fn.bindings.update({"M": 512})
    fn.sources["M"] = "assumed"
    new = apply(plain, Q.pin_fix(plain, "big_gemm", fn).edits)
    # N and K are assumed too now (no value in the file): every assumed value is pinned
    assert "#  a comment that must stay\n# tilelang: M=512, N=1024, K=1024\n@tilelang.jit\n" in new
    pinned = analyze_module(new)[0]
    assert pinned.bindings["M"] == 512 and not any("assumed" in str(v) for v in pinned.sources.values())


def test_apply_values_default_call_site_and_new_default():
    text = """import tilelang
import tilelang.language as T


@tilelang.autotune(configs=[{"block_M": 64, "threads": 128}, {"block_M": 128, "threads": 256}])
@tilelang.jit(out_idx=[-1])
def f(M, N, block_M, threads=128):  # keep me
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float16), B: T.Tensor((M, N), T.float16)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            T.copy(A[bx * block_M, 0], B[bx * block_M, 0])

    return main


k = f(1000, 64)
"""
    new, skipped = Q.apply_values(text, "f", {"block_M": 128, "threads": 256, "pass_configs": {}})
    assert skipped == ["pass_configs"]
    assert "def f(M, N, block_M=128, threads=256):  # keep me" in new
    fn = analyze_module(new)[0]
    assert fn.bindings["block_M"] == 128 and fn.bindings["threads"] == 256
    # a parameter followed by one without a default cannot get one: reported, not written
    text2 = text.replace("def f(M, N, block_M, threads=128)", "def f(M, block_M, N, threads=128)")
    new2, _ = Q.apply_values(text2, "f", {"block_M": 128})
    assert new2 == text2.replace("f(1000, 64)", "f(1000, 128)")  # now the call site's second argument
    text3 = text2.replace("f(1000, 64)", "f(1000, N=64)")
    new3, skipped3 = Q.apply_values(text3, "f", {"block_M": 128})
    assert new3 == text3 and skipped3 == ["block_M"]
