"""The command line's arguments before any command is loaded: the global flags, and the
version (``trainplan --version`` answers from here, loading no command and no library)."""

from __future__ import annotations

#: Options that apply to every command; :func:`hoist_global_options` moves them in front of
#: the command name, so ``trainplan solve x.yaml -q`` works as ``trainplan -q solve x.yaml``.
GLOBAL_FLAGS = ("-q", "--quiet", "-v", "--verbose")


def hoist_global_options(argv: list[str]) -> list[str]:
    """``argv`` (without the program name) with the global flags first; ``--`` ends the
    search (what follows it is left alone)."""
    head: list[str] = []
    rest: list[str] = []
    for i, a in enumerate(argv):
        if a == "--":
            rest.extend(argv[i:])
            break
        (head if a in GLOBAL_FLAGS else rest).append(a)
    return head + rest


def command_word(argv: list[str]) -> str:
    """The first argument that is not a global flag ("" when there is none): the command's
    name, ``--version``, ``-h`` ..."""
    words = [a for a in argv if a not in GLOBAL_FLAGS]
    return words[0] if words else ""


def version() -> str:
    """The installed package's version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("trainplan")
    except PackageNotFoundError:
        return "unknown (not installed)"


def version_line() -> str:
    """What ``--version`` prints."""
    return f"trainplan {version()}"
