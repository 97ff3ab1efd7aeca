"""Inclusive prefix sum along each row: Y[i, j] = sum_{k <= j} X[i, k]."""
import _harness
import tilec.language as T


def row_cumsum(N, dtype="float32", block_M=4, threads=128):
    M = T.dynamic("M")

    @T.prim_func
    def cumsum_rows(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            s = T.alloc_shared((block_M, N), dtype)
            T.copy(X[bx * block_M, 0], s)
            T.cumsum(s, dim=1)
            T.copy(s, Y[bx * block_M, 0])

    return cumsum_rows


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        _harness.compile_only(row_cumsum(512), out_idx=[1], show_source=args.show_source)
        return
    import torch

    for N in _harness.cases((128, 512, 1000)):
        kernel = _harness.tilec.compile(row_cumsum(N), target="auto")
        for M in _harness.cases((1, 9, 256)):
            X = torch.randn(M, N, device="cuda")
            _harness.check(kernel, [X], [_harness.poisoned((M, N), torch.float32)],
                           lambda X: torch.cumsum(X, dim=1), "float32", f"cumsum {M}x{N}")


if __name__ == "__main__":
    main()
