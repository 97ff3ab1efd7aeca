"""A T.Parallel loop that stores one block of a gemm accumulator at a time, guarded by
`if i < BS // 2` and reading `acc[i + s * (BS // 2), j]` (the DeepSeek sparse MLA backward
passes): the guard narrows the loop (pass narrow_guarded_parallel_loops), so the read follows the
accumulator's layout block by block. No NVRTC needed."""
import pytest

import tilec
import tilec.language as T


def _split_store(BS=32, D=128, H=64, split=2):
    @T.prim_func
    def k(A: T.Tensor((H, BS), "bfloat16"), B: T.Tensor((H, D), "bfloat16"), O: T.Tensor((BS, D), "float32")):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((H, BS), "bfloat16")
            B_s = T.alloc_shared((H, D), "bfloat16")
            acc = T.alloc_fragment((BS, D), "float32")
            st = T.alloc_shared((BS // split, D), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, acc, transpose_A=True, policy=T.GemmWarpPolicy.FullCol, clear_accum=True)
            for s in range(split):
                for bi, d in T.Parallel(BS, D):
                    if bi < BS // split:
                        st[bi, d] = acc[bi + s * (BS // split), d]
                for bi, d in T.Parallel(BS // split, D):
                    T.atomic_add(O[bi + s * (BS // split), d], st[bi, d])

    return k


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_a_guarded_block_of_an_accumulator_is_stored_by_its_owners(target):
    src = tilec.compile(_split_store(), target=target).get_kernel_source()
    body = src[src.index("for (int s = 0; s < 2; ++s)"):]
    # Each thread stores its own registers of block s: no guard on the row is left.
    assert "acc[" in body and "s * 8]" in body, body
    assert "< 16" not in body.split("__syncthreads();")[1], body
