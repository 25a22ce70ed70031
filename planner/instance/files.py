"""What a path names on disk: the one check, shared by the instance reader and the CSV series
reader, of whether a path is a regular file and, if not, what it is instead."""

from __future__ import annotations

from pathlib import Path


def not_a_file(path: Path) -> str | None:
    """Why ``path`` cannot be read as a file, or None when it is a regular file."""
    if path.is_file():
        return None
    if path.is_symlink() and not path.exists():
        return "is a symbolic link that leads nowhere (a loop or a missing target)"
    if path.is_dir():
        return "is a directory; expected a file"
    if path.exists():
        return "is not a regular file (a FIFO, socket or device); expected a file"
    return "does not exist"
