"""T.gemm_sp (2:4 structured-sparse A, TileLang's torch_compress format): the CUDA lowering
(pass lower_sparse_gemm: dense A rebuilt in shared memory by a T.Parallel loop, then a T.gemm)
compiles for sm_90a and sm_80; the CPU target rebuilds A at the tile level and agrees with a
numpy reference; unsupported forms and bad shapes are CompileErrors that say why.

The GPU check against torch is tests/gpu/test_gemm_sp_gpu.py."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilec
import tilec.language as T
from tilec.errors import CompileError

needs_nvrtc = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
E_BITS = {"int8": 8, "int16": 16, "int32": 32}


def e_factor(e_dtype):
    return E_BITS[e_dtype]  # (bits / 4) groups of 4 dense elements per metadata element


def gemm_sp_program(M, N, K, block_M, block_N, block_K, dtype="float16", e_dtype="int16", accum="float32",
                    num_stages=2, threads=128, transpose_B=False, **gemm_sp_kwargs):
    ef = e_factor(e_dtype) if e_dtype in E_BITS else 16
    b_shape = (N, K) if transpose_B else (K, N)
    b_tile = (block_N, block_K) if transpose_B else (block_K, block_N)

    @T.prim_func
    def gemm_sp_kernel(A_sparse: T.Tensor((M, K // 2), dtype), E: T.Tensor((M, K // ef), e_dtype),
                       B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), accum)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K // 2), dtype)
            E_shared = T.alloc_shared((block_M, block_K // ef), e_dtype)
            B_shared = T.alloc_shared(b_tile, dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A_sparse[by * block_M, k * block_K // 2], A_shared)
                T.copy(E[by * block_M, k * block_K // ef], E_shared)
                if transpose_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm_sp(A_shared, E_shared, B_shared, C_local, transpose_B=transpose_B, **gemm_sp_kwargs)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm_sp_kernel


# ---- a numpy reference of the format (TileLang's torch_compress) ----

def random_2to4(rng, M, K, dtype=np.float16):
    """Dense (M, K) with exactly 2 non-zeros in every group of 4 along K (some groups fewer)."""
    a = rng.standard_normal((M, K)).astype(np.float32)
    groups = a.reshape(M, K // 4, 4)
    order = rng.random((M, K // 4, 4)).argsort(-1)
    np.put_along_axis(groups, order[..., :2], 0.0, -1)  # drop 2 of 4 at random places
    groups[0, 0, :] = 0.0  # an empty group
    groups[1, 0, :] = 0.0
    groups[1, 0, 3] = 1.5  # a group with one value, at the end
    return groups.reshape(M, K).astype(dtype)


def compress_2to4(dense, e_dtype):
    """(A_sparse (M, K/2), E (M, K/e)): the positions idx0 < idx1 of each group's kept values as
    idx0 | idx1 << 2, (bits / 4) groups per metadata element, little-endian. Where a group has
    fewer than 2 non-zeros, the kept zeros may sit elsewhere than torch_compress puts them (every
    choice decodes to the same dense A)."""
    M, K = dense.shape
    groups = dense.reshape(M, K // 4, 4)
    nz = groups != 0
    idx = np.zeros((M, K // 4, 2), np.int64)
    for m in range(M):
        for g in range(K // 4):
            pos = [int(i) for i in np.flatnonzero(nz[m, g])]
            assert len(pos) <= 2
            if not pos:
                pos = [0, 1]
            elif len(pos) == 1:
                pos = [0, 1] if pos[0] == 0 else [0, pos[0]]  # pad with a zero ahead of the value
            idx[m, g] = pos
    sparse = np.take_along_axis(groups, idx, -1).reshape(M, K // 2)
    nibbles = idx[..., 0] | (idx[..., 1] << 2)
    per = E_BITS[e_dtype] // 4
    words = np.zeros((M, K // 4 // per), np.int64)
    for i in range(per):
        words |= nibbles[:, i::per] << (4 * i)
    return sparse, words.astype(np.uint64).astype(getattr(np, "u" + e_dtype)).view(e_dtype)


def test_reference_compressor_round_trips():
    rng = np.random.default_rng(0)
    dense = random_2to4(rng, 8, 64)
    for e_dtype in E_BITS:
        sparse, e = compress_2to4(dense, e_dtype)
        per = E_BITS[e_dtype] // 4
        rebuilt = np.zeros_like(dense)
        for m in range(8):
            for g in range(16):
                bits = (int(e[m, g // per]) >> (4 * (g % per))) & 15
                rebuilt[m, 4 * g + (bits >> 2)] = sparse[m, 2 * g + 1]
                rebuilt[m, 4 * g + (bits & 3)] = sparse[m, 2 * g]
        np.testing.assert_array_equal(rebuilt, dense)


# ---- CPU target: numbers ----

@pytest.mark.parametrize("e_dtype", ["int8", "int16", "int32"])
def test_cpu_target_matches_numpy(e_dtype):
    M, N, K = 64, 32, 128
    rng = np.random.default_rng(1)
    dense = random_2to4(rng, M, K)
    sparse, e = compress_2to4(dense, e_dtype)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    kernel = tilec.compile(gemm_sp_program(M, N, K, 32, 32, 64, e_dtype=e_dtype), target="cpu")
    kernel(sparse, e, b, c)
    np.testing.assert_allclose(c, dense.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)


def test_cpu_target_transpose_b():
    M, N, K = 32, 32, 64
    rng = np.random.default_rng(2)
    dense = random_2to4(rng, M, K)
    sparse, e = compress_2to4(dense, "int16")
    bt = rng.standard_normal((N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    tilec.compile(gemm_sp_program(M, N, K, 32, 32, 32, transpose_B=True), target="cpu")(sparse, e, bt, c)
    np.testing.assert_allclose(c, dense.astype(np.float64) @ bt.astype(np.float64).T, rtol=1e-3, atol=1e-3)


# ---- CUDA: generated code ----

@needs_nvrtc
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_example_shape_compiles(target):
    # upstream's example_gemm_sp.py defaults: 128x128x64 tiles, 2 stages, 128 threads, int16 E.
    src = tilec.compile(gemm_sp_program(1024, 1024, 1024, 128, 128, 64), target=target).get_kernel_source()
    assert "A_shared_dense" in src, src
    assert "& 15" in src or "&15" in src, src  # the group's 4 metadata bits
    assert ("wgmma" in src) if target == "sm_90a" else ("tl::gemm_ss" in src), src
    # A barrier between the decompression writes and the gemm's reads.
    writes = src.index("A_shared_dense[")
    gemm = src.index("wgmma" if target == "sm_90a" else "tl::gemm_ss", writes)
    assert "__syncthreads()" in src[writes:gemm], src[writes:gemm]
    # And one at the top of each pipelined iteration, after the last one's gemm read A_dense.
    top = src.index("tl::cp_async_wait", src.index("for (int k_1"))
    assert "__syncthreads()" in src[top:writes], src[top:writes]


@needs_nvrtc
@pytest.mark.parametrize("dtype,e_dtype,accum", [("bfloat16", "int32", "float32"), ("int8", "int32", "int32"),
                                                 ("float8_e4m3", "int16", "float32"), ("float16", "int8", "float16")])
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_other_dtypes_compile(dtype, e_dtype, accum, target):
    prog = gemm_sp_program(256, 256, 256, 128, 128, 64, dtype=dtype, e_dtype=e_dtype, accum=accum,
                           transpose_B=dtype in ("int8", "float8_e4m3"))
    src = tilec.compile(prog, target=target).get_kernel_source()
    assert "A_shared_dense" in src


DUMP_PROGRAM = textwrap.dedent('''
    import sys
    sys.path.insert(0, {tests!r})
    import tilec
    from test_gemm_sp import gemm_sp_program
    tilec.compile(gemm_sp_program(256, 256, 256, 128, 128, 64), target="sm_90a")
''')


@needs_nvrtc
def test_pass_diff_shows_the_loop_and_a_dense_gemm(tmp_path):
    # What lower_sparse_gemm changes, as TILEC_DUMP_IR=diff prints it.
    script = tmp_path / "prog.py"
    script.write_text(DUMP_PROGRAM.format(tests=os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), TILEC_DUMP_IR="diff,lower_sparse_gemm",
               TILEC_DISABLE_CACHE="1")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    removed = [line for line in r.stderr.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in r.stderr.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert any("T.gemm_sp(" in line for line in removed), r.stderr
    assert not any("gemm_sp(" in line for line in added), r.stderr
    assert any("T.Parallel" in line for line in added), r.stderr
    assert any("A_shared_dense[" in line and "tl.shift_right" in line or "A_shared_dense[" in line
               for line in added), r.stderr
    assert any("T.gemm(A_shared_dense" in line for line in added), r.stderr


# ---- errors ----

def _error(prog_fn, target="sm_90a"):
    with pytest.raises(CompileError) as info:
        tilec.compile(prog_fn(), target=target)
    return str(info.value)


def test_float32_is_refused():
    def prog():
        @T.prim_func
        def f(A: T.Tensor((64, 32), T.float32), E: T.Tensor((64, 4), T.int16), B: T.Tensor((64, 64), T.float32),
              C: T.Tensor((64, 64), T.float32)):
            with T.Kernel(1, threads=128):
                a = T.alloc_shared((64, 32), T.float32)
                e = T.alloc_shared((64, 4), T.int16)
                b = T.alloc_shared((64, 64), T.float32)
                c = T.alloc_fragment((64, 64), T.float32)
                T.gemm_sp(a, e, b, c)
        return f
    msg = _error(prog)
    assert "float32 A (1:2 sparsity) is not supported" in msg, msg


@pytest.mark.parametrize("keyword", ["transpose_A", "transpose_E"])
def test_transposed_a_or_e_is_refused(keyword):
    msg = _error(lambda: gemm_sp_program(128, 128, 128, 64, 64, 64, **{keyword: True}))
    assert f"T.gemm_sp: {keyword}=True is not supported" in msg, msg


def _bad_shape_program(a_cols=32, e_cols=4, e_dtype="int16", b_rows=64, a_scope="shared"):
    def prog():
        @T.prim_func
        def f(C: T.Tensor((64, 64), T.float32)):
            with T.Kernel(1, threads=128):
                a = T.alloc_shared((64, a_cols), T.float16) if a_scope == "shared" else \
                    T.alloc_fragment((64, a_cols), T.float16)
                e = T.alloc_shared((64, e_cols), e_dtype)
                b = T.alloc_shared((b_rows, 64), T.float16)
                c = T.alloc_fragment((64, 64), T.float32)
                T.gemm_sp(a, e, b, c)
                T.copy(c, C)
        return f
    return prog


@pytest.mark.parametrize("kwargs,words", [
    ({"a_cols": 64}, "A_sparse 'a' has K/2 = 64 columns but B 'b' has K = 64 (expected 32 columns)"),
    ({"e_cols": 8}, "E 'e' has 8 columns but K = 64 needs 4"),
    ({"e_cols": 4, "e_dtype": "int32"}, "E 'e' has 4 columns but K = 64 needs 2"),
    ({"e_dtype": "float16"}, "the metadata E 'e' has dtype float16, not an 8, 16 or 32-bit integer"),
    ({"b_rows": 40, "a_cols": 20, "e_cols": 2}, "K = 40, not a multiple of 16"),
    ({"a_scope": "fragment"}, "T.gemm_sp reads A_sparse and E from shared memory; 'a' is not shared"),
])
@pytest.mark.parametrize("target", ["sm_90a", "cpu"])
def test_shape_errors(kwargs, words, target):
    msg = _error(_bad_shape_program(**kwargs), target=target)
    assert words in msg, msg
    assert re.search(r"test_gemm_sp\.py:\d+", msg), msg  # at the user's line


# ---- what upstream's sparse_utils.compress kernel needs of the front end ----

def test_slice_bound_through_a_let_and_mixed_integer_select():
    # `k_base = bk * K; T.copy(dense[.., bk * K + t * n : k_base + (t + 1) * n], local)`: the
    # extent folds to n through the let; `T.if_then_else(c, i, nz_idx[j])` with an int32 i and
    # a uint8 buffer takes TVM's integer promotion (int32) instead of failing.
    @T.prim_func
    def f(A: T.Tensor((1, 64), T.float32), B: T.Tensor((1, 64), T.float32), P: T.Tensor((2, 4), T.int32)):
        with T.Kernel(2, threads=32) as bx:
            chunk = T.alloc_local((8,), T.float32)
            last = T.alloc_local((1,), T.uint8)
            k_base = bx * 32
            for t in T.serial(4):
                T.copy(A[0, bx * 32 + t * 8:k_base + (t + 1) * 8], chunk)
                last[0] = 0
                for i in T.unroll(8):
                    last[0] = T.if_then_else(chunk[i] > 0, i, last[0])
                    B[0, k_base + t * 8 + i] = chunk[i] * 2.0
                P[bx, t] = last[0]

    a = np.random.default_rng(3).standard_normal((1, 64)).astype(np.float32)
    b = np.zeros((1, 64), np.float32)
    p = np.zeros((2, 4), np.int32)
    tilec.compile(f, target="cpu")(a, b, p)
    np.testing.assert_array_equal(b, a * 2)
    want = [[max([i for i in range(8) if a[0, 32 * x + 8 * t + i] > 0], default=0) for t in range(4)] for x in range(2)]
    np.testing.assert_array_equal(p, want)
