"""The modules of ``planner/instance`` import each other without a cycle.

Every module is imported in a fresh interpreter (so that none depends on another having been
imported first), and the import statements of each, including those inside functions, are
read with :mod:`ast`: the graph of imports among ``planner.instance`` modules must have no
cycle. A lazy import inside a function counts: it hides a cycle, it does not remove it.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "planner.instance"
FOLDER = ROOT / "planner" / "instance"


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(FOLDER.rglob("*.py"))}


def imports_of(source: str, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``source`` (the text of ``module``) imports anywhere
    (top level, functions, classes, ``if TYPE_CHECKING`` blocks). ``from a import b`` counts
    as importing ``a.b`` when that is a known module, else ``a``; relative imports are
    resolved against ``module``."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:
                    found.add(sub)
                elif target in known:
                    found.add(target)
    found.discard(module)
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle ``[a, b, ..., a]`` in ``graph`` (module -> modules it imports), or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(n: str, path: list[str]) -> list[str] | None:
        state[n] = 1
        path.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return [*path[path.index(m) :], m]
            if m not in state:
                found = visit(m, path)
                if found:
                    return found
        path.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n, [])
            if found:
                return found
    return None


def test_cycle_finder_finds_a_lazy_cycle() -> None:
    # the shape this package had before: model imports read inside a function, read imports
    # model at the top; series imports read inside a function
    known = {"p", "p.model", "p.read", "p.series"}
    model = "import x\n\ndef replace():\n    from p.read import from_dict\n"
    read = "from p.model import Instance\nfrom p import series\n"
    series = "def f():\n    from .read import _not_a_file\n"
    graph = {
        "p.model": imports_of(model, "p.model", False, known),
        "p.read": imports_of(read, "p.read", False, known),
        "p.series": imports_of(series, "p.series", False, known),
    }
    assert graph == {
        "p.model": {"p.read"},
        "p.read": {"p.model", "p.series"},
        "p.series": {"p.read"},
    }
    assert find_cycle(graph) == ["p.model", "p.read", "p.model"]
    graph["p.model"] = set()
    assert find_cycle(graph) == ["p.read", "p.series", "p.read"]
    graph["p.series"] = set()
    assert find_cycle(graph) is None


@pytest.mark.timeout(120)
@pytest.mark.slow  # the default run stays under 10 minutes on CI's 2 cores
def test_every_instance_module_imports_in_a_fresh_interpreter() -> None:
    modules = sorted(_modules())
    assert {"planner.instance.read", "planner.instance.model", "planner.instance.series"} <= set(
        modules
    )
    for name in modules:
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                "import importlib, json, sys; "
                "print(json.dumps(importlib.import_module(sys.argv[1]).__name__))",
                name,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
        assert proc.returncode == 0, f"import {name} failed:\n{proc.stderr}"
        assert json.loads(proc.stdout) == name


def test_no_import_cycle_among_instance_modules() -> None:
    modules = _modules()
    known = set(modules)
    graph = {
        name: imports_of(path.read_text(), name, path.name == "__init__.py", known)
        for name, path in modules.items()
    }
    # the package's __init__ imports its modules; none of them may import the package back
    assert all(PACKAGE not in deps for name, deps in graph.items() if name != PACKAGE), graph
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])
    # the edges that used to close the cycles are gone
    assert "planner.instance.read" not in graph["planner.instance.model"]
    assert "planner.instance.read" not in graph["planner.instance.series"]
