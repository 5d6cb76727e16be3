"""Every seed kernel and example for target="hip": lowered, HIP C++ generated, and compiled by
clang to AMDGPU code objects for gfx90a and gfx940 (gfx942's proxy before LLVM 17); the GEMM's
assembly has MFMA instructions, LDS traffic and no scratch.

To stay fast on 2 cores, the generated kernels are compiled as ONE translation unit per
processor (entries renamed `<entry>_<i>`, headers `#pragma once`): a compile error in any of
them fails the build and names its line. One kernel also goes through the backend's own
`build` (the cache-workdir path, `--offload-arch`, the gfx942 warning). Skipped cleanly when
no HIP clang is installed (CI installs Debian's hipcc)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import tilelang
from tilelang.backend.hip.compiler import compile_hip, hip_compiler
from tilelang.errors import TileLangError

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "cuda"), str(ROOT / "tests")]

import catalog  # noqa: E402

needs_clang = pytest.mark.skipif(hip_compiler() is None, reason="no HIP clang (apt-get install hipcc)")
FUNCS = catalog.all_funcs()
# kernel -> what its one `unsupported on HIP` error names (the exact state of the backend)
UNSUPPORTED: dict = {}
SUPPORTED = sorted(set(FUNCS) - set(UNSUPPORTED))
ARCHES = ("gfx90a", "gfx940")


_LOWERED: dict = {}


def lowered_for(arch: str) -> dict:
    """Every catalogue kernel lowered for `arch` (the IR is per processor: int8 gemms use
    16x16x16i8 on gfx90a, 16x16x32_i8 on gfx940), or the error it raised."""
    if arch not in _LOWERED:
        out = _LOWERED[arch] = {}
        for name, make in FUNCS.items():
            try:
                out[name] = tilelang.lower(make(), target={"kind": "hip", "arch": arch}, enable_device_compile=False)
            except TileLangError as err:
                out[name] = err
    return _LOWERED[arch]


@pytest.fixture(scope="module")
def generated() -> dict:
    return lowered_for("gfx90a")


def test_every_catalogue_kernel_lowers_or_names_what_is_unsupported(generated):
    for name, got in generated.items():
        if name in UNSUPPORTED:
            assert isinstance(got, TileLangError), name
            assert "unsupported on HIP" in str(got) and UNSUPPORTED[name] in str(got), str(got)
            assert re.search(r"\.py:\d+:\d+: ", str(got)), str(got)  # file:line:col
        else:
            assert not isinstance(got, Exception), f"{name}: {got}"
            src = got.kernel_source
            assert "__global__ void __launch_bounds__(" in src and '#include "tl_hip/common.h"' in src, name
            for cuda_only in ("cp_async", "tl::gemm_", "wgmma", "__shfl_xor_sync", "CUtensorMap", "cuda_fp16"):
                assert cuda_only not in src, (name, cuda_only)


def _one_unit(generated: dict) -> tuple:
    """(source, {kernel: its entry in the source}): the supported kernels in one translation
    unit, each entry renamed `<entry>_<i>`; a kernel whose code is another's (an example that
    is a seed kernel, up to comments and its name) is compiled once."""
    parts, entries, by_code = [], {}, {}
    for name in SUPPORTED:
        k = generated[name]
        entry = k.meta["entry"]
        code = re.sub(r"^\s*//.*$", "", k.kernel_source, flags=re.M).replace(entry, "@")
        if code in by_code:
            entries[name] = entries[by_code[code]]
            continue
        by_code[code] = name
        entries[name] = f"{entry}_{len(parts)}"
        parts.append(f"// ---- {name}\n" + re.sub(rf"\b{entry}\(", f"{entries[name]}(", k.kernel_source))
    return "\n".join(parts), entries


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """arch -> (code object bytes, assembly text) of the catalogue unit, both processors
    compiled at once (two clang processes on the two cores); `-save-temps=obj` keeps the
    assembly of the very compile that made the code object."""
    if hip_compiler() is None:
        pytest.skip("no HIP clang (apt-get install hipcc)")
    units = {arch: _one_unit(lowered_for(arch)) for arch in ARCHES}
    _ENTRIES.update({arch: units[arch][1] for arch in ARCHES})

    def build(arch: str) -> tuple:
        d = tmp_path_factory.mktemp(arch)
        path = compile_hip(units[arch][0], str(d), "catalogue", arch, ["-save-temps=obj"])
        asm = next(d.glob(f"catalogue-hip-amdgcn-amd-amdhsa-{arch}.s")).read_text()
        return Path(path).read_bytes(), asm, path

    with ThreadPoolExecutor(len(ARCHES)) as pool:
        return dict(zip(ARCHES, pool.map(build, ARCHES)))


def _kernel_asm(asm: str, entry: str) -> tuple:
    """(instructions, .amdhsa_kernel descriptor) of one entry of the unit's assembly."""
    body = re.search(rf"^{entry}:[^\n]*\n(.*?)^\.Lfunc_end\d+:", asm, re.M | re.S)
    desc = re.search(rf"^\s*\.amdhsa_kernel {entry}\n(.*?)\.end_amdhsa_kernel", asm, re.M | re.S)
    assert body and desc, entry
    return body.group(1), desc.group(1)


