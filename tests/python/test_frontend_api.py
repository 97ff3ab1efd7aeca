"""The Python API around the parser: tilec.jit in both TileLang styles, tilec.compile's target
normalisation, tilec.compat's import aliases, T.macro, from_script on hand-written text."""

import subprocess
import sys
import textwrap

import pytest

import tilec
import tilec.language as T
from tilec import _tilec
from tilec.jit import normalize_out_idx, normalize_target

HAS_RUNTIME = hasattr(_tilec, "compile")


@tilec.jit(out_idx=[-1], target="sm_80")
def add_factory(n, block=128, dtype="float32"):
    @T.prim_func
    def add(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return add


def test_factory_get_tir_folds_the_arguments():
    f = add_factory.get_tir(1024, block=256)
    assert isinstance(f, _tilec.PrimFunc)
    assert [p.name for p in f.params] == ["A", "B", "C"]
    assert [s.as_int() for s in f.params[0].shape] == [1024]
    kernel = f.body
    assert [g.as_int() for g in kernel.grid] == [4] and kernel.threads == [256]
    assert str(f.params[0].dtype) == "float32"
    g = add_factory.get_tir(1024, block=256, dtype="float16")
    assert str(g.params[0].dtype) == "float16"


def test_factory_must_return_a_prim_func():
    @tilec.jit
    def bad(n):
        return n

    with pytest.raises(TypeError, match="must return a T.prim_func"):
        bad.get_tir(3)


def test_decorated_prim_func_style():
    @tilec.jit(out_idx=-1)
    @T.prim_func
    def scale(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] * 2.0

    assert scale.is_prim_func
    assert scale.get_tir().name == "scale"
    assert normalize_out_idx(scale.out_idx) == [-1]


@pytest.mark.skipif(not HAS_RUNTIME, reason="the runtime bindings (_tilec.compile) have not landed")
def test_factory_call_compiles_once_per_argument_set():
    k1 = add_factory(1024)
    k2 = add_factory(1024)
    k3 = add_factory(2048)
    assert k1 is k2
    assert k3 is not k1


@pytest.mark.skipif(HAS_RUNTIME, reason="only meaningful without the runtime")
def test_compile_without_runtime_says_so():
    with pytest.raises(NotImplementedError, match="no runtime"):
        add_factory.compile(1024)


@pytest.mark.parametrize("spec,expected", [
    ("auto", "auto"),
    (None, "auto"),
    ("cuda", "cuda"),
    ("sm_90a", "sm_90a"),
    ("cuda -arch=sm_90a", "cuda -arch=sm_90a"),
    ({"kind": "cuda", "arch": "sm_90"}, "cuda -arch=sm_90"),
    ({"kind": "cuda", "arch": 80}, "cuda -arch=sm_80"),
    ({"kind": "cuda"}, "cuda"),
])
def test_target_specs_normalise_to_strings(spec, expected):
    assert normalize_target(spec) == expected


def test_bad_target_specs():
    with pytest.raises(tilec.CompileError, match="unsupported target key"):
        normalize_target({"kind": "cuda", "keys": ["cutedsl"]})
    with pytest.raises(tilec.CompileError, match="string or a dict"):
        normalize_target(90)


def test_compat_makes_upstream_imports_resolve_to_tilec(tmp_path):
    code = textwrap.dedent("""
        import tilec.compat
        import tilelang
        import tilelang.language as T
        from tilelang import jit
        import tilelang.jit
        assert tilelang is __import__("tilec")
        assert T is __import__("tilec.language", fromlist=["x"])
        import sys
        assert sys.modules["tilelang.jit"] is sys.modules["tilec.jit"]
        assert tilelang.jit is jit and callable(jit)  # the decorator, not the module
        assert T.__spec__.name == "tilec.language"

        @tilelang.jit(out_idx=[-1])
        def f(n):
            @T.prim_func
            def main(A: T.Tensor((n,), "float32")):
                with T.Kernel(1, threads=128) as bx:
                    A[0] = 1.0
            return main

        print(f.get_tir(4).name)
    """)
    program = tmp_path / "upstream_program.py"
    program.write_text(code)
    out = subprocess.run([sys.executable, str(program)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "main"


def test_from_script_reads_hand_written_text():
    text = textwrap.dedent('''
        m = T.dynamic("m")

        @T.prim_func
        def copy_rows(A: T.Tensor((m, 64), "float16"), B: T.Tensor((m, 64), "float16")):
            with T.Kernel(T.ceildiv(m, 32), threads=128) as bx:
                S = T.alloc_shared((32, 64), "float16")
                T.copy(A[bx * 32:bx * 32 + 32, 0:64], S)
                T.copy(S, B[bx * 32:bx * 32 + 32, 0:64])
    ''')
    f = tilec.from_script(text)
    assert f.name == "copy_rows"
    copy = f.body.body.body.stmts[0]
    assert copy.op == "copy"
    # `lo:lo + 32` is read back as extent 32 (the printer's form)
    assert [e.as_int() for _, e in copy.args[0].region] == [32, 64]
    assert f.params[0].shape[0].kind == "Var"


def test_from_script_errors_point_into_the_text():
    text = "@T.prim_func\ndef f(A: T.Tensor((4,), \"float32\")):\n    with T.Kernel(1, threads=32) as bx:\n        A[0] = nope\n"
    with pytest.raises(tilec.CompileError) as info:
        tilec.from_script(text, filename="<kernel text>")
    e = info.value
    assert (e.file, e.line, e.col) == ("<kernel text>", 4, 16)
    assert "A[0] = nope" in str(e)


def test_macro_outside_a_kernel_is_an_error():
    @T.macro
    def m(x):
        return x

    with pytest.raises(tilec.CompileError, match="can only be called inside a kernel"):
        m(1)


def test_python_values_fold_at_parse_time():
    block = 64
    use_bias = False

    def make():
        @T.prim_func
        def main(A: T.Tensor((256,), "float32")):
            with T.Kernel(256 // block, threads=block * 2) as bx:
                if use_bias:
                    A[0] = 1.0  # not parsed: the condition is a Python value
                for i in T.serial(block // 2 + 1):
                    A[i] = float(block)
        return main

    f = make()
    kernel = f.body
    assert [g.as_int() for g in kernel.grid] == [4] and kernel.threads == [128]
    loop = kernel.body
    assert loop.kind == "For" and loop.extent.as_int() == 33
    assert loop.body.value.kind == "FloatImm" and loop.body.value.value == 64.0


def test_source_locations_are_the_users():
    def make():
        @T.prim_func
        def main(A: T.Tensor((256,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                T.fill(A[0:128], 0)  # fill-here
        return main

    f = make()
    op = f.body.body
    lines = open(__file__).read().splitlines()
    line = next(i + 1 for i, t in enumerate(lines) if t.endswith("# fill-here"))
    assert (op.loc.file, op.loc.line, op.loc.col) == (__file__, line, lines[line - 1].index("T.fill") + 1)
