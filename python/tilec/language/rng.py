"""Random numbers in a kernel, as TileLang writes them:

    T.rng_init(seed, subsequence, offset)   # once per thread, before the draws
    x = T.rng_rand()                        # the thread's next uint32

Each thread has its own Philox4x32-10 stream (tilec/rng.cuh), laid out as cuRAND's
curand_init(seed, subsequence, offset) / curand(): the same seed and offsets give the same
numbers as cuRAND and as Triton's tl.randint4x. The state is a per-thread array of 11 words
(`rng_state`); draws happen in program order, one per T.rng_rand() a thread executes."""

from __future__ import annotations

from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import to_expr
from .ops import _alloc, primitive

_STATE_WORDS = 11


def _state_address(ctx, state) -> Any:
    load = _tilec.buffer_load(state, [to_expr(0)], ctx.loc)
    return _tilec.call("handle", "tl.address_of", [load], ctx.loc)


@primitive
def rng_init(seed: Any, subsequence: Any = 0, offset: Any = 0):
    """`T.rng_init(seed, subsequence=0, offset=0)`: starts this thread's random stream."""
    ctx = context.require("T.rng_init")
    state = _alloc("T.rng_init", "rng_state", [_STATE_WORDS], "uint32", "local")
    ctx.rng_state = state
    args = [_state_address(ctx, state)] + [_tilec.cast("uint64", to_expr(v), ctx.loc) for v in (seed, subsequence, offset)]
    ctx.builder.evaluate(_tilec.call("void", "tl.rng_init", args, ctx.loc), ctx.loc)


@primitive
def rng_rand():
    """`T.rng_rand()`: the next uint32 of this thread's stream (after T.rng_init)."""
    ctx = context.require("T.rng_rand")
    state = getattr(ctx, "rng_state", None)
    if state is None:
        raise CompileError("T.rng_rand() needs T.rng_init(seed, subsequence, offset) earlier in the kernel")
    return _tilec.call("uint32", "tl.rng_rand", [_state_address(ctx, state)], ctx.loc)
