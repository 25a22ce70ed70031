"""``trainplan report``: one self-contained HTML page (and optional PNG files) for a plan.

:func:`render` returns the page, :func:`write_pngs` writes the same charts as PNG files.
Charts are drawn with matplotlib on the Agg canvas, so no display is needed.
"""

from planner.report.charts import CHARTS, figures, write_pngs
from planner.report.facts import (
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
from planner.report.html import SECTIONS, render

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
