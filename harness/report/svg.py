"""A minimal inline-SVG chart: linear/log axes with ticks, shaded windows, lines, points, legend.

Contract: `Chart(...).render()` returns one self-contained `<svg>` element (no scripts, no
external references, every text HTML-escaped). Coordinates outside the ranges are clamped to
the plot area so a stray value cannot draw over the labels. Output is deterministic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from html import escape

OK, FAIL, INFO = "#2a9d4b", "#d62728", "#f0a202"
TYPE_COLOURS = {"ok": OK, "fail": FAIL, "info": INFO}
PALETTE = ("#1f77b4", "#9467bd", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#ff7f0e")
FAULT_FILL = "#7f7f7f"


def nice_ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    """About n round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Decades in [lo, hi]; with fewer than three of them, 2x and 5x as well."""
    lo_e, hi_e = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    decades = [10.0**e for e in range(lo_e, hi_e + 1)]
    ticks = [d for d in decades if lo <= d <= hi]
    if len(ticks) < 3:
        ticks = [d * m for d in decades for m in (1, 2, 5) if lo <= d * m <= hi]
    return ticks


def fmt(v: float) -> str:
    if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-2):
        return f"{v:.0e}"
    return f"{v:g}"


class Chart:
    """One plot. x/y ranges are in data units; `log_y` uses a base-10 y axis (lo > 0)."""

    MARGIN = (46, 14, 34, 58)  # top, right, bottom, left

    def __init__(self, title: str, x_range: tuple[float, float], y_range: tuple[float, float],
                 x_label: str = "time (s)", y_label: str = "", width: int = 960,
                 height: int = 260, log_y: bool = False, css_class: str = "chart",
                 ident: str | None = None) -> None:
        # ident names the clip path: unique per page (the caller knows the page).
        self.ident = re.sub(r"[^A-Za-z0-9_-]+", "-", ident or title)
        self.title, self.x_label, self.y_label = title, x_label, y_label
        self.width, self.height, self.log_y, self.css_class = width, height, log_y, css_class
        x0, x1 = x_range
        y0, y1 = y_range
        self.x0, self.x1 = x0, (x1 if x1 > x0 else x0 + 1)
        if log_y:
            y0 = max(y0, 1e-3)
            y1 = max(y1, y0 * 10)
        self.y0, self.y1 = y0, (y1 if y1 > y0 else y0 + 1)
        top, right, bottom, left = self.MARGIN
        self.px0, self.px1 = left, width - right
        self.py0, self.py1 = height - bottom, top  # y grows downwards in SVG
        self._back: list[str] = []  # shading, drawn under the data
        self._data: list[str] = []
        self._front: list[str] = []  # markers and labels over the data
        self._legend: list[tuple[str, str, str]] = []
        self._label_ends = [-math.inf] * 3  # where the last fault label on each line ends (px)

    # -------------------------------------------------------------- scales

    def sx(self, v: float) -> float:
        v = min(max(v, self.x0), self.x1)
        return round(self.px0 + (v - self.x0) / (self.x1 - self.x0) * (self.px1 - self.px0), 1)

    def sy(self, v: float) -> float:
        if self.log_y:
            v = min(max(v, self.y0), self.y1)
            f = (math.log10(v) - math.log10(self.y0)) / (math.log10(self.y1) - math.log10(self.y0))
        else:
            v = min(max(v, self.y0), self.y1)
            f = (v - self.y0) / (self.y1 - self.y0)
        return round(self.py0 + f * (self.py1 - self.py0), 1)

    # -------------------------------------------------------------- elements

    def shade(self, x0: float, x1: float, label: str, title: str | None = None) -> None:
        """A shaded time window (a fault), labelled at the top of the plot area; `title` (default
        the label) is the hover text. Labels go in the first of three lines where they do not
        run into the one before them (the third when none is free)."""
        a, b = self.sx(x0), self.sx(x1)
        h = self.py0 - self.py1
        self._back.append(
            f'<rect class="fault" x="{a}" y="{self.py1}" width="{max(b - a, 1.5)}" '
            f'height="{h}" fill="{FAULT_FILL}" fill-opacity="0.18">'
            f"<title>{escape(title or label)}: {x0:.2f}s - {x1:.2f}s</title></rect>"
        )
        ends = self._label_ends
        row = next((i for i, end in enumerate(ends) if end < a), len(ends) - 1)
        ends[row] = a + 2 + 5.6 * len(label)  # ~5.6 px per character at font-size 10
        y = self.py1 - 4 - 11 * row
        self._front.append(
            f'<text class="fault-label" x="{a + 2}" y="{y}" font-size="10" fill="#555">'
            f"{escape(label)}</text>"
        )

    def vline(self, x: float, label: str, colour: str = "#000", css_class: str = "marker",
              row: int = 0) -> None:
        a = self.sx(x)
        self._front.append(
            f'<g class="{css_class}"><line x1="{a}" x2="{a}" y1="{self.py1}" y2="{self.py0}" '
            f'stroke="{colour}" stroke-width="1.2" stroke-dasharray="4 3"/>'
            f'<text x="{a + 3}" y="{self.py1 + 10 + 11 * (row % 3)}" font-size="10" '
            f'fill="{colour}">{escape(label)}</text></g>'
        )

    def line(self, points: Sequence[tuple[float, float]], colour: str, label: str | None = None,
             dash: str | None = None, width: float = 1.5, step: bool = False) -> None:
        """A polyline; `step` draws a step function (value holds until the next point)."""
        if not points:
            return
        pts: list[tuple[float, float]] = []
        for i, (x, y) in enumerate(points):
            if step and i > 0:
                pts.append((x, points[i - 1][1]))
            pts.append((x, y))
        coords = " ".join(f"{self.sx(x)},{self.sy(y)}" for x, y in pts)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        self._data.append(
            f'<polyline class="series" points="{coords}" fill="none" stroke="{colour}" '
            f'stroke-width="{width}"{dash_attr}/>'
        )
        if label:
            self._legend.append((label, colour, dash or ""))

    def points(self, pts: Iterable[tuple[float, float]], colour: str, label: str | None = None,
               r: float = 2.0, css_class: str = "pt") -> None:
        body = "".join(
            f'<circle cx="{self.sx(x)}" cy="{self.sy(y)}" r="{r}"/>' for x, y in pts
        )
        self._data.append(
            f'<g class="{css_class}" fill="{colour}" fill-opacity="0.75">{body}</g>'
        )
        if label:
            self._legend.append((label, colour, "dot"))

    def note(self, text: str) -> None:
        self._front.append(
            f'<text x="{self.px1}" y="{self.height - 4}" font-size="10" text-anchor="end" '
            f'fill="#666">{escape(text)}</text>'
        )

    # -------------------------------------------------------------- render

    def _axes(self) -> str:
        out = [
            f'<rect x="{self.px0}" y="{self.py1}" width="{self.px1 - self.px0}" '
            f'height="{self.py0 - self.py1}" fill="#fff" stroke="#999"/>'
        ]
        for t in nice_ticks(self.x0, self.x1, 10):
            x = self.sx(t)
            out.append(
                f'<line x1="{x}" x2="{x}" y1="{self.py0}" y2="{self.py0 + 4}" stroke="#999"/>'
                f'<text x="{x}" y="{self.py0 + 15}" font-size="10" text-anchor="middle">'
                f"{fmt(t)}</text>"
            )
        yt = log_ticks(self.y0, self.y1) if self.log_y else nice_ticks(self.y0, self.y1, 5)
        for t in yt:
            y = self.sy(t)
            out.append(
                f'<line x1="{self.px0}" x2="{self.px1}" y1="{y}" y2="{y}" stroke="#eee"/>'
                f'<text x="{self.px0 - 4}" y="{y + 3}" font-size="10" text-anchor="end">'
                f"{fmt(t)}</text>"
            )
        out.append(
            f'<text x="{(self.px0 + self.px1) / 2}" y="{self.height - 4}" font-size="11" '
            f'text-anchor="middle">{escape(self.x_label)}</text>'
            f'<text x="12" y="{(self.py0 + self.py1) / 2}" font-size="11" text-anchor="middle" '
            f'transform="rotate(-90 12 {(self.py0 + self.py1) / 2})">'
            f"{escape(self.y_label)}</text>"
            f'<text x="{self.px0}" y="14" font-size="13" font-weight="bold">'
            f"{escape(self.title)}</text>"
        )
        return "".join(out)

    def _legend_svg(self) -> str:
        out, x = [], self.px1
        for label, colour, dash in reversed(self._legend):
            w = 26 + 6.2 * len(label)
            x -= w
            if dash == "dot":
                mark = f'<circle cx="{x + 8}" cy="10" r="3" fill="{colour}"/>'
            else:
                d = f' stroke-dasharray="{dash}"' if dash else ""
                mark = (f'<line x1="{x}" x2="{x + 16}" y1="10" y2="10" stroke="{colour}" '
                        f'stroke-width="2"{d}/>')
            out.append(f'{mark}<text x="{x + 19}" y="14" font-size="10">{escape(label)}</text>')
        return '<g class="legend">' + "".join(out) + "</g>"

    def render(self) -> str:
        clip = f"clip-{self.ident}"
        return (
            f'<svg class="{self.css_class}" xmlns="http://www.w3.org/2000/svg" '
            f'width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" role="img" '
            f'aria-label="{escape(self.title)}">'
            f'<defs><clipPath id="{clip}"><rect x="{self.px0}" y="{self.py1 - 30}" '
            f'width="{self.px1 - self.px0 + 1}" height="{self.py0 - self.py1 + 31}"/>'
            f"</clipPath></defs>"
            + self._axes()
            + f'<g clip-path="url(#{clip})">'
            + "".join(self._back) + "".join(self._data) + "</g>"
            + "".join(self._front)
            + self._legend_svg()
            + "</svg>"
        )
