"""Carver arch objects: the built-in tables, live-device queries (mocked), predicates."""

from types import SimpleNamespace

import pytest
import torch

from tilelang.carver import arch as A
from tilelang.carver.arch import driver


def test_cuda_from_arch_string_without_gpu():
    a100 = A.CUDA("sm_80")
    assert (a100.sm_version, a100.compute_capability, a100.platform) == (80, "80", "CUDA")
    assert a100.compute_max_core == 108 and a100.smem_cap == 163 * 1024 and a100.smem_per_sm == 164 * 1024
    assert a100.reg_cap == 65536 and a100.warp_size == 32 and a100.sm_partition == 4
    assert a100.max_smem_usage == 2 * a100.smem_cap
    assert a100.l2_cache_size_bytes == 40 * 1024 * 1024
    assert a100.transaction_size == [32, 128] and len(a100.bandwidth) == 2
    assert (16, 8, 16) in a100.get_avaliable_tensorintrin_shapes()
    h100 = A.CUDA("sm_90a")
    assert h100.compute_capability == "90a" and h100.compute_max_core == 132
    assert h100.get_avaliable_tensorintrin_shapes()[0] == (64, 256, 16)
    assert A.CUDA({"kind": "cuda", "arch": "sm_86"}).sm_version == 86
    assert A.CUDA("cuda -arch=sm_89").sm_version == 89
    assert A.CUDA(SimpleNamespace(arch="sm_90")).sm_version == 90


def test_cuda_errors_are_clear(monkeypatch):
    with pytest.raises(ValueError, match="known CUDA archs: sm_70"):
        A.CUDA("sm_61")
    with pytest.raises(ValueError, match="sm_80"):
        A.CUDA("volta")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for arg in ("cuda", 0, "cuda:1"):
        with pytest.raises(RuntimeError, match=r"CUDA\('sm_80'\)"):
            A.CUDA(arg)


def fake_gpu(monkeypatch, major=9, minor=0, sms=114):
    props = SimpleNamespace(
        name="Fake H100 PCIe",
        major=major,
        minor=minor,
        multi_processor_count=sms,
        L2_cache_size=50 * 1024 * 1024,
        shared_memory_per_block=48 * 1024,
        shared_memory_per_block_optin=227 * 1024,
        shared_memory_per_multiprocessor=228 * 1024,
        regs_per_multiprocessor=65536,
    )
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props)
    monkeypatch.setattr(torch.version, "hip", None)
    return props


def test_cuda_from_live_device(monkeypatch):
    fake_gpu(monkeypatch)
    gpu = A.CUDA("cuda")
    assert gpu.sm_version == 90 and gpu.target == "sm_90a" and gpu.compute_max_core == 114
    assert gpu.name == "Fake H100 PCIe" and gpu.smem_cap == 227 * 1024
    assert A.CUDA(0).compute_max_core == 114
    assert A.get_arch("auto").name == "Fake H100 PCIe"
    assert driver.get_num_sms() == 114
    assert driver.get_max_dynamic_shared_size_bytes() == 227 * 1024
    assert driver.get_shared_memory_per_block(format="kb") == 48
    assert driver.get_l2_cache_size() == 50 * 1024 * 1024
    assert driver.get_compute_capability() == (9, 0)
    with pytest.raises(RuntimeError, match="does not exist"):
        driver.get_num_sms(3)


def test_driver_without_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="no CUDA device"):
        driver.get_num_sms()
    with pytest.raises(RuntimeError, match="no CUDA device"):
        driver.get_max_dynamic_shared_size_bytes()


def test_other_platforms():
    mi300 = A.CDNA("gfx942")
    assert (mi300.platform, mi300.reg_cap, mi300.smem_cap, mi300.compute_max_core, mi300.warp_size) == (
        "CDNA",
        32768,
        64 * 1024,
        304,
        64,
    )
    assert A.CDNA({"kind": "hip", "mcpu": "gfx950"}).smem_cap == 160 * 1024
    with pytest.raises(ValueError, match="known CDNA archs"):
        A.CDNA("gfx1100")
    assert A.Metal is A.METAL and A.METAL().platform == "METAL"
    assert A.CPU().platform == "CPU" and A.CPU().get_avaliable_tensorintrin_shapes() == []


def test_get_arch_and_auto(monkeypatch):
    assert isinstance(A.get_arch("sm_80"), A.CUDA)
    assert isinstance(A.get_arch("gfx90a"), A.CDNA)
    assert isinstance(A.get_arch({"kind": "hip", "mcpu": "gfx942"}), A.CDNA)
    assert isinstance(A.get_arch("metal"), A.METAL)
    for t in ("c", "cpu", "llvm"):
        assert isinstance(A.get_arch(t), A.CPU)
    arch = A.CUDA("sm_80")
    assert A.get_arch(arch) is arch
    with pytest.raises(ValueError, match="unsupported carver target"):
        A.get_arch("webgpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert isinstance(A.auto_infer_current_arch(), A.CPU)


def test_predicates():
    a100, a6000, l40, h100, mi = A.CUDA("sm_80"), A.CUDA("sm_86"), A.CUDA("sm_89"), A.CUDA("sm_90a"), A.CDNA("gfx942")
    assert A.is_cuda_arch(a100) and not A.is_cuda_arch(mi) and A.is_cdna_arch(mi)
    assert A.is_ampere_arch(a100) and A.is_ampere_arch(a6000) and not A.is_ampere_arch(l40) and A.is_ada_arch(l40)
    assert A.is_hopper_arch(h100) and not A.is_hopper_arch(a100)
    assert A.is_volta_arch(A.CUDA("sm_70")) and A.is_metal_arch(A.METAL()) and A.is_cpu_arch(A.CPU())
    assert A.has_mma_support(a100) and not A.has_mma_support(A.CUDA("sm_75")) and not A.has_mma_support(mi)
    tc = A.is_tensorcore_supported_precision
    assert tc("float16", "float32", a100) and tc("bfloat16", "float32", a100) and tc("int8", "int32", a100)
    assert not tc("float32", "float32", a100)
    assert not tc("float8_e4m3fn", "float32", a100) and tc("float8_e4m3fn", "float32", l40)
    assert tc("float16", "float32", mi) and not tc("float16", "float32", A.CPU())
