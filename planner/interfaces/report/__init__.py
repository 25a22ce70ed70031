"""``trainplan report``: one self-contained HTML page (and optional PNG files) for a plan.

:func:`render` returns the page, :func:`write_pngs` writes the same charts as PNG files.
Charts are drawn with matplotlib on the Agg canvas, so no display is needed. The public
names load on first use (:mod:`planner.lazy`): ``solve``'s notes read
:mod:`planner.interfaces.report.facts` without loading matplotlib (3 s of a 5 s solve on a busy
machine).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.lazy import lazy_names

if TYPE_CHECKING:
    from planner.interfaces.report.charts import CHARTS, figures, write_pngs
    from planner.interfaces.report.facts import (
        HEADROOM_ALERT,
        UTILISATION_ALERT,
        PhaseFacts,
        ReportError,
        check_hours,
        check_match,
        instance_candidates,
        phase_facts,
        predicted_utilisation,
    )
    from planner.interfaces.report.html import SECTIONS, render

_FACTS = "planner.interfaces.report.facts"
lazy_names(
    __name__,
    {
        "CHARTS": "planner.interfaces.report.charts",
        "figures": "planner.interfaces.report.charts",
        "write_pngs": "planner.interfaces.report.charts",
        "HEADROOM_ALERT": _FACTS,
        "UTILISATION_ALERT": _FACTS,
        "PhaseFacts": _FACTS,
        "ReportError": _FACTS,
        "check_hours": _FACTS,
        "check_match": _FACTS,
        "instance_candidates": _FACTS,
        "phase_facts": _FACTS,
        "predicted_utilisation": _FACTS,
        "SECTIONS": "planner.interfaces.report.html",
        "render": "planner.interfaces.report.html",
    },
)

__all__ = [
    "CHARTS",
    "HEADROOM_ALERT",
    "SECTIONS",
    "UTILISATION_ALERT",
    "PhaseFacts",
    "ReportError",
    "check_hours",
    "check_match",
    "figures",
    "instance_candidates",
    "phase_facts",
    "predicted_utilisation",
    "render",
    "write_pngs",
]
