"""GEMV: y = A @ x with A (N, K), float32 accumulation.

Each block owns `block_N` rows; threads multiply a (block_N, block_K) tile into a register
fragment and T.reduce_sum folds it along K, accumulating over K tiles (clear=False).
"""
import _harness
import tilec.language as T


def gemv(N, K, dtype="float16", block_N=8, block_K=256, threads=256):
    @T.prim_func
    def gemv_kernel(A: T.Tensor((N, K), dtype), x: T.Tensor((K,), dtype), y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bx:
            prod = T.alloc_fragment((block_N, block_K), "float32")
            acc = T.alloc_fragment((block_N,), "float32")
            T.clear(acc)
            for ko in T.serial(T.ceildiv(K, block_K)):
                for i, k in T.Parallel(block_N, block_K):
                    prod[i, k] = T.cast(A[bx * block_N + i, ko * block_K + k], "float32") * \
                        T.cast(x[ko * block_K + k], "float32")
                T.reduce_sum(prod, acc, dim=1, clear=False)
            T.copy(acc, y[bx * block_N])

    return gemv_kernel


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        _harness.compile_only(gemv(4096, 4096), out_idx=[2], show_source=args.show_source)
        return
    import torch

    for N, K, dtype in _harness.cases(((4096, 4096, "float16"), (1000, 1500, "bfloat16"), (777, 256, "float32"))):
        kernel = _harness.tilec.compile(gemv(N, K, dtype), target="auto")
        tdt = getattr(torch, dtype)
        A = torch.randn(N, K, device="cuda", dtype=tdt)
        x = torch.randn(K, device="cuda", dtype=tdt)
        _harness.check(kernel, [A, x], [_harness.poisoned((N,), tdt)], lambda A, x: A @ x, dtype,
                       f"gemv {N}x{K} {dtype}")


if __name__ == "__main__":
    main()
