"""Errors raised while reading an instance: each names the file, the field path and what was
expected, so the CLI can print it and exit with status 2."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class InstanceError(ValueError):
    """One or more problems with an instance file."""

    def __init__(self, file: str, errors: list[FieldError]) -> None:
        self.file = file
        self.errors = errors
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"{self.file}: {e}" for e in self.errors]
        return "\n".join(lines)
