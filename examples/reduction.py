"""Row reductions: S[i] = sum_j X[i, j] and M[i] = max_j X[i, j] over a (M, N) matrix."""
import _harness
import tilec.language as T


def row_reduce(N, dtype="float32", block_M=4, threads=128):
    M = T.dynamic("M")

    @T.prim_func
    def reduce_rows(X: T.Tensor((M, N), dtype), S: T.Tensor((M,), "float32"), Mx: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            m = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.reduce_sum(x, s, dim=1)
            T.reduce_max(x, m, dim=1)
            T.copy(s, S[bx * block_M])
            T.copy(m, Mx[bx * block_M])

    return reduce_rows


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        _harness.compile_only(row_reduce(1024), out_idx=[1, 2], show_source=args.show_source)
        return
    import torch

    for N, dtype in _harness.cases(((1024, "float32"), (384, "float16"), (96, "float32"))):
        kernel = _harness.tilec.compile(row_reduce(N, dtype), target="auto")
        for M in _harness.cases((1, 7, 1000)):
            X = torch.randn(M, N, device="cuda", dtype=getattr(torch, dtype))
            outs = [_harness.poisoned((M,), torch.float32), _harness.poisoned((M,), torch.float32)]
            _harness.check(kernel, [X], outs, lambda X: [X.sum(dim=1), X.max(dim=1).values], "float32",
                           f"reduce {M}x{N} {dtype}")


if __name__ == "__main__":
    main()
