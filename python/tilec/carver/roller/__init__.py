"""`tilelang.carver.roller`: only the rasterization markers programs import."""

from . import rasterization  # noqa: F401
