"""Layout plots (issue 14): PNG pictures of where each element of a tile lives.

    kernel.layouts()                 # the inferred layout of every fragment / shared buffer
    kernel.plot_layouts("plots/")    # one PNG per buffer: <kernel>.<buffer>.png
    tilec.plot_layout(layout, "frag.png", dtype="float16")   # a T.Fragment / T.Layout / record

A fragment's picture shows, for each element of the logical tile, the thread that owns it and
its register (local) index in that thread; a shared buffer's shows each element's physical
offset (the swizzle) and the 4-byte bank it lands in, so bank conflicts are visible: a warp
conflicts when its lanes read different words of one bank. A shared buffer's title names its
swizzle and the conflict degree of reading 16 bytes from each of 8 rows in one 128-byte phase
(ldmatrix, 16-byte vector loads of a column), the access that swizzles exist for. Tiles of more than two dimensions
are drawn with the leading dimensions folded into rows, except a shared buffer whose 2-D tiles are
copies of one layout (a pipelined buffer's stages): its first tile is drawn, the title says so.
Small tiles (at most 32 x 32) get one panel with every cell labelled; larger ones get
whole-tile colour maps and a labelled 16 x 16 corner.

The numbers come from the C++ layout library (_tilec.layout_maps, kernel._layouts: the layouts
the compiler chose, evaluated at every element); this module only draws. matplotlib is an
optional dependency, imported on first use (Figure + the Agg canvas: pyplot's global state
and backend are left alone). Every function returns a description of each figure it wrote
(path, titles, pixel size) so tests and tools need not read the image.
"""

from __future__ import annotations

import os
import re
from typing import Any, Optional, Sequence

from . import _tilec
from .errors import CompileError

__all__ = ["plot_layout", "plot_kernel_layouts", "kernel_layouts", "tools_plot_layout", "column_chunk_read_ways"]

DETAIL = 16         # rows / columns of the labelled corner of a large tile
SMALL = 32          # tiles up to SMALL x SMALL are drawn whole, every cell labelled
DPI = 100
BANKS = 32


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError("layout plots need matplotlib, an optional dependency of tilec: pip install matplotlib") from e
    return Figure, FigureCanvasAgg


# ---------------------------------------------------------------------------------------- data

def _dtype_bits(dtype: Any) -> Optional[int]:
    if dtype is None:
        return None
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None) or str(dtype)
    bits = {"bool": 8, "float4_e2m1": 4}.get(name)
    if bits is not None:
        return bits
    m = re.search(r"(\d+)", name)
    if not m:
        raise CompileError(f"plot_layout: cannot tell the size of dtype {name!r}", hint='e.g. dtype="float16"')
    return int(m.group(1))


def _record_of(layout: Any, name: Optional[str], dtype: Any) -> dict:
    """A record as kernel.layouts() gives it, for a _tilec.Layout or a record."""
    if isinstance(layout, dict):
        rec = dict(layout)
        if name is not None:
            rec["name"] = name
        if dtype is not None:
            rec["dtype"], rec["dtype_bits"] = str(dtype), _dtype_bits(dtype)
        return rec
    if isinstance(layout, _tilec.Layout):
        rec = dict(_tilec.layout_maps(layout))
        rec.update(name=name or ("fragment" if rec["fragment"] else "layout"), layout=layout,
                   scope="local.fragment" if rec["fragment"] else None,
                   dtype=None if dtype is None else str(dtype), dtype_bits=_dtype_bits(dtype))
        return rec
    raise CompileError(f"plot_layout takes a layout (T.Fragment, T.Layout, tilec.layout.make_swizzled_layout(...)) "
                       f"or a record of kernel.layouts(), got {type(layout).__name__}",
                       hint="kernel.plot_layouts(directory) plots every layout of a compiled kernel")


def _grid(rec: dict, key: str):
    """The per-element array `key` as rows x columns (leading dimensions folded into rows)."""
    import numpy as np

    shape = list(rec["shape"]) or [1]
    cols = shape[-1]
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    return np.asarray(rec[key], dtype=np.int64).reshape(rows, cols)


