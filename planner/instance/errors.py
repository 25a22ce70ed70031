"""Errors raised while reading an instance: each names the file, the field path and what was
expected, so the CLI can print it and exit with status 2.

Paths and messages quote what the user wrote (names, keys, file names). Their text form
(``str()``) is safe to print on a terminal: every character that is not printable (control
characters such as ESC, which would start an ANSI escape sequence, newlines inside a name,
zero-width or bidirectional-override characters) is shown as its Python escape (``\\x1b``).
The attributes keep the text as given, for ``--json`` output and for programs.
"""

from __future__ import annotations

from dataclasses import dataclass


def printable(text: str) -> str:
    """``text`` with every non-printable character shown as its Python escape: ``'\\x1b[31m'``
    becomes ``'\\\\x1b[31m'``, a tab ``'\\\\t'``. Printable text is returned unchanged."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str

    def __str__(self) -> str:
        path, message = printable(self.path), printable(self.message)
        return f"{path}: {message}" if path else message


class InstanceError(ValueError):
    """One or more problems with an instance file."""

    def __init__(self, file: str, errors: list[FieldError]) -> None:
        self.file = file
        self.errors = errors
        super().__init__(self.render())

    def lines(self) -> list[str]:
        """One printable line per problem: ``<file>: <field path>: <message>``."""
        file = printable(self.file)
        return [f"{file}: {e}" for e in self.errors]

    def render(self) -> str:
        """The error as the CLI prints it: one line per problem, each naming the file and the
        field."""
        return "\n".join(self.lines())
