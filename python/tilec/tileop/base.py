from ..language.ops import GemmWarpPolicy  # noqa: F401
