"""What a person sees of a grid: a live progress bar, a summary table and a cost chart."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from planner.interfaces.grid.task import FEASIBLE, OK, STATUSES
from planner.model.plan import COST_KEYS
from planner.terminal import shown

#: Above this many solved scenarios the table shows the best and worst HALF each.
MAX_ROWS = 20


class _RateColumn(ProgressColumn):
    """Scenarios per minute (or per second when faster), over rich's recent-speed window."""

    def render(self, task: Any) -> Text:
        speed = task.finished_speed or task.speed
        if not speed:
            return Text("--/min", style="progress.data.speed")
        text = f"{speed:.1f}/s" if speed >= 1 else f"{speed * 60:.1f}/min"
        return Text(text, style="progress.data.speed")


class GridProgress:
    """A rich progress bar over the scenarios still to solve, with counts per status."""

    def __init__(self, console: Console, total: int, label: str) -> None:
        self.counts: Counter[str] = Counter()
        self.progress = Progress(
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}", markup=False),
            _RateColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            refresh_per_second=4,
            transient=False,
        )
        self.task: TaskID = self.progress.add_task(shown(label), total=total, counts="")

    def __enter__(self) -> GridProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def update(self, outcome: dict[str, Any]) -> None:
        """Count one finished scenario under its status and advance the bar."""
        self.counts[str(outcome.get("status"))] += 1
        text = " ".join(f"{s} {self.counts[s]}" for s in STATUSES if self.counts[s])
        self.progress.update(self.task, advance=1, counts=text)


class ProgressHooks:
    """``run_grid``'s ``on_start`` and ``on_result``: once the run knows how many scenarios are
    pending, ``before`` (if given) sees its report and a :class:`GridProgress` bar is drawn on
    ``console`` (none when nothing is pending); every result advances it; :meth:`close` (or
    leaving the ``with`` block) ends it, also after an error."""

    def __init__(
        self, console: Console, label: str, before: Callable[[Any], None] | None = None
    ) -> None:
        self.console, self.label, self.before = console, label, before
        self.bars: list[GridProgress] = []

    def on_start(self, report: Any) -> None:
        """At the start of a run: the caller's ``before`` hook, then a progress bar when there is
        something to solve."""
        if self.before is not None:
            self.before(report)
        if report.pending:
            bar = GridProgress(self.console, report.pending, self.label)
            bar.__enter__()
            self.bars.append(bar)

    def on_result(self, outcome: dict[str, Any]) -> None:
        """Advance the bar for one stored outcome."""
        if self.bars:
            self.bars[0].update(outcome)

    def close(self) -> None:
        """Close every open bar (also after an error or interrupt, so the terminal is left
        clean)."""
        while self.bars:
            self.bars.pop().__exit__(None, None, None)

    def __enter__(self) -> ProgressHooks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _money(x: Any) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"${x:,.2f}"


def _value(v: Any) -> str:
    if hasattr(v, "item"):  # numpy scalars from pandas
        v = v.item()
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return v if isinstance(v, str) else json.dumps(v)


def param_columns(df: pd.DataFrame) -> list[str]:
    """The columns of a grid frame that hold a scenario's parameters (``param.*``)."""
    return [c for c in df.columns if c.startswith("param.")]


