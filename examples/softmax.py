"""Row softmax: Y[i, :] = exp(X[i, :] - max) / sum(exp(X[i, :] - max)), float32 math.

One block handles `block_M` rows; each row lives in a register fragment, reduced with
T.reduce_max / T.reduce_sum (warp shuffles, then shared memory across warps).
"""
import _harness
import tilec.language as T


def softmax(N, dtype="float16", block_M=1, threads=128):
    M = T.dynamic("M")

    @T.prim_func
    def row_softmax(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            row_max = T.alloc_fragment((block_M,), "float32")
            row_sum = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp(x[i, j] - row_max[i])
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_M, 0])

    return row_softmax


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        _harness.compile_only(softmax(4096), out_idx=[1], show_source=args.show_source)
        return
    import torch

    for N, dtype in _harness.cases(((1024, "float16"), (4096, "float16"), (4096, "bfloat16"), (2048, "float32"))):
        kernel = _harness.tilec.compile(softmax(N, dtype), target="auto")
        tdt = getattr(torch, dtype)
        for M in _harness.cases((1, 37, 1024)):
            x = torch.randn(M, N, device="cuda", dtype=tdt) * 4
            _harness.check(kernel, [x], [_harness.poisoned((M, N), tdt)], lambda x: torch.softmax(x, dim=1),
                           dtype, f"softmax {M}x{N} {dtype}")


if __name__ == "__main__":
    main()
