"""`tilelang.math`: integer helpers for tile sizes."""

from __future__ import annotations

__all__ = ["cdiv", "next_power_of_2", "prev_power_of_2"]


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for Python ints."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def prev_power_of_2(n: int) -> int:
    """The largest power of two <= n (n >= 1)."""
    n = int(n)
    if n < 1:
        raise ValueError(f"prev_power_of_2 needs n >= 1, got {n}")
    return 1 << (n.bit_length() - 1)
