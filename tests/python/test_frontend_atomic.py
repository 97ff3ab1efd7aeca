"""T.atomic_add on one element with a scalar value is a plain atomic call (as in TileLang),
so it works inside T.Parallel; on regions it stays a tile op."""
import tilec
import tilec.language as T


def _kernel():
    N, block = 4096, 256

    @T.prim_func
    def atomic(A: T.Tensor((N,), "float32"), S: T.Tensor((1,), "float32"), H: T.Tensor((block,), "float32")):
        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:
            F = T.alloc_fragment((block,), "float32")
            T.copy(A[bx * block], F)
            for i in T.Parallel(block):
                T.atomic_add(S[0], F[i])
            T.atomic_add(H, F)

    return atomic


def test_scalar_atomic_is_a_call_and_region_atomic_a_tile_op():
    text = _kernel().script()
    assert 'T.call_intrin("void", "tl.atomic_add"' in text or "tl.atomic_add" in text
    assert "T.atomic_add(H, F)" in text


def test_scalar_atomic_in_parallel_compiles():
    kernel = tilec.compile(_kernel(), target="sm_90a")
    src = kernel.get_kernel_source()
    assert "tl::atomic_add(&S[0]" in src, src


def test_atomic_add_of_a_tile_into_an_element_address_takes_the_tile_extents():
    @T.prim_func
    def splitk(C: T.Tensor((256, 256), T.float32)):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            C_local = T.alloc_fragment((128, 128), T.float32)
            T.clear(C_local)
            T.atomic_add(C[by * 128, bx * 128], C_local)

    assert "T.atomic_add(C[by * 128:by * 128 + 128, bx * 128:bx * 128 + 128], C_local)" in splitk.script()


def test_vector_atomic_add_is_one_atomic_per_element():
    @T.prim_func
    def scatter(D: T.Tensor((64, 64), "float32"), Idx: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((64, 64), "float32")
            T.clear(S)
            for i, j in T.Parallel(64, 16):
                T.atomic_addx4(D[Idx[i], j * 4], S[i, j * 4])

    text = scatter.script()
    for k in ("", " + 1", " + 2", " + 3"):
        assert f"D[Idx[i], j * 4{k}]" in text, text
    src = tilec.compile(scatter, target="sm_90a").get_kernel_source()
    assert src.count("tl::atomic_add(") == 4, src


def _splitk_accumulate():
    @T.prim_func
    def splitk(A: T.Tensor((256, 64), "float16"), B: T.Tensor((64, 256), "float16"), C: T.Tensor((256, 256), "float32")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_local = T.alloc_fragment((128, 128), "float32")
            T.copy(A[by * 128, 0], A_s)
            T.copy(B[0, bx * 128], B_s)
            T.clear(C_local)
            T.gemm(A_s, B_s, C_local)
            T.atomic_add(C[by * 128, bx * 128], C_local)

    return splitk


def _atomics_in_ptx(kernel):
    import collections

    return collections.Counter(line.split()[0] for line in kernel.get_ptx().splitlines()
                               if line.strip().startswith(("red.", "atom.")))


def test_accumulator_pairs_are_added_with_one_vector_atomic_on_sm90():
    # Each thread holds its accumulator in pairs of adjacent columns: sm_90 adds a pair with one
    # red/atom .v2.f32; sm_80 has no vector float atomic and adds element by element.
    on90 = _atomics_in_ptx(tilec.compile(_splitk_accumulate(), target="sm_90a"))
    assert any(".v2.f32" in op or ".v4.f32" in op for op in on90), on90
    on80 = _atomics_in_ptx(tilec.compile(_splitk_accumulate(), target="sm_80"))
    assert on80 and not any(".v2." in op or ".v4." in op for op in on80), on80
