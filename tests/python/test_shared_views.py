"""T.view / T.reshape of shared memory: a buffer of its own over the same bytes (TileLang's
`T.view(KV_shared, shape=[BS // 2, D], dtype=T.float32)`: a bf16 tile reused as float32 staging).
The view has its own layout; plan_shared_memory puts it at its storage's offset, so barriers see
the two alias. No NVRTC needed."""
import re

import pytest

import tilec
import tilec.language as T


def _staging(view_dtype="float32", rows=16, scope="shared.dyn", dtype="bfloat16"):
    @T.prim_func
    def k(A: T.Tensor((32, 64), dtype), B: T.Tensor((32, 64), dtype), C: T.Tensor((16, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((32, 64), dtype, scope=scope)
            T.copy(A, S)
            T.copy(S, B)
            V = T.view(S, shape=[rows, 64], dtype=view_dtype)
            for i, j in T.Parallel(16, 64):
                V[i, j] = T.float32(i + j)
            T.copy(V, C)

    return k


def _offset(src, name):
    m = re.search(r"\* " + name + r" = reinterpret_cast<\w+\*>\(tilec_smem \+ (\d+)\);", src)
    assert m, src
    return int(m.group(1))


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_a_float32_view_of_a_bfloat16_tile_shares_its_bytes(target):
    src = tilec.compile(_staging(), target=target).get_kernel_source()
    assert "float* V = reinterpret_cast<float*>" in src, src
    assert _offset(src, "V") == _offset(src, "S"), src
    # S is read (copied to B) by other threads before V overwrites its bytes.
    body = src[src.index("nv_bfloat16* S"):]
    first_v_write = body.index("V[")
    assert "__syncthreads()" in body[:first_v_write], src


def test_reshape_of_a_shared_tile():
    @T.prim_func
    def k(A: T.Tensor((32, 64), "float16"), B: T.Tensor((64, 32), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((32, 64), "float16")
            T.copy(A, S)
            R = T.reshape(S, (64, 32))
            T.copy(R, B)

    src = tilec.compile(k, target="sm_80").get_kernel_source()
    assert _offset(src, "R") == _offset(src, "S"), src


def test_the_view_prints_and_parses_back():
    f = _staging()
    text = f.script()
    assert 'V = T.view(S, (16, 64), "float32")' in text, text
    g = tilec.from_script(text)
    assert g.script() == text


def _error(make):
    with pytest.raises(tilec.CompileError) as info:
        tilec.compile(make(), target="sm_90a")
    return str(info.value)


def test_a_view_must_cover_the_bytes_exactly():
    msg = _error(lambda: _staging(rows=8))
    assert "T.view of 'S' (4096 bytes) as 512 float32 elements (2048 bytes)" in msg, msg


def test_static_shared_memory_is_not_viewed():
    msg = _error(lambda: _staging(scope="shared"))
    assert 'views of static shared memory (scope="shared") are not supported' in msg, msg


def test_registers_are_not_reinterpreted():
    def make():
        @T.prim_func
        def k(C: T.Tensor((16, 64), "float32")):
            with T.Kernel(1, threads=128) as bx:
                F = T.alloc_fragment((32, 64), "bfloat16")
                T.clear(F)
                V = T.view(F, shape=[16, 64], dtype="float32")
                T.copy(V, C)
        return k

    msg = _error(make)
    assert "T.view of 'F' (local.fragment, bfloat16) as float32: tilec reinterprets shared memory only" in msg, msg


def test_a_view_of_a_buffer_the_pipeline_multi_buffers_is_refused():
    @T.prim_func
    def k(A: T.Tensor((256, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            V = T.view(S, shape=[32, 64], dtype="float32")
            T.clear(acc)
            for ko in T.Pipelined(4, num_stages=2):
                T.copy(A[ko * 64, 0], S)
                T.gemm(S, S, acc)
            for i, j in T.Parallel(32, 64):
                V[i, j] = acc[i, j]
            T.copy(V, C[0:32, :])

    with pytest.raises(tilec.CompileError) as info:
        tilec.compile(k, target="sm_80")
    assert "views shared buffer 'S', which T.Pipelined keeps one copy of per stage" in str(info.value)


def test_the_cpu_target_does_not_reinterpret():
    np = pytest.importorskip("numpy")
    kernel = tilec.compile(_staging(dtype="float16"), target="cpu")
    with pytest.raises(tilec.CompileError) as info:
        kernel(np.zeros((32, 64), np.float16), np.zeros((32, 64), np.float16), np.zeros((16, 64), np.float32))
    assert "T.view of shared memory as another dtype" in str(info.value)
