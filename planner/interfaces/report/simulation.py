"""The report's simulation section: what ``trainplan simulate`` found (planner.analysis.simulate),
read from a ``trainplan-simulation/1`` summary (``report --simulation FILE``, or the plan file's
``simulation`` after ``simulate --embed``), checked, drawn and tabled.

The summary is input like a plan file: every figure is checked to be a finite number (and a
probability between 0 and 1, histograms with one more edge than counts), every phase named
by the plan, before anything is drawn; text reaches the page escaped.
"""

from __future__ import annotations

import html
import math
from itertools import pairwise
from typing import Any

from matplotlib.figure import Figure

from planner.interfaces.report.charts import _new, label, phase_colours
from planner.interfaces.report.facts import ReportError
from planner.model.plan import Plan

SIM_FORMAT = "trainplan-simulation/1"
_STATS = ("mean", "ci99", "p5", "p50", "p95")


def _num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _stats(d: Any, where: str, errors: list[str]) -> None:
    if not isinstance(d, dict):
        errors.append(f"{where}: expected an object")
        return
    for k in _STATS:
        if not _num(d.get(k)):
            errors.append(f"{where}.{k}: expected a finite number")
    h = d.get("histogram")
    if h is not None:
        counts, edges = (h.get("counts"), h.get("edges")) if isinstance(h, dict) else (None, None)
        if (
            not isinstance(counts, list)
            or not isinstance(edges, list)
            or len(edges) != len(counts) + 1
            or not all(_num(x) and x >= 0 for x in counts)
            or not all(_num(x) for x in edges)
        ):
            errors.append(f"{where}.histogram: expected counts and one more edge, all numbers")


def check_simulation(sim: Any, plan: Plan, source: str) -> dict[str, Any]:
    """The summary, checked against the plan; raises :class:`ReportError` naming each
    problem."""
    errors: list[str] = []
    if not isinstance(sim, dict) or sim.get("format") != SIM_FORMAT:
        raise ReportError(source, [f"expected a {SIM_FORMAT} summary (trainplan simulate)"])
    if not isinstance(sim.get("runs"), int) or sim["runs"] < 2:
        errors.append(f"{source}: runs: expected a whole number of at least 2")
    for k in ("plan_total_usd", "plan_failure_usd"):
        if not _num(sim.get(k)):
            errors.append(f"{source}: {k}: expected a finite number")
    _stats(sim.get("total_usd"), f"{source}: total_usd", errors)
    _stats(sim.get("failure_usd"), f"{source}: failure_usd", errors)
    names = {p.name for p in plan.phases}
    phases = sim.get("phases")
    if not isinstance(phases, list):
        errors.append(f"{source}: phases: expected a list")
        phases = []
    for i, p in enumerate(phases):
        at = f"{source}: phases[{i}]"
        if not isinstance(p, dict) or p.get("name") not in names:
            errors.append(f"{at}.name: expected a phase of the plan")
            continue
        prob: Any = p.get("deadline_probability")
        if not _num(prob) or not 0 <= prob <= 1:
            errors.append(f"{at}.deadline_probability: expected a probability")
        for k in ("deadline_hour", "planned_end_hour", "analytic_failure_usd"):
            if not _num(p.get(k)):
                errors.append(f"{at}.{k}: expected a finite number")
        for k in ("failure_usd", "cost_usd", "end_hour"):
            _stats(p.get(k), f"{at}.{k}", errors)
    if errors:
        raise ReportError(source, [e.removeprefix(f"{source}: ") for e in errors])
    return sim


def chart(sim: dict[str, Any], plan: Plan) -> Figure:
    """Left: the histogram of the total cost over the runs, the plan's figure marked; right:
    the probability each phase's deadline holds."""
    phases = sim["phases"]
    fig, _ = _new(2.2 + 0.3 * max(1, len(phases)))
    left, right = fig.subplots(1, 2)
    h = sim["total_usd"].get("histogram") or {"counts": [], "edges": []}
    edges, counts = h["edges"], h["counts"]
    if counts:
        widths = [b - a for a, b in pairwise(edges)]
        left.bar(edges[:-1], counts, width=widths, align="edge", color="#4e79a7")
    left.axvline(sim["plan_total_usd"], color="#c0392b", linestyle="--")
    left.set_title(
        label(f"Total cost over {sim['runs']:,} runs (USD; dashed: the plan)"), loc="left"
    )
    colours = phase_colours(plan)
    ys = list(range(len(phases)))
    probs = [p["deadline_probability"] for p in phases]
    right.barh(ys, probs, color=[colours.get(p["name"], "#888888") for p in phases], height=0.6)
    right.set_xlim(0, 1.15)
    right.set_yticks(ys, [label(p["name"]) for p in phases])
    right.set_ylim(max(len(phases), 1) - 0.5, -0.5)
    for y, pr in zip(ys, probs, strict=True):
        right.annotate(f"{pr:.1%}", (pr, y), xytext=(3, 0), textcoords="offset points", va="center")
    right.set_title("Probability the deadline holds", loc="left")
    return fig


def section(sim: dict[str, Any] | None, plan: Plan, svg_markup: str = "") -> str:
    """The section's HTML (``svg_markup``: :func:`chart` as inline SVG)."""
    esc = html.escape
    if sim is None:
        return (
            '<p class="muted">No simulation. <code>trainplan simulate PLAN --runs 10000 '
            "--embed</code> replays the plan against random failures and preemptions; the "
            "report then draws the distribution of cost and finish times here.</p>"
        )

    def usd(x: float) -> str:
        return f"{x:,.2f}"

    fl = sim["failure_usd"]
    rows = []
    for p in sim["phases"]:
        c, e = p["cost_usd"], p["end_hour"]
        rows.append(
            "<tr>"
            f"<td>{esc(str(p['name']))}</td>"
            f'<td class="n">{usd(c["mean"])}</td>'
            f'<td class="n">{usd(c["p5"])} - {usd(c["p95"])}</td>'
            f'<td class="n">{usd(p["failure_usd"]["mean"])} '
            f"(expected {usd(p['analytic_failure_usd'])})</td>"
            f'<td class="n">{e["mean"]:,.1f} / {e["p95"]:,.1f}</td>'
            f'<td class="n">{p["planned_end_hour"]:,.0f} / {p["deadline_hour"]:,.0f}</td>'
            f'<td class="n">{p["deadline_probability"]:.1%}</td>'
            "</tr>"
        )
    table = (
        "<table><thead><tr><th>phase</th><th>cost mean, USD</th><th>cost p5 - p95</th>"
        "<th>failure cost mean (plan)</th><th>end hour mean / p95</th>"
        "<th>planned end / deadline hour</th><th>P(deadline holds)</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
    return (
        f"<p>{sim['runs']:,} replays (seed {esc(str(sim.get('seed', '')))}) against random "
        "failures (the instance's failure model), spot preemptions (their series) and "
        "recovery from the last checkpoint. Simulated mean failure cost "
        f"<b>{usd(fl['mean'])} ± {usd(fl['ci99'])}</b> USD (99% interval); the plan expects "
        f"{usd(sim['plan_failure_usd'])}.</p>"
        + (
            f"<figure>{svg_markup}<figcaption>Total cost over the runs and the chance each "
            "deadline holds.</figcaption></figure>"
            if svg_markup
            else ""
        )
        + table
    )
