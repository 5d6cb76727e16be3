"""The HIP load-and-launch path against a fake libamdhip64: no AMD GPU needed.

`fake_hip/fake_amdhip64.c` is compiled here with gcc into a shared library that the runtime
loads through `TILELANG_HIP_LIBRARY`; it logs every HIP call with its arguments (the code
object's length and hash, kernel names, grid/block/LDS, the stream, the packed parameter
bytes) and fails the calls a test names. Launch tests run through both launchers: the C one
(calling the fake's hipModuleLaunchKernel through a C function pointer) and the ctypes one.
A real code object built by clang++-15 for two hand-written HIP kernels is what is loaded."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import struct
import subprocess

import pytest
import torch

from tilelang.backend.hip import hip_api, runtime
from tilelang.backend.registry import BuiltKernel

HERE = os.path.dirname(os.path.abspath(__file__))
HIP_INCLUDE = "/usr/include/hip/hip_runtime_api.h"
DEVICE_LIBS = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"
needs_hip_headers = pytest.mark.skipif(
    shutil.which("gcc") is None or not os.path.exists(HIP_INCLUDE), reason="gcc or ROCm's HIP headers not found"
)

KERNELS_HIP = r"""
#include <hip/hip_runtime.h>
extern "C" __global__ void scale_kernel(float *x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}
extern "C" __global__ void shift_kernel(float *x, long long n) {
  extern __shared__ float staged[];
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  staged[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  if (i < n) x[i] = staged[blockDim.x - 1 - threadIdx.x] + 1.f;
}
// 16-bit floats travel as their bits: a 2-byte parameter either way
extern "C" __global__ void all_kinds_kernel(double *out, signed char a, unsigned char b, short c, unsigned short d,
    int e, unsigned f, long long g, unsigned long long h, bool i, float j, double k, unsigned short l,
    unsigned short m) {
  out[threadIdx.x] = a + b + c + d + e + f + g + h + i + j + k + l + m;
}
// a function split into two kernels: both take the parameters, then the scratch buffer
extern "C" __global__ void plan_kernel(float *x, float s, int n, float *tmp) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) tmp[i] = x[i] * s;
}
extern "C" __global__ void plan_kernel_1(float *x, float s, int n, float *tmp) {
  extern __shared__ float staged[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  staged[threadIdx.x] = i < n ? tmp[i] : 0.f;
  __syncthreads();
  if (i < n) x[i] += staged[threadIdx.x];
}
"""


@pytest.fixture(scope="module")
def fake_library(tmp_path_factory) -> str:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not found")
    out = str(tmp_path_factory.mktemp("fake_hip") / "libfake_amdhip64.so")
    src = os.path.join(HERE, "fake_hip", "fake_amdhip64.c")
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-std=c11", src, "-o", out], check=True)
    return out


def _compile_hip(tmp_path_factory, arch: str) -> str:
    """A code object of KERNELS_HIP for `arch` (clang++-15, device only, as the HIP backend builds)."""
    if shutil.which("clang++-15") is None or not os.path.isdir(DEVICE_LIBS):
        pytest.skip("clang++-15 or ROCm device libraries not found")
    d = tmp_path_factory.mktemp(f"hip_co_{arch}")
    (d / "k.hip").write_text(KERNELS_HIP)
    out = str(d / f"k.{arch}.co")
    cmd = ["clang++-15", "-x", "hip", "--hip-version=5.2", "-std=c++17", "-O3", "--rocm-path=/usr",
           f"--rocm-device-lib-path={DEVICE_LIBS}", f"--offload-arch={arch}", "--offload-device-only",
           "--no-gpu-bundle-output", "-c", str(d / "k.hip"), "-o", out]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, "HIP_PLATFORM": "amd"})
    return out


@pytest.fixture(scope="module")
def code_object(tmp_path_factory) -> str:
    return _compile_hip(tmp_path_factory, "gfx90a")


class FakeStream:
    """torch.cuda.current_stream()'s answer: on ROCm torch `cuda_stream` is the hipStream_t."""

    cuda_stream = 0xABC0


class FakeProps:
    gcnArchName = "gfx90a:sramecc+:xnack-"


class Fake:
    """The fake library's log and knobs, for one test."""

    def __init__(self, log: str, monkeypatch) -> None:
        self.log, self.monkeypatch = log, monkeypatch

    def calls(self, name: str | None = None) -> list:
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            rows = [json.loads(line) for line in f]
        return [r for r in rows if name is None or r["call"] == name]

    def fail(self, spec: str) -> None:
        self.monkeypatch.setenv("FAKE_HIP_FAIL", spec)

    def arg_bytes(self, *widths: int) -> None:
        self.monkeypatch.setenv("FAKE_HIP_ARG_BYTES", ",".join(str(w) for w in widths))


def _fake(fake_library, tmp_path, monkeypatch) -> Fake:
    monkeypatch.setenv(hip_api.ENV_LIBRARY, fake_library)
    monkeypatch.setenv("FAKE_HIP_LOG", str(tmp_path / "hip.log"))
    monkeypatch.delenv("FAKE_HIP_FAIL", raising=False)
    monkeypatch.setattr(hip_api, "_apis", {})  # every test loads (and hipInit's) afresh
    monkeypatch.setattr(runtime, "_modules", {})
    monkeypatch.setattr(torch.cuda, "init", lambda: None)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.delattr(torch._C, "_cuda_getCurrentRawStream", raising=False)  # a GPU build's real stream
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: FakeStream())
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda *a: FakeProps())
    return Fake(str(tmp_path / "hip.log"), monkeypatch)


