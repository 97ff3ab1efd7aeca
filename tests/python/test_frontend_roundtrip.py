"""Round trip of every construct of the T language: parse -> script() -> from_script ->
structurally equal to the parsed function (and printing that again gives the same text)."""

import pytest

import tilec
import tilec.language as T
from tilec import _tilec

M = T.dynamic("m")
N = T.symbolic("n")


def program_kernel_grids():
    @T.prim_func
    def main(A: T.Tensor((M, 1024), "float16"), B: T.Tensor((64, 64, 8), T.bfloat16)):
        with T.Kernel(T.ceildiv(M, 128), 8, threads=128) as (bx, by):
            A[bx * 128, by] = T.float16(1)
        with T.Kernel(4, threads=(32, 4)) as bx:
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            B[bx, tx, ty] = T.bfloat16(0)
        with T.Kernel(2, 2, 2, threads=64, cluster_dims=(2, 1, 1)) as (bx, by, bz):
            B[bx, by, bz] = T.cast(bx + by + bz, "bfloat16")
    return main


def program_dtypes_and_scalars():
    @T.prim_func
    def main(A: T.Tensor((128,), "float"), B: T.Tensor((128,), "float8_e4m3"), C: T.Tensor((128,), T.float8_e5m2),
             D: T.StridedTensor((64, 64), (128, 1), "float32"), n: T.int32, alpha: T.float32):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            if tx < n:
                A[tx] = A[tx] * alpha + T.cast(B[tx], "float32") + T.cast(C[tx], "float32")
            D[tx % 64, tx // 64] = T.float32(-1.5)
    return main


def program_allocations():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((128, 64), "float16")
            S2 = T.alloc_shared((8,), "float32", scope="shared")
            F = T.alloc_fragment((128, 64), "float32")
            L = T.alloc_local((4,), "float32")
            v = T.alloc_var("int32")
            w = T.alloc_var(T.int32, init=3)
            T.copy(A, S)
            T.copy(S, F)
            v = v + w
            L[0] = T.cast(v, "float32")
            S2[0] = L[0]
            T.copy(F, A)
    return main


def program_copy_forms(block_M=64, block_K=32):
    @T.prim_func
    def main(A: T.Tensor((M, 256), "float16"), B: T.Tensor((4, 256, 256), "float16")):
        with T.Kernel(T.ceildiv(M, block_M), 4, threads=128) as (bx, by):
            S = T.alloc_shared((block_M, block_K), "float16")
            S3 = T.alloc_shared((1, block_M, block_K), "float16")
            T.copy(A[bx * block_M, 0], S)                                        # all-index form
            T.copy(A[bx * block_M:(bx + 1) * block_M, 32:64], S, disable_tma=True)  # slices
            T.copy(A[bx * block_M:bx * block_M + block_M, by * block_K:by * block_K + block_K], S,
                   eviction_policy="evict_last")
            T.copy(B[by, 0:block_M, 0:block_K], S, prefer_instruction="tma")        # unit leading dim
            T.copy(B[by, 0, 0], S3)
            T.copy(S, A[bx * block_M, 0], coalesced_width=8)
    return main


def program_gemm_variants():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=256) as bx:
            As = T.alloc_shared((128, 64), "float16")
            At = T.alloc_shared((64, 128), "float16")
            Bs = T.alloc_shared((64, 128), "float16")
            Bt = T.alloc_shared((128, 64), "float16")
            C = T.alloc_fragment((128, 128), "float32")
            T.gemm(As, Bs, C)
            T.gemm(At, Bs, C, transpose_A=True, clear_accum=True)
            T.gemm(As, Bt, C, False, True, T.GemmWarpPolicy.FullRow)
            T.gemm(At, Bt, C, transpose_A=True, transpose_B=True, policy=T.GemmWarpPolicy.FullCol, k_pack=2)
    return main


def program_fill_reduce_cumsum_atomic():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float32"), Out: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((128, 64), "float32")
            R = T.alloc_fragment((128,), "float32")
            T.fill(F, 1.5)
            T.clear(R)
            T.copy(A, F)
            T.reduce_max(F, R, dim=1)
            T.reduce_min(F, R, 1, False)
            T.reduce_sum(F, R, dim=1, clear=False)
            T.reduce_abssum(F, R, dim=-1)
            T.reduce_absmax(F, R, dim=1)
            T.cumsum(F, dim=1)
            T.cumsum(F, F, dim=0, reverse=True)
            T.atomic_add(Out[0:128], R)
            T.atomic_max(Out[bx], A[0, 0])
            T.atomic_min(Out[3], 2.0)
    return main


