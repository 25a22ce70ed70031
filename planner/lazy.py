"""Packages whose public names load on first use (PEP 562), so that importing a light
module of a package (or the command line's ``--version``) does not import its heavy ones.

:func:`lazy_names` installs a package's ``__getattr__`` and one rule the eager imports it
replaces kept: a public function named like its own submodule (``planner.solve``,
``planner.instance.read``) stays the function after the submodule is imported (the import
system sets the submodule as an attribute of its package; here the submodule's function is
kept instead).
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Mapping
from typing import Any


class _LazyPackage(types.ModuleType):
    """A package whose names in ``_lazy_shadowed`` stay functions (see the module docstring)."""

    _lazy_shadowed: frozenset[str] = frozenset()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._lazy_shadowed and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


def lazy_names(package: str, names: Mapping[str, str]) -> None:
    """Make ``names`` (public name -> the module that defines it) of ``package`` load on first
    use. Call it at the end of the package's ``__init__``."""
    module = sys.modules[package]

    def __getattr__(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where), name)
        setattr(module, name, value)
        return value

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    shadowed = frozenset(n for n, where in names.items() if where == f"{package}.{n}")
    module.__class__ = type(
        "LazyPackage", (_LazyPackage,), {"_lazy_shadowed": shadowed, "__module__": package}
    )
