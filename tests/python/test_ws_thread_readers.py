"""Warp specialization of loops whose copied tiles are also read by the consumer threads
themselves (a T.Parallel loop, a reduction), not only by wgmma: the attention
backward's LSE / Delta rows. The slot such a tile sits in is released by lane 0 of every
consumer warp after a __syncwarp (the empty barrier counts warps), and on the CPU target the
program means what it meant before."""
import re
import warnings

import numpy as np
import pytest

import tilec
import tilec.language as T

pytestmark = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")

N, K = 128, 256


def scaled_gemm(threads=256, reader="parallel", with_gemm=True):
    """C = sum over K blocks of (A_k @ B_k^T) * s_k[j % 64]: per K step the loop copies A, B and a row of scales s;
    the gemm reads A and B, the consumer threads read the scales (reader: "parallel" — a
    T.Parallel loop, "reduce" — T.reduce_sum of the scales tile (C scaled by their sum instead),
    "global" — T.copy of the scales tile to global memory). 64 rows of A per consumer warpgroup."""
    bk, M = 64, threads // 2

    @T.prim_func
    def f(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), S: T.Tensor((1, K), "float32"),
          C: T.Tensor((M, N), "float32"), Sout: T.Tensor((1, K), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            As = T.alloc_shared((M, bk), "float16")
            Bs = T.alloc_shared((N, bk), "float16")
            Ss = T.alloc_shared((1, bk), "float32")
            total = T.alloc_shared((1,), "float32")
            acc = T.alloc_fragment((M, N), "float32")
            out = T.alloc_fragment((M, N), "float32")
            T.clear(out)
            for k in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[0:M, k * bk:(k + 1) * bk], As)
                T.copy(B[0:N, k * bk:(k + 1) * bk], Bs)
                T.copy(S[0:1, k * bk:(k + 1) * bk], Ss)
                if with_gemm:
                    T.gemm(As, Bs, acc, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullRow)
                else:
                    T.clear(acc)
                if reader == "parallel":
                    for i, j in T.Parallel(M, N):
                        out[i, j] += acc[i, j] * Ss[0, j % bk]
                elif reader == "reduce":
                    T.reduce_sum(Ss, total, dim=1)
                    for i, j in T.Parallel(M, N):
                        out[i, j] += acc[i, j] * total[0]
                else:
                    T.copy(Ss, Sout[0:1, k * bk:(k + 1) * bk])
                    for i, j in T.Parallel(M, N):
                        out[i, j] += acc[i, j]
            T.copy(out, C)

    return f


def _compile(f, target="sm_90a"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tilec.compile(f, target=target)


@pytest.mark.parametrize("threads,warps", [(128, 4), (256, 8)])
@pytest.mark.parametrize("reader", ["parallel", "reduce"])
def test_a_tile_read_by_the_threads_is_released_by_every_warp(threads, warps, reader):
    k = _compile(scaled_gemm(threads, reader))
    text = k.explain(show=False)
    assert "chosen: warp-specialized" in text, text
    src = k.get_kernel_source()
    assert "tl::tma_load(&Ss[" in src  # the scales come from the producer too
    # Three groups: A/B (read by the gemm), Ss (read by the threads: one arrival per warp).
    inits = re.findall(r"mbarrier_init\(&k_empty(\d*)\[0\], (\d+)\)", src)
    counts = sorted(int(c) for _, c in inits)
    assert counts[-1] == warps and threads // 128 in counts, inits
    consumer = src[src.index("setmaxnreg_inc"):]
    release = consumer.index("__syncwarp();")
    assert re.search(r"if \(tx % 32 == 0\) \{\s*tl::mbarrier_arrive\(&k_empty", consumer[release:]), consumer[release:]
    assert k.ptxas_info["spill_stores_bytes"] == 0


def test_the_cpu_target_computes_the_same_program():
    k = _compile(scaled_gemm(256, "parallel"), target="cpu")
    M = 128
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    s = rng.standard_normal((1, K)).astype(np.float32)
    c, sout = np.full((M, N), np.nan, np.float32), np.zeros((1, K), np.float32)
    k(a, b, s, c, sout)
    want = np.zeros((M, N))
    for kk in range(K // 64):
        part = a[:, kk * 64:(kk + 1) * 64].astype(np.float64) @ b[:, kk * 64:(kk + 1) * 64].astype(np.float64).T
        want += part * s[0, kk * 64:(kk + 1) * 64][np.arange(N) % 64]
    assert np.abs(c - want).max() <= 1e-3 * np.abs(want).max()


def test_a_tile_copied_to_global_memory_is_not_left_to_the_consumers():
    text = _compile(scaled_gemm(256, "global")).explain(show=False)
    assert "not warp-specialized (TMA producer + wgmma consumers): a copied buffer is read by a copy" in text
    assert "only T.gemm and the threads' own loads read the producer's tiles" in text


def test_a_loop_without_a_gemm_reading_the_copies_is_not_warp_specialized():
    text = _compile(scaled_gemm(256, "parallel", with_gemm=False)).explain(show=False)
    assert "no T.gemm reads the copied buffers" in text


def test_a_gemm_whose_register_operand_is_staged_later_keeps_the_plain_pipeline():
    """Upstream's int4 x int8 dequantizing GEMM: the threads read a copied tile into registers,
    and the gemm's int8 register A (32 rows) goes through shared memory later
    (stage_gemm_operands); warp specialization declines it instead of failing on the gemm."""
    @T.prim_func
    def f(A: T.Tensor((32, 256), "int8"), B: T.Tensor((128, 256), "int8"), C: T.Tensor((32, 128), "int32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((32, 64), "int8")
            Bs = T.alloc_shared((128, 64), "int8")
            Af = T.alloc_fragment((32, 64), "int8")
            acc = T.alloc_fragment((32, 128), "int32")
            T.clear(acc)
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[0, k * 64], As)
                T.copy(B[0, k * 64], Bs)
                T.copy(As, Af)
                T.gemm(Af, Bs, acc, transpose_B=True)
            T.copy(acc, C)

    text = _compile(f).explain(show=False)
    assert "not warp-specialized (TMA producer + wgmma consumers): the gemm reading the copies" in text
    assert "takes a register operand no instruction reads from registers" in text
