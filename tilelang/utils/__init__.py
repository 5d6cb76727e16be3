"""Utilities shared by programs and tests (`tilelang.utils`).

`tilelang.utils.tensor`: `TensorSupplyType`, `get_tensor_supply`,
`map_torch_type`, `torch_assert_close`. Importing this package does not import torch.
"""
