"""One self-contained HTML page for a plan: charts as inline SVG, tables with the numbers, no
scripts, fonts, images or links that leave the file, so it opens offline and can be mailed.

The page opens with the answer: the plan's total cost against the lever-free baseline, the
saving per cost component and per lever (:mod:`planner.analysis.attribution`), then the schedule
(Gantt and table, times in UTC or in each region's local time). Then: costs per phase, the
solver (status, bound, gap), monitoring thresholds (:mod:`planner.interfaces.report.facts`), memory
per GPU, electricity prices and capacity use (both need the instance), failures and checkpoints.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from planner.analysis.attribution import Attribution
from planner.instance.model import Instance
from planner.instance.offers import power_note
from planner.interfaces.replan import describe
from planner.interfaces.report.charts import capacity_pools, figures, svg
from planner.interfaces.report.facts import (
    HEADROOM_ALERT,
    UTILISATION_ALERT,
    PhaseFacts,
    check_hours,
    check_match,
    cost_rows,
    energy_weighted_price,
    hour_time,
    phase_facts,
    pool_usage,
)
from planner.model.plan import COST_KEYS, Plan
from planner.model.result import SolveHeader

#: Section ids, in page order: the answer first.
SECTIONS = (
    "answer",
    "schedule",
    "costs",
    "solver",
    "monitoring",
    "memory",
    "prices",
    "capacity",
    "failures",
    "simulation",
)

_TITLES = {
    "answer": "The answer: cost against the baseline",
    "solver": "Solver",
    "monitoring": "Monitoring thresholds",
    "schedule": "Schedule",
    "costs": "Cost breakdown",
    "memory": "Memory per GPU",
    "prices": "Electricity prices",
    "capacity": "Utilisation of capacity",
    "failures": "Failures and checkpoints",
    "simulation": "Simulation: cost and deadlines under failures",
}

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
margin:0 auto;max-width:1180px;padding:0 1.2rem 3rem;color:#1d1d1f;line-height:1.4}
h1{font-size:1.6rem;margin:1.2rem 0 .3rem}h2{font-size:1.25rem;margin:2rem 0 .5rem;
border-bottom:1px solid #ddd;padding-bottom:.2rem}
nav a{margin-right:.9rem}.muted{color:#666}.alert{color:#c0392b;font-weight:600}
.ok{color:#2e7d32}table{border-collapse:collapse;margin:.6rem 0;font-size:.88rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f6}td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.total td{font-weight:700;background:#fafafa}
svg.chart{width:100%;height:auto;display:block;margin:.4rem 0}
figure{margin:.6rem 0}figcaption{font-size:.85rem;color:#555}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:.5rem .8rem;margin:.6rem 0}
.answer{font-size:1.25rem;margin:.4rem 0 .6rem}.answer b{font-size:1.5rem}
.pair{display:flex;flex-wrap:wrap;gap:1.5rem;align-items:flex-start}
.pair>div{flex:1 1 380px}.pair h3{font-size:1rem;margin:.3rem 0}
td.neg{color:#c0392b}
"""


def esc(x: object) -> str:
    """``x`` as HTML text, quotes escaped too: every value put in the report goes through this."""
    return html.escape(str(x), quote=True)


def usd(x: float | None) -> str:
    """Money as in every table of the report: ``1,234.56`` (USD)."""
    return "n/a" if x is None or not math.isfinite(x) else f"{x:,.2f}"


def _fmt(x: float | None, spec: str, unit: str = "") -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:{spec}}{unit}"


