"""``trainplan solve``: solve an instance, print the answer (cost against the lever-free
baseline, the saving per component and per lever), the plan and the solver's status, and
write the plan JSON with the instance's path and hash and the attribution of the saving."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import warnings
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from zoneinfo import ZoneInfo

import typer
from rich.table import Table

from planner.beside import Beside, spare_core
from planner.instance.errors import InstanceError
from planner.interfaces.cli.app import (
    command,
    console,
    err_console,
    fail,
    load_instance,
    note,
    output_path,
    progress,
    progress_shown,
    result,
    settings,
    write_output,
)
from planner.interfaces.cli.exits import no_plan_exit
from planner.interfaces.cli.hygiene_hook import print_numeric_warnings
from planner.interfaces.cli.levers import attribution_table, money, saving_share
from planner.interfaces.cli.options import InstanceFile, TimeLimit, renamed_solver_note
from planner.model.options import BACKENDS
from planner.model.plan import COST_KEYS, InstanceRef, Plan, file_sha256
from planner.model.result import Result, Termination
from planner.solve import RENAMED, SOLVERS, solve

if TYPE_CHECKING:
    from planner.analysis.attribution import Attribution, LeverChain
    from planner.instance.model import Instance
    from planner.model.progress import Progress, ProgressFn


def print_plan(inst: Instance, plan: Plan, title: str) -> None:
    """Print the plan as a table titled ``title``: per phase its GPUs, contract, region, layout,
    tier, start and end (local and UTC), hours run and cost."""
    t = Table(title=title, title_justify="left")
    for col in (
        "phase",
        "GPUs",
        "contract",
        "region",
        "layout",
        "tier",
        "start (local)",
        "end (local)",
        "UTC",
        "hours run",
        "cost",
    ):
        t.add_column(col, overflow="fold")
    for p in plan.phases:
        tz = ZoneInfo(inst.region(p.region).timezone)
        s = inst.start + timedelta(hours=p.start_hour)
        e = inst.start + timedelta(hours=p.end_hour)
        cost = sum(p.costs.get(k, 0.0) for k in COST_KEYS)
        gpus = f"{p.gpus:g}" + (f"+{p.spare_gpus}" if p.spare_gpus else "") + f" {p.gpu}"
        layout = f"{p.precision} ZeRO-{p.zero} rc:{p.recompute} tp{p.tp} pp{p.pp}"
        t.add_row(
            p.name,
            gpus,
            p.contract,
            p.region,
            layout,
            p.tier,
            s.astimezone(tz).strftime("%a %m-%d %H:%M %Z"),
            e.astimezone(tz).strftime("%a %m-%d %H:%M %Z"),
            f"{s:%m-%d %H:%M}-{e:%m-%d %H:%M}",
            f"{len(p.hours)}" + ("" if p.contiguous else f" in {p.end_hour - p.start_hour}"),
            money(cost),
        )
        for k, seg in enumerate(p.segments if len(p.segments) > 1 else ()):
            move = seg.migration.get("total")
            t.add_row(
                f"  segment {k}",
                f"{seg.gpus:g}" + (f"+{seg.spare_gpus}" if seg.spare_gpus else "") + f" {seg.gpu}",
                seg.contract + (f":{seg.term}" if seg.term else ""),
                seg.region,
                f"{seg.precision} ZeRO-{seg.zero} tp{seg.tp} pp{seg.pp}",
                seg.tier,
                "",
                "",
                f"hours {seg.start_hour}-{seg.end_hour - 1}",
                f"{len(seg.hours)} ({seg.work:.0%} of the work)",
                "" if move is None else f"migration {money(float(move))}",
            )
    console.print(t)
    if plan.reserved:
        console.print("reserved: " + ", ".join(f"{n} x {g} in {r}" for r, g, n in plan.reserved))


def print_costs(plan: Plan, a: Attribution | None) -> None:
    """The cost breakdown: per component the baseline, the plan and the saving."""
    t = Table(
        title="cost against the lever-free baseline (USD)" if a else "cost breakdown (USD)",
        title_justify="left",
    )
    t.add_column("component")
    if a is not None:
        t.add_column("baseline", justify="right")
    t.add_column("plan", justify="right")
    if a is not None:
        t.add_column("saving", justify="right")
        saving = a.component_savings()
    for k in (*COST_KEYS, "total"):
        v = plan.costs.get(k, 0.0)
        if a is None:
            t.add_row(k, money(v))
            continue
        b = a.baseline_costs.get(k, 0.0)
        t.add_row(k, money(b), money(v), money(saving[k]) + saving_share(b, v))
    console.print(t)


def plan_notes(inst: Instance, plan: Plan) -> list[str]:
    """What a practitioner checks first: memory a phase fills within 5% of its usable share
    (the report's flag), and the value of time the objective counts."""
    from planner.interfaces.report.facts import phase_facts

    out = [
        f"{p.name}: {flag}"
        for p in plan.phases
        for flag in phase_facts(p).flags
        if "memory" in flag
    ]
    if "time" in plan.costs:
        out.append(
            f"value of time: ${plan.costs['time']:,.2f} in the objective "
            "(objective.usd_per_hour_early), not in the total"
        )
    return out


def print_status(res: Result) -> None:
    """Print the solver's one-line summary (status, bound, gap, seconds) and its notes."""
    console.print(f"solver: {res.summary()}")
    for n in res.notes:
        console.print(f"note: {n}")


def plan_extras(
    instance: Path, output: Path, a: Attribution | None, inst: Instance | None = None
) -> dict[str, Any]:
    """What ``solve`` writes into a plan file beside the plan: the instance file (relative
    to the plan, with its hash), the instance's document as planned (``instance_snapshot``:
    a re-plan costs the past at these prices after the file is edited in place) and the
    attribution."""
    out: dict[str, Any] = {"instance_file": InstanceRef.of(instance, output).to_dict()}
    if inst is not None:
        out["instance_snapshot"] = json.loads(json.dumps(dict(inst.raw), default=str))
    if a is not None:
        out["attribution"] = a.to_dict()
    return out


def _progress_line(step: Callable[[str], None]) -> ProgressFn | None:
    """The solver's progress events (best plan, bound, gap, seconds) on the progress line;
    None off a terminal or with --quiet (nothing is drawn then)."""
    if not progress_shown():
        return None

    def show(ev: Progress) -> None:
        step(ev.line())

    return show


def _print_warnings(inst: Instance) -> None:
    """The instance's warnings (its reader's notes, what kind of run each phase is) and its
    numeric findings, printed once before solving; the solvers' numeric warnings are then
    silenced so that none is printed twice."""
    from planner.analysis.summary import kind_notes
    from planner.model.consistency import NumericWarning

    for w in (*inst.warnings, *kind_notes(inst)):
        err_console.print(f"warning: {w}", soft_wrap=True)
    print_numeric_warnings(inst)
    warnings.simplefilter("ignore", NumericWarning)  # printed above, once


def _no_plan(res: Result, instance: Path) -> NoReturn:
    """No plan: say why, point an infeasible instance at ``explain``, exit with the status
    the termination calls for (planner/interfaces/cli/exits.py)."""
    err_console.print(f"no plan: {res.message}", soft_wrap=True)
    if res.termination in (Termination.INFEASIBLE, Termination.NO_CONFIGURATION):
        err_console.print(f"explain the conflict with: trainplan explain {instance}")
    raise typer.Exit(no_plan_exit(res.termination))


def _attribute(
    inst: Instance,
    plan: Plan,
    step: Callable[[str], None],
    with_day_earlier: bool,
    time_limit: float,
    gap: float,
    chain: Beside[LeverChain],
) -> tuple[Attribution | None, str]:
    """The plan's saving against the lever-free baseline, per component and per lever (and,
    with ``--day-earlier``, what finishing a day earlier costs); None and why when there is
    no baseline to compare with. ``chain``: the comparison's plan-free part, computed beside
    the solve."""
    from planner.analysis.attribution import (
        DAY_EARLIER_S,
        BaselineError,
        attribute,
        day_earlier,
        lever_chain,
    )

    step("attributing the saving to the levers")
    try:
        a = attribute(inst, plan, chain=chain.result(lambda: lever_chain(inst, on_step=step)))
    except BaselineError as e:
        return None, str(e)
    if with_day_earlier:
        step("what finishing a day earlier costs")
        later = day_earlier(inst, plan, min(DAY_EARLIER_S, time_limit), gap)
        a = dataclasses.replace(a, day_earlier=later)
    return a, ""


@command("solve")
def solve_cmd(
    instance: InstanceFile,
    output: Path | None = typer.Option(None, "-o", "--output", help="write the plan JSON here"),
    time_limit: TimeLimit = 60.0,
    gap: float = typer.Option(1e-4, "--gap", min=0.0, max=1.0, help="relative MIP gap"),
    threads: int | None = typer.Option(
        None, "--threads", min=1, help="solver threads (default: HiGHS 1, CP-SAT every core)"
    ),
    solver: str = typer.Option("auto", "--solver", help=f"one of {', '.join(SOLVERS)}"),
    backend: str = typer.Option("auto", "--backend", help="MILP backend: auto, highs, pyomo"),
    baseline: bool = typer.Option(
        False, "--baseline", help="output the lever-free baseline plan instead"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the plan JSON only"),
    no_attribution: bool = typer.Option(
        False,
        "--no-attribution",
        help="skip the baseline and the saving per lever (the report computes them later)",
    ),
    with_day_earlier: bool = typer.Option(
        False,
        "--day-earlier",
        help="also price finishing a day earlier (a second solve; the report does it "
        "when the plan has none)",
    ),
    from_hour: str | None = typer.Option(
        None,
        "--from",
        help="re-plan from this horizon hour, an ISO time or 'now': keep --plan's hours before it",
    ),
    old_plan: Path | None = typer.Option(
        None, "--plan", help="the plan to continue from --from (a plan JSON)"
    ),
    status: list[Path] = typer.Option(
        [],
        "--status",
        help="what the runs report: progress.json files or a folder of them, `sky jobs queue "
        "-o json` or `kubectl get jobs -o json` output; repeatable",
    ),
) -> None:
    """Solve INSTANCE and print the answer first (total cost against the lever-free
    baseline, the saving per cost component and per lever), then the plan and the solver's
    status, bound and gap. With --from HOUR --plan OLD: keep OLD's hours before HOUR and
    re-plan the rest (after a failure, a price change or a lost region); the derived instance
    (progress, running configurations) is written next to the plan, and what changed is
    shown."""
    if solver not in (*SOLVERS, *RENAMED):
        fail(f"--solver: expected one of {', '.join(SOLVERS)}, got {solver!r}")
    solver = renamed_solver_note(solver)
    if backend not in BACKENDS:
        fail(f"--backend: expected one of {', '.join(BACKENDS)}, got {backend!r}")
    if (from_hour is None) != (old_plan is None):
        fail("--from and --plan go together: --from HOUR --plan OLD.json")
    if status and from_hour is None:
        fail("--status goes with --from and --plan")
    if output is not None:  # before any work: a plan is never lost for want of a folder
        output_path(output, "-o")
    inst = load_instance(instance)
    if from_hour is not None and old_plan is not None:
        _replan_cmd(
            inst,
            instance,
            old_plan,
            from_hour,
            output,
            time_limit,
            gap,
            threads,
            solver,
            backend,
            as_json,
            status,
        )
        return
    wanted = not baseline and not no_attribution
    chain = _lever_chain(inst, wanted and spare_core(_solver_threads(inst, solver, threads)))
    try:
        _print_warnings(inst)
        res, a, why_none = _solved(
            inst,
            instance,
            chain,
            solver,
            time_limit,
            gap,
            threads,
            backend,
            baseline,
            as_json,
            no_attribution,
            with_day_earlier,
        )
    finally:
        chain.cancel()
    extra = plan_extras(instance, output, a, inst) if output is not None else {}
    if output is not None:
        write_output(output, res.to_json(extra=extra) + "\n", "-o")
    if as_json:
        print(json.dumps(res.to_dict(extra), indent=2))
        return
    _print_answer(inst, instance, output, res, a, why_none)


def _lever_chain(inst: Instance, beside: bool) -> Beside[LeverChain]:
    """The attribution's plan-free part (:func:`planner.analysis.attribution.lever_chain`),
    started beside the solve when ``beside`` (else computed after it, when asked for)."""
    from planner.analysis.attribution import lever_chain

    return Beside(lambda: lever_chain(inst), enabled=beside)


def _solver_threads(inst: Instance, solver: str, threads: int | None) -> int | None:
    """The cores the solve keeps busy: ``threads`` when given, else every core for CP-SAT
    (its default, also when "auto" picks it), else one (None)."""
    if threads is not None:
        return threads
    if solver == "auto":
        from formulations.choose import choose

        solver = choose(inst)[0]
    return os.cpu_count() if solver == "cpsat" else None


def _solved(
    inst: Instance,
    instance: Path,
    chain: Beside[LeverChain],
    solver: str,
    time_limit: float,
    gap: float,
    threads: int | None,
    backend: str,
    baseline: bool,
    as_json: bool,
    no_attribution: bool,
    with_day_earlier: bool,
) -> tuple[Result, Attribution | None, str]:
    """The solve (or the baseline) under the progress line, and the plan's attribution."""
    with progress(f"solving {inst.name}") as step:
        if baseline:
            step("the lever-free baseline")
            res = solve(inst, solver="baseline")
        else:
            if solver == "auto":
                try:
                    from formulations.choose import choose

                    _, why = choose(inst)
                    if not as_json:
                        note(f"solver auto -> {why}")
                except ImportError:
                    pass
            step(f"{solver} (time limit {time_limit:g} s)")
            res = solve(
                inst,
                solver,
                time_limit,
                gap,
                threads,
                backend,
                settings.verbose,
                _progress_line(step),
            )
        if res.plan is None:
            _no_plan(res, instance)
        plan = res.plan
        a: Attribution | None = None
        why_none = ""
        if not baseline and not no_attribution:
            a, why_none = _attribute(inst, plan, step, with_day_earlier, time_limit, gap, chain)
    return res, a, why_none


def _print_answer(
    inst: Instance,
    instance: Path,
    output: Path | None,
    res: Result,
    a: Attribution | None,
    why_none: str,
) -> None:
    """What ``solve`` prints for a plan, the answer first: its cost against the lever-free
    baseline (``why_none`` when there is none), the costs and the saving per lever, the
    schedule, energy and emissions, the solver's status, notes, and where the plan went."""
    from planner.model.emissions import carbon_coverage

    plan = res.plan
    assert plan is not None
    answer = a.headline() if a is not None else f"${plan.costs.get('total', 0.0):,.2f}"
    result(f"plan for {inst.name} ({res.solver}): {answer}")
    print_costs(plan, a)
    if a is not None:
        console.print(attribution_table(a))
    elif why_none:
        note(f"no lever-free baseline to compare with: {why_none}")
    print_plan(inst, plan, "schedule")
    cov = carbon_coverage(inst, plan)
    console.print(
        f"energy {plan.energy_kwh:,.0f} kWh, emissions {cov.describe(plan.emissions_t)}",
        markup=False,
    )
    print_status(res)
    for n in plan_notes(inst, plan):
        note(n)
    if a is not None and a.day_earlier is not None:
        note(a.day_earlier.sentence())
    if a is not None and not settings.quiet:
        for n in a.notes:
            note(f"baseline: {n}")
    if output is not None:
        result(f"plan written to {output}")
        check_it = f"trainplan verify {instance} {output}"
        note(f"check it with: {check_it}; report: trainplan report {output}")
    else:
        result("plan not saved: no file written (pass -o FILE to keep it)")


def print_changes(plan: Plan) -> None:
    """What a re-plan changed against the old plan, phase by phase."""
    from planner.interfaces.replan import describe

    block = plan.replan or {}
    t = Table(title=f"changes from hour {block.get('from_hour')}", title_justify="left")
    for col in ("phase", "old plan from then", "new plan", "changed"):
        t.add_column(col, overflow="fold")

    for ch in block.get("changes", []):
        t.add_row(
            ch["phase"],
            describe(ch["before"]),
            describe(ch["after"]),
            "yes" if ch["changed"] else "no",
        )
    console.print(t)
    hist, prev = block.get("history_usd"), block.get("previous_total")
    after = float(block.get("reserved_after_usd") or 0.0)
    if hist is not None and prev is not None:
        held = f"; reservations already paid for the hours after it {money(after)}" if after else ""
        console.print(
            f"old plan {money(float(prev))}; spent before hour {block.get('from_hour')} "
            f"{money(float(hist))}{held}; the rest now {money(plan.costs['total'])}; projected "
            f"{money(float(hist) + after + plan.costs['total'])}",
            markup=False,
        )


def parse_from(text: str, inst: Instance, now: datetime | None = None) -> int:
    """``--from``: a horizon hour, an ISO time with a UTC offset, or ``now``: the first whole
    hour not yet begun (the hour under way is kept from the old plan)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    if text == "now":
        when = now if now is not None else datetime.now(UTC)
    else:
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            fail(f"--from: expected an hour, an ISO time or 'now', got {text!r}")
        if when.tzinfo is None:
            fail(f"--from: expected a time with a UTC offset (Z or +hh:mm), got {text!r}")
    return math.ceil((when - inst.start).total_seconds() / 3600.0 - 1e-9)


def old_instance(data: dict[str, Any], plan_path: Path) -> tuple[Instance | None, str]:
    """The instance an old plan was made for: the file it records when its bytes are still
    the ones it was made from, else the document it keeps (``instance_snapshot``, its data
    files read beside the recorded file), else None and why."""
    from planner.instance.read import from_dict

    ref = InstanceRef.from_file_dict(data)
    if ref is None:
        return None, f"{plan_path} does not record its instance."
    path = ref.locate(plan_path)
    if path.is_file() and file_sha256(path) == ref.sha256:
        return load_instance(path), ""
    snap = data.get("instance_snapshot")
    if isinstance(snap, dict):
        try:
            return from_dict(snap, f"{path} (as {plan_path} was planned)", path.parent), ""
        except InstanceError as e:
            return None, f"{plan_path}'s instance as planned cannot be read ({e})."
    return None, f"{path} has changed since {plan_path} was made, which keeps no copy of it."


def _replan_cmd(
    inst: Instance,
    instance: Path,
    old_path: Path,
    when: str,
    output: Path | None,
    time_limit: float,
    gap: float,
    threads: int | None,
    solver: str,
    backend: str,
    as_json: bool,
    status_paths: list[Path],
) -> None:
    from planner.analysis.admit import PlanRefused
    from planner.checker import read_plan_document
    from planner.interfaces.replan import ReplanError, replan, write_instance
    from planner.interfaces.runstatus import StatusError, read_status

    hour = parse_from(when, inst)
    old, _header, data = read_plan_document(old_path)
    old_inst, why = old_instance(data, old_path)
    if old_inst is None:
        note(f"note: {why} The old plan's past is costed at {instance}'s prices.")
    try:
        status = read_status(status_paths, old_inst or inst, old) if status_paths else None
    except StatusError as e:
        fail(f"--status: {e}")
    try:
        r = replan(
            inst,
            old,
            hour,
            old_instance=old_inst,
            status=status,
            source=str(old_path),
            solver=solver,
            time_limit=time_limit,
            gap=gap,
            threads=threads,
            backend=backend,
        )
    except PlanRefused as e:
        fail(str(e))
    except ReplanError as e:
        fail(f"{old_path}: {e}")
    res = r.result
    if res.plan is None:
        err_console.print(f"no plan: {res.message}", soft_wrap=True)
        raise typer.Exit(no_plan_exit(res.termination))
    derived = None
    if output is not None:
        derived = output.with_suffix(".instance.json")
        write_instance(r.instance, derived)
        res.write(output, plan_extras(derived, output, None, load_instance(derived)))
    if as_json:
        print(json.dumps(res.to_dict(), indent=2))
        return
    print_plan(r.instance, res.plan, f"re-plan of {inst.name} from hour {hour} ({res.solver})")
    print_costs(res.plan, None)
    print_changes(res.plan)
    for n in r.notes:
        note(f"note: {n}")
    print_status(res)
    if output is not None:
        console.print(
            f"plan written to {output}, the state at hour {hour} to {derived}; check it with: "
            f"trainplan verify {derived} {output}",
            markup=False,
        )
