"""LayerNorm: Y = (X - mean) / sqrt(var + eps) * W + B, per row, float32 math."""
import _harness
import tilec.language as T


def layernorm(N, dtype="float16", eps=1e-5, block_M=1, threads=128):
    M = T.dynamic("M")

    @T.prim_func
    def layer_norm(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype),
                   Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            d = T.alloc_fragment((block_M, N), "float32")
            mean = T.alloc_fragment((block_M,), "float32")
            var = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.reduce_sum(x, mean, dim=1)
            for i in T.Parallel(block_M):
                mean[i] = mean[i] / N
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] - mean[i]
                d[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(d, var, dim=1)
            for i in T.Parallel(block_M):
                var[i] = T.rsqrt(var[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * var[i] * W[j] + B[j]
            T.copy(x, Y[bx * block_M, 0])

    return layer_norm


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        _harness.compile_only(layernorm(4096), out_idx=[3], show_source=args.show_source)
        return
    import torch

    for N, dtype in _harness.cases(((1024, "float16"), (4096, "bfloat16"), (768, "float32"))):
        kernel = _harness.tilec.compile(layernorm(N, dtype), target="auto")
        tdt = getattr(torch, dtype)
        for M in _harness.cases((1, 33, 512)):
            x = torch.randn(M, N, device="cuda", dtype=tdt) + 0.5
            w = torch.randn(N, device="cuda", dtype=tdt)
            b = torch.randn(N, device="cuda", dtype=tdt)
            ref = lambda x, w, b: torch.nn.functional.layer_norm(x, (N,), w, b, 1e-5)
            _harness.check(kernel, [x, w, b], [_harness.poisoned((M, N), tdt)], ref, dtype,
                           f"layernorm {M}x{N} {dtype}")


if __name__ == "__main__":
    main()
