"""The T language: ``import tilec.language as T`` (or ``import tilelang.language as T`` after
``import tilec.compat``). docs/LANGUAGE.md lists every primitive and its status."""

from ..frontend.function import prim_func
from ..frontend.macro import macro
from .dtypes import DTYPES as _DTYPES, DType, dtype
from .frames import Frame
from .layout import Fragment, Layout
from .ops import (  # noqa: A004 (abs, max, min, print are T names)
    Broadcast, Cast, GemmWarpPolicy, Kernel, Parallel, Pipelined, Ramp, Select, abs, alloc_buffer, alloc_fragment,
    alloc_local, alloc_shared, alloc_tmem, alloc_var, annotate, annotate_layout, assume, atomic_add, atomic_max,
    atomic_min, bitwise_and, bitwise_or, bitwise_xor, call_intrin, cast, ceil, ceildiv, clamp, clear, copy, cos,
    erf, evaluate, exp, exp2, fill, isfinite, isinf, isnan, floor, floordiv, floormod, func_attr, gemm, gemm_sp, gemm_sp_v2, gemm_v1,
    gemm_v2, get_block_binding, get_block_bindings, get_thread_binding, get_thread_bindings, if_then_else, infinity,
    log, log2, log10, max, min, pow, round, rsqrt, serial, shift_left, shift_right, sigmoid, sin, sqrt, tanh,
    tcgen05_gemm, thread_binding, tma_copy, trunc, truncdiv, truncmod, unroll, use_swizzle, vectorized, wgmma_gemm,
)
from .sync import (
    ClusterKernel, alloc_barrier, barrier_arrive, barrier_init, barrier_wait, block_rank_in_cluster, cluster_sync,
    dec_max_nreg, disable_warp_group_reg_alloc, inc_max_nreg, mbarrier_arrive, mbarrier_wait_parity,
    no_set_max_nreg, set_max_nreg, sync_grid, sync_threads, sync_warp, ws, annotate_producer_reg_dealloc, annotate_consumer_reg_alloc,
    wait_wgmma, fence_proxy_async, ptx_commit_group, ptx_wait_group, alloc_global, pdl_sync, pdl_trigger,
)
from .tensor import Buffer, FragmentBuffer, LocalBuffer, SharedBuffer, StridedTensor, Tensor, TensorSpec, dynamic, symbolic
from .atomic_vec import atomic_addx2, atomic_addx4
from .debug_ops import device_assert, print  # noqa: A004 (print is a T name)
from .async_copy import access_ptr, cp_async_barrier_noinc, ptx_cp_async
from .extern import call_extern, import_source
from .rng import rng_init, rng_rand
from .thread_reduce import attr, comm_reducer, tvm_thread_allreduce
from .scans import cummax, cumsum
from .atomic_order import atomic_load, atomic_store
from .reducer import alloc_reducer, finalize_reducer, reducer_init, reducer_update
from .logical import all_of, any_of
from .bitcast import reinterpret
from .persistent import Persistent
from .pointers import handle, make_tensor, make_tensor_from_addr, match_buffer, ptr
from .views import im2col, reshape, transpose, view
from .reductions import reduce, reduce_absmax, reduce_abssum, reduce_max, reduce_min, reduce_sum
from .sm100 import UNSUPPORTED as _SM100_UNSUPPORTED

globals().update(_SM100_UNSUPPORTED)  # T.PersistentTileScheduler, T.WSSchedule, ...: clear CompileErrors
from .warp import shfl_down, shfl_sync, shfl_up, shfl_xor, tvm_warp_shuffle, tvm_warp_shuffle_down, tvm_warp_shuffle_up
from .warp_vote import (activemask, all_sync, any_sync, ballot, ballot_sync, syncthreads_and, syncthreads_count,
                        syncthreads_or, warp_reduce_bitand, warp_reduce_bitor, warp_reduce_max, warp_reduce_min,
                        warp_reduce_sum, shuffle_elect)
from .warp_vote import ffs as __ffs, fns as __fns  # noqa: F401  (TileLang's T.__ffs / T.__fns)

c2d_im2col = im2col
from .eager import annotate_compile_flags, annotate_pass_configs, const, empty

globals().update(_DTYPES)

# TileLang's capitalised aliases.
Serial = serial
Unroll = unroll
Vectorized = vectorized

parallel = Parallel  # TileLang accepts the lower-case spelling too