@pytest.fixture
def fake(fake_library, tmp_path, monkeypatch) -> Fake:
    return _fake(fake_library, tmp_path, monkeypatch)


@pytest.fixture(params=["native", "ctypes"])
def launcher_kind(request, monkeypatch) -> str:
    from tilelang.backend.hip import native_launch

    if request.param == "ctypes":
        monkeypatch.setattr(native_launch, "extension", lambda: None)
    elif native_launch.extension() is None:
        pytest.skip(f"native launcher unavailable: {native_launch.unavailable_reason()}")
    return request.param


def _fnv1a(data: bytes) -> str:
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & (2**64 - 1)
    return f"{h:016x}"


def _built(path: str, **meta) -> BuiltKernel:
    return BuiltKernel("", path, {"smem": 0, "arch": "gfx90a", **meta})


def _scale_meta() -> dict:
    # x: ptr, s: f32, n: i32; grid ceildiv(n, 128) over scalar parameter 2
    return {"entry": "scale_kernel", "threads": 128, "args": ["ptr", "f32", "i32"], "n_params": 3,
            "grid": [["floordiv", ["add", ["p", 2], 127], 128]]}  # fmt: skip


def test_a_real_code_object_is_what_hip_loads(fake, code_object):
    runtime.load_code_object(_built(code_object, **_scale_meta()))
    with open(code_object, "rb") as f:
        image = f.read()
    assert [c["call"] for c in fake.calls()][:1] == ["hipInit"]
    (load,) = fake.calls("hipModuleLoadData")
    assert load["bytes"] == len(image) and load["fnv1a"] == _fnv1a(image)
    assert load["e_machine"] == runtime.EM_AMDGPU
    (fn,) = fake.calls("hipModuleGetFunction")
    assert fn["name"] == "scale_kernel" and fn["module"] == load["module"]


