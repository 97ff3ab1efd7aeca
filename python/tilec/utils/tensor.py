"""`tilelang.utils.tensor`: input supply and tolerant comparison of tensors."""

from __future__ import annotations

from typing import Any, Callable

from ..language.dtypes import dtype_str
from ..profiler import TensorSupplyType, _random_tensor
from ..testing import torch_assert_close

__all__ = ["TensorSupplyType", "get_tensor_supply", "torch_assert_close", "map_torch_type"]


def map_torch_type(dtype: Any):
    """The torch dtype for a tilec dtype name."""
    from ..language.dtypes import as_torch

    return as_torch(dtype)


def get_tensor_supply(supply_type: TensorSupplyType = TensorSupplyType.Auto) -> Callable:
    """A function making a random input tensor for a kernel parameter (a dict from
    kernel.params(), or an object with .shape and .dtype)."""

    def supply(param: Any):
        shape = param["shape"] if isinstance(param, dict) else param.shape
        dtype = param["dtype"] if isinstance(param, dict) else param.dtype
        if any(isinstance(d, str) for d in shape):
            raise ValueError(f"parameter {param!r} has a symbolic shape; give the tensor yourself")
        return _random_tensor(tuple(shape), dtype_str(dtype), TensorSupplyType(getattr(supply_type, "value", supply_type)),
                              "cuda")

    return supply
