"""Layout plots (issue 14): kernel.layouts(), kernel.plot_layouts(dir), tilec.plot_layout(layout,
path) and upstream's tilelang.tools.plot_layout. Checks the files written, their pixel sizes
(read back) and the labels (from the description each call returns, so no OCR), for the GEMM
example compiled for sm_80 and sm_90a (NVRTC, no GPU needed)."""
import os
import sys

import pytest

import tilec
import tilec.language as T
from tilec.errors import CompileError

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "examples"))

needs_nvrtc = pytest.mark.skipif(not tilec._tilec.nvrtc_available()[0], reason="NVRTC not found")


def _image_size(path):
    mpimg = pytest.importorskip("matplotlib.image")
    pixels = mpimg.imread(path)
    return pixels.shape[1], pixels.shape[0]  # width, height


@pytest.fixture(scope="module")
def gemm_kernels():
    gemm = __import__("gemm")
    func = gemm.matmul(1024, 1024, 1024, relu=True)
    return {t: tilec.compile(func, out_idx=[2], target=t) for t in ("sm_80", "sm_90a")}


@needs_nvrtc
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_gemm_layout_records_name_the_program_buffers(gemm_kernels, target):
    records = {r["name"]: r for r in gemm_kernels[target].layouts()}
    assert {"A_shared", "B_shared", "C_local"} <= set(records), sorted(records)
    c = records["C_local"]
    assert c["fragment"] and c["scope"] == "local.fragment" and c["dtype"] == "float32"
    assert c["shape"] == [128, 128] and len(c["thread"]) == len(c["local"]) == 128 * 128
    assert c["threads"] == 128 and c["registers"] == 128
    # Every (thread, register) slot holds one element: the accumulator is not replicated.
    assert len(set(zip(c["thread"], c["local"]))) == 128 * 128
    a = records["A_shared"]
    assert not a["fragment"] and a["scope"].startswith("shared") and a["dtype_bits"] == 16
    # The shared tile is a permutation of its physical slots (per pipeline stage if staged).
    assert len(set(a["offset"])) == len(a["offset"]) and a["physical_size"] == len(a["offset"])
    assert a["layout"].same_as(a["layout"]) and "Layout" in a["text"]


@needs_nvrtc
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_gemm_plot_layouts_writes_one_labelled_png_per_buffer(gemm_kernels, target, tmp_path):
    pytest.importorskip("matplotlib")
    kernel = gemm_kernels[target]
    figures = kernel.plot_layouts(str(tmp_path))
    by_buffer = {f["buffer"]: f for f in figures}
    assert {"A_shared", "B_shared", "C_local"} <= set(by_buffer), sorted(by_buffer)
    assert len(os.listdir(tmp_path)) == len(figures)
    for f in figures:
        assert os.path.isfile(f["path"]) and f["path"].endswith(".png")
        assert os.path.basename(f["path"]) == f"{kernel.kernel_name}.{f['buffer']}.png"
        width, height = _image_size(f["path"])
        assert (width, height) == (f["width"], f["height"])
        assert 400 <= width <= 4000 and 250 <= height <= 2500, (f["buffer"], width, height)
        # Labelled with the kernel's name and the program's buffer name.
        assert f["title"].startswith(f"{kernel.kernel_name}: {f['buffer']} - ")
        assert all(f["buffer"] in p for p in f["panels"])
    c = by_buffer["C_local"]
    assert c["kind"] == "fragment" and "128 threads x 128 registers" in c["title"]
    assert c["panels"][0].endswith("owning thread") and "register" in c["panels"][1]
    a = by_buffer["A_shared"]
    assert a["kind"] == "shared" and "swizzle" in a["title"] and "bank" in a["title"]
    assert any("4-byte bank" in p for p in a["panels"])


@needs_nvrtc
def test_plot_layouts_names_an_unknown_buffer(gemm_kernels, tmp_path):
    pytest.importorskip("matplotlib")
    with pytest.raises(CompileError, match="no fragment or shared buffer named 'D_shared'") as e:
        gemm_kernels["sm_80"].plot_layouts(str(tmp_path), buffers=["D_shared"])
    assert "A_shared" in e.value.hint
    only = gemm_kernels["sm_80"].plot_layouts(str(tmp_path), buffers=["C_local"])
    assert [f["buffer"] for f in only] == ["C_local"]


