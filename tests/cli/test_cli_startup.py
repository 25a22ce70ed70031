"""A command line that starts at once (issue 27): the light commands import no solver.

Each command runs in a fresh interpreter (``python -c`` calling :func:`planner.interfaces.cli.main`,
as the ``trainplan`` script does) that then writes the names of the modules it imported; none of
``--version``, ``-h``, ``check``, ``schema``, ``gpus`` (and the help of every command) may
have imported pyomo, HiGHS, OR-Tools, Ray or matplotlib, nor pandas; ``--version`` not even
the CLI's own modules. A test that fails here names the module that pulled a solver in:
``python -X importtime -m planner.interfaces.cli ...`` shows the chain.

The wall-clock targets (``--version`` 0.3 s, ``check`` 0.8 s, ``solve week-7b`` 1.0 s on an
idle machine) are a benchmark's, not a test's: ``benchmarks/startup.py`` reports the median
and the least of several runs, each in a fresh process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.interfaces.cli import COMMANDS, MODULE_OF

ROOT = Path(__file__).resolve().parents[2]
WEEK = ROOT / "instances" / "week-7b.yaml"
#: Top-level packages a light command must not import.
SOLVERS = ("pyomo", "highspy", "ortools", "ray", "matplotlib", "pandas", "numba", "llvmlite")

_PROBE = """
import json, sys
sys.argv = ["trainplan", *json.loads(sys.argv[1])]
from planner.interfaces.cli import main
try:
    main()
except SystemExit:
    pass
with open(OUT, "w") as fh:
    json.dump(sorted(sys.modules), fh)
"""


def imported(tmp_path: Path, *args: str) -> set[str]:
    """The modules a fresh ``trainplan ARGS`` imported."""
    out = tmp_path / "modules.json"
    code = _PROBE.replace("OUT", repr(str(out)))
    subprocess.run(
        [sys.executable, "-c", code, json.dumps(list(args))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return set(json.loads(out.read_text()))


def _solvers_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in SOLVERS)


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("-h",),
        ("check", str(WEEK)),
        ("schema",),
        ("gpus",),
        ("gpus", "H100"),
        ("solve", "-h"),
        ("report", "-h"),
        ("grid", "-h"),
    ],
    ids=lambda a: " ".join(Path(x).name for x in a),
)
def test_light_commands_import_no_solver(tmp_path: Path, args: tuple[str, ...]) -> None:
    mods = imported(tmp_path, *args)
    assert "planner" in mods  # the probe ran
    assert _solvers_in(mods) == []


def test_a_small_solve_compiles_nothing(tmp_path: Path) -> None:
    """``solve week-7b`` evaluates its relaxation with numpy: numba's import (about 0.4 s)
    is for relaxations of at least :data:`formulations.bounds.compiled.COMPILED_CELLS`."""
    mods = imported(tmp_path, "-q", "solve", str(WEEK), "-o", str(tmp_path / "plan.json"))
    assert (tmp_path / "plan.json").exists()  # the solve ran
    assert not {"numba", "llvmlite"} & {m.split(".")[0] for m in mods}


def test_version_loads_no_command(tmp_path: Path) -> None:
    mods = imported(tmp_path, "--version")
    assert not any(
        m.startswith("planner.interfaces.cli.") and m != "planner.interfaces.cli.argv" for m in mods
    )
    assert not {"typer", "rich", "numpy", "pydantic", "yaml"} & {m.split(".")[0] for m in mods}


def test_a_command_loads_only_its_module(tmp_path: Path) -> None:
    mods = imported(tmp_path, "check", str(WEEK))
    loaded = {
        m.removeprefix("planner.interfaces.cli.")
        for m in mods
        if m.startswith("planner.interfaces.cli.")
    }
    assert "check" in loaded
    assert not loaded & {"solve", "grid", "report", "levers", "export", "estimate"}


def test_every_command_is_found_by_its_module() -> None:
    """:data:`planner.interfaces.cli.MODULE_OF` and the module names cover every registered command
    (a command :func:`planner.interfaces.cli.main` could not find would be "No such command")."""
    from planner.interfaces.cli import _register, app

    _register()
    names = {c.name or c.callback.__name__ for c in app.registered_commands if c.callback}
    names |= {g.name for g in app.registered_groups if g.name}
    assert names == set(COMMANDS) | set(MODULE_OF)
    for name in names:
        assert MODULE_OF.get(name, name) in COMMANDS, name


def test_planner_solve_stays_the_function() -> None:
    """``planner.solve`` is the function, also once the submodule has been imported."""
    code = (
        "import planner, planner.solve as m, importlib\n"
        "importlib.import_module('planner.solve')\n"
        "assert callable(planner.solve) and planner.solve.__name__ == 'solve', planner.solve\n"
        "import planner.instance.read\n"
        "assert callable(planner.read) and planner.instance.read.__name__ == 'read'\n"
        "from planner.solve import SOLVERS\n"
        "from planner.instance.read import load_document\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr


def test_a_solve_and_its_attribution_enumerate_the_instance_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The numeric checks, the solver, the lever-free baseline and the attribution of one
    solve share the enumerations of the instance's configurations (planner.model.configs caches
    them per instance: the solvers' prefiltered one, which builds only what dominance keeps,
    and the full one of the baseline and the attribution): each kind once per instance, each
    variant of the attribution once."""
    import planner.model.configs as configs
    from planner.analysis.attribution import attribute
    from planner.instance.read import read
    from planner.solve import solve

    seen: list[tuple[object, bool]] = []  # the instances themselves: alive, no id reused
    real = configs._enumerate_all

    def counting(inst: object, prefilter: bool) -> object:
        seen.append((inst, prefilter))
        return real(inst, prefilter)  # type: ignore[arg-type]

    monkeypatch.setattr(configs, "_enumerate_all", counting)
    inst = read(ROOT / "tests" / "data" / "tiny.yaml")
    res = solve(inst, time_limit=30)
    assert res.plan is not None
    attribute(inst, res.plan)
    assert sorted(p for x, p in seen if x is inst) == [False, True]
    kinds = [(id(x), p) for x, p in seen]
    assert len(set(kinds)) == len(kinds)  # no variant enumerated twice of a kind


