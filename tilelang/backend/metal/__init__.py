"""The Metal backend (Apple silicon): MSL source generated from the per-thread IR of the
shared thread-level lowering, compiled at load time by `torch.mps.compile_shader`."""
