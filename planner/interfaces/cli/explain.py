"""``trainplan explain INSTANCE``: which phases and constraints conflict, and by how much.

Prints the conflicts that hold for any plan (memory, deadlines through the precedence graph,
capacity of shared pools) and the smallest relaxation that gives a plan (hours past each
deadline, GPUs above each pool's capacity, tonnes above the carbon cap), from an elastic
version of the hourly MILP (planner.analysis.explain).

Exit status: 0 when the instance is feasible (it says so); 1 when it is infeasible (with the
findings); 3 when the relaxation stopped at its time limit without deciding; 2 on bad input.
"""

from __future__ import annotations

import json

import typer

from planner.interfaces.cli.app import command, fail, load_instance, progress, results
from planner.interfaces.cli.exits import EXIT_INFEASIBLE, EXIT_SOLVER
from planner.interfaces.cli.options import InstanceFile, TimeLimit


@command("explain")
def explain_cmd(
    instance: InstanceFile,
    time_limit: TimeLimit = 60.0,
    as_json: bool = typer.Option(False, "--json", help="print the explanation as JSON"),
) -> None:
    """Explain why INSTANCE has no plan: the conflicts that hold for any plan, and the
    smallest relaxation (deadlines, capacity, carbon cap) that gives one. Exit 0 if the
    instance is feasible, 1 if infeasible, 3 if undecided within the time limit."""
    from planner.analysis.explain import ExplainError, explain

    inst = load_instance(instance)
    try:
        with progress(f"explaining {inst.name}"):
            ex = explain(inst, time_limit=time_limit)
    except ExplainError as e:
        fail(str(e))
    if as_json:
        typer.echo(json.dumps(ex.to_dict(), indent=2, allow_nan=False))
    else:
        for line in ex.lines():
            results.print(line, markup=False, highlight=False, soft_wrap=True)
    if ex.feasible:
        return
    raise typer.Exit(EXIT_INFEASIBLE if ex.proven else EXIT_SOLVER)
