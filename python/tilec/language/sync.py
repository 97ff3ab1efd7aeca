"""The T primitives of synchronisation and warp roles: mbarriers (T.alloc_barrier,
T.barrier_wait / arrive, T.mbarrier_*), block, warp and grid barriers (T.sync_threads, T.sync_warp, T.sync_grid), warp-group roles
(T.ws) with TileLang's register-budget hints, and thread-block clusters (T.ClusterKernel,
T.block_rank_in_cluster, T.cluster_sync)."""

from __future__ import annotations

from typing import Any

from .. import _tilec
from ..errors import CompileError
from ..frontend import context
from ..frontend.values import BARRIER_SCOPE, BufferAccess, const_int, to_expr
from .frames import AnnotationFrame, KernelFrame
from .ops import Buffer, Expr, _alloc, _loc, _named_primitive, _tile_op, primitive

# ----------------------------------------------------------------------------- clusters


@primitive
def ClusterKernel(*grid, threads: Any = 128, cluster_dims: Any = None):
    """`T.Kernel` with a thread-block cluster (cluster_dims required): the CTAs of a cluster run
    together and can multicast TMA loads into each other's shared memory."""
    if cluster_dims is None:
        raise CompileError("T.ClusterKernel needs cluster_dims", hint="T.ClusterKernel(gx, gy, threads=256, cluster_dims=(2, 1, 1))")
    if len(grid) == 1 and isinstance(grid[0], (list, tuple)):
        grid = tuple(grid[0])
    return KernelFrame(grid, threads, cluster_dims, _loc())


@primitive
def block_rank_in_cluster():
    """The rank of this CTA in its cluster (0 .. cluster size - 1)."""
    ctx = context.require("T.block_rank_in_cluster")
    return _tilec.call("int32", "tl.block_rank_in_cluster", [], ctx.loc)


@primitive
def cluster_sync():
    """A barrier over every thread of every CTA of the cluster."""
    ctx = context.require("T.cluster_sync")
    ctx.builder.evaluate(_tilec.call("void", "tl.cluster_sync", [], ctx.loc), ctx.loc)


# ----------------------------------------------------------------------------- barriers


@primitive
def alloc_barrier(arrive_count: Any):
    """mbarriers in shared memory, one per arrive count; `T.alloc_barrier(arrive_count=128)`."""
    ctx = context.require("T.alloc_barrier")
    counts = arrive_count if isinstance(arrive_count, (list, tuple)) else [arrive_count]
    counts = [const_int(c, "arrive_count") for c in counts]
    if not counts:
        raise CompileError("T.alloc_barrier needs at least one arrive count")
    buf = _alloc("T.alloc_barrier", "mbar", [len(counts)], "uint64", BARRIER_SCOPE)
    ctx.builder.tile_op("barrier_init", [buf], {"arrive_count": counts}, ctx.loc)
    return buf


@primitive
def barrier_init(barrier: Any, arrive_count: Any):
    """The initialisation T.alloc_barrier emits (printed form)."""
    counts = arrive_count if isinstance(arrive_count, (list, tuple)) else [arrive_count]
    return _tile_op("barrier_init", [barrier], {"arrive_count": [const_int(c, "arrive_count") for c in counts]})


def _barrier(v: Any) -> Expr:
    if isinstance(v, (Buffer, BufferAccess, Expr)):
        return to_expr(v)
    raise CompileError(f"expected a barrier (from T.alloc_barrier), got {type(v).__name__}",
                       hint="mbar = T.alloc_barrier(arrive_count=128), then T.barrier_wait(mbar, parity)")


def _barrier_call(op: str, *args):
    ctx = context.require(f"T.{op}")
    ctx.builder.evaluate(_tilec.call("void", op, list(args), ctx.loc), ctx.loc)


@primitive
def barrier_wait(barrier: Any, parity: Any):
    _barrier_call("barrier_wait", _barrier(barrier), to_expr(parity))


@primitive
def barrier_arrive(barrier: Any):
    _barrier_call("barrier_arrive", _barrier(barrier))


@primitive
def mbarrier_wait_parity(mbarrier: Any, parity: Any):
    _barrier_call("mbarrier_wait_parity", _barrier(mbarrier), to_expr(parity))


@primitive
def mbarrier_arrive(mbarrier: Any):
    _barrier_call("mbarrier_arrive", _barrier(mbarrier))


