"""`tilelang.tools`: Analyzer (a static flops / bytes / roofline estimate, tools/analyzer.py);
upstream's plotting tools are not part of tilec: importing works, using them raises
NotImplementedError with what to use instead."""

from __future__ import annotations


def plot_layout(*args, **kwargs):
    raise NotImplementedError("tilelang.tools.plot_layout is not part of tilec: print a layout with "
                              "layout.script() (or TILEC_DUMP_IR=1 for the inferred layouts)")


from .analyzer import AnalysisResult, Analyzer  # noqa: E402
