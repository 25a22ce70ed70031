"""The shape of the house: data flows one way, and no module imports itself in a circle.

Read from the source with ``ast`` (every import statement, those inside functions and those
under ``if TYPE_CHECKING:`` included: an import for annotations is still an arrow):

- no import cycle among the modules of ``planner`` and ``formulations``;
- the instance layer (``planner/instance/``, the catalogs included) imports nothing of the
  planner but the physics formulas and ``planner.lazy``;
- the lower layers of ``planner`` never import ``formulations`` or the upper layers;
- ``formulations`` never imports the upper layers;
- the checker imports nothing of the planner but the instance, the physics formulas and the
  plan/result data types;
- README's layer list ("Where things are") names every module, and no module imports one
  listed below its own line.

And one regression of a drift the consolidation removed: the planner's and the checker's MFU
of a GPU type a per-GPU mapping leaves out, with a GPU type named ``default``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from builders import assert_valid, instance_from, tiny_dict

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("planner", "formulations")

#: The layers, as folders (a few one-module utilities of the package root beside them): below
#: formulations the instance and catalog layer, the physics, the model layer and the checker;
#: above them the one entry point ``planner.solve``, analysis and the interfaces.
LOWER = (
    "planner.lazy",
    "planner.jsonable",
    "planner.outfiles",
    "planner.terminal",
    "planner.beside",
    "planner.collector",
    "planner.instance",
    "planner.physics",
    "planner.model",
    "planner.checker",
)
UPPER = ("planner.solve", "planner.analysis", "planner.interfaces")
#: What the independent checker may import of the project.
CHECKER_MAY = ("planner.instance", "planner.physics", "planner.model.plan", "planner.model.result")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            out[_module_name(path)] = path
    return out


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """The project modules ``name`` imports, at run time or for annotations (a ``from X import
    Y`` of a submodule Y counts as an import of ``X.Y``)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.add(sub if sub in MODULES else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in found if m in MODULES}


GRAPH = {m: _imports(m) for m in MODULES}


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_no_import_cycles() -> None:
    """Tarjan's strongly connected components of the import graph are all single modules
    without a self-edge."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(GRAPH[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in GRAPH[v]:
                cycles.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            strong(v)
    arrows = [f"{a} -> {b}" for comp in cycles for a in comp for b in sorted(GRAPH[a]) if b in comp]
    assert cycles == [], f"import cycles {cycles}: " + "; ".join(arrows)


def test_the_graph_is_read() -> None:
    # the reader sees real edges (a reader that saw none would pass every test above), those
    # inside functions and under TYPE_CHECKING too
    assert "planner.model.costs" in GRAPH["planner.model.configs"]
    assert "planner.model.configs" in GRAPH["formulations.exact.milp.model"]
    assert "planner.instance.model" in GRAPH["planner.checker.check"]
    assert "planner.instance.usercatalog" in GRAPH["planner.instance.gpus"]  # in a function
    assert (
        "planner.analysis.attribution" in GRAPH["planner.interfaces.report.blocks"]
    )  # under TYPE_CHECKING


def test_the_instance_layer_imports_only_physics_below_it() -> None:
    """``planner/instance/`` reads instance files and the GPU catalogs they name; it is the
    bottom of the planner with the physics formulas, so nothing else of the planner is an
    arrow out of it (the built-in, user and SkyPilot catalogs live in it for that)."""
    bad = {
        (m, t)
        for m, targets in GRAPH.items()
        if _under(m, ("planner.instance",))
        for t in targets
        if not _under(t, ("planner.instance", "planner.physics", "planner.lazy"))
    }
    assert bad == set()


def test_lower_layers_never_import_upper_ones() -> None:
    bad = {
        (m, t)
        for m, targets in GRAPH.items()
        if _under(m, LOWER)
        for t in targets
        if _under(t, UPPER) or t.startswith("formulations")
    }
    assert bad == set()


def test_formulations_never_import_upper_layers() -> None:
    bad = {
        (m, t)
        for m, targets in GRAPH.items()
        if m.startswith("formulations")
        for t in targets
        if _under(t, UPPER)
    }
    assert bad == set()


def test_checker_imports_only_instance_physics_and_plan_data() -> None:
    bad = {
        (m, t)
        for m, targets in GRAPH.items()
        if _under(m, ("planner.checker",))
        for t in targets
        if not _under(t, (*CHECKER_MAY, "planner.checker"))
    }
    assert bad == set()


def test_every_planner_module_is_in_a_layer() -> None:
    loose = [
        m
        for m in MODULES
        if m.startswith("planner.") and not _under(m, LOWER) and not _under(m, UPPER)
    ]
    assert loose == []


# ----------------------------------------------------------------------------- README's layers


def readme_layers() -> list[tuple[str, ...]]:
    """The layer list of README's "Where things are" block, top first: per line that starts
    at the margin, the module paths before the description (``planner/model/costs.py``,
    ``planner/instance/``, ``formulations/``) as dotted names."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Where things are", 1)[1].split("```", 2)[1]
    layers: list[tuple[str, ...]] = []
    for line in block.splitlines():
        if not line or line[0].isspace():
            continue
        head = line.split("  ", 1)[0]
        names = tuple(
            p.strip().removesuffix("/").removesuffix(".py").replace("/", ".")
            for p in head.split(",")
            if p.strip().startswith(PACKAGES)
        )
        if names:
            layers.append(names)
    return layers


