"""`tilelang.tools.Analyzer`: a static estimate of what a kernel does, read from its tile IR (no
compile, no GPU): the floating-point work of its T.gemm ops and the bytes its tile copies move
to and from global memory, each times the trips of the loops around it and the blocks of the
grid, then a roofline time on the device (the slower of compute and memory).

    result = Analyzer.analysis(prim_func, CUDA("cuda"))
    result.total_flops, result.total_global_bytes, result.estimated_time (s), result.tflops,
    result.bandwidth_GBps

Loops and grids of symbolic extent count once (the estimate is for the shapes the function was
specialised to). Element-wise T.Parallel work is not counted, as in TileLang's analyzer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Dense tensor-core peak (FLOP/s) and memory bandwidth (B/s) per compute capability.
_DEVICE_PEAKS = {90: (989e12, 4.8e12), 100: (2250e12, 8.0e12), 89: (330e12, 1.0e12), 86: (142e12, 0.94e12),
                 80: (312e12, 2.0e12)}
_DTYPE_BYTES = {"float64": 8, "int64": 8, "uint64": 8, "float32": 4, "int32": 4, "uint32": 4, "float16": 2,
                "bfloat16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "bool": 1, "float8_e4m3": 1,
                "float8_e5m2": 1}


@dataclass(frozen=True)
class AnalysisResult:
    total_flops: int
    total_global_bytes: int
    estimated_time: float
    tflops: float
    bandwidth_GBps: float


def _const(e: Any, fallback: int = 1) -> int:
    v = e.as_int() if hasattr(e, "as_int") else e
    return int(v) if isinstance(v, int) and v > 0 else fallback


def _region_extents(region: Any) -> list:
    return [_const(extent) for _, extent in region.region]


def _numel(extents: list) -> int:
    n = 1
    for e in extents:
        n *= e
    return n


class _Walk:
    def __init__(self):
        self.flops = 0
        self.bytes = 0

    def stmt(self, s: Any, trips: int) -> None:
        kind = s.kind
        if kind == "Seq":
            for x in s.stmts:
                self.stmt(x, trips)
        elif kind == "For":
            self.stmt(s.body, trips * _const(s.extent))
        elif kind == "KernelLaunch":
            blocks = 1
            for g in s.grid:
                blocks *= _const(g)
            self.stmt(s.body, trips * blocks)
        elif kind == "If":
            self.stmt(s.then_case, trips)
            if s.else_case is not None:
                self.stmt(s.else_case, trips)
        elif kind in ("Let", "Allocate", "Annotate"):
            self.stmt(s.body, trips)
        elif kind == "TileOp":
            self.tile_op(s, trips)

    def tile_op(self, s: Any, trips: int) -> None:
        regions = [a for a in s.args if hasattr(a, "region")]
        if s.op == "gemm" and len(regions) >= 3:
            a, _, c = regions[:3]
            m, n = _region_extents(c)[-2:]
            ea = _region_extents(a)
            k = ea[-1] if not s.attrs.get("transpose_A") else ea[-2]
            self.flops += 2 * m * n * k * trips
        elif s.op in ("copy", "async_copy", "tma_copy") and len(regions) >= 2:
            for r in regions[:2]:
                if r.buffer.scope == "global":
                    other = regions[1] if r is regions[0] else regions[0]
                    self.bytes += _numel(_region_extents(other)) * _DTYPE_BYTES.get(str(r.buffer.dtype), 4) * trips


class Analyzer:
    @staticmethod
    def analysis(fn: Any, device: Any = None) -> AnalysisResult:
        func = fn
        for attr in ("prim_func", "func"):
            func = getattr(func, attr, func)
        if not hasattr(func, "body"):
            raise TypeError(f"Analyzer.analysis takes a T.prim_func (or kernel.get_tir(...)), not {type(fn).__name__}")
        walk = _Walk()
        walk.stmt(func.body, 1)
        sm = getattr(device, "sm_version", 90)
        peak_flops, peak_bw = _DEVICE_PEAKS.get(sm, _DEVICE_PEAKS[90])
        time = max(walk.flops / peak_flops, walk.bytes / peak_bw, 1e-9)
        return AnalysisResult(total_flops=walk.flops, total_global_bytes=walk.bytes, estimated_time=time,
                              tflops=walk.flops / time / 1e12, bandwidth_GBps=walk.bytes / time / 1e9)
