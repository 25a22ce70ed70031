"""The command line's exit statuses: one name each, and what each means (README's table is
generated from and tested against :data:`EXIT_CODES`)."""

from __future__ import annotations

#: Exit status on success.
EXIT_OK = 0
#: Exit status when the instance is infeasible or a plan is invalid.
EXIT_INFEASIBLE = 1
#: Exit status for bad input (files, fields, flags).
EXIT_INPUT = 2
#: Exit status when the solver failed or found no plan in time.
EXIT_SOLVER = 3
#: Exit status of an internal error (a bug): never the code of a user's mistake.
EXIT_INTERNAL = 4
#: Exit status when interrupted (128 + SIGINT, the shell's convention).
EXIT_INTERRUPTED = 130

#: Every exit status and what it means; README's table is generated from (and tested
#: against) this mapping.
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success",
    EXIT_INFEASIBLE: "the instance is infeasible, or a plan is invalid",
    EXIT_INPUT: "bad input: a file, a field or a flag (the message names which)",
    EXIT_SOLVER: "the solver found no plan in time, or failed",
    EXIT_INTERNAL: "internal error: a bug in trainplan (TRAINPLAN_DEBUG=1 shows the traceback)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}


def no_plan_exit(termination: str) -> int:
    """The exit status of a solve that returned no plan, by its termination: infeasible (or
    no configuration) 1; every plan found failed the independent checker ("check_failed", a
    bug) 4; anything else (out of time, a solver failure) 3."""
    if termination in ("infeasible", "no_configuration"):
        return EXIT_INFEASIBLE
    if termination == "check_failed":
        return EXIT_INTERNAL
    return EXIT_SOLVER
