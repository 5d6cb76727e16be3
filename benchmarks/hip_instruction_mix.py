"""MFMA instruction mix and LDS traffic per FLOP of the HIP GEMM and FlashAttention (issue 20):
there is no AMD GPU here, so speed is read off the code clang generates for gfx90a / gfx940.

    PYTHONPATH=. python benchmarks/hip_instruction_mix.py [--arch gfx90a]

For each kernel: our lowering → HIP source → `clang -S` assembly; counted in the main K loop
(the basic block that ends in the loop's backward branch and holds the MFMAs): MFMA instructions
by kind, LDS bytes read and written per wave (`ds_read*` / `ds_write*` widths × 64 lanes),
global bytes loaded per wave, and LDS bytes per MFMA FLOP. "Hand-tuned" is what a kernel of the
same block and wave tile that reads each operand element from LDS once per wave per K step with
128-bit reads would move: (wave_M + wave_N) × K_step × element bytes for 2·wave_M·wave_N·K_step
FLOPs. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "cuda"), str(ROOT / "tests")]

import tilelang  # noqa: E402
from tilelang.backend.hip.compiler import compile_hip  # noqa: E402

WIDTH = {"b32": 4, "b64": 8, "b96": 12, "b128": 16, "u16": 2, "b16": 2, "u8": 1, "b8": 1, "i16": 2, "i8": 1}
MFMA_FLOPS = {"16x16x16": 2 * 16 * 16 * 16, "16x16x4": 2 * 16 * 16 * 4, "16x16x32": 2 * 16 * 16 * 32}


def kernels() -> dict:
    """name -> (PrimFunc, the gemms of one loop trip as (M, N, K, A from registers), the bytes of
    the tiles written to LDS per trip)."""
    import catalog

    mha = catalog._example("flash_attention/mha_fwd.py")
    from seeds import seed_kernels as seeds

    return {
        "GEMM fp16 4096³, 128×128×32 tiles, 128 threads": (
            seeds.matmul.get_tir(M=4096, N=4096, K=4096, block_M=128, block_N=128, block_K=32),
            [(128, 128, 32, False)],
            (128 + 128) * 32 * 2,
        ),
        "FlashAttention fwd 8×32×4096×128, 64×64 tiles, 128 threads": (
            mha.flashattn.get_tir(8, 32, 4096, 128, False),
            [(64, 64, 128, False), (64, 128, 64, True)],  # S = Q·Kᵀ, O += P·V (P in registers)
            2 * 64 * 128 * 2,  # the K and V tiles
        ),
    }


def loop_body(asm: str, entry: str) -> str:
    body = re.search(rf"^{entry}:[^\n]*\n(.*?)^\.Lfunc_end\d+:", asm, re.M | re.S).group(1)
    blocks = re.split(r"^(\.LBB\d+_\d+):", body, flags=re.M)
    best = ""
    for i in range(1, len(blocks), 2):  # the block with the most MFMAs that branches back to itself
        label, code = blocks[i], blocks[i + 1]
        if f"s_cbranch_scc1 {label}" in code or f"s_cbranch_scc0 {label}" in code or f"s_branch {label}" in code:
            if code.count("v_mfma") > best.count("v_mfma"):
                best = code
    return best or body


def measure(code: str) -> dict:
    mfma: dict = {}
    flops = 0
    for m in re.finditer(r"\bv_mfma_(\w+)", code):
        kind = m.group(1)
        mfma[kind] = mfma.get(kind, 0) + 1
        shape = re.search(r"(\d+x\d+x\d+)", kind).group(1)
        flops += MFMA_FLOPS.get(shape, 0)
    reads = re.findall(r"\bds_read(2?)(?:st64)?_(\w+)", code)
    writes = re.findall(r"\bds_write(2?)(?:st64)?_(\w+)", code)
    lds_r = sum(WIDTH.get(w, 4) * (2 if two else 1) for two, w in reads) * 64  # read2: two addresses
    lds_w = sum(WIDTH.get(w, 4) * (2 if two else 1) for two, w in writes) * 64
    glob = sum(WIDTH.get(w, 4) for w in re.findall(r"\bglobal_load_(?:dword(x\d)?|ushort|ubyte)", code))
    return {"mfma": mfma, "flops": flops, "lds_read": lds_r, "lds_write": lds_w, "global_insts": glob,
            "read_insts": len(reads)}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--arch", default="gfx90a")
    args = p.parse_args()
    print(f"| kernel ({args.arch}) | MFMA per wave in the K loop | LDS bytes read / written per trip, "
          "all waves: ours | hand-tuned | LDS bytes per FLOP: ours | hand-tuned | LDS read instructions per wave and "
          "trip: ours | hand-tuned (128-bit) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, (func, gemms, tile_bytes) in kernels().items():
        art = tilelang.lower(func, target={"kind": "hip", "arch": args.arch}, enable_device_compile=False)
        entry = art.meta["entry"]
        with tempfile.TemporaryDirectory() as d:
            path = compile_hip(art.kernel_source, d, entry, args.arch, assembly=True)
            asm = Path(path).read_text()
        m = measure(loop_body(asm, entry))
        waves = art.meta["threads"] // 64
        grids = [g.grid for g in art.lowered.attrs["decisions"].gemms]
        flops = sum(2 * M * N * K for M, N, K, _ in gemms)
        ideal_r = 0
        for (M, N, K, a_regs), (rows, cols) in zip(gemms, grids):
            wm, wn = M // rows, N // cols
            ideal_r += rows * cols * ((0 if a_regs else wm * K) + wn * K) * 2
        ours = (m["lds_read"] * waves, m["lds_write"] * waves)
        mix = ", ".join(f"{n}× v_mfma_{k}" for k, n in sorted(m["mfma"].items()))
        print(f"| {name} | {mix} | {ours[0]} / {ours[1]} | {ideal_r} / {tile_bytes} | "
              f"{sum(ours) / flops:.4f} | {(ideal_r + tile_bytes) / flops:.4f} | {m['read_insts']} | "
              f"{ideal_r // waves // (64 * 16)} |")  # fmt: skip


if __name__ == "__main__":
    main()
