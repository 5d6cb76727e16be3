#!/usr/bin/env bash
# Make sure the HIP compiler (Debian's hipcc: ROCm 5.2 on clang 15, with the AMDGPU device
# libraries) is installed, so the HIP backend's compile tests run instead of skipping.
# Idempotent and fast when it is already there; installs with apt-get only when running as
# root on a machine that has it, and otherwise says how to install it and carries on.
# Facts: ../shared/reference/hip_toolchain.md (no AMD GPU or runtime is needed to compile).
set -euo pipefail

BITCODE=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode

if command -v hipcc >/dev/null 2>&1 && command -v clang++-15 >/dev/null 2>&1 && [ -d "$BITCODE" ]; then
  exit 0
fi
if [ "${EUID:-$(id -u)}" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing the HIP compiler (hipcc, clang-15, ROCm device libraries)..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends hipcc >/dev/null
  command -v hipcc >/dev/null 2>&1 || { echo "error: hipcc still missing after apt-get install" >&2; exit 1; }
else
  echo "note: the HIP compiler (hipcc) is not installed and this is not a root shell with apt-get," \
       "so the HIP compile tests will be skipped. To run them:" \
       "sudo apt-get install --no-install-recommends hipcc" >&2
fi
