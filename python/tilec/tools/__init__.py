"""`tilelang.tools`: plot_layout draws a layout (tilec.layout_plot, with upstream's signature);
upstream's analysis tools are not part of tilec: importing works, using them raises
NotImplementedError with what to use instead."""

from __future__ import annotations

from ..layout_plot import tools_plot_layout as plot_layout  # noqa: F401


class Analyzer:
    @staticmethod
    def analysis(*args, **kwargs):
        raise NotImplementedError("tilelang.tools.Analyzer is not part of tilec: kernel.ptxas_info and "
                                  "kernel.launch_plan_summary() describe a compiled kernel")
