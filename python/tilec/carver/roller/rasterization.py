"""Rasterization plans as markers (tilec rasterizes with T.use_swizzle)."""


class Rasterization:
    pass


class NoRasterization(Rasterization):
    pass


class Rasterization2DRow(Rasterization):
    def __init__(self, panel_width: int = 8):
        self.panel_width = panel_width


class Rasterization2DColumn(Rasterization):
    def __init__(self, panel_width: int = 8):
        self.panel_width = panel_width
