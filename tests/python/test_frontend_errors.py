"""One test per class of user error: the CompileError's text, the reported file:line:col, the
caret under the column, and the trimmed traceback."""

import os
import traceback

import pytest

import tilec
import tilec.language as T

HERE = __file__
BLOCK_SIZE = 64
SOURCE = open(HERE).read().splitlines()


def line_of(marker: str) -> int:
    hits = [i + 1 for i, text in enumerate(SOURCE) if text.rstrip().endswith("# " + marker)]
    assert len(hits) == 1, marker
    return hits[0]


def compile_error(fn, *args) -> tilec.CompileError:
    with pytest.raises(tilec.CompileError) as info:
        fn(*args)
    return info.value


def check_location(err: tilec.CompileError, marker: str, token: str):
    """The error points at `marker`'s line, with the column at `token` on that line."""
    line = line_of(marker)
    assert err.file == HERE
    assert err.line == line, str(err)
    assert err.col == SOURCE[line - 1].index(token) + 1, str(err)
    text = str(err)
    rendered = text.splitlines()
    # "file:line:col: error: ...", the source line, then a caret under the column.
    assert rendered[0].startswith(f"{HERE}:{line}:{err.col}: error: ")
    src = SOURCE[line - 1]
    assert rendered[1] == "    " + src.lstrip()
    assert rendered[2] == "    " + " " * (err.col - 1 - (len(src) - len(src.lstrip()))) + "^"


def test_unknown_name():
    def make():
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                for i in T.Parallel(128):
                    A[i] = A[i] * scale_factor  # unknown-name
        return main

    err = compile_error(make)
    assert err.message == "name 'scale_factor' is not defined"
    check_location(err, "unknown-name", "scale_factor")


def test_unknown_name_suggests_a_close_one():
    def make():
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                for i in T.Parallel(BLOCK_SISE):  # misspelled
                    A[i] = 0
        return main

    err = compile_error(make)
    assert err.message == "name 'BLOCK_SISE' is not defined"
    assert err.hint == "did you mean 'BLOCK_SIZE'?"


def test_unknown_T_primitive():
    def make():
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                T.coppy(A, A)  # unknown-primitive
        return main

    err = compile_error(make)
    assert err.message == "T.coppy is not a tilec primitive"
    assert err.hint == "did you mean T.copy?"
    check_location(err, "unknown-primitive", "T.coppy")


def test_wrong_arity_of_a_tile_op():
    def make():
        @T.prim_func
        def main(A: T.Tensor((128, 32), "float16"), B: T.Tensor((128, 32), "float16")):
            with T.Kernel(1, threads=128) as bx:
                S = T.alloc_shared((128, 32), "float16")
                T.copy(A, S, B, 4, "evict_last", True)  # copy-arity
        return main

    err = compile_error(make)
    assert err.message == "T.copy takes 2 positional arguments but 6 were given"
    check_location(err, "copy-arity", "T.copy")


def test_wrong_arity_of_an_allocation():
    def make():
        @T.prim_func
        def main(A: T.Tensor((128, 32), "float16")):
            with T.Kernel(1, threads=128) as bx:
                S = T.alloc_shared((128, 32))  # alloc-arity
        return main

    err = compile_error(make)
    assert err.message == "T.alloc_shared: missing a required argument: 'dtype'"
    assert err.hint.startswith("signature: T.alloc_shared(shape")
    check_location(err, "alloc-arity", "T.alloc_shared")


def test_wrong_arity_of_a_macro():
    @T.macro
    def scale(buf, factor):
        for i in T.Parallel(128):
            buf[i] = buf[i] * factor

    def make():
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                scale(A)  # macro-arity
        return main

    err = compile_error(make)
    assert err.message == "T.macro scale: missing a required argument: 'factor'"
    check_location(err, "macro-arity", "scale(A)")