def test_tensor_and_scalar_arguments_grid_block_and_stream(fake, code_object, launcher_kind):
    launch = runtime.load_code_object(_built(code_object, **_scale_meta()))
    fake.arg_bytes(*_kernarg_sizes(code_object, "scale_kernel"))  # 8, 4, 4: what HIP reads
    x = torch.randn(1000)
    launch([x, 2.5, 1000], [])
    (k,) = fake.calls("hipModuleLaunchKernel")
    (fn,) = fake.calls("hipModuleGetFunction")
    assert k["function"] == fn["function"]
    assert k["grid"] == [8, 1, 1] and k["block"] == [128, 1, 1] and k["shared"] == 0
    assert k["stream"] == FakeStream.cuda_stream and k["extra"] == 0
    ptr, s, n = (bytes.fromhex(a) for a in k["args"])
    assert struct.unpack("<Q", ptr)[0] == x.data_ptr()
    assert struct.unpack("<f", s)[0] == 2.5 and struct.unpack("<i", n)[0] == 1000
    launch([x, 2.5, 0], [])  # an empty grid launches nothing
    assert len(fake.calls("hipModuleLaunchKernel")) == 1

    class SideStream:  # `with torch.cuda.stream(s):` makes another stream current
        cuda_stream = 0xDEF0

    fake.monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: SideStream())
    launch([x, 2.5, 1000], [])
    assert fake.calls("hipModuleLaunchKernel")[-1]["stream"] == SideStream.cuda_stream, "read at every launch"