def test_solve_draws_nothing(tmp_path: Path) -> None:
    """``solve`` writes a plan and its notes; the report's charts (matplotlib, 3 s to import on
    a busy machine) load only when a report is made."""
    mods = imported(tmp_path, "-q", "solve", str(WEEK), "-o", str(tmp_path / "plan.json"))
    assert (tmp_path / "plan.json").is_file()
    assert "planner.interfaces.report.facts" in mods  # solve's notes read the report's facts
    assert not {m for m in mods if m.split(".")[0] == "matplotlib"}


def test_the_schema_models_are_built_from_evaluated_annotations() -> None:
    """The instance schema's annotations are objects, not strings: pydantic resolves a
    string annotation through a ForwardRef, and the schema's 288 cost 40-50 ms of every
    command's start (``from __future__ import annotations`` must not return to it)."""
    import inspect

    from pydantic import BaseModel

    import planner.instance.schema as schema

    models = [
        m
        for m in vars(schema).values()
        if isinstance(m, type) and issubclass(m, BaseModel) and m.__module__ == schema.__name__
    ]
    assert len(models) > 20
    strings = [
        f"{m.__name__}.{field}"
        for m in models
        for field, a in inspect.get_annotations(m).items()
        if isinstance(a, str)
    ]
    assert strings == []


def test_the_collector_is_paused_only_while_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from planner.interfaces.cli import startup
    from planner.interfaces.cli.startup import collector_paused

    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    with collector_paused():  # a process that embeds the command line: nothing frozen
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    monkeypatch.setattr(startup, "_ONE_SHOT", True)  # the trainplan process itself
    with collector_paused():
        assert not gc.isenabled()
        made = [[] for _ in range(1000)]  # kept: frozen out of later passes
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(made)
    gc.disable()  # a caller that turned it off keeps it off
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
    with pytest.raises(ValueError), collector_paused():  # an error turns it back on too
        raise ValueError("bad instance")
    assert gc.isenabled()
    gc.unfreeze()


def test_a_command_runs_with_the_collector_on(tmp_path: Path) -> None:
    # the probe reports whether the collector ran during the command itself
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import gc, sys\n"
        "from planner.interfaces.cli import check\n"
        "seen = []\n"
        "app = sys.modules['planner.interfaces.cli.app']\n"
        "load = app.load_instance\n"
        "def spy(path):\n"
        "    inst = load(path)\n"
        "    seen.append(gc.isenabled())\n"
        "    return inst\n"
        "app.load_instance = spy\n"
        "check.load_instance = spy\n"
        "sys.argv = ['trainplan', 'check', sys.argv[1]]\n"
        "from planner.interfaces.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('collector on after loading:', seen)\n",
        encoding="utf-8",
    )
    out = subprocess.run(
        [sys.executable, str(probe), str(WEEK)], capture_output=True, text=True, check=False
    )
    assert "collector on after loading: [True]" in out.stdout, out.stdout + out.stderr
