"""Stream-K GEMM: C (float32) += A @ B, the (tile, k-step) iterations split evenly over a fixed
number of blocks, so that no block idles in a last partial wave. Each block walks its share with
a `while` loop: one T.Pipelined main loop per piece of a tile, the piece's partial sum added into
C with atomics. C must start at zero.

Run: python examples/gemm_streamk.py            (checks against torch on a GPU)
     python examples/gemm_streamk.py --compile-only
"""
import _harness
import tilec.language as T


def streamk_gemm(M, N, K, blocks, block_M=128, block_N=128, block_K=32, dtype="float16", num_stages=3,
                 threads=128):
    iters_per_tile = T.ceildiv(K, block_K)
    tiles_n = T.ceildiv(N, block_N)
    total_iters = T.ceildiv(M, block_M) * tiles_n * iters_per_tile
    per_block = T.ceildiv(total_iters, blocks)

    @T.prim_func
    def gemm_streamk(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(blocks, threads=threads) as pid:
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            it = T.alloc_var(T.int32)
            piece_end = T.alloc_var(T.int32)
            it = pid * per_block
            last = T.min((pid + 1) * per_block, total_iters)
            while it < last:
                piece_end = T.min(it - it % iters_per_tile + iters_per_tile, last)
                tile = it // iters_per_tile
                k0 = it % iters_per_tile
                tm = tile // tiles_n
                tn = tile % tiles_n
                T.clear(C_local)
                for k in T.Pipelined(piece_end - it, num_stages=num_stages):
                    T.copy(A[tm * block_M, (k0 + k) * block_K], A_shared)
                    T.copy(B[(k0 + k) * block_K, tn * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
                for i, j in T.Parallel(block_M, block_N):
                    T.atomic_add(C[tm * block_M + i, tn * block_N + j], C_local[i, j])
                it = piece_end

    return gemm_streamk


CASES = [
    # (M, N, K, blocks)
    (1024, 1024, 1024, 132),
    (512, 768, 4096, 132),     # few tiles, long K: the tiles' k-steps are split over blocks
    (1000, 1032, 520, 100),    # partial tiles in M, N and K
    (256, 256, 256, 7),        # more pieces than blocks
]


def run_case(M, N, K, blocks):
    import torch

    kernel = _harness.tilec.compile(streamk_gemm(M, N, K, blocks), target="auto")
    a = torch.randn((M, K), dtype=torch.float16, device="cuda")
    b = torch.randn((K, N), dtype=torch.float16, device="cuda")
    c = torch.zeros((M, N), dtype=torch.float32, device="cuda")  # the pieces are added into C
    # float32 sums of float16 products, in another order than the float64 reference: float16 bounds
    _harness.check(kernel, [a, b], [c], lambda a, b: a @ b, "float16", f"stream-K gemm {M}x{N}x{K} on {blocks} blocks")


def main():
    args = _harness.parse_args()
    if args.compile_only or not _harness.have_gpu():
        print("no GPU (or --compile-only): compiling the stream-K GEMM for", ", ".join(_harness.COMPILE_TARGETS))
        _harness.compile_only(streamk_gemm(1024, 1024, 1024, 132), out_idx=[], show_source=args.show_source)
        return
    _harness.run_cases(CASES, run_case)


if __name__ == "__main__":
    main()
