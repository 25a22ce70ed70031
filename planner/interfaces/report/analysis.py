"""Charts of the analyses beside a plan: the lever waterfall (``trainplan levers --png``) and
the cost frontier (``trainplan pareto --png``). Matplotlib on the Agg canvas, as the report's
own charts (:mod:`planner.interfaces.report.charts`): no display, no pyplot state."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from planner.analysis.levers import LeverReport
from planner.analysis.pareto import ParetoPoint
from planner.interfaces.report.charts import label

PNG_DPI = 120


def waterfall(report: LeverReport) -> Figure:
    """The baseline, each lever's saving alone as a step down, the interaction (all levers'
    saving minus the sum of single savings), and the all-levers cost."""
    base = report.baseline.cost or 0.0
    labels = ["baseline"]
    bottoms = [0.0]
    heights = [base]
    colors = ["#4c72b0"]
    level = base
    steps = [(r.key, r.saving_usd or 0.0) for r in report.levers]
    inter = report.interaction_usd
    if inter is not None:
        steps.append(("interaction", inter))
    for key, saving in steps:
        new = level - saving
        labels.append(key)
        bottoms.append(min(level, new))
        heights.append(abs(saving))
        colors.append("#55a868" if saving >= 0 else "#c44e52")
        level = new
    labels.append("all levers")
    bottoms.append(0.0)
    heights.append(report.all_levers.cost or 0.0)
    colors.append("#4c72b0")
    fig = Figure(figsize=(max(6.0, 0.8 * len(labels)), 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    xs = np.arange(len(labels))
    ax.bar(xs, heights, bottom=bottoms, color=colors)
    for x, b, h, lab in zip(xs.tolist(), bottoms, heights, labels, strict=True):
        if h <= 0 and lab not in ("baseline", "all levers"):
            continue
        text = f"{h:,.0f}" if h >= 100 else f"{h:,.2f}"
        ax.text(x, b + h, text, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(xs)
    ax.set_xticklabels([label(lab) for lab in labels], rotation=40, ha="right")
    ax.set_ylabel("cost (USD)")
    ax.set_title(label(f"{report.instance}: {report.headline()}"))
    return fig


def frontier(points: list[ParetoPoint], title: str = "") -> Figure:
    """Cost against the cap, as steps (a cap between two points costs the tighter point's)."""
    pts = [p for p in points if p.cost is not None]
    fig = Figure(figsize=(6.5, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if pts:
        xs = [p.x for p in pts]
        ys = [float(p.cost or 0.0) for p in pts]
        ax.step(xs, ys, where="post", color="#4c72b0")
        ax.plot(xs, ys, "o", color="#4c72b0")
    vs = points[0].vs if points else "deadline"
    ax.set_xlabel(
        "makespan cap (hours from horizon start)" if vs == "deadline" else "emissions cap (t CO2)"
    )
    ax.set_ylabel("cost (USD)")
    ax.set_title(label(title or f"cost frontier vs {vs}"))
    ax.grid(True, alpha=0.3)
    return fig


def save_png(fig: Figure, path: str | Path) -> None:
    """Write ``fig`` as a PNG file through a temporary file that replaces ``path`` (never
    through a link: :func:`planner.outfiles.replacing`)."""
    from planner.outfiles import replacing

    with replacing(Path(path)) as tmp:
        fig.savefig(tmp, format="png", dpi=PNG_DPI)