def _layer_of(module: str, layers: list[tuple[str, ...]]) -> int | None:
    for i, names in enumerate(layers):
        if _under(module, names):
            return i
    return None


def test_readme_lists_every_module_in_one_layer() -> None:
    layers = readme_layers()
    assert len(layers) >= 8, layers  # the block is read
    listed = [n for names in layers for n in names]
    assert len(listed) == len(set(listed)), listed
    unknown = [n for n in listed if n not in MODULES]
    assert unknown == [], f"README names modules that do not exist: {unknown}"
    # every module but the package roots (their public names load lazily)
    missing = [m for m in MODULES if m not in PACKAGES and _layer_of(m, layers) is None]
    assert missing == [], f"modules missing from README's layer list: {missing}"


def test_readme_layer_list_matches_the_import_graph() -> None:
    """Each README line imports only the lines above it and itself (run-time imports)."""
    layers = readme_layers()
    up = sorted(
        (m, t)
        for m, targets in GRAPH.items()
        for t in targets
        if m not in PACKAGES
        and t not in PACKAGES
        and (a := _layer_of(m, layers)) is not None
        and (b := _layer_of(t, layers)) is not None
        and b > a
    )
    assert up == [], f"imports that go down README's layer list: {up}"


def test_architecture_names_the_pipeline_stages_in_the_order_the_code_runs_them() -> None:
    """docs/architecture.md's stage table names, row by row, the stage functions of
    :mod:`formulations.pipeline` that the hourly chain (``hourly``, then ``reduced_milp`` and
    ``finish``) calls in that same order; the non-preemptive entry points run the pipeline's
    contiguous stages."""
    import inspect
    import re

    import formulations.exact.cpsat.solve as cpsat_solve
    import formulations.exact.starttime.solve as starttime_solve
    import formulations.pipeline as pipeline

    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    code = inspect.getsource(pipeline.solve_milp) + inspect.getsource(pipeline.hourly)
    # the stages are read where the chain last calls them (nested calls in place)
    for helper in (pipeline.first_plans, pipeline.reduced_milp):
        calls = list(re.finditer(rf"(?<![\w.]){helper.__name__}\(", code))
        assert calls, helper.__name__
        call = calls[-1]
        code = code[: call.start()] + inspect.getsource(helper) + code[call.start() :]
    stages = [
        "configuration_space",
        "separable_bound",
        "start_placements",
        "best_heuristic",
        "recontract_incumbent",
        "segment_bound",
        "dp_bound",
        "lagrangian",
        "fixing",
        "solve_reduced",
        "neighbourhood_search",
        "finish",
    ]
    for name in stages:  # every stage is a function of the pipeline module, named in the doc
        assert callable(getattr(pipeline, name, None)) or name == "start_placements", name
        assert f"`{name}" in doc or f".{name}" in doc, name
    pos = 0  # each stage's call found after the previous stage's
    for name in stages:
        hit = re.compile(rf"(?<![\w.]){name}\(").search(code, pos)
        assert hit is not None, f"{name} is not called after the stage before it"
        pos = hit.end()
    assert "earliest(" in inspect.getsource(pipeline.finish)
    table = doc[doc.index("| # | stage |") :]
    rows = ["configuration space", "separable bound", "Lagrangian relaxation"]
    rows += ["bound-based fixing", "reduced MILP", "neighbourhoods"]
    rows += ["earliest-finish compaction", "verification"]
    at = [table.index(f"| {row} |") for row in rows]
    assert at == sorted(at), dict(zip(rows, at, strict=True))
    # the contiguous models: the same first stage, their tables, start and finish
    for module in (starttime_solve, cpsat_solve):
        src = inspect.getsource(module)
        for stage in ("contiguous_entry", "contiguous_start", "contiguous_finish"):
            assert f"{stage}(" in src, (module.__name__, stage)
    assert "contiguous_tables(" in inspect.getsource(pipeline.contiguous_entry)
    assert "configuration_space(" in inspect.getsource(pipeline.contiguous_tables)


