"""The HIP backend (AMD Instinct: gfx90a, gfx940, gfx942): pipeline, HIP codegen, MFMA gemm,
clang/hipcc driver, and the code-object runtime (docs/hip.md, docs/hip_runtime.md)."""
