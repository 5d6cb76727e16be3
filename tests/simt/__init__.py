"""A CPU simulator of the thread-level backends' lowered (per-thread) IR, shared by the CUDA and HIP
tests: `core` (memory, values, `Dialect`), `compiler` (IR -> Python generators), `wave` (blocks,
rendezvous, warp / wave collectives), and one dialect per target (`cuda`, `hip` with `mfma`)."""