def _mma_a_fragment():
    # mma.sync m16n8k16's A operand: lane (i % 8) * 4 + (j % 8) // 2 holds a pair of columns.
    return T.Fragment((16, 16), forward_thread=lambda i, j: (i % 8) * 4 + (j % 8) // 2,
                      forward_index=lambda i, j: [(j // 8) * 4 + (i // 8) * 2 + j % 2])


def test_plot_layout_of_a_fragment_labels_every_cell(tmp_path):
    pytest.importorskip("matplotlib")
    f = tilec.plot_layout(_mma_a_fragment(), str(tmp_path / "mma_a.png"), name="A_frag")
    assert f["kind"] == "fragment" and f["buffer"] == "A_frag"
    assert f["title"] == "A_frag - fragment (16, 16)\n32 threads x 8 registers"
    assert len(f["panels"]) == 1  # a small tile: one panel, every cell labelled
    width, height = _image_size(f["path"])
    assert (width, height) == (f["width"], f["height"]) and 500 <= width <= 1200 and 500 <= height <= 1200


def test_layout_maps_of_a_fragment():
    m = tilec._tilec.layout_maps(_mma_a_fragment())
    assert m["fragment"] and m["shape"] == [16, 16] and m["threads"] == 32 and m["registers"] == 8
    assert m["thread"][:4] == [0, 0, 1, 1] and m["local"][:4] == [0, 1, 0, 1]
    assert m["thread"][8 * 16] == 0 and m["local"][8 * 16] == 2  # row 8: same lanes, next registers


def test_fragment_forward_fn_gives_thread_and_index_together():
    # TileLang's combined form: thread, index = forward_fn(i, j); the same maps as the two functions
    both = T.Fragment((16, 16), forward_fn=lambda i, j: ((i % 8) * 4 + (j % 8) // 2,
                                                         [(j // 8) * 4 + (i // 8) * 2 + j % 2]))
    a, b = tilec._tilec.layout_maps(_mma_a_fragment()), tilec._tilec.layout_maps(both)
    assert a["thread"] == b["thread"] and a["local"] == b["local"]
    rep = T.Fragment((4,), forward_fn=lambda i, r: (i + 4 * r, i * 0), replicate=2)
    assert tilec._tilec.layout_maps(rep)["threads"] == 8
    with pytest.raises(CompileError, match=r"returns \(thread, index\)"):
        T.Fragment((4,), forward_fn=lambda i: i)
    with pytest.raises(CompileError, match="not both"):
        T.Fragment((4,), forward_fn=lambda i: (i, i), forward_thread=lambda i: i)


@pytest.mark.parametrize("mode, conflict", [("128B", "no bank conflict"), ("none", "8-way bank conflict")])
def test_plot_layout_of_a_shared_layout_shows_swizzle_and_banks(tmp_path, mode, conflict):
    pytest.importorskip("matplotlib")
    layout = tilec._tilec.swizzled_layout([32, 64], "float16", mode)
    f = tilec.plot_layout(layout, str(tmp_path / f"s_{mode}.png"), name="K_shared", dtype="float16")
    assert f["kind"] == "layout" and f["dtype"] == "float16"
    # 128-byte rows: row-major starts every row in banks 0-3, the 128B swizzle spreads 8 rows' chunks.
    expected_swizzle = "128B" if mode == "128B" else "none (row-major)"
    assert f"swizzle {expected_swizzle}; 16 bytes of 8 rows (ldmatrix): {conflict}" in f["title"], f["title"]
    assert [p.split(": ")[1] for p in f["panels"]] == ["physical element offset", "4-byte bank (of 32)",
                                                       "rows 0-15, columns 0-15 (physical offset / bank b)"]
    width, height = _image_size(f["path"])
    assert (width, height) == (f["width"], f["height"]) and width >= 1200


def test_plot_layout_without_dtype_shows_offsets_only(tmp_path):
    pytest.importorskip("matplotlib")
    f = tilec.plot_layout(tilec._tilec.swizzled_layout([8, 64], "float16", "128B"), str(tmp_path / "x.png"))
    assert f["buffer"] == "layout" and "bank" not in f["title"]
    assert f["panels"][-1].endswith("(physical offset (give dtype= for banks))")
    assert os.path.isfile(tmp_path / "x.png")


def test_upstream_tools_plot_layout_signature(tmp_path):
    pytest.importorskip("matplotlib")
    from tilec.tools import plot_layout

    figures = plot_layout(_mma_a_fragment(), save_directory=str(tmp_path), name="base_layout", formats=["png", "svg"])
    assert [os.path.basename(f["path"]) for f in figures] == ["base_layout.png", "base_layout.svg"]
    assert all(os.path.getsize(f["path"]) > 1000 for f in figures)


def test_plot_layout_rejects_what_is_not_a_layout():
    with pytest.raises(CompileError, match="plot_layout takes a layout"):
        tilec.plot_layout("A_shared")


def test_layouts_that_cannot_be_evaluated_say_why():
    no_register = T.Fragment((4, 4), forward_thread=lambda i, j: i)
    with pytest.raises(CompileError, match="exactly one register index expression") as e:
        tilec._tilec.layout_maps(no_register)
    assert "forward_index=lambda i, j: [k]" in e.value.hint
    huge = tilec._tilec.swizzled_layout([4096, 2048], "float16", "none")
    with pytest.raises(CompileError, match="more than 4194304 elements"):
        tilec._tilec.layout_maps(huge)
    with pytest.raises(CompileError, match="cannot tell the size of dtype 'weird'"):
        tilec.plot_layout(tilec._tilec.swizzled_layout([8, 64], "float16", "none"), dtype="weird")


def test_missing_matplotlib_says_how_to_install(monkeypatch, tmp_path):
    for mod in ("matplotlib", "matplotlib.figure", "matplotlib.backends", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, mod, None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        tilec.plot_layout(_mma_a_fragment(), str(tmp_path / "f.png"))
    assert not os.path.exists(tmp_path / "f.png")


@needs_nvrtc
def test_kernels_from_cuda_source_have_no_layouts():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_runtime_kernel import ADD_PLAN, ADD_SOURCE

    from tilec import kernel as kernel_mod

    k = kernel_mod.compile_cuda(ADD_SOURCE, ADD_PLAN, target="sm_80")
    with pytest.raises(kernel_mod.KernelArgumentError, match="layouts\\(\\) needs a kernel compiled from a program"):
        k.layouts()
