"""GEMM with a software-pipelined main loop, optional transposes and a ReLU epilogue.

C = relu?(op(A) @ op(B)), op = transpose when asked; fp16 or bf16 in, fp32 accumulation.
Run: python examples/gemm.py            (checks against torch on a GPU)
     python examples/gemm.py --compile-only
"""
import _harness
import tilec.language as T


def matmul(M, N, K, block_M=128, block_N=128, block_K=32, dtype="float16", accum_dtype="float32",
           trans_A=False, trans_B=False, relu=False, num_stages=3, threads=128):
    A_shape = (K, M) if trans_A else (M, K)
    B_shape = (N, K) if trans_B else (K, N)
    A_shared_shape = (block_K, block_M) if trans_A else (block_M, block_K)
    B_shared_shape = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def gemm(A: T.Tensor(A_shape, dtype), B: T.Tensor(B_shape, dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(A_shared_shape, dtype)
            B_shared = T.alloc_shared(B_shared_shape, dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.use_swizzle(panel_size=10)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if trans_A:
                    T.copy(A[ko * block_K, by * block_M], A_shared)
                else:
                    T.copy(A[by * block_M, ko * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, ko * block_K], B_shared)
                else:
                    T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_A=trans_A, transpose_B=trans_B)
            if relu:
                for i, j in T.Parallel(block_M, block_N):
                    C_local[i, j] = T.max(C_local[i, j], 0)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


CASES = [
    # (M, N, K, dtype, trans_A, trans_B, relu)
    (1024, 1024, 1024, "float16", False, False, False),
    (1024, 1024, 1024, "bfloat16", False, False, True),
    (512, 768, 256, "float16", False, True, False),
    (512, 768, 256, "bfloat16", True, False, False),
    (1000, 1030, 520, "float16", False, False, True),   # partial tiles in M, N and K
    (2048, 2048, 4096, "bfloat16", False, False, False),
]


def run_case(M, N, K, dtype, trans_A, trans_B, relu):
    import torch

    tdt = getattr(torch, dtype)
    func = matmul(M, N, K, dtype=dtype, trans_A=trans_A, trans_B=trans_B, relu=relu)
    kernel = _harness.tilec.compile(func, target="auto")
    a = torch.randn((K, M) if trans_A else (M, K), dtype=tdt, device="cuda")
    b = torch.randn((N, K) if trans_B else (K, N), dtype=tdt, device="cuda")
    c = _harness.poisoned((M, N), tdt)

    def reference(a, b):
        r = (a.T if trans_A else a) @ (b.T if trans_B else b)
        return torch.relu(r) if relu else r

    # fp16/bf16 outputs of a K-long dot product: tolerance grows with sqrt(K).
    _harness.check(kernel, [a, b], [c], reference, dtype,
                   f"gemm {M}x{N}x{K} {dtype} tA={trans_A} tB={trans_B} relu={relu}")


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        print("no GPU (or --compile-only): compiling the GEMM for", ", ".join(_harness.COMPILE_TARGETS))
        _harness.compile_only(matmul(1024, 1024, 1024, relu=True), out_idx=[2], show_source=args.show_source)
        return
    for case in _harness.cases(CASES):
        run_case(*case)


if __name__ == "__main__":
    main()