def _when(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M UTC")


def _table(
    head: Sequence[str],
    rows: Iterable[Sequence[str]],
    numeric: Sequence[bool],
    total_last: bool = False,
) -> str:
    """A table of already-escaped cells; ``numeric`` right-aligns columns."""
    out = ["<table><thead><tr>", *(f"<th>{h}</th>" for h in head), "</tr></thead><tbody>"]
    body = list(rows)
    for i, r in enumerate(body):
        cls = ' class="total"' if total_last and i == len(body) - 1 else ""
        cells = "".join(
            f'<td class="n">{c}</td>' if n else f"<td>{c}</td>"
            for c, n in zip(r, numeric, strict=True)
        )
        out.append(f"<tr{cls}>{cells}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _figure(markup: str, caption: str) -> str:
    return f"<figure>{markup}<figcaption>{caption}</figcaption></figure>"


def _solver(plan: Plan, head: SolveHeader, emissions: str) -> str:
    gap = "n/a" if head.gap is None else f"{head.gap:.4%}"
    runtime = "n/a" if head.runtime_s is None else f"{head.runtime_s:,.1f} s"
    rows = [
        ("instance", esc(plan.instance)),
        ("solver", esc(head.solver)),
        ("termination", esc(head.termination)),
        ("solution status", esc(head.status)),
        ("objective (weighted), USD", usd(plan.objective)),
        ("bound, USD", usd(head.bound)),
        ("gap", gap),
        ("runtime", runtime),
        ("total cost, USD", usd(plan.costs.get("total"))),
        ("energy", f"{plan.energy_kwh:,.1f} kWh"),
        ("emissions", esc(emissions)),
        ("horizon start", esc(_when(hour_time(plan, 0)))),
    ]
    out = _table(("", "value"), rows, (False, False))
    if plan.reserved:
        out += (
            "<p>Reserved commitments (paid for the whole horizon): "
            + ", ".join(f"{n} x {esc(g)} in {esc(r)}" for r, g, n in plan.reserved)
            + "</p>"
        )
    if head.notes:
        out += "<p>Notes:</p><ul>" + "".join(f"<li>{esc(n)}</li>" for n in head.notes) + "</ul>"
    return out


def _monitoring(facts: Sequence[PhaseFacts]) -> str:
    flagged = [f for f in facts if f.flags]
    intro = (
        f"<p>Monitoring thresholds (lever 4.3 of the article quoted in trainplan's "
        f"docs/levers.md): alert when GPU utilisation falls below "
        f"{UTILISATION_ALERT:.0%} or memory is about to overflow; here a phase is flagged "
        f"when its predicted utilisation (work hours x GPUs / (hours x (GPUs + spares))) "
        f"is below {UTILISATION_ALERT:.0%} or less than {HEADROOM_ALERT:.0%} of its usable "
        f"memory per GPU is free.</p>"
    )
    if flagged:
        intro += (
            f'<p class="alert">{len(flagged)} of {len(facts)} phases flagged: '
            + ", ".join(esc(f.name) for f in flagged)
            + "</p>"
        )
    else:
        intro += f'<p class="ok">No phase crosses a threshold ({len(facts)} phases).</p>'
    rows = []
    for f in facts:
        mem = (
            "n/a"
            if f.memory_gb is None
            else f"{f.memory_gb:,.1f} / {_fmt(f.memory_capacity_gb, ',.1f')}"
        )
        flags = "; ".join(esc(x) for x in f.flags) if f.flags else "none"
        rows.append(
            (
                esc(f.name),
                _fmt(f.utilisation, ".1%"),
                mem,
                _fmt(f.headroom, ".1%"),
                f'<span class="alert">{flags}</span>' if f.flags else flags,
            )
        )
    return intro + _table(
        ("phase", "predicted GPU utilisation", "memory GB / usable GB", "memory headroom", "flags"),
        rows,
        (False, True, True, True, False),
    )


def _schedule(plan: Plan, inst: Instance | None, local_times: bool) -> str:
    """The schedule table; with ``local_times`` (and an instance) start and end are in the
    time zone of the phase's region, else in UTC."""
    rows = []
    for p in plan.phases:
        gpus = f"{p.gpus:g}" + (f" + {p.spare_gpus} spare" if p.spare_gpus else "")
        layout = f"{p.precision}, ZeRO-{p.zero}, recompute {p.recompute}, tp {p.tp}, pp {p.pp}"
        zone = None
        if local_times and inst is not None and p.region in inst.spec.regions:
            zone = ZoneInfo(inst.region(p.region).timezone)

        def when(h: int, zone: ZoneInfo | None = zone) -> str:
            t = hour_time(plan, h)
            return _when(t) if zone is None else t.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z")

        start = when(p.start_hour) if p.hours else "n/a"
        end = when(p.end_hour) if p.hours else "n/a"
        pieces = len(phase_facts(p).segments)
        rows.append(
            (
                esc(p.name),
                esc(p.region),
                esc(p.gpu),
                esc(p.contract),
                esc(gpus),
                esc(layout),
                esc(p.tier),
                esc(start),
                esc(end),
                str(len(p.hours)),
                str(pieces),
            )
        )
    zone_note = "local time of the region" if local_times and inst is not None else "UTC"
    return _table(
        (
            "phase",
            "region",
            "GPU",
            "contract",
            "GPUs",
            "layout",
            "storage tier",
            f"start ({zone_note})",
            f"end ({zone_note})",
            "hours",
            "segments",
        ),
        rows,
        (False,) * 9 + (True, True),
    )


def _signed(x: float) -> str:
    """A saving: negative ones (the plan pays more of this component) marked."""
    return f'<span class="neg">{usd(x)}</span>' if x < -0.005 else usd(x)


def _answer(plan: Plan, a: Attribution | None, why_none: str) -> str:
    """The first screen: total against the baseline, per component, per lever."""
    total = usd(plan.costs.get("total"))
    if a is None:
        return (
            f'<p class="answer">Total cost <b>USD {total}</b>.</p>'
            f'<p class="note">No lever-free baseline to compare with: {esc(why_none)}</p>'
        )
    pct = "" if a.saving_pct is None else f" ({a.saving_pct:.1%})"
    verb = "less" if a.saving >= 0 else "more"
    head = (
        f'<p class="answer" id="headline">Total cost <b id="plan-total">USD '
        f'{usd(a.plan_objective)}</b>: <b id="saving">USD {usd(abs(a.saving))}{pct} {verb}</b> '
        f'than the lever-free baseline (<span id="baseline-total">USD '
        f"{usd(a.baseline_objective)}</span>).</p>"
    )
    saving = a.component_savings()
    comp_rows = []
    for k in (*COST_KEYS, "total"):
        b, v = a.baseline_costs.get(k, 0.0), plan.costs.get(k, 0.0)
        comp_rows.append((esc(k), usd(b), usd(v), _signed(saving[k])))
    comps = _table(
        ("USD", "baseline", "plan", "saving"),
        comp_rows,
        (False, True, True, True),
        total_last=True,
    )
    lever_rows = []
    for st in a.levers:
        share = f"{st.saving / a.saving:.1%}" if abs(a.saving) > 1e-9 else "-"
        lever_rows.append((esc(st.label), _signed(st.saving), share, esc(st.note)))
    lever_rows.append(("total", _signed(a.saving), "100.0%" if abs(a.saving) > 1e-9 else "-", ""))
    levers = _table(
        ("lever", "saving, USD", "share", "note"),
        lever_rows,
        (False, True, True, False),
        total_last=True,
    )
    notes = "".join(f"<li>{esc(n)}</li>" for n in a.notes)
    if "time" in plan.costs:
        head += (
            f'<p class="note" id="time-value">The totals are objectives: the bill (USD '
            f"{usd(plan.costs.get('total'))}) plus the value of the time the plan takes, USD "
            f"{usd(plan.costs['time'])} (objective.usd_per_hour_early).</p>"
        )
    if a.day_earlier is not None:
        head += f'<p class="answer" id="day-earlier">{esc(a.day_earlier.sentence())}.</p>'
    return (
        head
        + f'<div class="pair"><div><h3>Saving per cost component</h3>{comps}</div>'
        + f"<div><h3>Saving per lever</h3>{levers}</div></div>"
        + '<p class="muted">The baseline is the plan a team makes without the levers: every '
        "phase as soon as possible, on demand, per phase the GPU type cheapest per unit of "
        "work on the price sheet, one region, bf16 without ZeRO, "
        "whole nodes, the dearest storage tier, no optional spares "
        f"({'; '.join(esc(r) for r in a.rules[1:3])}). "
        f"Per lever: {esc(a.method)}. trainplan's docs/levers.md explains both.</p>"
        + (f"<ul>{notes}</ul>" if notes else "")
    )


def _moves(plan: Plan) -> str:
    """The segments of phases that change configuration at checkpoints, and each migration."""
    rows = []
    for p in plan.phases:
        if not p.segments:
            continue
        for k, seg in enumerate(p.segments):
            m = seg.migration
            move = ""
            if m:
                move = f"{usd(float(m['total']))} from {esc(m.get('from', ''))}"
                move += f" ({float(m.get('hours', 0)):.3f} h)"
            rows.append(
                (
                    esc(p.name),
                    str(k),
                    esc(f"{seg.gpus:g} x {seg.gpu} {seg.contract} @{seg.region}"),
                    esc(f"{seg.start_hour}-{seg.end_hour - 1}"),
                    f"{seg.work:.1%}",
                    move,
                )
            )
    if not rows:
        return ""
    return "<h3>Segments and migrations</h3>" + _table(
        ("phase", "segment", "configuration", "hours", "work", "migration into it"),
        rows,
        (False, True, False, False, True, False),
    )


def _changes(plan: Plan) -> str:
    """What a re-plan changed against the plan it continues."""
    block = plan.replan
    if not block:
        return ""

    rows = [
        (
            esc(ch["phase"]),
            esc(describe(ch["before"])),
            esc(describe(ch["after"])),
            "yes" if ch["changed"] else "no",
        )
        for ch in block.get("changes", [])
    ]
    hist, prev = block.get("history_usd"), block.get("previous_total")
    line = ""
    if hist is not None and prev is not None:
        line = (
            f"<p>Old plan {usd(float(prev))}; spent before hour {esc(block.get('from_hour'))} "
            f"{usd(float(hist))}; the rest now {usd(plan.total)}; projected "
            f"{usd(float(hist) + plan.total)}.</p>"
        )
    return (
        f"<h3>Changes from hour {esc(block.get('from_hour'))} against the old plan</h3>"
        + _table(("phase", "old plan from then", "new plan", "changed"), rows, (False,) * 4)
        + line
    )


def _costs(plan: Plan) -> str:
    rows = []
    for name, c in cost_rows(plan):
        rows.append((esc(name), *(usd(c[k]) for k in COST_KEYS), usd(sum(c.values()))))
    rows.append(
        ("total", *(usd(plan.costs.get(k, 0.0)) for k in COST_KEYS), usd(plan.costs.get("total")))
    )
    return _table(
        ("USD", *COST_KEYS, "total"),
        rows,
        (False,) + (True,) * (len(COST_KEYS) + 1),
        total_last=True,
    )


def _failures(plan: Plan, facts: Sequence[PhaseFacts]) -> str:
    rows = []
    for p, f in zip(plan.phases, facts, strict=True):
        interval = (
            "none (no checkpoint or no failures)"
            if f.checkpoint_interval_s is None
            else f"{f.checkpoint_interval_s:,.0f} s ({f.checkpoint_interval_s / 3600:.2f} h)"
        )
        rows.append(
            (
                esc(f.name),
                _fmt(f.failure_rate_per_h, ".3g"),
                _fmt(f.expected_failures, ".4g"),
                esc(interval),
                _fmt(f.checkpoint_gb, ",.1f"),
                usd(p.costs.get("failure", 0.0)),
            )
        )
    return _table(
        (
            "phase",
            "failures per hour (λ)",
            "expected failures",
            "checkpoint interval",
            "checkpoint GB",
            "failure cost, USD",
        ),
        rows,
        (False, True, True, True, True, True),
    )


def _prices(plan: Plan, inst: Instance) -> str:
    rows = []
    for r in inst.spec.regions:
        pr = inst.price[r]
        paid = energy_weighted_price(plan, inst, r)
        rows.append(
            (
                esc(r),
                f"{float(pr.min()):,.1f}",
                f"{float(pr.mean()):,.1f}",
                f"{float(pr.max()):,.1f}",
                _fmt(paid, ",.1f") if paid is not None else "not used",
                esc(power_note(inst.region(r))),
            )
        )
    return _table(
        ("region", "min USD/MWh", "mean", "max", "paid (energy-weighted)", "who pays the power"),
        rows,
        (False, True, True, True, True, False),
    )


def _capacity(plan: Plan, inst: Instance) -> str:
    usage = pool_usage(plan, inst.hours)
    rows = []
    for pool in capacity_pools(plan, inst):
        held = np.zeros(inst.hours)
        for use in usage.get(pool, {}).values():
            held += use
        cap = np.asarray(inst.capacity.get(pool, np.zeros(inst.hours)), dtype=float)
        avail = float(cap.sum())
        over = int((held > cap + 1e-9).sum())
        share = f"{float(held.sum()) / avail:.1%}" if avail > 0 else "n/a"
        rows.append(
            (
                esc(f"{pool[0]} / {pool[1]}"),
                f"{float(held.max()):g}",
                f"{float(cap.max()):g}",
                f"{float(held.sum()):,.0f}",
                f"{avail:,.0f}",
                share,
                f'<span class="alert">{over}</span>' if over else "0",
            )
        )
    return _table(
        (
            "pool",
            "peak GPUs held",
            "peak capacity",
            "GPU-hours held",
            "GPU-hours available",
            "share",
            "hours over capacity",
        ),
        rows,
        (False,) + (True,) * 6,
    )


def render(
    plan: Plan,
    inst: Instance | None,
    *,
    header: SolveHeader | None = None,
    instance_note: str | None = None,
    plan_file: str = "<plan>",
    attribution: Attribution | None = None,
    attribution_note: str = "",
    local_times: bool = False,
    simulation: dict[str, Any] | None = None,
) -> str:
    """The report as one HTML document (``simulation``: a checked ``trainplan simulate``
    summary, :func:`planner.interfaces.report.simulation.check_simulation`, drawn in its section);
    ``header`` is how the plan was found (the plan file's
    ``"solve"`` object, :func:`planner.checker.read_solved`) and ``attribution`` its saving
    against the lever-free baseline (the plan file's ``"attribution"``; ``attribution_note``
    says why there is none). Without an instance the page says so (with ``instance_note``,
    e.g. where it looked) and skips the price and capacity charts; ``local_times`` shows the
    schedule in each region's local time (needs the instance). Raises
    :class:`~planner.interfaces.report.facts.ReportError` if the instance does not fit the plan."""
    head = header or SolveHeader()
    check_hours(plan, plan_file)
    if inst is not None:
        check_match(plan, inst, plan_file, inst.source)
    facts = [phase_facts(p) for p in plan.phases]
    figs = figures(plan, inst)
    charts = {
        name: svg(fig, f"c{i}-{name}", f"{_TITLES.get(name, name)} chart")
        for i, (name, fig) in enumerate(figs.items())
    }
    emissions = f"{plan.emissions_t:,.3f} t CO2"
    if inst is not None:
        from planner.model.emissions import carbon_coverage

        emissions = carbon_coverage(inst, plan).describe(plan.emissions_t).replace("tCO2", "t CO2")
    body: dict[str, str] = {}
    body["answer"] = _answer(plan, attribution, attribution_note)
    body["solver"] = _solver(plan, head, emissions)
    body["monitoring"] = _monitoring(facts)
    body["schedule"] = (
        _figure(
            charts["gantt"],
            "Each bar is a phase on the (region, GPU) pool "
            "it runs on; gaps in a bar are hours a preemptible phase is "
            "paused; a phase in segments moves across pools (dashed: a migration).",
        )
        + _schedule(plan, inst, local_times)
        + _moves(plan)
        + _changes(plan)
    )
    body["costs"] = _figure(
        charts["costs"],
        "Cost components per phase; the plan-wide row "
        "holds what no single phase carries (reserved commitments, "
        "porting).",
    ) + _costs(plan)
    body["memory"] = _figure(
        charts["memory"],
        "Bars: memory per GPU; solid tick: usable "
        "capacity (after the instance's memory headroom); dotted tick: "
        f"the {HEADROOM_ALERT:.0%} alert line.",
    )
    missing = (
        '<p class="note">No instance was given, so electricity prices and '
        "utilisation of capacity are not shown. "
        + (esc(instance_note) + " " if instance_note else "")
        + "Pass <code>--instance INSTANCE</code> to include them.</p>"
    )
    if inst is not None:
        name_note = ""
        if inst.name != plan.instance:
            name_note = (
                f'<p class="note">The plan names instance {esc(plan.instance)}; '
                f"the instance file {esc(inst.source)} is named {esc(inst.name)}.</p>"
            )
        body["prices"] = (
            name_note
            + _figure(
                charts["prices"],
                "Hourly price per region (grey); hours a phase runs there are "
                "shaded and drawn in the phase's colour.",
            )
            + _prices(plan, inst)
        )
        body["capacity"] = _figure(
            charts["capacity"],
            "GPUs held (working + spare) per pool and hour, phases "
            "stacked, against the pool's capacity (black); reserved commitments dashed.",
        ) + _capacity(plan, inst)
    else:
        body["prices"] = body["capacity"] = missing
    body["failures"] = _figure(
        charts["failures"],
        "Expected failures = job failure rate x hours run; checkpoint interval from Daly (2006).",
    ) + _failures(plan, facts)
    from planner.interfaces.report import simulation as sim_section

    sim_svg = ""
    if simulation is not None:
        sim_svg = svg(sim_section.chart(simulation, plan), "csim", "Simulation chart")
    body["simulation"] = sim_section.section(simulation, plan, sim_svg)

    title = f"trainplan report: {plan.instance or 'plan'}"
    nav = " ".join(f'<a href="#{s}">{_TITLES[s]}</a>' for s in SECTIONS)
    sections = "\n".join(
        f'<section id="{s}"><h2>{_TITLES[s]}</h2>{body[s]}</section>' for s in SECTIONS
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n<body>"
        f'<header><h1>{esc(title)}</h1><p class="muted">{len(plan.phases)} phases from '
        f"{esc(_when(hour_time(plan, 0)))}; solver {esc(head.solver or 'n/a')}, "
        f"{esc(head.status or 'n/a')}.</p><nav>{nav}</nav></header>\n"
        f'{sections}\n<footer class="muted"><p>Made by trainplan. Costs are the plan\'s own; '
        "run <code>trainplan verify</code> to recompute them from the instance.</p></footer>"
        "</body></html>\n"
    )
