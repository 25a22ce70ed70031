"""The report's charts as matplotlib figures (Agg canvas; no display, no pyplot state).

Every chart is a function of the plan (and the instance where it needs prices or capacities)
returning a :class:`~matplotlib.figure.Figure`; :func:`figures` builds the set the report
shows, :func:`svg` turns one into markup that can sit inline in an HTML page and
:func:`write_pngs` writes the same set as PNG files.

Times are horizon hours drawn as UTC dates: hour ``t`` covers ``[start + t h, start + (t+1) h)``.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import matplotlib.dates as mdates
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from planner.instance.model import Instance
from planner.interfaces.report.facts import (
    HEADROOM_ALERT,
    PhaseFacts,
    cost_rows,
    energy_weighted_price,
    horizon_hours,
    hour_time,
    phase_facts,
    pool_usage,
    utc,
)
from planner.model.plan import COST_KEYS, Plan
from planner.model.schedule import hour_runs

#: Width of every chart in inches; heights grow with the rows shown.
WIDTH_IN = 11.0
#: Resolution of the PNG files.
PNG_DPI = 110
#: Colours of the cost components (stable across reports so they can be compared).
COST_COLOURS = {
    "rental": "#4e79a7",
    "energy": "#f28e2b",
    "storage": "#59a14f",
    "failure": "#e15759",
    "transfer": "#76b7b2",
    "porting": "#b07aa1",
    "carbon": "#9c755f",
}
ALERT = "#c0392b"
#: Chart names in report order; the last two need the instance.
CHARTS = ("gantt", "costs", "memory", "failures", "prices", "capacity")


def label(text: str) -> str:
    """Text for matplotlib: ``$`` would start mathtext, so it is escaped."""
    return text.replace("$", r"\$")


def phase_colours(plan: Plan) -> dict[str, str]:
    """One colour per phase, in plan order (tab10, then tab20's light shades)."""
    cmap10 = matplotlib.colormaps["tab10"]
    cmap20 = matplotlib.colormaps["tab20"]
    palette = [matplotlib.colors.to_hex(cmap10(i)) for i in range(10)]
    palette += [matplotlib.colors.to_hex(cmap20(2 * i + 1)) for i in range(10)]
    return {p.name: palette[i % len(palette)] for i, p in enumerate(plan.phases)}


def _ink(colour: str) -> str:
    """Text colour on a fill: black when the fill's relative luminance (ITU-R BT.709
    weights on sRGB) is above 0.5, else white."""
    r, g, b = matplotlib.colors.to_rgb(colour)
    return "#111111" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 else "white"


def _new(height_in: float) -> tuple[Figure, FigureCanvasAgg]:
    fig = Figure(figsize=(WIDTH_IN, max(1.8, height_in)), layout="constrained")
    return fig, FigureCanvasAgg(fig)


def _time_axis(ax: Axes, plan: Plan, hours: int) -> None:
    """Horizon hours ``0..hours`` as UTC dates on the x axis."""
    ax.set_xlim(mdates.date2num(hour_time(plan, 0)), mdates.date2num(hour_time(plan, hours)))
    loc = mdates.AutoDateLocator(tz=utc(plan.horizon_start).tzinfo, maxticks=12)
    ax.xaxis.set_major_locator(loc)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc, tz=loc.tz))


def _after(ax: Axes, x: float, y: float, text: str, color: str = "#222222") -> None:
    """A value label just right of ``(x, y)`` (an offset in points, not leading spaces: SVG
    collapses white space)."""
    ax.annotate(
        label(text),
        (x, y),
        xytext=(4, 0),
        textcoords="offset points",
        va="center",
        fontsize=8,
        color=color,
        annotation_clip=False,
    )


def _x(plan: Plan, hour: float) -> float:
    return float(mdates.date2num(hour_time(plan, 0))) + hour / 24.0


def _lanes(spans: Sequence[tuple[str, int, int]]) -> dict[str, int]:
    """Greedy interval partitioning: phases of one pool whose spans overlap get other lanes."""
    ends: list[int] = []
    lane: dict[str, int] = {}
    for name, start, end in sorted(spans, key=lambda s: (s[1], s[2])):
        for i, e in enumerate(ends):
            if e <= start:
                ends[i] = end
                lane[name] = i
                break
        else:
            lane[name] = len(ends)
            ends.append(end)
    return lane


