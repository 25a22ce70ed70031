"""Plans turned into something a team launches, and runs: :mod:`planner.interfaces.export.skypilot`
(SkyPilot tasks, managed jobs for spot), :mod:`planner.interfaces.export.kubernetes` (Indexed Jobs
under Kueue), both with ``launch.json`` and the launcher (:mod:`planner.interfaces.export.launcher`)
that starts each run when its hour has come and what it depends on has succeeded. Shared:
:mod:`~planner.interfaces.export.layout` (units, order, environment),
:mod:`~planner.interfaces.export.names`, :mod:`~planner.interfaces.export.clouds` (regions and
catalogs), :mod:`~planner.interfaces.export.folder` (writing without following links)."""

from planner.interfaces.export.folder import FolderError, write_files
from planner.interfaces.export.kubernetes import export_kubernetes
from planner.interfaces.export.skypilot import ExportError, Written, export_skypilot

__all__ = [
    "ExportError",
    "FolderError",
    "Written",
    "export_kubernetes",
    "export_skypilot",
    "write_files",
]
