"""`for bx, by in T.Persistent(domain, wave_size, index):` — a persistent kernel's tile loop.
Block `index` of `wave_size` blocks visits the tiles index, index + wave_size, ... of the
row-major `domain` (every tile exactly once over the blocks), binding the tile coordinates.
TileLang's `group_size` (an L2-friendly visiting order) is accepted; the order here is row-major."""

from __future__ import annotations

from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend.values import is_ir, to_expr
from .frames import LoopFrame
from .ops import _loc, primitive


def _mul(a: Any, b: Any) -> Any:
    return a * b if not is_ir(a) and not is_ir(b) else _tilec.binary("Mul", to_expr(a), to_expr(b), _loc())


class PersistentFrame(LoopFrame):
    def __init__(self, domain: list, wave_size: Any, index: Any, loc):
        super().__init__("serial", domain, what="T.Persistent", loc=loc)
        self.domain = domain
        self.wave_size = wave_size
        self.index = index

    def begin_loops(self, ctx, names) -> list:
        if len(names) != len(self.domain):
            raise CompileError(f"T.Persistent over {len(self.domain)} dimension(s) binds {len(names)} variable(s)",
                               hint="name one tile coordinate per dimension: `for bx, by in T.Persistent([m, n], ...)`")
        loc = self.loc
        total = to_expr(self.domain[0])
        for d in self.domain[1:]:
            total = _tilec.binary("Mul", total, to_expr(d), loc)
        wave = to_expr(self.wave_size)
        waves = _tilec.binary("FloorDiv", _tilec.binary("Add", total, _tilec.binary("Sub", wave, 1, loc), loc), wave, loc)
        w = ctx.builder.begin_for(f"{names[0]}_wave", to_expr(0), _tilec.simplify(waves), "serial", 0, None, None, None,
                                  "", loc)
        tile = ctx.builder.let(f"{names[0]}_tile", _tilec.binary("Add", _tilec.binary("Mul", w, wave, loc),
                                                                   to_expr(self.index), loc), loc)
        ctx.builder.begin_if(_tilec.binary("LT", tile, total, loc), loc)
        coords, rest = [], tile
        for d in reversed(self.domain[1:]):
            coords.append(_tilec.binary("FloorMod", rest, to_expr(d), loc))
            rest = _tilec.binary("FloorDiv", rest, to_expr(d), loc)
        coords.append(rest)
        return [ctx.builder.let(n, c, loc) for n, c in zip(names, reversed(coords))]

    def end_loops(self, ctx) -> None:
        ctx.builder.end_frame()  # the if
        ctx.builder.end_frame()  # the wave loop


@primitive
def Persistent(domain: Any, wave_size: Any, index: Any, group_size: Any = None):  # noqa: N802 - the T name
    dims = list(domain) if isinstance(domain, (list, tuple)) else [domain]
    if not dims:
        raise CompileError("T.Persistent needs a non-empty tile domain")
    return PersistentFrame(dims, wave_size, index, _loc())
