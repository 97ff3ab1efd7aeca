"""Tile ops one at a time on the GPU against torch, float64 references, poisoned outputs."""
import pytest

torch = pytest.importorskip("torch")
import tilec  # noqa: E402
import tilec.language as T  # noqa: E402

pytestmark = pytest.mark.gpu


def poisoned(shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


def run(func, *args):
    kernel = tilec.compile(func, target="auto")
    kernel(*args)
    torch.cuda.synchronize()
    return kernel


@pytest.mark.parametrize("src_dtype,dst_dtype", [("float32", "float16"), ("float16", "float32"),
                                                 ("bfloat16", "float32"), ("float32", "bfloat16")])
def test_copy_converts_dtype_through_shared(src_dtype, dst_dtype):
    M, N, bm, bn = 200, 72, 64, 32   # partial tiles in both dims

    @T.prim_func
    def copy_convert(A: T.Tensor((M, N), src_dtype), B: T.Tensor((M, N), dst_dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            S = T.alloc_shared((bm, bn), src_dtype)
            F = T.alloc_fragment((bm, bn), dst_dtype)
            T.copy(A[by * bm, bx * bn], S)
            T.copy(S, F)
            T.copy(F, B[by * bm, bx * bn])

    a = torch.randn(M, N, device="cuda", dtype=getattr(torch, src_dtype))
    b = poisoned((M, N), getattr(torch, dst_dtype))
    run(copy_convert, a, b)
    torch.testing.assert_close(b.double(), a.to(getattr(torch, dst_dtype)).double())


def test_fill_and_parallel_store():
    M, N = 96, 40

    @T.prim_func
    def fill(B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((M, N), "float32")
            T.fill(F, 3.5)
            for i, j in T.Parallel(M, N):
                F[i, j] = F[i, j] + i * N + j
            T.copy(F, B)

    b = poisoned((M, N), torch.float32)
    run(fill, b)
    ref = 3.5 + torch.arange(M * N, device="cuda", dtype=torch.float32).reshape(M, N)
    torch.testing.assert_close(b, ref)


@pytest.mark.parametrize("op", ["sum", "max", "min", "abssum", "absmax"])
@pytest.mark.parametrize("M,N,threads", [(8, 128, 128), (3, 100, 96), (16, 64, 256)])
def test_reduce_rows(op, M, N, threads):
    @T.prim_func
    def reduce_rows(A: T.Tensor((M, N), "float32"), R: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            F = T.alloc_fragment((M, N), "float32")
            O = T.alloc_fragment((M,), "float32")
            T.copy(A, F)
            getattr(T, "reduce_" + op)(F, O, dim=1)
            T.copy(O, R)

    a = torch.randn(M, N, device="cuda")
    r = poisoned((M,), torch.float32)
    run(reduce_rows, a, r)
    ref = {"sum": a.double().sum(1), "max": a.double().amax(1), "min": a.double().amin(1),
           "abssum": a.double().abs().sum(1), "absmax": a.double().abs().amax(1)}[op]
    torch.testing.assert_close(r.double(), ref, rtol=1e-5, atol=1e-5)


def test_reduce_columns_and_accumulate():
    M, N = 64, 48

    @T.prim_func
    def reduce_cols(A: T.Tensor((M, N), "float32"), R: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((M, N), "float32")
            O = T.alloc_fragment((N,), "float32")
            T.copy(A, F)
            T.fill(O, 1.0)
            T.reduce_sum(F, O, dim=0, clear=False)   # accumulates into the existing 1.0
            T.copy(O, R)

    a = torch.randn(M, N, device="cuda")
    r = poisoned((N,), torch.float32)
    run(reduce_cols, a, r)
    torch.testing.assert_close(r.double(), a.double().sum(0) + 1.0, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_shared(reverse):
    M, N = 4, 256

    @T.prim_func
    def cumsum(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((M, N), "float32")
            T.copy(A, S)
            T.cumsum(S, dim=1, reverse=reverse)
            T.copy(S, B)

    a = torch.randn(M, N, device="cuda")
    b = poisoned((M, N), torch.float32)
    run(cumsum, a, b)
    ad = a.double()
    ref = ad.flip(1).cumsum(1).flip(1) if reverse else ad.cumsum(1)
    torch.testing.assert_close(b.double(), ref, rtol=1e-5, atol=1e-4)


def test_atomic_add_scalar_and_region():
    N, block = 4096, 256

    @T.prim_func
    def atomic(A: T.Tensor((N,), "float32"), S: T.Tensor((1,), "float32"), H: T.Tensor((block,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            F = T.alloc_fragment((block,), "float32")
            T.copy(A[bx * block], F)
            for i in T.Parallel(block):
                T.atomic_add(S[0], F[i])
            T.atomic_add(H, F)

    a = torch.randn(N, device="cuda")
    s = torch.zeros(1, device="cuda")
    h = torch.zeros(block, device="cuda")
    run(atomic, a, s, h)
    torch.testing.assert_close(s.double(), a.double().sum().reshape(1), rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(h.double(), a.double().reshape(-1, block).sum(0), rtol=1e-4, atol=1e-4)


def test_wrong_shape_is_a_clear_error():
    @T.prim_func
    def k(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                A[i] = A[i] + 1.0

    kernel = tilec.compile(k, target="auto")
    with pytest.raises(Exception, match="128"):
        kernel(torch.zeros(64, device="cuda"))


@pytest.mark.parametrize("dtype,trans_b", [("float16", False), ("bfloat16", True), ("float16", True)])
def test_gemm_chain_with_a_in_registers(dtype, trans_b):
    # C = half(A @ B) @ D: the first T.gemm's accumulator, cast to 16 bits in registers, is
    # the A operand of the second (tl::gemm_rs), over a grid of 64-row blocks.
    M, K1, N1, N2, bm = 256, 64, 64, 128, 64
    tdt = getattr(torch, dtype)
    D_shape = (N2, N1) if trans_b else (N1, N2)

    @T.prim_func
    def chain(A: T.Tensor((M, K1), dtype), B: T.Tensor((K1, N1), dtype), D: T.Tensor(D_shape, dtype),
              C: T.Tensor((M, N2), "float32")):
        with T.Kernel(M // bm, threads=128) as bx:
            A_s = T.alloc_shared((bm, K1), dtype)
            B_s = T.alloc_shared((K1, N1), dtype)
            D_s = T.alloc_shared(D_shape, dtype)
            C1 = T.alloc_fragment((bm, N1), "float32")
            P = T.alloc_fragment((bm, N1), dtype)
            C2 = T.alloc_fragment((bm, N2), "float32")
            T.copy(A[bx * bm, 0], A_s)
            T.copy(B, B_s)
            T.copy(D, D_s)
            T.gemm(A_s, B_s, C1, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(bm, N1):
                P[i, j] = T.cast(C1[i, j], dtype)
            T.gemm(P, D_s, C2, transpose_B=trans_b, clear_accum=True)
            T.copy(C2, C[bx * bm, 0])

    a = torch.randn(M, K1, device="cuda", dtype=tdt)
    b = torch.randn(K1, N1, device="cuda", dtype=tdt)
    d = torch.randn(*D_shape, device="cuda", dtype=tdt)
    c = poisoned((M, N2), torch.float32)
    kernel = run(chain, a, b, d, c)
    src = kernel.get_kernel_source()
    # mma.sync with A from registers (tl::gemm_rs), or on sm_90a wgmma's register-A form.
    assert "tl::gemm_rs<" in src or "tl::wgmma_gemm_rs<" in src, src
    p = (a.double() @ b.double()).float().to(tdt).double()   # the kernel rounds C1 to 16 bits
    ref = p @ (d.double().T if trans_b else d.double())
    torch.testing.assert_close(c.double(), ref, rtol=2e-2 if dtype == "bfloat16" else 5e-3,
                               atol=0.25 if dtype == "bfloat16" else 5e-2)


@pytest.mark.parametrize("op,ref", [("reduce_sum", lambda a, d: a.sum(d)), ("reduce_max", lambda a, d: a.amax(d)),
                                    ("reduce_absmax", lambda a, d: a.abs().amax(d))])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("clear", [True, False])
def test_reduce_of_shared_tiles(op, ref, dim, clear):
    # TileLang reduces shared buffers too (stage_shared_reductions: through fragments).
    M, N = 64, 96
    out_n = N if dim == 0 else M

    @T.prim_func
    def reduce_shared(A: T.Tensor((M, N), T.float32), R: T.Tensor((out_n,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((M, N), T.float32)
            r_s = T.alloc_shared((out_n,), T.float32)
            T.copy(A, a_s)
            if not clear:
                for i in T.Parallel(out_n):
                    r_s[i] = 0.5
            getattr(T, op)(a_s, r_s, dim=dim, clear=clear)
            T.copy(r_s, R)

    A = torch.randn(M, N, device="cuda")
    R = poisoned((out_n,), torch.float32)
    run(reduce_shared, A, R)
    want = ref(A.double(), dim)
    if not clear:
        want = want + 0.5 if op == "reduce_sum" else torch.maximum(want, torch.full_like(want, 0.5))
    torch.testing.assert_close(R.double(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gemm_with_a_register_b(dtype):
    # B computed into a fragment (upstream's KDA backward): staged through shared memory.
    @T.prim_func
    def gemm_rb(A: T.Tensor((128, 64), dtype), B: T.Tensor((64, 96), dtype), C: T.Tensor((128, 96), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((128, 64), dtype)
            b_f = T.alloc_fragment((64, 96), dtype)
            c_f = T.alloc_fragment((128, 96), T.float32)
            T.copy(A, a_s)
            for i, j in T.Parallel(64, 96):
                b_f[i, j] = B[i, j] * 0.5
            T.clear(c_f)
            T.gemm(a_s, b_f, c_f)
            T.copy(c_f, C)

    tdt = getattr(torch, dtype)
    A = torch.randn(128, 64, device="cuda").to(tdt)
    B = torch.randn(64, 96, device="cuda").to(tdt)
    C = poisoned((128, 96), torch.float32)
    run(gemm_rb, A, B, C)
    want = A.double() @ (B.double() * 0.5)
    torch.testing.assert_close(C.double(), want, rtol=2e-2, atol=2e-2)