def _banks(rec: dict):
    bits = rec.get("dtype_bits")
    if not bits:
        return None
    return (_grid(rec, "offset") * bits // 32) % BANKS


def column_chunk_read_ways(rec: dict) -> Optional[int]:
    """The bank-conflict degree of reading the first 16 bytes of rows 0..7 at once (one 128-byte
    phase: what ldmatrix and 16-byte vector loads of a column of the tile do): the most distinct
    4-byte words any bank serves. 1 = conflict-free; None when the element size is unknown. Rows
    of a row-major tile with a 128-byte pitch all start in banks 0-3 (8-way); a swizzle moves
    each row's chunk to other banks."""
    bits = rec.get("dtype_bits")
    if not bits or rec.get("fragment"):
        return None
    offsets = _grid(rec, "offset")
    per_chunk = max(1, 128 // bits)
    block = offsets[:8, :per_chunk]
    per_bank: dict = {}
    for off in block.reshape(-1).tolist():
        word = off * bits // 32
        per_bank.setdefault(word % BANKS, set()).add(word)
    return max(len(s) for s in per_bank.values())


def first_stage(rec: dict):
    """A shared buffer of more than two dimensions whose 2-D tiles are the same layout shifted
    (a pipelined buffer's stages): (the record of tile 0 alone, a note saying so); otherwise
    (rec, "")."""
    import numpy as np

    shape = list(rec["shape"])
    if rec.get("fragment") or len(shape) < 3:
        return rec, ""
    tile = shape[-2] * shape[-1]
    offsets = np.asarray(rec["offset"], dtype=np.int64).reshape(-1, tile)
    shifts = offsets - offsets[0]
    if not (shifts == shifts[:, :1]).all():
        return rec, ""
    first = dict(rec, shape=shape[-2:], offset=offsets[0].tolist(), physical_size=int(offsets[0].max()) + 1)
    steps = np.diff(shifts[:, 0])
    apart = f", {int(steps[0])} elements apart" if steps.size and (steps == steps[0]).all() else ""
    return first, f"stage 0 of {offsets.shape[0]} shown (the others: the same tile{apart})"


def _swizzle_name(rec: dict) -> str:
    """Which of tilec's swizzles the shared layout is ("128B", ..., "none" = row-major), or
    "custom" for any other permutation."""
    import numpy as np

    offsets = np.asarray(rec["offset"])
    if np.array_equal(offsets, np.arange(offsets.size)):
        return "none (row-major)"
    if rec.get("dtype"):
        for mode in ("128B", "64B", "32B"):
            try:
                if not _tilec.swizzle_applicable(list(rec["shape"]), rec["dtype"], mode):
                    continue
                ref = _tilec.layout_maps(_tilec.swizzled_layout(list(rec["shape"]), rec["dtype"], mode))
            except Exception:  # an unusual dtype or shape: just not one of ours
                continue
            if np.array_equal(offsets, np.asarray(ref["offset"])):
                return mode
    return "custom"


# ---------------------------------------------------------------------------------------- drawing

def _fmt_shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _heatmap(fig, ax, grid, title: str, cmap: str, label: str, vmax=None):
    im = ax.imshow(grid, cmap=cmap, aspect="auto", interpolation="nearest", vmin=0,
                   vmax=vmax if vmax is not None else max(1, int(grid.max())))
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    fig.colorbar(im, ax=ax, label=label, fraction=0.046, pad=0.04)


def _labelled(ax, color_grid, text_of, title: str, cmap: str, vmax: int, row0: int = 0, col0: int = 0):
    rows, cols = color_grid.shape
    ax.imshow(color_grid, cmap=cmap, aspect="auto", interpolation="nearest", vmin=0, vmax=max(1, vmax))
    size = max(4.0, min(9.0, 130.0 / max(rows, cols)))
    for r in range(rows):
        for c in range(cols):
            ax.text(c, r, text_of(r, c), ha="center", va="center", fontsize=size, color="black",
                    bbox=dict(boxstyle="square,pad=0.05", fc="white", ec="none", alpha=0.55))
    ax.set_xticks(range(cols))
    ax.set_xticklabels([str(col0 + c) for c in range(cols)], fontsize=6)
    ax.set_yticks(range(rows))
    ax.set_yticklabels([str(row0 + r) for r in range(rows)], fontsize=6)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("column")
    ax.set_ylabel("row")


def _figure(n_panels: int, rows: int, cols: int, small: bool):
    Figure, FigureCanvasAgg = _matplotlib()
    if small:
        cell = 0.42
        width = min(18.0, max(5.0, cols * cell + 1.5))
        height = min(18.0, max(3.0, rows * cell + 1.8))
        fig = Figure(figsize=(width, height), dpi=DPI)
        FigureCanvasAgg(fig)
        return fig, [fig.add_subplot(1, 1, 1)]
    panel_h = min(9.0, max(6.0, 6.0 * rows / cols))  # the labelled 16 x 16 corner needs 6 inches
    fig = Figure(figsize=(6.2 * n_panels, panel_h + 1.6), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(1, n_panels, i + 1) for i in range(n_panels)]


def _save(fig, path: str, title: str, panels: list, rec: dict, kernel: Optional[str], kind: str) -> dict:
    fig.suptitle(title, fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.8 / fig.get_figheight()))  # two title lines
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    width, height = fig.canvas.get_width_height()
    return {"path": path, "kernel": kernel, "buffer": rec.get("name"), "kind": kind, "scope": rec.get("scope"),
            "dtype": rec.get("dtype"), "shape": list(rec["shape"]), "title": title, "panels": panels,
            "width": width, "height": height}


def _plot_fragment(rec: dict, path: str, kernel: Optional[str]) -> dict:
    threads, local = _grid(rec, "thread"), _grid(rec, "local")
    rows, cols = threads.shape
    small = rows <= SMALL and cols <= SMALL
    who = f"{kernel}: " if kernel else ""
    title = (f"{who}{rec['name']} - fragment {_fmt_shape(rec['shape'])}"
             + (f" {rec['dtype']}" if rec.get("dtype") else "")
             + f"\n{rec['threads']} threads x {rec['registers']} registers")
    if rec.get("replicate", 1) > 1:
        title += f", replicated x{rec['replicate']} (replica 0 shown)"
    fig, axes = _figure(3, rows, cols, small)
    tmax = max(1, rec["threads"] - 1)

    def cell(r0, c0):
        return lambda r, c: f"T{threads[r0 + r, c0 + c]}\nL{local[r0 + r, c0 + c]}"

    if small:
        panels = [f"{rec['name']}: thread T / register L of each element"]
        _labelled(axes[0], threads, cell(0, 0), panels[0], "turbo", tmax)
    else:
        d = threads[:DETAIL, :DETAIL]
        panels = [f"{rec['name']}: owning thread", f"{rec['name']}: register (local index)",
                  f"{rec['name']}: rows 0-{d.shape[0] - 1}, columns 0-{d.shape[1] - 1} (T thread, L register)"]
        _heatmap(fig, axes[0], threads, panels[0], "turbo", "thread", vmax=tmax)
        _heatmap(fig, axes[1], local, panels[1], "viridis", "register")
        _labelled(axes[2], d, cell(0, 0), panels[2], "turbo", tmax)
    return _save(fig, path, title, panels, rec, kernel, "fragment")


def _plot_plain(full: dict, path: str, kernel: Optional[str]) -> dict:
    rec, stages = first_stage(full)
    offsets = _grid(rec, "offset")
    banks = _banks(rec)
    rows, cols = offsets.shape
    small = rows <= SMALL and cols <= SMALL
    who = f"{kernel}: " if kernel else ""
    scope = rec.get("scope") or "layout"
    title = (f"{who}{rec['name']} - {scope} {_fmt_shape(full['shape'])}"
             + (f" {rec['dtype']}" if rec.get("dtype") else "")
             + (f", {stages}" if stages else "")
             + f"\nswizzle {_swizzle_name(rec)}")
    ways = column_chunk_read_ways(rec)
    if ways is not None:
        title += (f"; 16 bytes of 8 rows (ldmatrix): "
                  f"{'no bank conflict' if ways == 1 else f'{ways}-way bank conflict'}")

    def cell(r0, c0):
        if banks is None:
            return lambda r, c: f"{offsets[r0 + r, c0 + c]}"
        return lambda r, c: f"{offsets[r0 + r, c0 + c]}\nb{banks[r0 + r, c0 + c]}"

    color = banks if banks is not None else offsets
    cmap = "twilight" if banks is not None else "viridis"
    vmax = BANKS - 1 if banks is not None else max(1, rec["physical_size"] - 1)
    what = "physical offset / bank b" if banks is not None else "physical offset (give dtype= for banks)"
    if small:
        fig, axes = _figure(1, rows, cols, True)
        panels = [f"{rec['name']}: {what} of each element"]
        _labelled(axes[0], color, cell(0, 0), panels[0], cmap, vmax)
    else:
        n = 3 if banks is not None else 2
        fig, axes = _figure(n, rows, cols, False)
        panels = [f"{rec['name']}: physical element offset"]
        _heatmap(fig, axes[0], offsets, panels[0], "viridis", "offset (elements)")
        if banks is not None:
            panels.append(f"{rec['name']}: 4-byte bank (of {BANKS})")
            _heatmap(fig, axes[1], banks, panels[1], "twilight", "bank", vmax=BANKS - 1)
        d = color[:DETAIL, :DETAIL]
        panels.append(f"{rec['name']}: rows 0-{d.shape[0] - 1}, columns 0-{d.shape[1] - 1} ({what})")
        _labelled(axes[-1], d, cell(0, 0), panels[-1], cmap, vmax)
    return _save(fig, path, title, panels, full, kernel, "shared" if "shared" in scope else "layout")


# ---------------------------------------------------------------------------------------- API

def plot_layout(layout: Any, path: Optional[str] = None, *, name: Optional[str] = None, dtype: Any = None,
                kernel: Optional[str] = None) -> dict:
    """Draws one layout to a PNG (or any format matplotlib writes, by `path`'s extension;
    default "<name>.png") and returns the figure's description: path, kernel, buffer, kind
    ("fragment", "shared" or "layout"), title, panels (their titles), shape, dtype, and the
    image's width and height in pixels.

    `layout`: a T.Fragment / T.Layout / tilec.layout.make_*_swizzled_layout(...) object, or a
    record of kernel.layouts(). `name` labels it (default: the record's buffer name);
    `dtype` gives the element size a plain layout's bank map needs (records carry it);
    `kernel` is added to the title."""
    rec = _record_of(layout, name, dtype)
    if path is None:
        path = f"{_safe(rec['name'])}.png"
    return _plot_fragment(rec, path, kernel) if rec["fragment"] else _plot_plain(rec, path, kernel)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "layout"


def kernel_layouts(kernel: Any) -> list:
    """The layout of every fragment and shared buffer of a compiled kernel, as layout inference
    chose it for the kernel's target: one record (dict) per buffer with name, scope, dtype,
    dtype_bits, shape, the Layout object, its text, and row-major per-element maps: thread /
    local (fragments; also replicate, threads, registers) or offset (shared; physical_size)."""
    return list(kernel._layouts())


def plot_kernel_layouts(kernel: Any, directory: str, buffers: Optional[Sequence[str]] = None) -> list:
    """One PNG per fragment and shared buffer of the kernel, <directory>/<kernel>.<buffer>.png
    (`buffers`: only these names); returns their descriptions (see plot_layout)."""
    _matplotlib()  # fail before the pipeline runs when matplotlib is missing
    os.makedirs(directory, exist_ok=True)
    records = kernel_layouts(kernel)
    if buffers is not None:
        known = [r["name"] for r in records]
        unknown = [b for b in buffers if b not in known]
        if unknown:
            raise CompileError(f"kernel '{kernel.kernel_name}' has no fragment or shared buffer named "
                               f"{', '.join(repr(u) for u in unknown)}", hint=f"its buffers: {', '.join(known)}")
        records = [r for r in records if r["name"] in buffers]
    out = []
    for rec in records:
        path = os.path.join(directory, f"{_safe(kernel.kernel_name)}.{_safe(rec['name'])}.png")
        out.append(plot_layout(rec, path, kernel=kernel.kernel_name))
    return out


def tools_plot_layout(layout: Any, save_directory: str = "./tmp", name: str = "layout", colormap: Any = None,
                      verbose: bool = False, formats: Any = "pdf") -> list:
    """Upstream's tilelang.tools.plot_layout signature: <save_directory>/<name>.<format> for each
    format ("pdf", "png", "svg", or a list); returns the descriptions. colormap and verbose are
    accepted and ignored."""
    formats = [formats] if isinstance(formats, str) else list(formats)
    if formats == ["all"]:
        formats = ["pdf", "png", "svg"]
    return [plot_layout(layout, os.path.join(save_directory, f"{name}.{fmt}"), name=name) for fmt in formats]