def program_loops():
    @T.prim_func
    def main(A: T.Tensor((128, 128), "float32"), n: T.int32):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((128, 128), "float32")
            L = T.alloc_local((8,), "float32")
            for i, j in T.Parallel(128, 128):
                F[i, j] = A[i, j]
            for i in T.Parallel(128):
                F[i, 0] = 0
            for k in T.Pipelined(16, num_stages=2, order=[0, 1], stage=[0, 1]):
                A[k, 0] = L[0]
                A[k, 1] = L[1]
            for k in T.Pipelined(n, num_stages=3):
                A[k, 2] = 0
            for k in T.serial(8):
                L[k] = 0
            for k in T.serial(2, 6):
                L[k] = 1
            for k in T.serial(1, n + 1):
                A[k, 3] = 2
            for k in T.unroll(8):
                L[k] = L[k] + 1
            for k in T.vectorized(8):
                L[k] = L[k] * 2
            for k in range(4):
                L[k] = 3
            for k in range(2, 8):
                L[k] = 4
            for t in T.thread_binding(128, thread="threadIdx.x"):
                A[t, 5] = 0
            for c in [1, 2]:  # a Python list: unrolled while parsing
                L[c] = c
            for k in T.Parallel(4, min=2):
                L[k] = 5
            for k in T.serial(4, annotations={"pragma": 1}):
                L[k] = 6
    return main


def program_control_flow():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), n: T.int32):
        with T.Kernel(4, threads=128) as bx:
            tx = T.get_thread_binding(0)
            x = bx * 128 + tx
            y = x % 7
            if x < n and y != 3:
                A[x] = T.if_then_else(y == 0, A[x], -A[x])
            elif x == n or not (y > 1):
                A[x] += 1.0
            else:
                A[x] = 0
            if 0 <= tx < 64:
                A[tx] = T.cast(T.truncdiv(x, 3) * T.truncmod(y, 2) + T.floordiv(x, 5) - T.floormod(y, 3), "float32")
            T.print(x)
            T.print(A[0], msg="first")
    return main


def program_math():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float16")):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                A[i] = T.exp(A[i]) + T.exp2(A[i]) + T.log(A[i]) + T.log2(A[i]) + T.sqrt(A[i]) + T.rsqrt(A[i])
                A[i] = T.tanh(A[i]) + T.sigmoid(A[i]) + T.abs(A[i]) + T.max(A[i], 0) + T.min(A[i], 1.0)
                A[i] = T.max(A[i], -T.infinity("float32")) + A[i] / 2
                B[i] = T.cast(A[i], "float16") + T.float16(0.5)
                A[i] = T.sin(A[i]) + T.cos(A[i]) + T.floor(A[i]) + T.ceil(A[i]) + T.round(A[i]) + T.trunc(A[i])
                A[i] = T.erf(A[i]) + T.log10(A[i]) + T.pow(A[i], 2.0)
    return main


