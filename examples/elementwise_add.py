"""Elementwise add over a 1-D tensor of dynamic length: C = A + B.

The length is symbolic (T.dynamic), so one compiled kernel serves every size; partial
last blocks are guarded by bounds legalization.
"""
import _harness
import tilec.language as T


def elementwise_add(dtype="float32", block=2048, threads=256):
    n = T.dynamic("n")

    @T.prim_func
    def add(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=threads) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return add


def main():
    args = _harness.parse_args()
    func = elementwise_add()
    if args.compile_only or not _harness.have_gpu():
        _harness.compile_only(func, out_idx=[2], show_source=args.show_source)
        return
    import torch

    kernel = _harness.tilec.compile(func, target="auto")
    for n in _harness.cases((1000, 1, 2048, 1 << 20, (1 << 20) + 7, 3_000_001)):
        a = torch.randn(n, device="cuda")
        b = torch.randn(n, device="cuda")
        _harness.check(kernel, [a, b], [_harness.poisoned((n,), torch.float32)], lambda a, b: a + b,
                       "float32", f"add n={n}")


if __name__ == "__main__":
    main()
