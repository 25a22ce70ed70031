"""Consoles that print text as text: the one place where what trainplan prints meets the
terminal.

Names, file names, messages and every other string a user supplied reach the screen in
tables, titles and lines. A plain rich console reads each of them as markup (a phase called
``[/]`` is a closing tag with nothing open: rich raises, after the plan file is written), as
emoji codes (``:x:`` becomes a cross) and passes control characters on (an ESC in a CSV
header or a plan file starts an ANSI escape sequence). A :class:`TextConsole` does none of
that: every string it renders, in a table cell, a title or a line, goes through
:meth:`TextConsole.render_str`, which turns off markup and emoji and shows each non-printable
character as its Python escape (``\\x1b``), line by line (newlines stay line breaks).

Styling is by :class:`rich.text.Text` objects built with :func:`styled` (the text escaped the
same way), never by markup in a string.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.style import Style
from rich.text import Text

from planner.instance.errors import printable


def shown(text: str) -> str:
    """``text`` as it may reach a terminal: every non-printable character but the newline
    as its Python escape (``'\\x1b[31m'`` is shown as ``\\x1b[31m``, a tab as ``\\t``)."""
    if text.isprintable():
        return text
    return "\n".join(printable(line) for line in text.split("\n"))


def styled(text: str, style: str | Style) -> Text:
    """``text`` (escaped as :func:`shown`) in ``style``: how to colour a word without markup."""
    return Text(shown(text), style=style)


class TextConsole(Console):
    """A rich console that never interprets a string (see the module docstring): markup,
    emoji codes and highlighting off, control characters escaped."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.update(markup=False, emoji=False, highlight=False)
        super().__init__(**kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        """Every string rendered (printed, a table cell, a title): as text, escaped; the
        ``emoji``, ``markup`` and ``highlight`` a caller asks for are ignored (as in
        ``__init__``), the other options of :meth:`rich.console.Console.render_str` pass
        through."""
        kwargs.update(emoji=False, markup=False, highlight=False)
        return super().render_str(shown(text), **kwargs)