def test_dynamic_dimensions_travel_as_int64_and_size_the_grid(fake, code_object, launcher_kind):
    meta = {"entry": "shift_kernel", "threads": 256, "smem": 1024, "args": ["ptr", "i64"], "n_params": 1,
            "grid": [["floordiv", ["add", ["d", 0], 255], 256]]}  # fmt: skip
    launch = runtime.load_code_object(_built(code_object, **meta))
    fake.arg_bytes(*_kernarg_sizes(code_object, "shift_kernel"))
    x = torch.randn(300)
    big = 2**32 - 256  # does not fit 32 bits; the grid still has fewer than 2^32 work-items
    for n in (1, 257, big):
        launch([x], [n])
    grids = [k["grid"][0] for k in fake.calls("hipModuleLaunchKernel")]
    assert grids == [1, 2, big // 256]
    sizes = [struct.unpack("<q", bytes.fromhex(k["args"][1]))[0] for k in fake.calls("hipModuleLaunchKernel")]
    assert sizes == [1, 257, big]
    assert {k["shared"] for k in fake.calls("hipModuleLaunchKernel")} == {1024}


def _kernarg_sizes(code_object: str, kernel: str) -> list:
    """The byte size of each parameter of `kernel` as its code object's AMDGPU metadata records it
    (what the HIP runtime copies from each kernelParams pointer into the kernel's argument segment)."""
    readelf = shutil.which("llvm-readelf-15") or shutil.which("llvm-readelf")
    if readelf is None:
        pytest.skip("llvm-readelf not found")
    notes = subprocess.run([readelf, "--notes", code_object], check=True, capture_output=True, text=True).stdout
    for block in notes.split("\n  - .")[1:]:  # one block per kernel of amdhsa.kernels
        lines = block.splitlines()
        if any(line.strip() == f".name:           {kernel}" for line in lines):
            return [int(line.split(":")[1]) for line in lines if line.startswith("        .size:")]
    raise AssertionError(f"no metadata for {kernel} in {code_object}")


def test_every_parameter_kind_is_packed_like_the_cuda_launcher(fake, code_object, launcher_kind):
    from tilelang.backend.kernel_args import ARG_KINDS, half_bits

    kinds = ["ptr", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "bool", "f32", "f64", "f16", "bf16"]
    # the widths the compiled kernel expects are the widths the launchers pack
    widths = _kernarg_sizes(code_object, "all_kinds_kernel")
    assert widths == [ctypes.sizeof(ARG_KINDS[k].ctype) for k in kinds]
    values = [torch.zeros(4), -5, 250, -300, 65000, -(2**31), 2**32 - 1, -(2**40), 2**64 - 1, True, 0.1, 0.1,
              0.333, -1.5e10]  # fmt: skip
    meta = {"entry": "all_kinds_kernel", "threads": 64, "args": kinds, "n_params": len(kinds), "grid": [3]}
    launch = runtime.load_code_object(_built(code_object, **meta))
    fake.arg_bytes(*widths)
    launch(values, [])
    got = [bytes.fromhex(a) for a in fake.calls("hipModuleLaunchKernel")[0]["args"]]
    fmt = ["<Q", "<b", "<B", "<h", "<H", "<i", "<I", "<q", "<Q", "<?", "<f", "<d", "<H", "<H"]
    want = [values[0].data_ptr(), *values[1:10], ctypes.c_float(0.1).value, 0.1, half_bits(0.333, "float16"),
            half_bits(-1.5e10, "bfloat16")]  # fmt: skip
    assert [struct.unpack(f, g)[0] for f, g in zip(fmt, got)] == want


def test_a_multi_kernel_plan_launches_its_kernels_in_order(fake, code_object, launcher_kind, monkeypatch):
    from tilelang.backend.launch_plan import plan_launcher

    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: real_empty(*a, dtype=k.get("dtype")))  # no GPU here
    # what the launch plan of a function split into two kernels holds (backend/launch_plan.py): each
    # kernel takes the parameters x, s, n and then the scratch buffer `tmp` of n floats
    args = ["ptr", "f32", "i32", "ptr"]
    grid = [["floordiv", ["add", ["p", 2], 127], 128]]
    kernels = [
        {"entry": "plan_kernel", "threads": 128, "args": args, "n_params": 4, "grid": grid},
        {"entry": "plan_kernel_1", "threads": 128, "smem": 512, "args": args, "n_params": 4, "grid": grid},
    ]
    launches = [runtime.load_code_object(_built(code_object, **k)) for k in kernels]
    scratch = [{"name": "tmp", "shape": [["p", 2]], "dtype": "float32"}]
    plan = plan_launcher(launches, scratch, 3, 0, "cuda")
    assert _kernarg_sizes(code_object, "plan_kernel") == _kernarg_sizes(code_object, "plan_kernel_1")
    fake.arg_bytes(*_kernarg_sizes(code_object, "plan_kernel"))
    x = torch.randn(300)
    plan([x, 2.0, 300], [])
    assert len(fake.calls("hipModuleLoadData")) == 1, "one code object, loaded once for both kernels"
    names = {c["function"]: c["name"] for c in fake.calls("hipModuleGetFunction")}
    first, second = fake.calls("hipModuleLaunchKernel")
    assert [names[first["function"]], names[second["function"]]] == ["plan_kernel", "plan_kernel_1"]
    assert first["grid"] == second["grid"] == [3, 1, 1] and (first["shared"], second["shared"]) == (0, 512)
    assert first["args"] == second["args"], "both kernels see the same x, s, n and scratch buffer"
    ptr_x, ptr_tmp = (struct.unpack("<Q", bytes.fromhex(first["args"][i]))[0] for i in (0, 3))
    assert ptr_x == x.data_ptr() and ptr_tmp not in (0, ptr_x)


def test_errors_name_the_call_the_kernel_and_hips_message(fake, code_object, launcher_kind):
    fake.fail("hipModuleGetFunction:500")
    with pytest.raises(hip_api.HipError, match=r"HIP error 500 \(hipErrorNotFound: named symbol not found\) in "
                       r"hipModuleGetFunction for kernel `scale_kernel`"):  # fmt: skip
        runtime.load_code_object(_built(code_object, **_scale_meta()))
    fake.fail("hipModuleLaunchKernel:701")
    launch = runtime.load_code_object(_built(code_object, **_scale_meta()))
    with pytest.raises(hip_api.HipError) as err:
        launch([torch.zeros(4), 1.0, 4], [])
    text = str(err.value)
    assert "hipErrorLaunchOutOfResources" in text and "kernel `scale_kernel`" in text
    assert "grid (1, 1, 1), block (128, 1, 1)" in text and f"stream {FakeStream.cuda_stream:#x}" in text


