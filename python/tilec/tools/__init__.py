"""`tilelang.tools`: upstream's analysis and plotting tools are not part of tilec; importing
works, using them raises NotImplementedError with what to use instead."""

from __future__ import annotations


def plot_layout(*args, **kwargs):
    raise NotImplementedError("tilelang.tools.plot_layout is not part of tilec: print a layout with "
                              "layout.script() (or TILEC_DUMP_IR=1 for the inferred layouts)")


class Analyzer:
    @staticmethod
    def analysis(*args, **kwargs):
        raise NotImplementedError("tilelang.tools.Analyzer is not part of tilec: kernel.ptxas_info and "
                                  "kernel.launch_plan_summary() describe a compiled kernel")
