"""File access: which files an instance may name, and what a path names on disk.

An instance names files (a ``csv:`` series) relative to its own folder. :func:`data_file`
enforces the policy for every such name, before anything is opened:

- the name is resolved against the instance's folder, symbolic links followed, and the file
  must lie inside that folder (no absolute path, no ``..`` that climbs out, no link leading
  out) unless the caller allows a *data root*, a second folder files may come from:
  ``read(path, data_root=...)``, ``from_dict(..., data_root=...)`` or the environment
  variable ``TRAINPLAN_DATA_ROOT`` (:func:`data_root_of`);
- special files are refused wherever they are: anything under ``/proc``, ``/sys`` or
  ``/dev`` (``/proc/self/environ`` is a "regular" file holding the process environment),
  devices, FIFOs, sockets (:func:`not_a_file`).

The order matters: a name that leaves the allowed folders is refused before its target is
looked at, so an instance cannot probe which files exist elsewhere.

The same policy covers every other reference a file makes (:func:`referenced_file`): an
instance's ``gpu_catalog``, a grid's ``base`` (relative to the grid file), a plan's
``instance`` name and ``instance_file`` (relative to the plan file). A plan's
``instance_file`` records the SHA-256 of the instance's bytes; outside the plan's folder such
a file is read only when its bytes have that digest (whoever wrote the plan knew them), and
anything else is refused with one message whether the file exists or not. So no command
parses, or shows the keys of, a file outside the folders allowed. Where trainplan *writes*
is :mod:`planner.outfiles`.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable naming a folder that files named by an instance may also come from.
DATA_ROOT_ENV = "TRAINPLAN_DATA_ROOT"

#: Virtual file systems whose "files" are process state or devices, never data.
SPECIAL_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))

#: How to allow files outside the instance's folder, for the error messages.
HOW_TO_ALLOW = f"allow a folder with read(..., data_root=...) or {DATA_ROOT_ENV}=<folder>"

#: The longest file or folder name and the longest path the name of a data file may have
#: (bytes, as Linux's NAME_MAX and PATH_MAX): a longer one fails every system call on it.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4095
#: Characters of a file name shown in a message.
SHOWN_CHARS = 120


class FileRefused(ValueError):
    """A file named by an instance may not be read; the message says why (the caller adds the
    file and the field)."""


def data_root_of(data_root: str | Path | None) -> Path | None:
    """The data root in force: ``data_root`` when given, else ``$TRAINPLAN_DATA_ROOT`` when
    set and not empty, else None."""
    if data_root is not None and str(data_root) != "":
        return Path(data_root)
    env = os.environ.get(DATA_ROOT_ENV, "")
    return Path(env) if env else None


def _special_root(real: Path) -> Path | None:
    for root in SPECIAL_ROOTS:
        if real == root or real.is_relative_to(root):
            return root
    return None


def shown_name(name: str) -> str:
    """A file name for a message: quoted, at most SHOWN_CHARS characters of it."""
    if len(name) <= SHOWN_CHARS:
        return repr(name)
    return f"{name[:SHOWN_CHARS]!r}... ({len(name):,} characters)"


def bad_name(name: str) -> str | None:
    """Why no file can have the name ``name`` (a NUL character, a name or path longer than
    the system allows), or None."""
    if "\x00" in name:
        return "contains a NUL character, which no file name may hold"
    raw = name.encode("utf-8", "surrogateescape")
    longest = max((len(part) for part in raw.split(b"/")), default=0)
    if len(raw) > MAX_PATH_BYTES or longest > MAX_NAME_BYTES:
        return (
            f"is too long for a file name ({len(raw):,} bytes; at most {MAX_NAME_BYTES} per "
            f"file or folder name and {MAX_PATH_BYTES:,} in all)"
        )
    return None


def not_a_file(path: Path) -> str | None:
    """Why ``path`` cannot be read as a data file, or None when it is a regular file outside
    ``/proc``, ``/sys`` and ``/dev``."""
    why = bad_name(str(path))
    if why is not None:
        return why
    try:
        special = _special_root(Path(os.path.realpath(path)))
        if special is not None:
            return f"is not a regular file (it is under {special}, a special file system)"
        if path.is_file():
            return None
        if path.is_symlink() and not path.exists():
            return "is a symbolic link that leads nowhere (a loop or a missing target)"
        if path.is_dir():
            return "is a directory; expected a file"
        if path.exists():
            return "is not a regular file (a FIFO, socket or device); expected a file"
    except (OSError, ValueError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        return f"cannot be looked at ({reason})"
    return "does not exist"


def data_file(name: str, base_dir: Path, data_root: Path | None) -> Path:
    """The file an instance in ``base_dir`` names as ``name``, once the policy allows it
    (see the module docstring); raises :class:`FileRefused` saying why not. The path returned
    is ``base_dir / name`` (as the user would write it); its type is checked by the caller
    with :func:`not_a_file` when it opens it."""
    why = bad_name(name)
    if why is not None:
        raise FileRefused(f"file {shown_name(name)} {why}")
    given = Path(name)
    roots = [Path(os.path.realpath(base_dir))]
    if data_root is not None:
        roots.append(Path(os.path.realpath(data_root)))
    where = f"the instance's folder {str(base_dir)!r}" + (
        f" or the data root {str(data_root)!r}" if data_root is not None else ""
    )
    if given.is_absolute() and data_root is None:
        raise FileRefused(
            f"file {shown_name(name)} is an absolute path; give a path relative to {where}, "
            "or " + HOW_TO_ALLOW
        )
    path = given if given.is_absolute() else base_dir / given
    real = Path(os.path.realpath(path))
    special = _special_root(real)
    if special is not None:
        raise FileRefused(
            f"file {shown_name(str(path))} is not a regular file (it is under {special}, a "
            "special file system)"
        )
    if not any(real == r or real.is_relative_to(r) for r in roots):
        how = "" if data_root is not None else ", or " + HOW_TO_ALLOW
        raise FileRefused(
            f"file {shown_name(name)} leads outside {where} (links are followed); keep data "
            f"files there{how}"
        )
    return path


#: The largest file whose SHA-256 a reference may be checked against (the reader's limit).
MAX_DIGEST_BYTES = 32 * 1024 * 1024


def sha256_of(path: Path, limit: int = MAX_DIGEST_BYTES) -> str | None:
    """The SHA-256 of a regular file of at most ``limit`` bytes (opened without following a
    FIFO's wait; the type checked on the open descriptor), or None when it is not one."""
    import hashlib
    import stat

    if not_a_file(path) is not None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def referenced_file(
    name: str, base_dir: Path, data_root: Path | None, *, sha256: str | None = None
) -> Path:
    """The file a plan or a grid names as ``name`` (a plan's ``instance_file`` or
    ``instance``, a grid's ``base``), under the policy of :func:`data_file`: inside
    ``base_dir`` (the referring file's folder) or the data root. One exception, for a
    reference that records the SHA-256 of the file's bytes (``sha256``, a plan's
    ``instance_file``): a file outside whose bytes have that digest is allowed, since whoever
    wrote the reference knew its content (a plan written to another folder than its
    instance). Anything else outside is refused with one message whether or not the file
    exists, so that a crafted reference learns nothing about the files around."""
    try:
        return data_file(name, base_dir, data_root)
    except FileRefused:
        if sha256 is None or bad_name(name) is not None:
            raise
    given = Path(name)
    path = given if given.is_absolute() else base_dir / given
    if sha256_of(path) == sha256:
        return path
    raise FileRefused(
        f"file {shown_name(name)} is outside the folder {str(base_dir)!r} and is not (or "
        "cannot be checked to be) the file the recorded SHA-256 names; give the file "
        "explicitly, or " + HOW_TO_ALLOW
    )
