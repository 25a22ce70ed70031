"""Plans turned into something a team launches: :mod:`planner.export.skypilot` (one SkyPilot
task YAML per phase and a launch script in plan order)."""

from planner.export.skypilot import ExportError, SkyPilotExport, export_skypilot

__all__ = ["ExportError", "SkyPilotExport", "export_skypilot"]
