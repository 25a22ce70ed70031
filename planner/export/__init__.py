"""Plans turned into something a team launches, and runs: :mod:`planner.export.skypilot`
(SkyPilot tasks, managed jobs for spot), :mod:`planner.export.kubernetes` (Indexed Jobs under
Kueue), both with ``launch.json`` and the launcher (:mod:`planner.export.launcher`) that
starts each run when its hour has come and what it depends on has succeeded. Shared:
:mod:`~planner.export.layout` (units, order, environment), :mod:`~planner.export.names`,
:mod:`~planner.export.clouds` (regions and catalogs), :mod:`~planner.export.folder` (writing
without following links)."""

from planner.export.folder import FolderError, write_files
from planner.export.kubernetes import export_kubernetes
from planner.export.skypilot import ExportError, Written, export_skypilot

__all__ = [
    "ExportError",
    "FolderError",
    "Written",
    "export_kubernetes",
    "export_skypilot",
    "write_files",
]
