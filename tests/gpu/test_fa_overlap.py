"""FlashAttention on the default sm_90a path (TMA, warp specialization) against torch: the
consumer loop runs P·V one trip late (backend/cuda/overlap_gemms.py), two consumer warpgroups
take turns (`tl::pingpong_*`); causal and not, sequence lengths that are not multiples of the
tile, a single trip, fast math. Marked `cuda`: skipped without an sm_90 GPU."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "tests" / "cuda"))

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(
        not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9, reason="needs an sm_90 GPU"
    ),
]

import overlap_kernels as OK  # noqa: E402
from flash_attention import mha_fwd  # noqa: E402

import tilelang  # noqa: E402

FAST = {"tl.enable_fast_math": True}
# (seq, block_M, block_N, stages, threads, pass configs, P·V one trip late, two warpgroups in turns)
CONFIGS = (
    (1000, 128, 128, 2, 256, {}, True, True),
    (1000, 128, 128, 2, 256, FAST, True, True),
    (100, 128, 128, 2, 256, {}, True, True),  # one trip: only the first and the last steps run
    (384, 128, 64, 3, 256, {}, True, True),
    (1000, 64, 128, 2, 128, {}, True, False),  # one consumer warpgroup: no turns
    (1000, 128, 64, 2, 256, {}, False, False),  # two blocks per SM fit: plain rings (no producer warpgroup)
)
CASES = {
    f"{'causal' if c else 'full'}-{seq}-{bm}x{bn}x{st}x{t}{'-fast' if cfg else ''}": (c, seq, bm, bn, st, t, cfg, o, p)
    for c in (False, True)
    for (seq, bm, bn, st, t, cfg, o, p) in CONFIGS
}


@pytest.fixture(scope="module")
def kernels():
    def build(item):
        name, (c, seq, bm, bn, st, t, cfg, _, _) = item
        func = mha_fwd.flashattn.get_tir(2, 4, seq, 128, c, block_M=bm, block_N=bn, num_stages=st, threads=t)
        try:
            return name, tilelang.compile(func, out_idx=[3], target="cuda", pass_configs=cfg)
        except Exception as err:  # noqa: BLE001 - reported by the test of this kernel
            return name, err

    with ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 2)) as ex:
        return dict(ex.map(build, CASES.items()))


@pytest.mark.parametrize("name", list(CASES))
def test_flash_attention_overlapped(kernels, name):
    causal, seq, *_, overlapped, pingpong = CASES[name]
    kern = kernels[name]
    if isinstance(kern, Exception):
        raise kern
    src = kern.get_kernel_source()
    assert ("late_full" in src) == overlapped, name
    assert ("tl::pingpong_pass()" in src) == pingpong, name
    q, k, v = (torch.randn(2, seq, 4, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    out = kern(q, k, v).float()
    torch.testing.assert_close(out, mha_fwd.reference(q, k, v, causal), atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(kern(q, k, v).float(), out, atol=0, rtol=0)  # deterministic


# (variant, heads per block, overlapped): backend/cuda/overlap_gemms.py's conditions, on the GPU
PROBES = [
    ("plain", 1, True),
    ("plain", 2, True),
    ("shared_a", 2, True),
    ("early_writes_a", 1, False),
    ("middle_reads_q", 2, True),
    ("maybe_empty", 2, True),
]


@pytest.mark.parametrize("variant, heads_per_block, overlapped", PROBES)
def test_overlap_conditions(variant, heads_per_block, overlapped):
    # 1000 keys: 8 trips, the last one partial; two heads per block run the loop twice per block,
    # so the ring position carries across its executions
    kern = OK.attention(variant, 1000, heads_per_block)
    assert ("late_full" in kern.get_kernel_source()) == overlapped
    q, k, v = (0.1 * torch.randn(1, 1000, OK.HEADS, OK.DIM, device="cuda", dtype=torch.float16) for _ in range(3))
    ref = OK.reference(variant, q, k, v)
    torch.testing.assert_close(kern(q, k, v).float(), ref, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("cfg", [{}, FAST], ids=["exact", "fast"])
def test_persistent_flash_attention(causal, cfg):
    """512 tiles (1000 keys: the last K/V and Q tiles partial) over one resident block per SM:
    Q comes from the producer, whose next tile's loads overlap this tile's last trip and
    epilogue; causal blocks walk longest first."""
    func = mha_fwd.flashattn.get_tir(4, 16, 1000, 128, causal, block_M=128, block_N=128, num_stages=2, threads=256)
    kern = tilelang.compile(func, out_idx=[3], target="cuda", pass_configs=cfg)
    src = kern.get_kernel_source()
    assert "for (int wave = 0;" in src and "k_lead_empty" in src
    q, k, v = (torch.randn(4, 1000, 16, 128, device="cuda", dtype=torch.float16) for _ in range(3))
    out = kern(q, k, v).float()
    torch.testing.assert_close(out, mha_fwd.reference(q, k, v, causal), atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(kern(q, k, v).float(), out, atol=0, rtol=0)  # deterministic