def test_launch_limits_are_checked_before_anything_runs(fake, code_object, launcher_kind, monkeypatch, tmp_path):
    from tilelang.errors import IndexLimitError, UnsupportedError

    monkeypatch.setenv("FAKE_HIP_FUNC_ATTR_1", "4096")  # static LDS
    too_much = {**_scale_meta(), "smem": 65536 - 4096 + 4}
    with pytest.raises(
        UnsupportedError, match=r"65540 bytes of LDS \(4096 static \+ 61444 dynamic\), more than the 65536"
    ):
        runtime.load_code_object(_built(code_object, **too_much))
    with pytest.raises(UnsupportedError, match="2048 threads per block, more than the 1024"):
        runtime.load_code_object(_built(code_object, **{**_scale_meta(), "threads": 2048}))
    dynamic = {"entry": "shift_kernel", "threads": 256, "args": ["ptr", "i64"], "n_params": 1,
               "grid": [["floordiv", ["add", ["d", 0], 255], 256]]}  # fmt: skip
    launch = runtime.load_code_object(_built(code_object, **dynamic))
    with pytest.raises(IndexLimitError, match=r"2\^32 work-items"):
        launch([torch.zeros(1)], [2**32])  # 2^24 blocks of 256
    monkeypatch.setenv("FAKE_HIP_ATTR_29", "1000")  # a device whose grid x holds 1000 blocks
    monkeypatch.delenv("FAKE_HIP_FUNC_ATTR_1")
    launch = runtime.load_code_object(_built(code_object, **_scale_meta()))
    launch([torch.zeros(1), 1.0, 128 * 1000], [])
    with pytest.raises(IndexLimitError, match=r"1001 blocks \(128128 work-items\) in x: HIP allows at most 1000"):
        launch([torch.zeros(1), 1.0, 128 * 1000 + 1], [])
    assert [k["grid"] for k in fake.calls("hipModuleLaunchKernel")] == [[1000, 1, 1]]
    not_elf = tmp_path / "k.cubin"
    not_elf.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(11) + struct.pack("<H", 190) + bytes(64))
    with pytest.raises(UnsupportedError, match="ELF for machine 190, not AMDGPU"):
        runtime.load_code_object(_built(str(not_elf), **_scale_meta()))


def test_a_library_that_cannot_be_loaded_is_an_oserror(monkeypatch, tmp_path):
    monkeypatch.setattr(hip_api, "_apis", {})
    monkeypatch.setenv(hip_api.ENV_LIBRARY, str(tmp_path / "no-such-libamdhip64.so"))
    with pytest.raises(OSError):
        hip_api.api()
    monkeypatch.setenv(hip_api.ENV_LIBRARY, ctypes.util.find_library("c") or "libc.so.6")
    with pytest.raises(OSError, match="is not a HIP runtime library: it has no hipInit"):
        hip_api.api()


@needs_hip_headers
def test_bound_enum_values_match_rocms_headers(tmp_path):
    names = {
        "hipDeviceAttributeMaxBlockDimX": hip_api.DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
        "hipDeviceAttributeMaxGridDimX": hip_api.DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
        "hipDeviceAttributeMaxGridDimY": hip_api.DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + 1,
        "hipDeviceAttributeMaxGridDimZ": hip_api.DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + 2,
        "hipDeviceAttributeMaxThreadsPerBlock": hip_api.DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        "hipDeviceAttributeMaxSharedMemoryPerBlock": hip_api.DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
        "hipDeviceAttributeWarpSize": hip_api.DEVICE_ATTRIBUTE_WARP_SIZE,
        "HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES": hip_api.FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
        "hipSuccess": hip_api.HIP_SUCCESS,
    }
    body = "".join(f'printf("%d\\n", (int){n});' for n in names)
    src = tmp_path / "enums.c"
    src.write_text(f"#include <hip/hip_runtime_api.h>\n#include <stdio.h>\nint main(void) {{ {body} return 0; }}\n")
    exe = tmp_path / "enums"
    subprocess.run(["gcc", "-std=c11", "-D__HIP_PLATFORM_AMD__", "-I/usr/include", str(src), "-o", str(exe)],
                   check=True)  # fmt: skip
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    assert dict(zip(names, map(int, out))) == names


