"""Files trainplan writes: where they may go and how they are written.

Every output path a command takes (``solve -o``, ``report -o`` and ``--png``, ``schema -o``,
``init -o``, ``gpus import-skypilot -o``, a grid's store, chart and export) is checked by
:func:`check_output` *before* the work that fills it starts, so that a plan is never lost
after solving for want of a folder:

- a name no file can have (NUL, too long), an existing directory, or a parent that is not a
  folder is refused;
- an existing **symbolic link** is refused: trainplan never writes through a link (a link
  planted in an output folder would otherwise have the file it leads to overwritten);
- a missing parent folder is created (with its own missing parents), and the caller is told.

Then the file is written by :func:`write_text` or inside :func:`replacing`: into a temporary
file in the same folder, which replaces the target in one step (``os.replace``, which
replaces a link itself, never its target). A crash or a full disk leaves the old file or
none, never half of one; the new file gets the usual permissions (0666 less the umask).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from planner.instance.files import bad_name, shown_name


class OutputError(ValueError):
    """An output path trainplan will not write; the message names the path and why."""


def check_output(path: Path, *, folder: bool = False) -> list[Path]:
    """Refuse ``path`` as an output file (``folder``: as an output folder) when it cannot or
    may not be written (module docstring); create its missing parent folders (and, for a
    folder, itself). Returns the folders created, outermost first."""
    name = str(path)
    why = bad_name(name)
    if why is not None:
        raise OutputError(f"{shown_name(name)} {why}")
    try:
        return _check(path, name, folder)
    except OSError as e:
        raise OutputError(f"{shown_name(name)} cannot be looked at ({e.strerror or e})") from None


def _check(path: Path, name: str, folder: bool) -> list[Path]:
    if path.is_symlink():
        raise OutputError(
            f"{shown_name(name)} is a symbolic link; trainplan does not write through links "
            "(remove it or give another name)"
        )
    if folder:
        if path.exists() and not path.is_dir():
            raise OutputError(f"{shown_name(name)} is a file; expected a folder")
        target = path
    else:
        if path.is_dir():
            raise OutputError(f"{shown_name(name)} is a directory; expected a file name")
        if path.exists() and not path.is_file():
            raise OutputError(f"{shown_name(name)} is not a regular file (a device or FIFO)")
        target = path.parent
    return _make_folders(target)


def _make_folders(folder: Path) -> list[Path]:
    missing: list[Path] = []
    p = folder if str(folder) else Path(".")
    while not p.exists() and not p.is_symlink():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    if p.exists() and not p.is_dir():
        raise OutputError(f"{shown_name(str(p))} is not a folder; cannot write inside it")
    if p.is_symlink() and not p.exists():
        raise OutputError(f"{shown_name(str(p))} is a symbolic link that leads nowhere")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(
            f"cannot create the folder {shown_name(str(folder))} ({e.strerror or e})"
        ) from None
    return list(reversed(missing))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path in ``path``'s folder to write into; when the block ends without an
    error it replaces ``path`` (a link at ``path`` is refused, never followed), else it is
    removed. For writers that take a file name (matplotlib, pandas, sqlite)."""
    if path.is_symlink():
        raise OutputError(
            f"{shown_name(str(path))} is a symbolic link; trainplan does not write through "
            "links (remove it or give another name)"
        )
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:40]}.", suffix=path.suffix, dir=folder)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        if path.is_symlink():  # planted while the file was written
            raise OutputError(
                f"{shown_name(str(path))} became a symbolic link while it was written; not replaced"
            )
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through :func:`replacing`; OS errors become
    :class:`OutputError` naming the path."""
    try:
        with replacing(path) as tmp:
            tmp.write_text(text, encoding="utf-8")
    except OSError as e:
        raise OutputError(f"cannot write {shown_name(str(path))} ({e.strerror or e})") from None
