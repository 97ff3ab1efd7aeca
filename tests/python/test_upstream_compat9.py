"""Upstream TileLang constructs of the corpus (issue 9): hand-written cp.async into shared memory
completing on an mbarrier, thread-index if / elif chains as warp roles, atomics that return the
previous value, gemms whose register A no instruction reads (staged through shared memory), and
nvcc-only compile flags."""
import pytest

import tilec
import tilec.language as T
from tilec import CompileError


def _producer_consumer(n_elems=4):
    @T.prim_func
    def ws(KV: T.Tensor((1024, 64), T.float16), Idx: T.Tensor((64,), T.int32), Q: T.Tensor((64, 64), T.float16),
           O: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=256) as bx:
            Q_shared = T.alloc_shared((64, 64), T.float16)
            KV_shared = T.alloc_shared((64, 64), T.float16)
            acc = T.alloc_fragment((64, 64), T.float32)
            ready = T.alloc_barrier(arrive_count=128)
            tx = T.get_thread_binding()
            T.copy(Q, Q_shared)
            T.sync_threads()
            if tx < 128:
                T.barrier_wait(ready[0], 0)
                T.clear(acc)
                T.gemm(Q_shared, KV_shared, acc, transpose_B=True)
                T.copy(acc, O)
            elif tx >= 128:
                for r in T.serial(8):
                    row = r * 8 + (tx - 128) // 16
                    T.ptx_cp_async(T.access_ptr(KV_shared[row, (tx - 128) % 16 * 4], "w", 4),
                                   T.access_ptr(KV[Idx[row], (tx - 128) % 16 * 4], "r", 4), n_elems)
                T.cp_async_barrier_noinc(ready[0])

    return ws


def test_ptx_cp_async_completes_on_an_mbarrier_and_roles_come_from_thread_ranges():
    src = tilec.compile(_producer_consumer(), target="sm_90a").get_kernel_source()
    assert "tl::cp_async_ca8(&KV_shared[" in src, src
    assert "tl::cp_async_mbarrier_arrive_noinc(&ready[0]);" in src, src
    # the consumer's wgmma reads what cp.async (generic proxy) wrote: fence after the wait
    assert "TL_MBARRIER_WAIT(&ready[0], 0);\n    tl::fence_proxy_async();" in src, src
    # the if / elif chain stays one chain of roles (no block barrier inside a role)
    assert "} else if (tx >= 128) {" in src, src
    consumer = src[src.index("if (tx < 128) {"):src.index("} else if (tx >= 128) {")]
    assert "__syncthreads" not in consumer, consumer
    # the consumer's tile ops run on its 128 threads: one warpgroup
    assert "wgmma_gemm_ss<64, 64, 64, 1, 1," in src, src


def test_ptx_cp_async_with_a_predicate_zero_fills():
    @T.prim_func
    def guarded(A: T.Tensor((256,), T.float16), n: T.int32, B: T.Tensor((256,), T.float16)):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((256,), T.float16)
            tx = T.get_thread_binding()
            T.ptx_cp_async(T.access_ptr(S[tx * 8], "w", 8), T.access_ptr(A[tx * 8], "r", 8), 8, tx * 8 < n)
            T.ptx_cp_async(T.access_ptr(S[tx * 8], "w", 8), T.access_ptr(A[tx * 8], "r", 8), 8,
                           predicate=tx * 8 < n)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i in T.Parallel(256):
                B[i] = S[i]

    src = tilec.compile(guarded, target="sm_90a").get_kernel_source()
    assert src.count("tl::cp_async_cg16_zfill(&S[tx * 8], &A[tx * 8], tx * 8 < n);") == 2, src


def test_ptx_cp_async_checks_its_arguments():
    # The third argument counts elements (TileLang's num_elems): 4 float16 are the 8 bytes above,
    # 8 would be 16 bytes, 6 are 12 bytes: no cp.async.
    assert "tl::cp_async_cg16(&KV_shared[" in tilec.compile(_producer_consumer(8), target="sm_90a").get_kernel_source()
    with pytest.raises(CompileError, match="copies 4, 8 or 16 bytes: 6 float16 elements are 12 bytes"):
        tilec.compile(_producer_consumer(6), target="sm_90a")

    with pytest.raises(CompileError, match="needs addresses"):
        @T.prim_func
        def bad(A: T.Tensor((64,), T.float16)):
            with T.Kernel(1, threads=128) as bx:
                S = T.alloc_shared((64,), T.float16)
                T.ptx_cp_async(S[0], A[0], 16)

    with pytest.raises(CompileError, match=r"access_ptr\(offset=\.\.\.\) is not supported"):
        @T.prim_func
        def bad_offset(A: T.Tensor((64,), T.float16)):
            with T.Kernel(1, threads=128) as bx:
                T.access_ptr(A[0], "r", 8, offset=4)


