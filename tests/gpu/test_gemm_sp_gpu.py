"""T.gemm_sp on the GPU against torch: a random 2:4 sparse A, compressed here in torch to
TileLang's torch_compress format (the kept values of every group of 4 along K, in order; the
positions idx0 | idx1 << 2 as 4 bits per group, bits / 4 groups per metadata element,
little-endian), multiplied by the kernel and compared with A_dense @ B.

tilec runs gemm_sp as a dense gemm on A rebuilt in shared memory (lower_sparse_gemm); this
checks the numbers, not the speed."""
import pytest

torch = pytest.importorskip("torch")
import tilec  # noqa: E402
import tilec.language as T  # noqa: E402

pytestmark = pytest.mark.gpu

E_BITS = {"int8": 8, "int16": 16, "int32": 32}


def random_2to4(M, K, dtype, device="cuda"):
    a = torch.randn(M, K, device=device).view(M, K // 4, 4)
    drop = torch.rand(M, K // 4, 4, device=device).argsort(-1)[..., :2]
    a.scatter_(-1, drop, 0.0)
    a[0, 0, :] = 0.0  # an empty group
    a[1, 0, :3] = 0.0  # a group with one value, at the end
    return a.view(M, K).to(dtype)


def compress_2to4(dense, e_dtype):
    """Bit for bit torch_compress's output where every group has 2 non-zeros (checked on the CPU
    against upstream's sparse_utils); in a group with fewer, the zeros it keeps may sit elsewhere
    (every choice decodes to the same dense A)."""
    M, K = dense.shape
    groups = dense.view(M, K // 4, 4)
    pos = torch.arange(4, device=dense.device)
    # The non-zeros first (lowest position first), then zeros to make two.
    key = (groups != 0).to(torch.float32) * 8 - pos
    idx = key.topk(2, dim=-1).indices.sort(dim=-1).values
    sparse = groups.gather(-1, idx).reshape(M, K // 2)
    nibbles = idx[..., 0] | (idx[..., 1] << 2)
    bits = E_BITS[e_dtype]
    per = bits // 4
    nib = nibbles.view(M, K // 4 // per, per)
    word = torch.zeros(M, K // 4 // per, dtype=torch.int64, device=dense.device)
    for i in range(per):
        word |= nib[..., i] << (4 * i)
    word = ((word + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))  # two's complement
    return sparse.contiguous(), word.to(getattr(torch, e_dtype)).contiguous()


def gemm_sp_kernel(M, N, K, block_M, block_N, block_K, num_stages, threads, dtype, e_dtype, accum="float32"):
    ef = E_BITS[e_dtype]

    @T.prim_func
    def gemm_sp_fp16(A_sparse: T.Tensor((M, K // 2), dtype), E: T.Tensor((M, K // ef), e_dtype),
                     B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), accum)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K // 2), dtype)
            E_shared = T.alloc_shared((block_M, block_K // ef), e_dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), accum)
            C_local = T.alloc_fragment((block_M, block_N), accum)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A_sparse[by * block_M, k * block_K // 2], A_shared)
                T.copy(E[by * block_M, k * block_K // ef], E_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm_sp(A_shared, E_shared, B_shared, C_local, transpose_A=False, transpose_E=False,
                          transpose_B=False, policy=T.GemmWarpPolicy.Square)
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return tilec.compile(gemm_sp_fp16, out_idx=[-1], target="auto")


def test_reference_compressor_round_trips():
    dense = random_2to4(64, 128, torch.float16)
    for e_dtype in E_BITS:
        sparse, e = compress_2to4(dense, e_dtype)
        per = E_BITS[e_dtype] // 4
        g = torch.arange(128 // 4, device="cuda")
        nib = (e.to(torch.int64)[:, g // per] >> (4 * (g % per))) & 15
        rebuilt = torch.zeros_like(dense).view(64, 32, 4)
        rebuilt.scatter_(-1, (nib >> 2).unsqueeze(-1), sparse.view(64, 32, 2)[..., 1:])
        rebuilt.scatter_(-1, (nib & 3).unsqueeze(-1), sparse.view(64, 32, 2)[..., :1])
        torch.testing.assert_close(rebuilt.view(64, 128), dense, rtol=0, atol=0)


@pytest.mark.parametrize("e_dtype", ["int16", "int32", "int8"])
def test_gemm_sp_fp16_matches_dense(e_dtype):
    M = N = K = 512
    torch.manual_seed(0)
    a = random_2to4(M, K, torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    a_sparse, e = compress_2to4(a, e_dtype)
    kernel = gemm_sp_kernel(M, N, K, 128, 128, 64, 2, 128, "float16", e_dtype)
    c = kernel(a_sparse, e, b)
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    assert not c.isnan().any()
    torch.testing.assert_close(c, ref, rtol=1e-2, atol=1e-2)


def test_gemm_sp_bf16_matches_dense():
    M = N = K = 256
    torch.manual_seed(1)
    a = random_2to4(M, K, torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    a_sparse, e = compress_2to4(a, "int16")
    c = gemm_sp_kernel(M, N, K, 128, 128, 64, 3, 256, "bfloat16", "int16")(a_sparse, e, b)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=2e-2, atol=2e-2)