# ----------------------------------------------------------------------------- MFU drift


def test_mfu_of_an_unlisted_gpu_is_the_schema_default_on_both_sides() -> None:
    """A GPU type called ``default`` is a GPU type, not a fallback: with ``mfu: {default:
    0.6}`` the fine-tune on A100 runs at the schema's 0.40 for the planner and the checker
    alike (before, the planner took 0.6 and the checker 0.40, and ``verify`` rejected the
    plan ``solve`` wrote)."""
    from planner.checker.recompute import mfu_of as checker_mfu
    from planner.instance.schema import DEFAULT_MFU
    from planner.model.workload import mfu_of
    from planner.solve import solve

    d = tiny_dict()
    d["gpu_types"]["default"] = d["gpu_types"].pop("L4")
    east = d["regions"]["east"]
    east["capacity"]["default"] = east["capacity"].pop("L4")
    east["offers"]["default"] = east["offers"].pop("L4")
    ft = d["phases"][1]
    ft["mfu"] = {"default": 0.6}
    ft["gpu_types"] = ["A100"]
    inst = instance_from(d)
    p = inst.phase("finetune")
    assert mfu_of(p, "A100") == checker_mfu(p, "A100") == DEFAULT_MFU == 0.40
    assert mfu_of(p, "default") == checker_mfu(p, "default") == 0.6
    res = solve(inst, time_limit=30)
    assert res.plan is not None and res.plan.phase("finetune").gpu == "A100"
    assert_valid(inst, res.plan)


# ----------------------------------------------------------------------------- code shape

#: The longest a function of planner/ or formulations/ may be, signature and docstring
#: included (issue 25: a longer one hides its steps; split it into named helpers).
MAX_FUNCTION_LINES = 120


def _trees() -> dict[str, ast.Module]:
    return {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in MODULES.items()}


TREES = _trees()


Function = ast.FunctionDef | ast.AsyncFunctionDef


def _public_functions(body: list[ast.stmt], prefix: str) -> list[tuple[str, Function]]:
    """Module-level functions and methods of public classes (nested public classes too)
    whose names do not start with ``_``: the API a reader meets."""
    out: list[tuple[str, Function]] = []
    for n in body:
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and not n.name.startswith("_"):
            out.append((prefix + n.name, n))
        elif isinstance(n, ast.ClassDef) and not n.name.startswith("_"):
            out += _public_functions(n.body, f"{prefix}{n.name}.")
    return out


def test_every_public_function_and_method_has_a_docstring() -> None:
    missing = [
        f"{m}.{name}"
        for m, tree in TREES.items()
        for name, node in _public_functions(tree.body, "")
        if ast.get_docstring(node) is None
    ]
    assert missing == [], f"{len(missing)} public functions without a docstring: {missing}"


def test_no_function_is_longer_than_the_limit() -> None:
    long = sorted(
        (n.end_lineno - n.lineno + 1, f"{m}.{n.name}")
        for m, tree in TREES.items()
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.end_lineno is not None
        if n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES
    )
    assert long == [], f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_shape_checks_see_functions() -> None:
    # the readers find what they check (a reader that saw nothing would pass both above)
    names = {name for tree in TREES.values() for name, _ in _public_functions(tree.body, "")}
    assert {"cost_plan", "Plan.to_dict", "Config.plan_fields"} <= names
    lengths = [
        n.end_lineno - n.lineno + 1
        for tree in TREES.values()
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and n.end_lineno is not None
    ]
    assert len(lengths) > 1000 and max(lengths) > 80