@primitive
def sync_threads(barrier_id: Any = None, arrive_count: Any = None):
    """`__syncthreads()` (the compiler inserts the barriers tile ops need by itself);
    `T.sync_threads(id, n)`: the named barrier `id` (1..15) for the n threads that reach it."""
    ctx = context.require("T.sync_threads")
    if barrier_id is None and arrive_count is None:
        ctx.builder.evaluate(_tilec.call("void", "tl.syncthreads", [], ctx.loc), ctx.loc)
        return
    if barrier_id is None or arrive_count is None:
        raise CompileError("T.sync_threads takes no arguments or both a barrier id and a thread count",
                           hint="T.sync_threads() for the whole block, T.sync_threads(1, 128) for 128 threads")
    bid = const_int(barrier_id, "the barrier id of T.sync_threads")
    n = const_int(arrive_count, "the thread count of T.sync_threads")
    if not 1 <= bid <= 15 or n <= 0 or n % 32:
        raise CompileError(f"T.sync_threads({bid}, {n}): the named barrier id must be in 1..15 and the thread "
                           "count a positive multiple of 32 (barrier 0 is __syncthreads)")
    ctx.builder.evaluate(_tilec.call("void", "tl.named_barrier_sync", [to_expr(bid), to_expr(n)], ctx.loc), ctx.loc)


@primitive
def sync_warp(mask: Any = None):
    """`T.sync_warp()`: `__syncwarp()` over the whole warp; `T.sync_warp(mask)`: over the lanes of
    `mask` (a 32-bit lane mask), as TileLang."""
    ctx = context.require("T.sync_warp")
    if mask is None:
        ctx.builder.evaluate(_tilec.call("void", "tl.syncwarp", [], ctx.loc), ctx.loc)
        return
    if isinstance(mask, int) and not isinstance(mask, bool):
        if not 0 <= mask < 2**32:
            raise CompileError(f"T.sync_warp({mask:#x}): the lane mask is a 32-bit value")
        m = _tilec.int_imm(mask, "uint32", ctx.loc)
    else:
        m = to_expr(mask)
        if str(m.dtype) != "uint32":
            m = _tilec.cast("uint32", m, ctx.loc)
    ctx.builder.evaluate(_tilec.call("void", "tl.syncwarp_mask", [m], ctx.loc), ctx.loc)


@primitive
def sync_grid():
    """`T.sync_grid()`: a barrier over every thread of every block of the kernel's grid, which also
    makes every memory write before it visible to every thread after it (e.g. a split phase
    writing partial results, then a combine phase reading other blocks' partials). The kernel is
    launched cooperatively: all of its blocks must fit on the GPU at once (the launch says so
    otherwise). Every thread of every block must reach it: not inside T.Parallel, T.Pipelined,
    T.ws, or a branch / loop that depends on the block or thread index (CompileErrors). On
    target="cpu" each block runs up to the barrier, then all continue."""
    ctx = context.require("T.sync_grid")
    if not ctx.kernels:
        raise CompileError("T.sync_grid synchronizes the blocks of a kernel: call it inside `with T.Kernel(...)`")
    ctx.builder.evaluate(_tilec.call("void", "tl.sync_grid", [], ctx.loc), ctx.loc)


@primitive
def ptx_commit_group():
    """`T.ptx_commit_group()`: commits this thread's outstanding cp.async copies as one group."""
    ctx = context.require("T.ptx_commit_group")
    ctx.builder.evaluate(_tilec.call("void", "tl.cp_async_commit", [], ctx.loc), ctx.loc)


@primitive
def ptx_wait_group(pending: Any = 0):
    """`T.ptx_wait_group(n)`: waits until at most n cp.async groups of this thread are pending."""
    ctx = context.require("T.ptx_wait_group")
    n = const_int(pending, "the pending-group count of T.ptx_wait_group")
    ctx.builder.evaluate(_tilec.call("void", "tl.cp_async_wait", [to_expr(n)], ctx.loc), ctx.loc)


# --------------------------------------------------------------------------- warp roles


@primitive
def ws(*warp_groups):
    """`with T.ws(0):` — the body runs only in warp group 0 (threads 0..127)."""
    if not warp_groups:
        raise CompileError("T.ws needs at least one warp-group index")
    return AnnotationFrame("ws", [const_int(w, "warp-group index") for w in warp_groups], implicit_ok=False)


def _register_hint(name: str):
    def hint(*args, **kwargs):
        context.require(f"T.{name}")  # a register-budget hint: tilec sizes registers itself

    return _named_primitive(hint, name, f"T.{name}: accepted and ignored — register budgets (setmaxnreg) are "
                                        "the compiler's choice in tilec; the hint never changes results")


disable_warp_group_reg_alloc = _register_hint("disable_warp_group_reg_alloc")
no_set_max_nreg = _register_hint("no_set_max_nreg")
annotate_producer_reg_dealloc = _register_hint("annotate_producer_reg_dealloc")
annotate_consumer_reg_alloc = _register_hint("annotate_consumer_reg_alloc")


