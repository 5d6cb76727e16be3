"""`TileDevice`: the hardware numbers the carver's search needs.

Every architecture object exposes the same fields (upstream names kept,
including the `get_avaliable_tensorintrin_shapes` spelling):

- platform, name, target (a short target string such as "sm_80", "gfx942")
- sm_version (int, CUDA only), compute_capability (str, e.g. "80", "90a")
- compute_max_core: SMs / CUs; warp_size; sm_partition (schedulers per SM)
- smem_cap: max shared memory one block may use (bytes, opt-in maximum)
- smem_per_sm: shared memory of one SM; reserved_smem_per_block: the part the
  runtime keeps per resident block
- max_smem_usage: upstream's optimistic per-SM budget, 2 * smem_cap (kept for
  compatibility; the carver's own occupancy uses smem_per_sm)
- reg_cap: 32-bit registers per SM; max_threads_per_block
- l2_cache_size_bytes; transaction_size ([min sector, full line] bytes);
  bandwidth ([DRAM, L2] GB/s, approximate)
- tensor_instructions: list of `TensorInstruction`
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TensorInstruction:
    """A matrix instruction: name ("mma", "wgmma", "mfma", "simdgroup"), its
    (m, n, k) shape, and the input dtype class it applies to ("16bit", "8bit", "tf32")."""

    name: str
    shape: tuple[int, int, int]
    input_class: str = "16bit"


class TileDevice:
    """Base class of the carver's architecture descriptions."""

    platform: str = "unknown"
    name: str = "unknown"
    target: str = "unknown"
    sm_version: int | None = None
    compute_capability: str = ""
    compute_max_core: int = 1
    warp_size: int = 32
    sm_partition: int = 4
    smem_cap: int = 0
    smem_per_sm: int = 0
    reserved_smem_per_block: int = 0
    reg_cap: int = 65536
    max_threads_per_block: int = 1024
    l2_cache_size_bytes: int = 0
    transaction_size: list[int]
    bandwidth: list[int]
    tensor_instructions: list[TensorInstruction]

    def __init__(self) -> None:
        self.transaction_size = [32, 128]
        self.bandwidth = [0, 0]
        self.tensor_instructions = []

    @property
    def max_smem_usage(self) -> int:
        return 2 * self.smem_cap

    def get_avaliable_tensorintrin_shapes(self) -> list[tuple[int, int, int]]:
        """(m, n, k) of every tensor instruction this device has (upstream spelling)."""
        return [ti.shape for ti in self.tensor_instructions]

    get_available_tensorintrin_shapes = get_avaliable_tensorintrin_shapes

    def tensor_instruction_for(self, bits: int) -> TensorInstruction | None:
        """The instruction used for inputs of `bits` width, or None."""
        want = {16: "16bit", 8: "8bit", 32: "tf32"}.get(bits)
        return next((ti for ti in self.tensor_instructions if ti.input_class == want), None)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(target={self.target!r}, name={self.name!r}, cores={self.compute_max_core}, "
            f"smem_cap={self.smem_cap}, reg_cap={self.reg_cap}, warp_size={self.warp_size})"
        )