_ENTRIES: dict = {}  # arch -> kernel -> its entry in the unit (`built`)


def _entry(name: str, arch: str = "gfx90a") -> str:
    return _ENTRIES[arch][name]


@pytest.mark.parametrize("arch", ARCHES)
def test_every_supported_kernel_builds_to_a_code_object(built, arch):
    image, asm, _ = built[arch]
    assert image[:4] == b"\x7fELF" and int.from_bytes(image[18:20], "little") == 224  # EM_AMDGPU
    for name in SUPPORTED:
        assert _entry(name, arch).encode() in image, name


@pytest.mark.parametrize("arch", ARCHES)
def test_no_kernel_spills_to_scratch(built, arch):
    # except T.print kernels: ROCm's device printf stages its arguments in private memory
    _, asm, _ = built[arch]
    for name in SUPPORTED:
        if "printf(" in lowered_for(arch)[name].kernel_source:
            continue
        code, desc = _kernel_asm(asm, _entry(name, arch))
        assert re.search(r"\.amdhsa_private_segment_fixed_size 0\b", desc), name
        assert "scratch_store" not in code and "buffer_store" not in code, name


@pytest.mark.parametrize("arch,mfma", [("gfx90a", "v_mfma_f32_16x16x16f16"), ("gfx940", "v_mfma_f32_16x16x16_f16")])
def test_gemm_assembly_has_mfma_and_lds_traffic(built, arch, mfma):
    # seed.matmul: 64x64x32 tiles, 128 threads = 2 waves, each 2x4 blocks of 16x16 per K step of 16.
    # The LDS reads are what the layouts give: A (M x K, row-major) as ds_read_b64 (a lane's 4
    # halves of k are contiguous), B (K x N) as ds_read_u16 (a lane's 4 k are 4 rows apart);
    # the global -> LDS tile copies are 16-byte ds_write_b128.
    code, _ = _kernel_asm(built[arch][1], _entry("seed.matmul", arch))
    n = code.count(mfma)  # (K tiles the compiler unrolled) x 2 K steps x 8 blocks of a wave
    assert n >= 16 and n % 16 == 0, n
    assert "ds_write_b128" in code and "ds_read_b64" in code and "s_barrier" in code
    fa, _ = _kernel_asm(built[arch][1], _entry("ex.flash_attention", arch))
    assert mfma in fa  # Q K^T from LDS and P V with P from registers
    i8, _ = _kernel_asm(built[arch][1], _entry("kz.gemm_int8", arch))
    assert ("v_mfma_i32_16x16x16i8" if arch == "gfx90a" else "v_mfma_i32_16x16x32_i8") in i8
    bf, _ = _kernel_asm(built[arch][1], _entry("ex.gemm_bf16_nt", arch))
    assert "v_mfma_f32_16x16x16bf16_1k" in bf or "v_mfma_f32_16x16x16_bf16" in bf


def test_reductions_shuffle_over_64_lanes(built):
    code, _ = _kernel_asm(built["gfx90a"][1], _entry("seed.reduction_op"))
    assert "ds_bpermute_b32" in code or "_dpp" in code or "ds_swizzle" in code


@pytest.mark.skipif(shutil.which("llvm-objdump-15") is None, reason="llvm-objdump-15 not installed")
def test_code_object_disassembles_to_mfma(built):
    dis = subprocess.run(["llvm-objdump-15", "-d", built["gfx90a"][2]], capture_output=True, text=True, check=True)
    assert "v_mfma_f32_16x16x16f16" in dis.stdout and "s_barrier" in dis.stdout


@needs_clang
def test_backend_build_writes_the_code_object_to_the_cache_workdir(generated, tmp_path, recwarn):
    from seeds import seed_kernels as S

    from tilelang.backend.registry import get_backend
    from tilelang.backend.target import parse

    func = S.vector_add.get_tir(M=1000)
    for arch, offload in (("gfx90a", "gfx90a"), ("gfx942", "gfx940")):
        target = parse({"kind": "hip", "arch": arch})
        backend = get_backend(target)
        built = backend.build(func, target, {}, str(tmp_path / arch), pre=backend.lower(func, target, {}))
        assert built.lib_path.endswith(f".{offload}.co") and Path(built.lib_path).is_file()
        assert built.meta["arch"] == arch and built.meta["offload_arch"] == offload
        backend.check_meta(built.meta)
    assert any("compiling the gfx942 target for gfx940" in str(w.message) for w in recwarn)


@needs_clang
def test_a_function_with_two_kernels_builds_one_code_object(tmp_path):
    sys.path.insert(0, str(ROOT / "tests" / "conformance"))
    import multi_kernel_kernels as MK

    from tilelang.backend.launch_plan import backend_for
    from tilelang.backend.registry import get_backend
    from tilelang.backend.target import parse

    func, target = MK.scale_then_shift.get_tir(100, 130), parse("hip")
    plan = backend_for(get_backend(target), func)
    built = plan.build(func, target, {}, str(tmp_path))
    image = Path(built.lib_path).read_bytes()
    entries = [k["entry"] for k in built.meta["kernels"]]
    assert len(entries) == 2 and all(e.encode() in image for e in entries)
    plan.check_meta(built.meta)