def gantt(plan: Plan, inst: Instance | None = None) -> Figure:
    """Phases as bars on rows of (region, GPU type) pools over the horizon; a pool gets one
    row per set of phases that overlap in time there. A phase in segments is one bar that
    moves across pools: each segment in its pool's row, in the phase's colour, joined at
    every migration by a dashed line from one row to the next."""
    hours = horizon_hours(plan, inst)
    colours = phase_colours(plan)
    # the pieces: (key, phase, pool, hours), one per segment
    pieces = [
        (f"{p.name}#{k}", p.name, (seg.region, seg.gpu), seg.hours, seg)
        for p in plan.phases
        for k, seg in enumerate(p.parts())
        if seg.hours
    ]
    pools = sorted({pool for _, _, pool, _, _ in pieces})
    rows: list[str] = []
    where: dict[str, int] = {}
    for pool in pools:
        members = [(key, min(hs), max(hs) + 1) for key, _, pl, hs, _ in pieces if pl == pool]
        lanes = _lanes(members)
        n = max(lanes.values(), default=0) + 1
        for key, k in lanes.items():
            where[key] = len(rows) + k
        rows += [f"{pool[0]} / {pool[1]}" + (f" ({k + 1})" if n > 1 else "") for k in range(n)]
    legend_rows = math.ceil(len(plan.phases) / 4)
    fig, _ = _new(1.2 + 0.45 * max(1, len(rows)) + 0.2 * legend_rows)
    ax = fig.add_subplot()
    ax.set_title("Schedule: phases on region / GPU pools (time in UTC)", loc="left")
    # Bar width in points: the axes span about WIDTH_IN - 2 inches of the figure.
    pt_per_hour = (WIDTH_IN - 2.0) * 72.0 / max(hours, 1)
    for p in plan.phases:
        mine = [x for x in pieces if x[1] == p.name and x[0] in where]
        if not mine:
            continue
        longest: tuple[int, int, int] | None = None
        for i, (key, _, _, hs, seg) in enumerate(mine):
            y = where[key]
            runs = hour_runs(hs)
            bars = [(_x(plan, s), (e - s) / 24.0) for s, e in runs]
            gpus = f"{seg.gpus:g}" + (f"+{seg.spare_gpus}" if seg.spare_gpus else "")
            what = f"{p.name}: {gpus} x {seg.gpu} {seg.contract}"
            if len(mine) > 1:
                what = f"{p.name}: {len(mine)} segments, from {gpus} x {seg.gpu} {seg.contract}"
            ax.broken_barh(
                bars,
                (y - 0.38, 0.76),
                facecolors=colours[p.name],
                edgecolor="white",
                linewidth=0.5,
                label=label(what) if i == 0 else None,
            )
            for s, e in runs:
                if longest is None or e - s > longest[1] - longest[0]:
                    longest = (s, e, y)
            if i + 1 < len(mine):  # the migration: the bar goes on in the next pool
                nxt_key, _, _, nxt_hours, _ = mine[i + 1]
                x = _x(plan, min(nxt_hours))
                ax.plot(
                    [x, x],
                    [y, where[nxt_key]],
                    color=colours[p.name],
                    linestyle="--",
                    linewidth=1.2,
                )
        # The name goes inside the longest run when it fits (DejaVu Sans bold averages about
        # 0.65 em a glyph), dark on light colours and white on dark ones.
        assert longest is not None
        s, e, y = longest
        if len(p.name) * 0.65 * 8.0 + 6 <= (e - s) * pt_per_hour:
            ax.text(
                _x(plan, (s + e) / 2),
                y,
                label(p.name),
                ha="center",
                va="center",
                color=_ink(colours[p.name]),
                fontsize=8,
                fontweight="bold",
            )
    ax.set_yticks(range(len(rows)), [label(r) for r in rows])
    ax.set_ylim(max(len(rows), 1) - 0.5, -0.5)
    _time_axis(ax, plan, hours)
    ax.grid(axis="x", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    if ax.get_legend_handles_labels()[0]:
        fig.legend(
            loc="outside lower center", ncols=min(4, len(plan.phases)), fontsize=8, frameon=False
        )
    return fig


def costs(plan: Plan) -> Figure:
    """Left: the plan's total per cost component. Right: components stacked per phase (plus
    the plan-wide row). USD; negative components (an SLA credit larger than the loss) extend
    left of zero."""
    rows = cost_rows(plan)
    fig, _ = _new(1.5 + 0.42 * max(len(rows), len(COST_KEYS) * 0.8))
    by_kind, ax = fig.subplots(1, 2, width_ratios=(1.0, 2.2))
    totals = [float(plan.costs.get(k, 0.0)) for k in COST_KEYS]
    by_kind.barh(
        range(len(COST_KEYS)), totals, color=[COST_COLOURS[k] for k in COST_KEYS], height=0.6
    )
    for i, amount in enumerate(totals):
        _after(by_kind, max(amount, 0.0), i, f"{amount:,.2f}")
    by_kind.set_yticks(range(len(COST_KEYS)), list(COST_KEYS))
    by_kind.set_ylim(max(len(COST_KEYS), 1) - 0.5, -0.5)
    by_kind.set_xlim(min(0.0, min(totals) * 1.1), max(max(totals) * 1.45, 1e-6))
    by_kind.set_title(f"By component (total {plan.costs.get('total', 0.0):,.2f})", loc="left")
    by_kind.set_xlabel("USD")
    names = [r[0] for r in rows]
    pos = np.zeros(len(rows))
    neg = np.zeros(len(rows))
    for k in COST_KEYS:
        v = np.asarray([r[1][k] for r in rows])
        if not np.any(np.abs(v) > 0):
            continue
        left = np.where(v >= 0, pos, neg)
        ax.barh(range(len(rows)), v, left=left, color=COST_COLOURS[k], height=0.6)
        pos += np.where(v >= 0, v, 0.0)
        neg += np.where(v < 0, v, 0.0)
    for i, (_, r) in enumerate(rows):
        _after(ax, pos[i], i, f"{sum(r.values()):,.2f}")
    ax.set_yticks(range(len(rows)), [label(n) for n in names])
    ax.set_ylim(max(len(rows), 1) - 0.5, -0.5)
    ax.set_xlim(
        min(0.0, float(neg.min(initial=0.0)) * 1.1), max(float(pos.max(initial=0.0)) * 1.2, 1e-6)
    )
    ax.set_title("By phase, components stacked", loc="left")
    ax.set_xlabel("USD")
    for a in (by_kind, ax):
        a.grid(axis="x", color="#dddddd", linewidth=0.6)
        a.set_axisbelow(True)
    return fig


def memory(facts: Sequence[PhaseFacts]) -> Figure:
    """Memory per GPU per phase (model states, activations, the rest) against the usable
    capacity, with the alert line at ``(1 - HEADROOM_ALERT) x capacity``."""
    fig, _ = _new(1.4 + 0.5 * max(1, len(facts)))
    ax = fig.add_subplot()
    ax.set_title(
        "Memory per GPU against usable capacity, GB "
        f"(dotted: {1 - HEADROOM_ALERT:.0%} of capacity)",
        loc="left",
    )
    parts = (
        ("model states", "model_states_gb", "#4e79a7"),
        ("activations", "activations_gb", "#f28e2b"),
        ("fragmentation, buffers, fixed", "other_memory_gb", "#bab0ac"),
    )
    top = 1e-6
    for i, f in enumerate(facts):
        left = 0.0
        for _, attr, colour in parts:
            v = getattr(f, attr)
            if v:
                ax.barh(i, v, left=left, color=colour, height=0.6)
                left += v
        cap = f.memory_capacity_gb
        if cap is not None:
            ax.plot([cap, cap], [i - 0.42, i + 0.42], color="black", linewidth=2)
            ax.plot(
                [cap * (1 - HEADROOM_ALERT)] * 2,
                [i - 0.42, i + 0.42],
                color="black",
                linewidth=1,
                linestyle=":",
            )
            top = max(top, cap)
        top = max(top, left)
        if f.memory_gb is None:
            text, colour = "no memory figures in the plan", "#666666"
        else:
            head = f" (headroom {f.headroom:.0%})" if f.headroom is not None else ""
            cap_s = f" / {cap:,.1f}" if cap is not None else ""
            text = f"{f.memory_gb:,.1f}{cap_s} GB{head}"
            colour = ALERT if any("memory" in x for x in f.flags) else "#222222"
        _after(ax, max(left, cap or 0.0), i, text, color=colour)
    ax.set_yticks(range(len(facts)), [label(f.name) for f in facts])
    for tick, f in zip(ax.get_yticklabels(), facts, strict=True):
        if f.flags:
            tick.set_color(ALERT)
    ax.set_ylim(max(len(facts), 1) - 0.5, -0.5)
    ax.set_xlim(0, top * 1.45)
    ax.set_xlabel("GB per GPU")
    fig.legend(
        [Patch(color=c) for _, _, c in parts],
        [n for n, _, _ in parts],
        loc="outside lower center",
        fontsize=8,
        ncols=3,
        frameon=False,
    )
    return fig


def failures(facts: Sequence[PhaseFacts]) -> Figure:
    """Expected failures per phase (λ n) and the checkpoint interval (Daly), side by side."""
    fig, _ = _new(1.4 + 0.42 * max(1, len(facts)))
    left, right = fig.subplots(1, 2, sharey=True)
    ys = np.arange(len(facts))
    ef = [f.expected_failures or 0.0 for f in facts]
    left.barh(ys, ef, color="#e15759", height=0.6)
    left.set_title("Expected failures over the phase (λ x hours)", loc="left")
    for i, f in enumerate(facts):
        _after(left, ef[i], i, "n/a" if f.expected_failures is None else f"{ef[i]:.3g}")
    left.set_xlim(0, max(max(ef, default=0.0), 1e-6) * 1.35)
    iv = [(f.checkpoint_interval_s or 0.0) / 3600.0 for f in facts]
    right.barh(ys, iv, color="#59a14f", height=0.6)
    right.set_title("Checkpoint interval, hours (Daly 2006)", loc="left")
    for i, f in enumerate(facts):
        _after(
            right,
            iv[i],
            i,
            "no checkpoints" if f.checkpoint_interval_s is None else f"{iv[i]:.2f} h",
        )
    right.set_xlim(0, max(max(iv, default=0.0), 1e-6) * 1.45)
    left.set_yticks(ys, [label(f.name) for f in facts])
    left.set_ylim(max(len(facts), 1) - 0.5, -0.5)
    return fig


def prices(plan: Plan, inst: Instance) -> Figure:
    """Each region's hourly electricity price over the horizon; the hours a phase runs there
    are shaded and drawn in the phase's colour."""
    regions = list(inst.spec.regions)
    colours = phase_colours(plan)
    fig, _ = _new(0.9 + 1.45 * len(regions))
    axes = fig.subplots(len(regions), 1, sharex=True, squeeze=False)[:, 0]
    edges = np.asarray([_x(plan, h) for h in range(inst.hours + 1)])
    for ax, r in zip(axes, regions, strict=True):
        price = np.asarray(inst.price[r], dtype=float)
        ax.stairs(price, edges, color="#555555", linewidth=1.0, baseline=None)
        for p in plan.phases:
            here = [h for seg in p.parts() if seg.region == r for h in seg.hours]
            if not here:
                continue
            for s, e in hour_runs(tuple(here)):
                ax.axvspan(edges[s], edges[e], color=colours[p.name], alpha=0.18, linewidth=0)
                ax.stairs(
                    price[s:e],
                    edges[s : e + 1],
                    color=colours[p.name],
                    linewidth=2.2,
                    baseline=None,
                    label=label(p.name) if s == min(here) else "_nolegend_",
                )
        paid = energy_weighted_price(plan, inst, r)
        paid_s = f"; paid {paid:,.1f} (energy-weighted)" if paid is not None else "; unused"
        ax.set_title(
            label(f"{r} — mean {price.mean():,.1f} USD/MWh{paid_s}"), loc="left", fontsize=9
        )
        ax.set_ylabel("USD/MWh")
        lo, hi = float(price.min()), float(price.max())
        pad = max(1.0, 0.12 * (hi - lo))
        ax.set_ylim(min(0.0, lo - pad), hi + pad)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
        ax.grid(axis="x", color="#eeeeee", linewidth=0.6)
    _time_axis(axes[-1], plan, inst.hours)
    return fig


def capacity_pools(plan: Plan, inst: Instance) -> list[tuple[str, str]]:
    """Pools drawn in the capacity chart: those the plan uses or reserves."""
    used = {(seg.region, seg.gpu) for p in plan.phases for seg in p.parts()}
    return sorted(used | {(r, g) for r, g, _ in plan.reserved})


def capacity(plan: Plan, inst: Instance) -> Figure:
    """GPUs held per pool and hour (phases stacked) against the pool's capacity; reserved
    commitments dashed; hours over capacity marked red."""
    pools = capacity_pools(plan, inst)
    usage = pool_usage(plan, inst.hours)
    colours = phase_colours(plan)
    fig, _ = _new(0.9 + 1.6 * max(1, len(pools)))
    axes = fig.subplots(max(1, len(pools)), 1, sharex=True, squeeze=False)[:, 0]
    edges = np.asarray([_x(plan, h) for h in range(inst.hours + 1)])
    reserved = {(r, g): n for r, g, n in plan.reserved}
    for ax, pool in zip(axes, pools, strict=False):
        cap = np.asarray(inst.capacity.get(pool, np.zeros(inst.hours)), dtype=float)
        base = np.zeros(inst.hours)
        for name, use in usage.get(pool, {}).items():
            ax.stairs(
                base + use,
                edges,
                baseline=base,
                fill=True,
                color=colours[name],
                alpha=0.85,
                label=label(name),
            )
            base = base + use
        ax.stairs(cap, edges, color="black", linewidth=1.2, baseline=None, label="capacity")
        if pool in reserved:
            ax.axhline(
                reserved[pool],
                color="#4e79a7",
                linestyle="--",
                linewidth=1.2,
                label=f"reserved {reserved[pool]}",
            )
        over = np.flatnonzero(base > cap + 1e-9)
        if over.size:
            ax.plot(edges[over] + 0.5 / 24, base[over], "v", color=ALERT, label="over capacity")
        held = float(base.sum())
        avail = float(cap.sum())
        share = f"{held / avail:.1%} of available GPU-hours" if avail > 0 else "no capacity"
        ax.set_title(
            label(
                f"{pool[0]} / {pool[1]} — peak {base.max():g} of "
                f"{cap.max():g} GPUs; {held:,.0f} GPU-hours held, {share}"
            ),
            loc="left",
            fontsize=9,
        )
        ax.set_ylabel("GPUs")
        ax.set_ylim(0, max(float(cap.max()), float(base.max()), 1.0) * 1.15)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    _time_axis(axes[-1], plan, inst.hours)
    return fig


def figures(plan: Plan, inst: Instance | None) -> dict[str, Figure]:
    """The report's charts by name (:data:`CHARTS`); without an instance, no price or
    capacity chart."""
    facts = [phase_facts(p) for p in plan.phases]
    with matplotlib.rc_context(
        {
            "font.size": 9.0,
            "axes.titlesize": 10.0,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    ):
        out = {
            "gantt": gantt(plan, inst),
            "costs": costs(plan),
            "memory": memory(facts),
            "failures": failures(facts),
        }
        if inst is not None:
            out["prices"] = prices(plan, inst)
            out["capacity"] = capacity(plan, inst)
    return out


_ID = re.compile(r'\bid="([^"]+)"')


def svg(fig: Figure, prefix: str, title: str) -> str:
    """The figure as an ``<svg>`` element for inline use in HTML5: no XML prolog or DOCTYPE,
    no namespace URIs (the HTML parser puts ``<svg>`` and ``xlink:href`` in their namespaces
    itself), every ``id`` and reference prefixed so several charts can share a page, and a
    ``<title>`` for screen readers."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": prefix}):
        fig.savefig(
            buf,
            format="svg",
            metadata={"Date": None, "Creator": None, "Format": None, "Type": None},
        )
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", text)
    ids = set(_ID.findall(text))
    text = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', text)
    text = re.sub(
        r'(href="#|url\(#)([^")]+)',
        lambda m: m.group(1) + (f"{prefix}-{m.group(2)}" if m.group(2) in ids else m.group(2)),
        text,
    )
    head, rest = text.split(">", 1)
    esc = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    head = re.sub(r'\s(width|height)="[^"]*"', "", head)
    return f'{head} role="img" class="chart"><title>{esc}</title>{rest}'


def write_pngs(plan: Plan, inst: Instance | None, directory: str | Path) -> list[Path]:
    """Write the report's charts as ``<name>.png`` into ``directory`` (created if missing);
    returns the paths in :data:`CHARTS` order. Each file replaces its old self through a
    temporary file (:func:`planner.outfiles.replacing`): a link planted in the folder is
    refused, never written through."""
    from planner.outfiles import check_output, replacing

    d = Path(directory)
    check_output(d, folder=True)
    paths: list[Path] = []
    for name, fig in figures(plan, inst).items():
        path = d / f"{name}.png"
        check_output(path)
        with replacing(path) as tmp:
            fig.savefig(tmp, format="png", dpi=PNG_DPI)
        paths.append(path)
    return paths