def program_integer_bits():
    @T.prim_func
    def main(A: T.Tensor((128,), "int32"), B: T.Tensor((128,), "int64")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            A[tx] = (tx & 7) | (tx ^ 3) + (tx << 2) - (A[tx] >> 1) + ~tx
            B[tx] = B[tx] & 255
            A[tx] = T.bitwise_xor(tx, 5) + T.bitwise_and(3, tx) + T.shift_left(tx, 1) + T.shift_right(tx, 1)
    return main


def program_layouts():
    @T.prim_func
    def main(A: T.Tensor((128, 32), "float16")):
        with T.Kernel(8, 8, threads=128) as (bx, by):
            S = T.alloc_shared((128, 32), "float16")
            F = T.alloc_fragment((128, 32), "float32")
            T.annotate_layout({
                S: T.Layout((128, 32), lambda i, j: [i * 32 + (j ^ 0) if False else i * 32 + j]),
                F: T.Fragment((128, 32), forward_thread=lambda i, j: i, forward_index=lambda i, j: [j]),
            })
            T.use_swizzle(panel_size=10)
            T.copy(A, S)
            T.copy(S, F)
    return main


def program_swizzled_layouts():
    from tilec.layout import make_swizzled_layout, make_half_bank_swizzled_layout

    @T.prim_func
    def main(A: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((128, 64), "float16")
            S2 = T.alloc_shared((64, 32), "float16")
            T.annotate_layout({S: make_swizzled_layout(S), S2: make_half_bank_swizzled_layout(S2)})
            T.copy(A, S)
            T.copy(A[0:64, 0:32], S2)
    return main


def program_fragment_replicated():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            R = T.alloc_fragment((64,), "float32")
            T.annotate_layout({R: T.Fragment((64,), forward_thread=lambda i, rep: i + rep * 64,
                                             forward_index=lambda i: [0], replicate=2)})
            T.fill(R, 0)
    return main


def program_warp_specialized():
    @T.prim_func
    def main(A: T.Tensor((1024, 1024), "float16"), C: T.Tensor((1024, 1024), "float16")):
        with T.Kernel(8, 8, threads=256) as (bx, by):
            S = T.alloc_shared((128, 64), "float16")
            F = T.alloc_fragment((128, 64), "float32")
            ready = T.alloc_barrier(arrive_count=128)
            pair = T.alloc_barrier([128, 1])
            for ko in T.Pipelined(16, num_stages=0):
                with T.ws(0):
                    T.barrier_wait(ready, (ko + 1) % 2)
                    T.tma_copy(A[by * 128, ko * 64], S, barrier=ready)
                    T.barrier_arrive(ready)
                with T.ws(1):
                    T.mbarrier_wait_parity(pair[1], ko % 2)
                    T.copy(S, F)
                    T.mbarrier_arrive(pair[0])
            with T.ws(0, 1):
                T.copy(F, C[by * 128, bx * 64])
    return main


@T.macro
def _relu(buf, rows, cols):
    for i, j in T.Parallel(rows, cols):
        buf[i, j] = T.max(buf[i, j], 0)


@T.macro
def _row_offset(bx, block):
    return bx * block + 1


def program_macro():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float32")):
        with T.Kernel(4, threads=128) as bx:
            F = T.alloc_fragment((32, 64), "float32")
            T.copy(A[bx * 32, 0], F)
            _relu(F, 32, 64)
            off = _row_offset(bx, 32)
            A[off, 0] = A[1, 1]
    return main


def program_macro_inlined_by_hand():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float32")):
        with T.Kernel(4, threads=128) as bx:
            F = T.alloc_fragment((32, 64), "float32")
            T.copy(A[bx * 32, 0], F)
            for i, j in T.Parallel(32, 64):
                F[i, j] = T.max(F[i, j], 0)
            off = bx * 32 + 1
            A[off, 0] = A[1, 1]
    return main


def program_annotations_and_misc():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32")):
        T.func_attr({"tilec.note": "hand written", "n_warps": 4})
        with T.Kernel(1, threads=128) as bx:
            L = T.alloc_local((8,), "float32")
            T.annotate("pragma_unroll_explicit", True)
            for i in T.serial(4):
                A[i] = T.call_intrin("float32", "tl.shfl_xor", A[i], 1)
            L[T.Ramp(0, 1, 4)] = T.Broadcast(T.float32(1), 4)
            T.evaluate(0)
    return main


def program_pointer_tables():
    @T.prim_func
    def main(ptrs: T.Tensor((4,), T.ptr), B: T.Tensor((64, 32), "float16")):
        with T.Kernel(4, threads=128) as bx:
            A = T.make_tensor(ptrs[bx], (64, 32), "float16")
            addr = ptrs[3 - bx]
            C = T.make_tensor(addr, (32, 64), T.float16, strides=(1, 32))
            S = T.alloc_shared((64, 32), "float16")
            T.copy(A, S)
            T.copy(S, B)
            C[0, 0] = A[0, 1]
    return main


PROGRAMS = {
    name[len("program_"):]: fn for name, fn in sorted(globals().items())
    if name.startswith("program_") and name != "program_macro_inlined_by_hand"
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_parses(name):
    f = PROGRAMS[name]()
    assert isinstance(f, _tilec.PrimFunc)
    assert f.name == "main"
    assert f.body.kind in ("KernelLaunch", "Seq")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_round_trip(name):
    f = PROGRAMS[name]()
    text = f.script()
    g = tilec.from_script(text)
    assert _tilec.structural_equal(f, g), text + "\n--- reprinted ---\n" + g.script()
    assert g.script() == text
    assert _tilec.structural_hash(f) == _tilec.structural_hash(g)


def test_warp_specialized_program_prints_the_front_end_forms():
    text = program_warp_specialized().script()
    for form in ("    with T.ws(0):\n", "    with T.ws(1):\n", "with T.ws(0, 1):\n",
                 "T.barrier_wait(ready[0], (ko + 1) % 2)", "barrier=ready[0])", "T.barrier_arrive(ready[0])",
                 "T.mbarrier_wait_parity(pair[1], ko % 2)", "T.mbarrier_arrive(pair[0])",
                 "T.barrier_init(ready, arrive_count=[128])", "T.barrier_init(pair, arrive_count=[128, 1])"):
        assert form in text, form + " not in\n" + text
    assert "T.annotate(" not in text and "T.call_intrin(" not in text, text


def test_macro_inlines_like_the_hand_written_code():
    assert _tilec.structural_equal(program_macro(), program_macro_inlined_by_hand())


def test_structurally_different_programs_differ():
    assert not _tilec.structural_equal(program_macro(), program_loops())