def summary(df: pd.DataFrame, console: Console, max_rows: int = MAX_ROWS) -> None:
    """Print the scenarios solved (cost and breakdown; best and worst ``max_rows / 2`` when
    there are more), the best and worst scenario, failures, and the status counts."""
    params = param_columns(df)
    solved = df[df["status"].isin([OK, FEASIBLE])].sort_values("cost_total", kind="stable")
    t = Table(
        title=f"scenarios by total cost ({len(solved)} with a plan of {len(df)})",
        title_justify="left",
    )
    t.add_column("id")
    for p in params:
        t.add_column(p.removeprefix("param."), overflow="fold")
    t.add_column("status")
    for k in (*COST_KEYS, "total"):
        t.add_column(k, justify="right")
    t.add_column("solve s", justify="right")
    rows = list(solved.itertuples(index=False))
    half = max_rows // 2
    shown: list[Any] = rows if len(rows) <= max_rows else [*rows[:half], None, *rows[-half:]]
    cols = list(df.columns)
    for r in shown:
        if r is None:
            t.add_row("...", *([""] * (len(params) + len(COST_KEYS) + 3)))
            continue
        get = dict(zip(cols, r, strict=True))
        t.add_row(
            str(get["id"]),
            *(_value(get[p]) for p in params),
            str(get["status"]),
            *(_money(get[f"cost_{k}"]) for k in (*COST_KEYS, "total")),
            "" if pd.isna(get["solve_s"]) else f"{get['solve_s']:.2f}",
        )
    if rows:
        console.print(t)
        best, worst = solved.iloc[0], solved.iloc[-1]
        console.print(f"best:  {best['id']} {_label(best, params)} {_money(best['cost_total'])}")
        console.print(f"worst: {worst['id']} {_label(worst, params)} {_money(worst['cost_total'])}")
        if len(rows) > 1 and best["cost_total"]:
            spread = (worst["cost_total"] - best["cost_total"]) / best["cost_total"]
            console.print(f"spread: worst is {spread:.1%} above best")
    bad = df[~df["status"].isin([OK, FEASIBLE])]
    if len(bad):
        f = Table(title=f"scenarios without a plan ({len(bad)})", title_justify="left")
        for c in ("id", "parameters", "status", "error"):
            f.add_column(c, overflow="fold")
        for _, r in bad.head(10).iterrows():
            err = str(r["error"] or "").strip().splitlines()
            f.add_row(str(r["id"]), _label(r, params), str(r["status"]), err[0] if err else "")
        console.print(f)
        if len(bad) > 10:
            console.print(f"... and {len(bad) - 10} more (export the store to see them all)")
    counts = Counter(df["status"])
    console.print("status: " + ", ".join(f"{s} {counts[s]}" for s in STATUSES if counts[s]))


def _label(row: Any, params: Sequence[str]) -> str:
    return ", ".join(f"{p.removeprefix('param.')}={_value(row[p])}" for p in params)


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def chart(df: pd.DataFrame, path: str | Path) -> Path | None:
    """Total cost against each axis, one panel per axis: every scenario with a plan is a
    point, the line joins the medians per axis value. Writes a PNG; returns its path, or
    None when no scenario has a plan."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    params = param_columns(df)
    solved = df[df["status"].isin([OK, FEASIBLE])]
    if solved.empty or not params:
        return None
    n = len(params)
    ncols = min(3, n)
    nrows = math.ceil(n / ncols)
    fig, axs = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False)
    for i, p in enumerate(params):
        ax = axs[i // ncols][i % ncols]
        vals = [v for v in solved[p] if not (isinstance(v, float) and math.isnan(v))]
        order = list(dict.fromkeys(vals))
        if _numeric(order):
            order = sorted(order)
            pos = {v: float(v) for v in order}
        else:
            pos = {v: float(j) for j, v in enumerate(order)}
            ax.set_xticks(list(pos.values()), [_value(v) for v in order], rotation=30, ha="right")
        for status, marker in ((OK, "o"), (FEASIBLE, "^")):
            sub = solved[(solved["status"] == status) & solved[p].isin(order)]
            if len(sub):
                ax.scatter(
                    [pos[v] for v in sub[p]],
                    sub["cost_total"],
                    s=14,
                    alpha=0.6,
                    marker=marker,
                    label=status,
                )
        med = [float(solved[solved[p] == v]["cost_total"].median()) for v in order]
        ax.plot([pos[v] for v in order], med, color="black", lw=1, label="median")
        ax.set_title(p.removeprefix("param."), fontsize=9)
        ax.set_ylabel("total cost (USD)")
        ax.grid(alpha=0.3)
    for j in range(n, nrows * ncols):
        axs[j // ncols][j % ncols].set_visible(False)
    axs[0][0].legend(fontsize=7)
    fig.suptitle(f"cost against each axis ({len(solved)} scenarios with a plan)", fontsize=10)
    fig.tight_layout()
    out = Path(path)
    from planner.outfiles import replacing

    with replacing(out) as tmp:  # never through a link
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return out