@needs_hip_headers
def test_the_native_launchers_function_type_is_hipModuleLaunchKernels():  # noqa: N802
    src = os.path.join(os.path.dirname(os.path.abspath(runtime.__file__)), "native", "launch_abi.c")
    proc = subprocess.run(["gcc", "-std=c11", "-fsyntax-only", "-Wall", "-Werror", "-D__HIP_PLATFORM_AMD__",
                           "-I/usr/include", src], capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_auto_target_picks_hip_on_a_rocm_torch_with_a_device(monkeypatch):
    from tilelang.backend import target as T

    monkeypatch.setattr(torch.version, "hip", "6.2.41133", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda *a: FakeProps())
    assert T.detect() == T.Target("hip", "gfx90a")  # ROCm torch: never taken for CUDA, even with nvcc here
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert T.detect().kind in ("c", "metal"), "a ROCm build without a device is not a HIP target"
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    monkeypatch.setattr(T, "nvcc_path", lambda: "/usr/local/cuda/bin/nvcc")
    assert T.detect() == T.Target("cuda", "sm_90a")
    assert T.gcn_arch_base("gfx942:sramecc+:xnack-") == "gfx942" and T.gcn_arch_base("gfx90a") == "gfx90a"


def test_the_metadata_of_a_real_dynamic_kernel_launches_as_on_cuda(fake, code_object, launcher_kind):
    """The launch metadata a TileLang kernel gets (CUDA's layout, which the HIP backend shares):
    three tensors and the dynamic m, k, n as int64, the grid computed from them."""
    from seeds import seed_kernels as S

    from tilelang.backend.cuda.backend import make_backend
    from tilelang.backend.target import parse

    func = S.matmul_dynamic_mnk.get_tir(
        block_M=64, block_N=32, block_K=32, trans_A=False, trans_B=False, in_dtype="float16", out_dtype="float16",
        accum_dtype="float32", num_stages=2, threads=128,
    )  # fmt: skip
    lowered = make_backend().lower(func, parse({"kind": "cuda", "arch": "sm_80"}), {})
    meta = {**lowered.meta, "arch": "gfx90a"}
    launch = runtime.load_code_object(BuiltKernel("", code_object, meta))
    fake.arg_bytes(8, 8, 8, 8, 8, 8)
    a, b, c = torch.randn(201, 99).half(), torch.randn(99, 67).half(), torch.empty(201, 67).half()
    launch([a, b, c], [201, 99, 67])  # m, k, n in first-appearance order
    (k,) = fake.calls("hipModuleLaunchKernel")
    assert k["grid"] == [3, 4, 1] and k["block"] == [128, 1, 1] and k["shared"] == meta["smem"] > 0
    got = [struct.unpack("<q", bytes.fromhex(x))[0] for x in k["args"]]
    assert got == [a.data_ptr(), b.data_ptr(), c.data_ptr(), 201, 99, 67]


def test_the_module_loads_on_torchs_device_and_the_thread_keeps_its_own(fake, code_object, monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)  # torch works on device 1, HIP's thread on 0
    runtime.load_code_object(_built(code_object, **_scale_meta()))
    calls = [(c["call"], c.get("device")) for c in fake.calls() if c["call"] in ("hipSetDevice", "hipModuleLoadData")]
    assert calls == [("hipSetDevice", 1), ("hipModuleLoadData", None), ("hipSetDevice", 0)]


def test_launch_metadata_schema():
    good = {**_scale_meta(), "smem": 0, "arch": "gfx90a"}
    runtime.check_launch_meta(good)
    for bad in ({"args": ["ptr", "f32", "int"]}, {"threads": 0}, {"entry": "1bad"}, {"grid": [["nope", 1]]}):
        with pytest.raises(ValueError):
            runtime.check_launch_meta({**good, **bad})


def test_a_code_object_for_another_processor_is_refused_by_name(fake, tmp_path_factory, monkeypatch):
    from tilelang.errors import UnsupportedError

    gfx940 = _compile_hip(tmp_path_factory, "gfx940")  # what a gfx942 target compiles to before LLVM 17
    with open(gfx940, "rb") as f:
        assert runtime.code_object_arch(f.read()) == "gfx940"
    meta = {**_scale_meta(), "smem": 0, "arch": "gfx942", "offload_arch": "gfx940"}
    monkeypatch.setattr(FakeProps, "gcnArchName", "gfx942:sramecc+:xnack-")
    with pytest.raises(UnsupportedError, match=r"is for gfx940 \(the target was gfx942\), but device 0 is a gfx942"):
        runtime.load_code_object(BuiltKernel("", gfx940, meta))
    assert fake.calls("hipModuleLoadData") == [], "refused before HIP sees it"
    monkeypatch.setattr(FakeProps, "gcnArchName", "gfx940:sramecc+:xnack-")
    runtime.load_code_object(BuiltKernel("", gfx940, meta))  # the processor it is for loads it
    assert len(fake.calls("hipModuleLoadData")) == 1


@pytest.fixture(scope="module")
def hip_backend_build(tmp_path_factory):
    """The seed dynamic-shape GEMM built by the HIP backend, where this build has it (one compile)."""
    pytest.importorskip("tilelang.backend.hip.backend")
    if shutil.which("clang++-15") is None:
        pytest.skip("clang++-15 not found")
    from seeds import seed_kernels as S

    from tilelang.backend.launch_plan import backend_for
    from tilelang.backend.registry import get_backend
    from tilelang.backend.target import parse

    target = parse({"kind": "hip", "arch": "gfx90a"})
    func = S.matmul_dynamic_mnk.get_tir(
        block_M=64, block_N=64, block_K=32, trans_A=False, trans_B=False, in_dtype="float16", out_dtype="float16",
        accum_dtype="float32", num_stages=2, threads=128,
    )  # fmt: skip
    backend = backend_for(get_backend(target), func)
    return backend, backend.build(func, target, {}, str(tmp_path_factory.mktemp("hip_backend")))


def test_the_hip_backends_builds_launch_with_the_widths_their_code_objects_expect(
    fake, launcher_kind, hip_backend_build
):
    """End to end with the HIP backend: a seed kernel compiled by it, loaded through `backend.load`,
    launched on the fake; every parameter is packed at the width the code object's metadata gives it."""
    from tilelang.backend.kernel_args import ARG_KINDS

    backend, built = hip_backend_build
    runtime.check_launch_meta(built.meta)
    widths = _kernarg_sizes(built.lib_path, built.meta["entry"])
    assert widths == [ctypes.sizeof(ARG_KINDS[k].ctype) for k in built.meta["args"]]
    launch = backend.load(built)
    fake.arg_bytes(*widths)
    a, b, c = torch.randn(201, 99).half(), torch.randn(99, 67).half(), torch.empty(201, 67).half()
    launch([a, b, c], [201, 99, 67])
    (k,) = fake.calls("hipModuleLaunchKernel")
    assert k["grid"] == [2, 4, 1] and k["block"] == [128, 1, 1] and k["shared"] == built.meta["smem"]
    got = [struct.unpack("<q", bytes.fromhex(x))[0] for x in k["args"]]
    assert got == [a.data_ptr(), b.data_ptr(), c.data_ptr(), 201, 99, 67]
