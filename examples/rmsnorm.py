"""RMSNorm: Y = X / sqrt(mean(X^2) + eps) * W, per row, float32 math."""
import _harness
import tilec.language as T


def rmsnorm(N, dtype="float16", eps=1e-6, block_M=1, threads=128):
    M = T.dynamic("M")

    @T.prim_func
    def rms_norm(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            sq = T.alloc_fragment((block_M, N), "float32")
            ss = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            for i, j in T.Parallel(block_M, N):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, ss, dim=1)
            for i in T.Parallel(block_M):
                ss[i] = T.rsqrt(ss[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * ss[i] * W[j]
            T.copy(x, Y[bx * block_M, 0])

    return rms_norm


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        _harness.compile_only(rmsnorm(4096), out_idx=[2], show_source=args.show_source)
        return
    import torch

    for N, dtype in _harness.cases(((1024, "float16"), (4096, "bfloat16"), (2048, "float32"))):
        kernel = _harness.tilec.compile(rmsnorm(N, dtype), target="auto")
        tdt = getattr(torch, dtype)
        for M in _harness.cases((1, 33, 512)):
            x = torch.randn(M, N, device="cuda", dtype=tdt)
            w = torch.randn(N, device="cuda", dtype=tdt)
            ref = lambda x, w: x * torch.rsqrt((x * x).mean(dim=1, keepdim=True) + 1e-6) * w
            _harness.check(kernel, [x, w], [_harness.poisoned((M, N), tdt)], ref, dtype,
                           f"rmsnorm {M}x{N} {dtype}")


if __name__ == "__main__":
    main()