def _register_budget(name: str, count: Any, inc: bool) -> None:
    ctx = context.require(f"T.{name}")
    n = const_int(count, f"the register count of T.{name}")
    if not (24 <= n <= 256 and n % 8 == 0):
        raise CompileError(f"T.{name}({n}): a warpgroup's register budget is 24..256 in steps of 8 "
                           "(setmaxnreg)")
    ctx.builder.evaluate(_tilec.call("void", "tl.user_setmaxnreg", [to_expr(n), to_expr(1 if inc else 0)], ctx.loc),
                         ctx.loc)


@primitive
def set_max_nreg(reg_count: Any, is_inc: Any):
    """`T.set_max_nreg(n, is_inc)`: the warpgroup running it raises (is_inc=1) or lowers (0) its
    register budget to n (setmaxnreg, sm_90a), as in a hand-split producer / consumer kernel. Every
    warp of the warpgroup must run it. Honored on sm_90a unless the pass config
    tilec.honor_set_max_nreg is False; otherwise, and on other targets, it has no effect."""
    _register_budget("set_max_nreg", reg_count, bool(const_int(is_inc, "is_inc of T.set_max_nreg")))


@primitive
def inc_max_nreg(reg_count: Any):
    """`T.inc_max_nreg(n)`: T.set_max_nreg(n, 1)."""
    _register_budget("inc_max_nreg", reg_count, True)


@primitive
def dec_max_nreg(reg_count: Any):
    """`T.dec_max_nreg(n)`: T.set_max_nreg(n, 0)."""
    _register_budget("dec_max_nreg", reg_count, False)


@primitive
def wait_wgmma(pending: Any = 0):
    """`T.wait_wgmma(n)`: waits until at most n wgmma groups of the warp group are pending (sm_90a;
    the wgmmas of a `T.gemm` with `wg_wait=-1` stay pending until such a wait)."""
    ctx = context.require("T.wait_wgmma")
    n = const_int(pending, "the pending-group count of T.wait_wgmma")
    if n < 0:
        raise CompileError(f"T.wait_wgmma({n}): the count of wgmma groups left pending must be >= 0")
    ctx.builder.evaluate(_tilec.call("void", "tl.wgmma_wait", [to_expr(n)], ctx.loc), ctx.loc)


def _pdl(what: str, intrinsic: str) -> None:
    ctx = context.require(what)
    ctx.builder.evaluate(_tilec.call("void", intrinsic, [], ctx.loc), ctx.loc)


@primitive
def pdl_trigger():
    """`T.pdl_trigger()`: lets a kernel launched after this one with programmatic dependent launch
    start (griddepcontrol.launch_dependents, sm_90). A hint: without such a launch it does nothing."""
    _pdl("T.pdl_trigger", "tl.pdl_trigger")


@primitive
def pdl_sync():
    """`T.pdl_sync()`: waits for the kernels this one depends on under programmatic dependent launch
    (griddepcontrol.wait, sm_90); returns at once otherwise."""
    _pdl("T.pdl_sync", "tl.pdl_sync")


@primitive
def fence_proxy_async():
    """`T.fence_proxy_async()`: orders this thread's generic-proxy shared-memory accesses before
    later async-proxy ones (TMA, wgmma). tilec inserts the fences its own tile ops need."""
    ctx = context.require("T.fence_proxy_async")
    ctx.builder.evaluate(_tilec.call("void", "tl.fence_proxy_async", [], ctx.loc), ctx.loc)


@primitive
def alloc_global(shape: Any, dtype: Any):
    """A global workspace (e.g. the partial results a split kernel hands to a combine kernel of
    the same function): a tensor parameter that the kernel object allocates at each call
    (jit_multi.py); the caller does not pass it."""
    from .ops import _shape
    from .dtypes import dtype_str

    ctx = context.require("T.alloc_global")
    if ctx.kernels:
        raise CompileError("T.alloc_global allocates a tensor for the whole function: call it before `with T.Kernel`",
                           hint="use T.alloc_shared / T.alloc_fragment inside a kernel")
    name = ctx.take_name("workspace")
    buf = ctx.builder.tensor(name, _shape(shape), dtype_str(dtype), None, ctx.loc)
    names = [n for n in ctx.func_attrs.get(WORKSPACES_ATTR, "").split(",") if n]
    ctx.func_attrs[WORKSPACES_ATTR] = ",".join(names + [name])
    return buf


WORKSPACES_ATTR = "tilec.workspaces"
