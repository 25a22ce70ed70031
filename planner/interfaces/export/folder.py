"""The export's output folder: checked before anything is written, written without following
links.

- ``-o DIR`` that is a file is refused; a missing folder is created (with its parents) only
  once everything to write is built, so a refused plan leaves nothing behind;
- a name the export writes that exists in the folder as a symbolic link, a folder or any
  other non-regular file is refused before the first file is written: the export never
  writes through a link (a link to ``~/.bashrc`` named ``launch.sh`` stays a link to an
  untouched file);
- every file is written to a new temporary file in the folder (``O_EXCL | O_NOFOLLOW``) with
  its mode, then renamed over the name: a file the export did not create never has its
  content or mode changed; the old file of that name is replaced whole.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class FolderError(ValueError):
    """The output folder or a name in it cannot be written; the message names it."""


def check_target(folder: Path) -> None:
    """``folder`` is a folder or does not exist yet (``-o`` checked before any work)."""
    if folder.exists() and not folder.is_dir():
        raise FolderError(f"-o {folder}: is a file; expected a folder")


def check_names(folder: Path, names: list[str]) -> None:
    """Every name is a plain file name, and none exists in ``folder`` as anything but a
    regular file (a link, even to a regular file, is refused)."""
    for name in names:
        if Path(name).name != name or name in ("", ".", ".."):
            raise FolderError(f"{name!r}: not a file name")
        path = folder / name
        try:
            st = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise FolderError(
                f"{path}: is a symbolic link; the export does not write through links "
                "(remove it, or export into another folder)"
            )
        if not stat.S_ISREG(st.st_mode):
            raise FolderError(f"{path}: exists and is not a regular file")


def write_files(folder: Path, files: dict[str, tuple[str, int]]) -> list[Path]:
    """Create ``folder`` if missing and write ``files`` (name -> (text, mode)) into it, each
    through a new temporary file renamed over its name; returns the paths written."""
    check_target(folder)
    check_names(folder, list(files))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FolderError(f"-o {folder}: cannot create the folder ({e.strerror})") from None
    out: list[Path] = []
    for name, (text, mode) in files.items():
        target = folder / name
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(tmp, flags, mode)
            os.fchmod(fd, mode)  # the umask does not decide an executable script's mode
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, target)
        except OSError as e:
            if tmp.exists() and not tmp.is_symlink():
                tmp.unlink()
            raise FolderError(f"{target}: cannot write ({e.strerror})") from None
        out.append(target)
    return out
