"""`tilelang.tools.cuda.iket` (in-kernel event tracing) is not part of tilec."""


def __getattr__(name: str):
    raise NotImplementedError(f"tilelang.tools.cuda.iket.{name}: in-kernel event tracing (iket) is not part of "
                              "tilec; use T.print for device-side values")
