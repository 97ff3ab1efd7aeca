"""Warp specialization written by hand (TileLang's T.ws, seeds/000 section 3.3): warp group 0
loads tiles with TMA, warp group 1 multiplies them with wgmma; two mbarriers hand each tile
over (data_is_ready: the producer's TMA landed; compute_is_done: the consumer is done with it).
sm_90a only. tilec does this by itself for plain T.Pipelined GEMMs; this is the manual form.
Run: python examples/warp_specialized_gemm.py            (checks against torch on an H100/H200)
     python examples/warp_specialized_gemm.py --compile-only
"""
import _harness
import tilec.language as T


def ws_gemm(M, N, K, block_M=128, block_N=128, block_K=64, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            data_is_ready = T.alloc_barrier(arrive_count=128)
            compute_is_done = T.alloc_barrier(arrive_count=128)

            with T.ws(1):
                T.clear(C_local)

            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=0):
                with T.ws(0):
                    T.barrier_wait(compute_is_done, (ko + 1) % 2)
                    T.tma_copy(A[by * block_M, ko * block_K], A_shared, barrier=data_is_ready)
                    T.tma_copy(B[ko * block_K, bx * block_N], B_shared, barrier=data_is_ready)
                    T.barrier_arrive(data_is_ready)
                with T.ws(1):
                    T.barrier_wait(data_is_ready, ko % 2)
                    T.gemm(A_shared, B_shared, C_local)
                    T.barrier_arrive(compute_is_done)

            with T.ws(1):
                T.copy(C_local, C[by * block_M, bx * block_N])

    return main


CASES = [(1024, 1024, 1024, "float16"), (512, 768, 256, "bfloat16"), (1000, 1032, 520, "float16")]


def run_case(M, N, K, dtype):
    import torch

    tdt = getattr(torch, dtype)
    kernel = _harness.tilec.compile(ws_gemm(M, N, K, dtype=dtype), target="auto")
    a = torch.randn(M, K, dtype=tdt, device="cuda")
    b = torch.randn(K, N, dtype=tdt, device="cuda")
    c = _harness.poisoned((M, N), tdt)
    _harness.check(kernel, [a, b], [c], lambda a, b: a @ b, dtype, f"warp-specialized gemm {M}x{N}x{K} {dtype}")


def main():
    _harness.hopper_main("warp-specialized GEMM", lambda: ws_gemm(1024, 1024, 1024), [2], CASES, run_case)


if __name__ == "__main__":
    main()