def test_copy_shape_mismatch():
    def make(M, K, block_M, block_K):
        @T.prim_func
        def main(A: T.Tensor((M, K), "float16")):
            with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
                A_shared = T.alloc_shared((block_M, block_K), "float16")
                T.copy(A[bx * block_M:bx * block_M + 64, 0:block_K], A_shared)  # copy-shape
        return main

    err = compile_error(make, 1024, 1024, 128, 32)
    assert err.message == "T.copy: the source 'A' has shape (64, 32) but the destination 'A_shared' has shape (128, 32)"
    assert err.hint == "copy between regions of the same shape (unit dimensions aside)"
    check_location(err, "copy-shape", "T.copy")


def test_gemm_shape_mismatch():
    def make():
        @T.prim_func
        def main(A: T.Tensor((128, 32), "float16")):
            with T.Kernel(1, threads=128) as bx:
                A_shared = T.alloc_shared((128, 32), "float16")
                B_shared = T.alloc_shared((64, 128), "float16")
                C_local = T.alloc_fragment((128, 128), "float32")
                T.gemm(A_shared, B_shared, C_local)  # gemm-shape
        return main

    err = compile_error(make)
    assert err.message == "T.gemm: the K extents differ: 'A_shared' has K = 32 but 'B_shared' has K = 64"
    assert err.hint == "A is (M, K) and B is (K, N)"
    check_location(err, "gemm-shape", "T.gemm")


def test_gemm_shape_mismatch_with_transpose():
    def make():
        @T.prim_func
        def main(A: T.Tensor((128, 32), "float16")):
            with T.Kernel(1, threads=128) as bx:
                A_shared = T.alloc_shared((128, 32), "float16")
                B_shared = T.alloc_shared((32, 128), "float16")
                C_local = T.alloc_fragment((128, 128), "float32")
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)  # gemm-transposed
        return main

    err = compile_error(make)
    assert err.message == "T.gemm: the K extents differ: 'A_shared' has K = 32 but 'B_shared' has K = 128"
    assert err.hint == "A is (M, K) and B is (N, K) with transpose_B=True"
    check_location(err, "gemm-transposed", "T.gemm")


def test_non_constant_thread_count():
    def make():
        @T.prim_func
        def main(A: T.Tensor((128,), "float32"), n: T.int32):
            with T.Kernel(1, threads=n) as bx:  # threads-nonconst
                A[0] = 0
        return main

    err = compile_error(make)
    assert err.message == "T.Kernel threads must be a constant integer, got the kernel value `n`" or \
        err.message.startswith("T.Kernel threads must be a constant integer, got the kernel value")
    assert "folded" in err.hint
    check_location(err, "threads-nonconst", "T.Kernel")


def test_non_constant_buffer_extent():
    m = T.dynamic("m")

    def make():
        @T.prim_func
        def main(A: T.Tensor((m, 32), "float16")):
            with T.Kernel(1, threads=128) as bx:
                S = T.alloc_shared((m, 32), "float16")  # extent-nonconst
        return main

    err = compile_error(make)
    assert err.message == "buffer 'S' has a non-constant or non-positive extent"
    assert err.hint == "on-chip buffers need constant, positive extents (block sizes)"
    check_location(err, "extent-nonconst", "T.alloc_shared")


@pytest.mark.parametrize("snippet,marker_token,message,hint_part", [
    ("while", "while", "`while ... else` is not supported in a kernel", "remove the else block"),
    ("try", "try", "`try` is not supported in a kernel body", "remove the try"),
    ("lambda", "lambda", "a lambda is not supported in a kernel body", "T.Layout"),
    ("break", "break", "`break` in a T.Parallel loop: its iterations do not run one after another", "`if`"),
    ("listcomp", "T.serial", "a comprehension can only loop over Python values, not a LoopFrame", "T.serial"),
])
def test_unsupported_python_syntax(snippet, marker_token, message, hint_part):
    def make_while():
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                while A[0] > 0:  # unsupported-while
                    A[0] = A[0] - 1
                else:
                    A[1] = 0
        return main

    def make_try():
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                try:  # unsupported-try
                    A[0] = 1
                except Exception:
                    pass
        return main

    def make_lambda():
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                f = lambda x: x + 1  # unsupported-lambda
        return main

    def make_break():
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                for i in T.Parallel(128):
                    break  # unsupported-break
        return main

    def make_listcomp():
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                xs = [i for i in T.serial(4)]  # unsupported-listcomp
        return main

    make = {"while": make_while, "try": make_try, "lambda": make_lambda, "break": make_break,
            "listcomp": make_listcomp}[snippet]
    err = compile_error(make)
    assert err.message == message
    assert hint_part in err.hint
    check_location(err, f"unsupported-{snippet}", marker_token)