def test_atomic_add_return_prev_gives_the_old_value():
    @T.prim_func
    def slots(Hist: T.Tensor((16,), T.int32), Out: T.Tensor((128,), T.int32)):
        with T.Kernel(1, threads=128) as bx:
            count = T.alloc_shared((1,), T.int32)
            tx = T.get_thread_binding()
            if tx == 0:
                count[0] = 0
            T.sync_threads()
            pos = T.atomic_add(count[0], 1, return_prev=True)
            Out[pos] = tx
            Hist[tx % 16] = T.atomic_add(Hist[(tx + 1) % 16], 2, return_prev=True)

    src = tilec.compile(slots, target="sm_90a").get_kernel_source()
    assert "int pos = tl::atomic_add(&count[0], 1);" in src, src
    assert "Out[pos] = " in src, src

    with pytest.raises(CompileError, match="return_prev=True\\) updates one element"):
        @T.prim_func
        def region(A: T.Tensor((128,), T.float32), B: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                T.atomic_add(A[0:64], B[0:64], return_prev=True)


@pytest.mark.parametrize("case", ["tf32", "int8", "transposed", "few_rows"])
def test_gemm_with_a_register_a_no_instruction_reads_goes_through_shared_memory(case):
    threads, m, n, k, trans_a = 128, 64, 64, 32, False
    a_dtype, c_dtype = T.float32, T.float32
    if case == "int8":
        a_dtype, c_dtype, k = T.int8, T.int32, 64
    if case == "transposed":
        a_dtype, trans_a = T.float16, True
    if case == "few_rows":
        a_dtype, threads = T.float16, 256
    a_shape = (k, m) if trans_a else (m, k)

    @T.prim_func
    def staged(A: T.Tensor(a_shape, a_dtype), B: T.Tensor((n, k), a_dtype), C: T.Tensor((m, n), c_dtype)):
        with T.Kernel(1, threads=threads) as bx:
            A_frag = T.alloc_fragment(a_shape, a_dtype)
            B_shared = T.alloc_shared((n, k), a_dtype)
            C_frag = T.alloc_fragment((m, n), c_dtype)
            T.copy(A, A_frag)
            T.copy(B, B_shared)
            T.clear(C_frag)
            T.gemm(A_frag, B_shared, C_frag, transpose_A=trans_a, transpose_B=True)
            T.copy(C_frag, C)

    src = tilec.compile(staged, target="sm_90a").get_kernel_source()
    assert "A_frag_stage" in src, src


def test_gemm_with_a_readable_register_a_is_not_staged():
    @T.prim_func
    def rs(A: T.Tensor((64, 32), T.float16), B: T.Tensor((64, 32), T.float16), C: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_frag = T.alloc_fragment((64, 32), T.float16)
            B_shared = T.alloc_shared((64, 32), T.float16)
            C_frag = T.alloc_fragment((64, 64), T.float32)
            T.copy(A, A_frag)
            T.copy(B, B_shared)
            T.clear(C_frag)
            T.gemm(A_frag, B_shared, C_frag, transpose_B=True)
            T.copy(C_frag, C)

    src = tilec.compile(rs, target="sm_90a").get_kernel_source()
    assert "_stage" not in src
    assert "wgmma_gemm_rs" in src, src


def test_nvcc_only_compile_flags_are_dropped_for_nvrtc():
    @T.prim_func
    def copy(A: T.Tensor((128,), T.float32), B: T.Tensor((128,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                B[i] = A[i]

    flags = ["-O3", "-Wno-deprecated-declarations", "--expt-relaxed-constexpr", "--expt-extended-lambda",
             "--ptxas-options=-v,--register-usage-level=10", "-DNDEBUG", "-U__CUDA_NO_HALF_OPERATORS__"]
    kernel = tilec.compile(copy, target="sm_90a", compile_flags=flags)
    assert "B[" in kernel.get_kernel_source()


def test_copy_of_the_first_rows_of_a_fragment():
    @T.prim_func
    def rows(A: T.Tensor((64, 64), T.float16), B: T.Tensor((64, 64), T.float16), O: T.Tensor((4, 64), T.float16),
             P: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            A_shared = T.alloc_shared((64, 64), T.float16)
            B_shared = T.alloc_shared((64, 64), T.float16)
            O_shared = T.alloc_shared((4, 64), T.float16)
            acc = T.alloc_fragment((64, 64), T.float32)
            T.copy(A, A_shared)
            T.copy(B, B_shared)
            T.clear(acc)
            T.gemm(A_shared, B_shared, acc)
            T.copy(acc[:4, :], O_shared)
            T.copy(O_shared, O)
            T.copy(O_shared[0:2, :], acc[2:4, :])  # a fragment destination too
            T.copy(acc, P)

    src = tilec.compile(rows, target="sm_90a").get_kernel_source()
    assert "O_shared[" in src, src


def test_two_dimensional_register_buffer_indexed_in_serial_loops():
    # a fragment used only outside T.Parallel becomes a per-thread array; its flattened
    # extent must fold to a constant (it was printed as `2 * 4` and refused)
    @T.prim_func
    def regs(A: T.Tensor((64,), T.int32)):
        with T.Kernel(1, threads=256) as bx:
            p = T.alloc_fragment([2, 4], T.int32)
            for r in T.serial(4):
                for s in T.unroll(2):
                    p[s, r] = A[s * 4 + r]
            for r in T.serial(4):
                A[r] = p[0, r] + p[1, r]

    src = tilec.compile(regs, target="sm_90a").get_kernel_source()
    assert "p[8]" in src, src


def test_import_source_and_call_extern():
    source = """
template <typename T1, typename T2>
__device__ void widen4(T1* src, T2* dst) {
  for (int i = 0; i < 4; ++i) dst[i] = (T2)(uint)src[i];
}
"""

    @T.prim_func
    def widen(A: T.Tensor((512,), T.uint8), B: T.Tensor((512,), T.float16)):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_local((4,), T.uint8)
            b = T.alloc_local((4,), T.float16)
            tx = T.get_thread_binding()
            T.import_source(source)
            for v in T.serial(4):
                a[v] = A[tx * 4 + v]
            T.call_extern("widen4", T.access_ptr(a, "r"), T.access_ptr(b, "w"), dtype=T.float16)
            for v in T.serial(4):
                B[tx * 4 + v] = b[v]

    kernel = tilec.compile(widen, target="sm_90a")
    src = kernel.get_kernel_source()
    assert "using uint = unsigned int;" in src and "__device__ void widen4" in src, src
    assert "widen4(&a[0], &b[0]);" in src, src
    if tilec._tilec.nvrtc_available()[0]:
        assert kernel.get_ptx()

    with pytest.raises(CompileError, match="needs the function's name first"):
        @T.prim_func
        def nameless(A: T.Tensor((4,), T.float16)):
            with T.Kernel(1, threads=32) as bx:
                T.call_extern(3, A[0])


def test_rng_init_and_rand_use_a_per_thread_philox_stream():
    @T.prim_func
    def rand(A: T.Tensor((1024,), T.uint32)):
        with T.Kernel(8, threads=1) as bx:
            tx = T.get_thread_binding()
            T.rng_init(42, 0, bx * 128 + tx * 128)
            for i, j in T.Parallel(1, 128):
                A[bx * 128 + j] = T.rng_rand()

    src = tilec.compile(rand, target="sm_90a").get_kernel_source()
    assert '#include "tilec/rng.cuh"' in src, src
    assert "tl::rng_init(&rng_state[0], " in src and "tl::rng_rand(&rng_state[0])" in src, src

    with pytest.raises(CompileError, match="needs T.rng_init"):
        @T.prim_func
        def unseeded(A: T.Tensor((32,), T.uint32)):
            with T.Kernel(1, threads=32) as bx:
                A[0] = T.rng_rand()


def test_tvm_thread_allreduce_is_a_warp_butterfly():
    @T.prim_func
    def rowsum(A: T.Tensor((4, 32), T.float32), C: T.Tensor((4,), T.float32)):
        with T.Kernel(1, threads=(32, 4)) as bx:
            acc = T.alloc_local((1,), T.float32)
            red = T.alloc_local((1,), T.float32)
            kr = T.thread_binding(0, 32, thread="threadIdx.x")
            ni = T.thread_binding(0, 4, thread="threadIdx.y")
            acc[0] = A[ni, kr]
            with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, T.float32)]), "reduce_scope",
                        T.reinterpret(T.uint64(0), dtype="handle")):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, red[0], kr, dtype="handle"))
            if kr == 0:
                C[ni] = red[0]

    src = tilec.compile(rowsum, target="sm_90a").get_kernel_source()
    for off in (16, 8, 4, 2, 1):
        assert f"red[0] = red[0] + tl::shfl_xor(red[0], {off});" in src, src


