"""The kernel examples/cpp/aot/gemm_aot.cc launches: C = relu(A @ B), float16 operands,
float32 accumulation, M symbolic (the exported launch function takes it as `m`), N and K fixed
by the factory's arguments. Exported ahead of time with the CLI:

    build/tilec compile examples/cpp/aot/gemm_relu.py::gemm_relu --target sm_90a --args "256, 128" -o DIR

which writes DIR/gemm_relu.tkc (cubin + launch plan) and DIR/gemm_relu.h (tilec_aot::gemm_relu).
"""
import tilec
import tilec.language as T


@tilec.jit(out_idx=[-1])
def gemm_relu(N=256, K=128, block_M=128, block_N=128, block_K=32, num_stages=3, threads=128):
    M = T.dynamic("m")

    @T.prim_func
    def gemm_relu(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = T.max(C_local[i, j], 0)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm_relu
