"""FP8 GEMM with per-tensor scales: C = (A @ B^T) * scale_a * scale_b, A and B float8 (e4m3 or
e5m2), float32 accumulation, bf16 output — what torch._scaled_mm computes.

A is M x K and B is N x K (both K-major: wgmma reads fp8 operands K-major only); the scales are
one-element float32 tensors applied to the accumulator in the epilogue. On sm_90a the main
loop is warp-specialized TMA + wgmma (m64nNk32 e4m3/e5m2). sm_80 has no fp8 tensor-core MMA:
there it compiles to the FMA fallback.
Run: python examples/gemm_fp8.py            (checks against a float64 reference on an H100/H200)
     python examples/gemm_fp8.py --compile-only
"""
import _harness
import tilec.language as T


def fp8_gemm(M, N, K, block_M=128, block_N=256, block_K=128, in_dtype="float8_e4m3", out_dtype="bfloat16",
             num_stages=3, threads=256):
    @T.prim_func
    def main(A: T.Tensor((M, K), in_dtype), B: T.Tensor((N, K), in_dtype), scale_a: T.Tensor((1,), "float32"),
             scale_b: T.Tensor((1,), "float32"), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.use_swizzle(10)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = C_local[i, j] * (scale_a[0] * scale_b[0])
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


CASES = [(1024, 1024, 1024, "float8_e4m3"), (1000, 768, 512, "float8_e4m3"), (512, 1024, 2048, "float8_e5m2")]


def run_case(M, N, K, in_dtype):
    import torch

    tdt = {"float8_e4m3": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}[in_dtype]
    kernel = _harness.tilec.compile(fp8_gemm(M, N, K, in_dtype=in_dtype), target="auto")
    a = torch.randn(M, K, device="cuda").to(tdt)
    b = torch.randn(N, K, device="cuda").to(tdt)
    sa = torch.tensor([0.5], device="cuda")
    sb = torch.tensor([0.25], device="cuda")
    c = _harness.poisoned((M, N), torch.bfloat16)
    _harness.check(kernel, [a, b, sa, sb], [c], lambda a, b, sa, sb: (a @ b.T) * sa * sb, "bfloat16",
                   f"fp8 gemm {M}x{N}x{K} {in_dtype}")


def main():
    _harness.hopper_main("fp8 GEMM", lambda: fp8_gemm(1024, 1024, 1024), [4], CASES, run_case)


if __name__ == "__main__":
    main()