def _allreduce_over_y(BN, R, N=256, K=512):
    """upstream's GEMV with threads (BN, R): each column of R threads reduces over threadIdx.y."""

    @T.prim_func
    def g(A: T.Tensor((K,), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((N,), "float16")):
        with T.Kernel(T.ceildiv(N, BN), threads=(BN, R)) as bn:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            acc = T.alloc_local((1,), "float32")
            red = T.alloc_local((1,), "float32")
            T.clear(acc)
            for bk in T.serial(K // R):
                acc[0] += A[bk * R + tk].astype("float32") * B[bn * BN + tn, bk * R + tk].astype("float32")
            with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, "float32")]), "reduce_scope",
                        T.reinterpret(T.uint64(0), dtype="handle")):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, red[0], tk, dtype="handle"))
            C[bn * BN + tn] = red[0]

    return g


def test_tvm_thread_allreduce_over_threadidx_y():
    # 4 x 8 threads: a column's 8 threads are 4 lanes apart in one warp: shuffles by 16, 8, 4
    src = tilec.compile(_allreduce_over_y(4, 8), target="sm_90a").get_kernel_source()
    for off in (16, 8, 4):
        assert f"red[0] = red[0] + tl::shfl_xor(red[0], {off});" in src, src
    assert "shfl_xor(red[0], 2)" not in src
    # 8 x 16 threads: a column spans warps: through shared memory, one barrier, folded in order
    src = tilec.compile(_allreduce_over_y(8, 16), target="sm_90a").get_kernel_source()
    body = src[src.index("extern"):]
    assert "allreduce_buf[tx + ty * 8] = acc[0];" in body, body
    assert body.count("__syncthreads()") == 1 and "shfl" not in body
    assert "red[0] = allreduce_buf[tx];" in body and "red[0] = red[0] + allreduce_buf[allreduce_j * 8 + tx];" in body
    # an extent that is not a power of two goes through shared memory as well
    assert "allreduce_buf" in tilec.compile(_allreduce_over_y(2, 48, K=480), target="sm_80").get_kernel_source()