def test_reassigning_an_outer_variable_in_a_loop_points_to_alloc_var():
    def make():
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                acc = A[0]
                for i in T.serial(128):
                    acc = acc + A[i]  # reassign-outer
                A[0] = acc
        return main

    err = compile_error(make)
    assert err.message == "'acc' is assigned inside a loop or if, but was defined outside it"
    assert "T.alloc_var" in err.hint
    check_location(err, "reassign-outer", "acc =")


def test_unknown_dtype():
    def make():
        @T.prim_func
        def main(A: T.Tensor((128,), "float17")):  # bad-dtype
            with T.Kernel(1, threads=128) as bx:
                A[0] = 0
        return main

    with pytest.raises(tilec.CompileError) as info:
        make()
    assert info.value.message == "unknown dtype 'float17'"


def test_traceback_is_trimmed_to_the_user_code():
    def make():
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                A[0] = undefined_thing  # trimmed
        return main

    try:
        make()
    except tilec.CompileError as e:
        frames = traceback.extract_tb(e.__traceback__)
        # Internal = under the installed package's folder, whatever the clone is called (a
        # clone named `tilec` puts this test file under a "/tilec/" path too).
        package_dir = os.path.dirname(os.path.abspath(tilec.__file__))
        internal = [f for f in frames if os.path.abspath(f.filename).startswith(package_dir + os.sep)]
        # Only the decorator's own frame (where the error is re-raised) remains, not the parser's.
        assert [(f.name, f.filename.rsplit("/", 1)[-1]) for f in internal] == [("prim_func", "function.py")]
        assert e.__cause__ is None and e.__suppress_context__
    else:
        pytest.fail("no CompileError")


def test_errors_from_cpp_carry_message_and_hint():
    loc = tilec._tilec.SourceLoc("kernel.py", 7, 3)
    with pytest.raises(tilec.CompileError) as info:
        tilec._tilec._raise_user_error("bad thing", loc, "do this")
    e = info.value
    assert (e.message, e.file, e.line, e.col, e.hint) == ("bad thing", "kernel.py", 7, 3, "do this")
    with pytest.raises(tilec.InternalError, match="please report"):
        tilec._tilec._raise_internal_error("broken invariant")


def test_fragment_used_outside_a_parallel_loop():
    def make():
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                F = T.alloc_fragment((128,), "float32")
                for j in T.Parallel(128):  # distributed over the threads: F cannot be a per-thread copy
                    F[j] = A[j] * 2.0
                for i in T.serial(128):
                    A[i] = F[i] + 1.0  # fragment-outside
        return main

    err = compile_error(make)
    assert err.message == "fragment 'F' is indexed outside a T.Parallel loop"
    assert "T.Parallel" in err.hint
    check_location(err, "fragment-outside", "F[i]")



def test_a_zero_tile_size_in_ceildiv_is_a_compile_error():
    def make(block_M=0):
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(T.ceildiv(128, block_M), threads=128) as bx:  # ceildiv-zero
                A[bx] = 1.0
        return main

    err = compile_error(make)
    assert err.message == "T.ceildiv(128, 0): division by zero"
    assert "tile size of 0" in err.hint
    check_location(err, "ceildiv-zero", "T.ceildiv(128, block_M)")
