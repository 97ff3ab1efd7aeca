"""`tilelang.tools`: plot_layout draws a layout (tilec.layout_plot, with upstream's signature);
Analyzer gives a static flops / bytes / roofline estimate (tools/analyzer.py)."""

from __future__ import annotations

from ..layout_plot import tools_plot_layout as plot_layout  # noqa: F401


from .analyzer import AnalysisResult, Analyzer  # noqa: E402