def test_tvm_thread_allreduce_errors():
    def make(index_of):
        @T.prim_func
        def g(A: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=(8, 8)) as bx:
                tn = T.get_thread_binding(0)
                tk = T.get_thread_binding(1)
                acc = T.alloc_local((1,), "float32")
                red = T.alloc_local((1,), "float32")
                acc[0] = A[tk * 8 + tn]
                with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, "float32")]), "reduce_scope",
                            T.reinterpret(T.uint64(0), dtype="handle")):
                    T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, red[0], *index_of(tn, tk, bx),
                                                      dtype="handle"))
                C[tk * 8 + tn] = red[0]

        return g

    with pytest.raises(CompileError, match="tilec reduces over one thread index"):
        make(lambda tn, tk, bx: (tn, tk))
    with pytest.raises(CompileError, match="the reduced index must be a thread index of the block"):
        make(lambda tn, tk, bx: (bx,))


def test_analyzer_counts_gemm_flops_and_global_bytes():
    from tilec.tools import Analyzer
    from tilec.carver.arch import CUDA

    @T.prim_func
    def gemm(A: T.Tensor((256, 256), T.float16), B: T.Tensor((256, 256), T.float16),
             C: T.Tensor((256, 256), T.float16)):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            A_s = T.alloc_shared((128, 64), T.float16)
            B_s = T.alloc_shared((64, 128), T.float16)
            C_f = T.alloc_fragment((128, 128), T.float32)
            T.clear(C_f)
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[by * 128, k * 64], A_s)
                T.copy(B[k * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * 128, bx * 128])

    r = Analyzer.analysis(gemm, CUDA("cuda"))
    assert r.total_flops == 2 * 256 * 256 * 256
    assert r.total_global_bytes == 4 * 4 * (128 * 64 * 2) * 2 + 4 * 128 * 128 * 2
    assert r.estimated_time > 0 and r.tflops > 0


def test_iket_is_accepted_and_records_nothing():
    from tilec.tools.cuda import iket

    with iket.session(output_dir=None):
        @T.prim_func
        def traced(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128) as bx, iket.range("total"):
                for i in T.Parallel(128):
                    iket.mark("store", payload=iket.payload(i, dtype="int32"))
                    A[i] = 1.0

        assert "store" in iket.event_table()
        src = tilec.compile(traced, target="sm_90a").get_kernel_source()
    assert "A[" in src and iket.trace_files() == []


def test_ptx_cp_async_between_element_widths_is_refused():
    with pytest.raises(CompileError, match="copies between elements of one width, not float32 -> float16"):
        @T.prim_func
        def widths(A: T.Tensor((64,), T.float32)):
            with T.Kernel(1, threads=32) as bx:
                S = T.alloc_shared((128,), T.float16)
                T.ptx_cp_async(T.access_ptr(S[0], "w", 8), T.access_ptr(A[0], "r", 4), 4)
