"""Every seed and example kernel of the catalogue (tests/cuda/catalog.py) on the GPU, checked
against the same kernel on the CPU backend, on the same random inputs — the program that
`make gpu-sanitize` runs under compute-sanitizer (memcheck, racecheck, synccheck), and that
`tests/gpu/test_catalog_vs_cpu.py` runs as a test.

    PYTHONPATH=. python3 tests/gpu/catalog_vs_cpu.py [name-substring ...]
"""

from __future__ import annotations

import os
import sys
import zlib

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
for p in (ROOT, os.path.join(ROOT, "examples"), os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "cuda")):
    if p not in sys.path:
        sys.path.insert(0, p)

import tilelang  # noqa: E402

DYNAMIC = 100  # the size every dynamic dimension gets
SKIP = {"kz.debug_print_assert"}  # traps on purpose
# tf32 tensor cores round float32 operands to 10 mantissa bits; the CPU backend multiplies in float32
LOOSE = {"kz.gemm_tf32_trans": (3e-2, 1e-2)}


def _inputs(params: list, seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    out = []
    for p in params:
        if p.is_scalar():
            out.append(3)
            continue
        shape = [s if isinstance(s, int) else DYNAMIC for s in p.shape]
        dt = p.dtype.as_torch()
        if dt.is_floating_point:
            t = torch.randn(shape, generator=g).to(dt)
        elif dt == torch.bool:
            t = torch.randint(0, 2, shape, generator=g).bool()
        else:
            t = torch.randint(-4, 5, shape, generator=g).to(dt)
        out.append(t)
    return out


def _tolerance(dtype: torch.dtype) -> tuple[float, float]:
    if dtype in (torch.float16, torch.bfloat16) or "float8" in str(dtype):
        return 5e-2, 2e-2
    if dtype.is_floating_point:
        return 1e-3, 1e-3
    return 0.0, 0.0


def check(name: str, make) -> None:
    func = make()
    gpu = tilelang.compile(func, target="cuda")
    cpu = tilelang.compile(func, target="c")
    args = _inputs(gpu.params, zlib.crc32(name.encode()))
    ins = [a for a, p in zip(args, gpu.params) if not p.is_output]
    cpu_args = [a.clone() if isinstance(a, torch.Tensor) else a for a in ins]
    gpu_args = [a.cuda() if isinstance(a, torch.Tensor) else a for a in ins]
    want = cpu(*cpu_args)
    got = gpu(*gpu_args)
    torch.cuda.synchronize()
    wants = list(want) if isinstance(want, (list, tuple)) else ([] if want is None else [want])
    gots = list(got) if isinstance(got, (list, tuple)) else ([] if got is None else [got])
    # in-place kernels: their tensors after the call are the results
    wants += [a for a in cpu_args if isinstance(a, torch.Tensor)]
    gots += [a for a in gpu_args if isinstance(a, torch.Tensor)]
    for w, g in zip(wants, gots):
        atol, rtol = LOOSE.get(name) or _tolerance(w.dtype)
        torch.testing.assert_close(g.cpu().float(), w.float(), atol=atol, rtol=rtol, msg=lambda m: f"{name}: {m}")


def names(filters: list[str] | None = None) -> dict:
    from catalog import all_funcs

    found = {n: m for n, m in all_funcs().items() if n not in SKIP}
    if filters:
        found = {n: m for n, m in found.items() if any(f in n for f in filters)}
    return found


def main(argv: list[str]) -> int:
    failed = []
    for name, make in names(argv).items():
        try:
            check(name, make)
            print(f"ok    {name}", flush=True)
        except Exception as err:  # noqa: BLE001 - reported per kernel
            failed.append(name)
            print(f"FAIL  {name}: {type(err).__name__}: {str(err).splitlines()[0]}", flush=True)
    print(f"catalog_vs_cpu: {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
