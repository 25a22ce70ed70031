"""Scenario grids: expansion and stable IDs, validation before solving, local batch solving
that matches direct solves, failure isolation, kill -9 and resume, export."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from planner.instance import read
from planner.interfaces.grid import GridError, load_grid, solve_grid
from planner.interfaces.grid.export import export, read_store
from planner.interfaces.grid.spec import (
    build_instance,
    grid_from_dict,
    grid_from_instance,
    scenario_id,
)
from planner.interfaces.grid.store import Store, StoreError
from planner.model.plan import Plan
from planner.solve import solve

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
TINY = DATA / "tiny.yaml"
SMALL = DATA / "grid_small.yaml"
CLI = [sys.executable, "-c", "from planner.interfaces.cli import main; main()"]


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {}), "COLUMNS": "200"},
    )


def rows(store: Path) -> dict[str, dict[str, Any]]:
    """Every stored row, by ID, read through a fresh connection."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        return {r["id"]: dict(r) for r in db.execute("SELECT * FROM scenarios")}
    finally:
        db.close()


# ----------------------------------------------------------------------------- expansion


def test_product_expansion_and_updates() -> None:
    spec = load_grid(SMALL)
    # 2 fleets x 2 multipliers x 2 PUEs = 8 scenarios, in axis order (last axis fastest).
    assert len(spec.scenarios) == 8
    assert [dict(sc.params) for sc in spec.scenarios[:2]] == [
        {"fleet": "both", "regions.east.electricity*": 1, "regions.east.pue": 1.2},
        {"fleet": "both", "regions.east.electricity*": 1, "regions.east.pue": 1.5},
    ]
    sc = next(
        s
        for s in spec.scenarios
        if s.params
        == {"fleet": "east_only", "regions.east.electricity*": 2, "regions.east.pue": 1.5}
    )
    assert dict(sc.sets) == {"regions.east.pue": 1.5, "regions.west.capacity.A100": 0}
    inst = build_instance(spec.base, sc)
    # east: constant 60 USD/MWh, scale 1 x multiplier 2 -> 120 every hour; west untouched.
    assert inst.price["east"].tolist() == [120.0] * 48
    assert inst.price["west"].tolist() == spec.base.price["west"].tolist()
    assert inst.region("east").pue == 1.5
    assert inst.capacity[("west", "A100")].tolist() == [0.0] * 48


def test_multiplier_composes_with_the_base_scale() -> None:
    base = read(TINY).replace({"regions.east.electricity.scale": 1.5})
    spec = grid_from_instance(base, [{"multiply": "regions.east.electricity", "values": [2.0]}])
    inst = build_instance(spec.base, spec.scenarios[0])
    # 60 USD/MWh x base scale 1.5 x multiplier 2 = 180.
    assert inst.price["east"][0] == pytest.approx(180.0)


def test_ids_are_stable() -> None:
    spec = load_grid(SMALL)
    doc = {
        "base": "tiny.yaml",
        "axes": [
            {"path": "regions.east.pue", "values": [1.5, 1.2]},
            {"multiply": "regions.east.electricity", "values": [2, 1]},
            {
                "name": "fleet",
                "alternatives": {"east_only": {"regions.west.capacity.A100": 0}, "both": {}},
            },
        ],
    }
    reordered = grid_from_dict(doc, "<test>", DATA)

    def by_params(s: Any) -> dict[str, str]:
        return {json.dumps(dict(sc.params), sort_keys=True): sc.id for sc in s.scenarios}

    # Same parameter values -> same ID, whatever the order of axes and values (and 2 == 2.0).
    assert by_params(reordered) == by_params(spec)
    # Different values -> different IDs.
    assert len({sc.id for sc in spec.scenarios}) == 8
    # The ID is the documented hash of the change alone, so a grid that lists one scenario
    # gives it the same ID as the product grid does.
    one = next(
        s
        for s in spec.scenarios
        if s.params
        == {"fleet": "east_only", "regions.east.electricity*": 2, "regions.east.pue": 1.5}
    )
    text = (
        '{"multiply":{"regions.east.electricity":2},"set":{"regions.east.pue":1.5,'
        '"regions.west.capacity.A100":0}}'
    )
    assert one.id == hashlib.sha256(text.encode()).hexdigest()[:12]
    listed = load_grid(DATA / "grid_list.yaml")
    assert listed.scenarios[0].id == one.id
    assert len(listed.scenarios) == 3
    # An axis value and an alternative block making the same change are one scenario.
    assert scenario_id({"regions.east.pue": 1.5}, {}) == scenario_id({"regions.east.pue": 1.50}, {})
    assert scenario_id({"regions.east.pue": 1.5}, {}) != scenario_id({"regions.east.pue": 1.4}, {})


# ----------------------------------------------------------------------------- validation


def test_bad_scenarios_reported_before_running(tmp_path: Path) -> None:
    store = tmp_path / "bad.sqlite"
    res = run_cli("grid", str(DATA / "grid_bad.yaml"), "-o", str(store))
    assert res.returncode == 2, res.stdout + res.stderr
    err = " ".join(res.stderr.split())
    assert "Traceback" not in res.stderr
    bad = load_grid_ids(DATA / "grid_bad.yaml")
    # Each problem names the field path, what was expected and the scenarios it occurs in.
    assert "regions.east.pue: expected a number >= 1 (got 0.5) [in 2 of 4 scenarios" in err
    assert "phases.fintune.deadline: no item named 'fintune' [in 2 of 4 scenarios" in err
    assert "regions.east.timezone: multiply: expected an hourly series" in err
    for sid in bad["regions.east.pue=0.5"]:
        assert sid in err
    assert not store.exists()  # nothing ran, nothing was written


def load_grid_ids(path: Path) -> dict[str, list[str]]:
    """IDs of the scenarios of a grid whose validation fails, by ``axis=value``, computed
    without validating (expansion only)."""
    from planner.instance.read import load_document
    from planner.interfaces.grid.spec import _parse_axes, _product, expand

    doc = load_document(path)
    axes = _parse_axes(doc["axes"], "product", [])
    scs, _ = expand(axes, _product(axes, str(path)), str(path))
    out: dict[str, list[str]] = {}
    for sc in scs:
        for k, v in sc.params.items():
            out.setdefault(f"{k}={v}", []).append(sc.id)
    return out


@pytest.mark.parametrize(
    ("doc", "path", "message"),
    [
        (
            {
                "base": "tiny.yaml",
                "axes": [{"path": "regions.east.pue", "values": [1.2]}],
                "sweep": 1,
            },
            "sweep",
            "unknown field",
        ),
        (
            {"base": "tiny.yaml", "axes": [{"path": "regions.east.pue", "values": [1.2, 1.2]}]},
            "axes[0].values",
            "listed twice",
        ),
        (
            {"base": "tiny.yaml", "axes": [{"path": "regions.east.pue", "values": []}]},
            "axes[0].values",
            "non-empty",
        ),
        (
            {
                "base": "tiny.yaml",
                "axes": [{"multiply": "regions.east.electricity", "values": [-1]}],
            },
            "axes[0].values",
            ">= 0",
        ),
        (
            {
                "base": "tiny.yaml",
                "axes": [
                    {"path": "regions.east.pue", "values": [1.2]},
                    {"path": "regions.east.pue", "values": [1.3]},
                ],
            },
            "axes[1].name",
            "duplicate axis name",
        ),
        (
            {
                "base": "tiny.yaml",
                "axes": [
                    {"path": "regions.east.pue", "values": [1.2]},
                    {"name": "b", "alternatives": {"x": {"regions.east.pue": 1.4}}},
                ],
            },
            "axes",
            "both set regions.east.pue",
        ),
        (
            {"base": "missing.yaml", "axes": [{"path": "regions.east.pue", "values": [1.2]}]},
            "base",
            "file does not exist",
        ),
        (
            {
                "base": "tiny.yaml",
                "mode": "list",
                "axes": [{"path": "regions.east.pue"}],
                "scenarios": [{"regions.west.pue": 1.2}],
            },
            "scenarios[0].regions.west.pue",
            "unknown axis",
        ),
    ],
)
def test_bad_grid_files(doc: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(GridError) as e:
        grid_from_dict(doc, "g.yaml", DATA)
    assert any(fe.path.startswith(path) and message in fe.message for fe in e.value.errors), (
        e.value.errors
    )


# ----------------------------------------------------------------------------- solving


def test_local_grid_matches_direct_solves(tmp_path: Path) -> None:
    store = tmp_path / "small.sqlite"
    df = solve_grid(SMALL, workers=2, store=store)
    spec = load_grid(SMALL)
    assert list(df["id"]) == [sc.id for sc in spec.scenarios]
    assert set(df["status"]) == {"ok"}
    assert df["worker_pid"].nunique() == 2  # both workers solved scenarios
    for sc, (_, row) in zip(spec.scenarios, df.iterrows(), strict=True):
        direct = solve(build_instance(spec.base, sc), solver="auto", time_limit=20, threads=1)
        assert direct.plan is not None
        assert row["cost_total"] == pytest.approx(direct.plan.costs["total"], rel=1e-9)
        assert row["cost_energy"] == pytest.approx(direct.plan.costs["energy"], rel=1e-9)
        stored = Plan.from_dict(json.loads(row["plan"]))
        assert [p.hours for p in stored.phases] == [p.hours for p in direct.plan.phases]
    east = df[df["param.fleet"] == "east_only"]
    # Everything runs in east at a constant 60 USD/MWh = 0.06 USD/kWh (facility energy, PUE
    # included), times the multiplier: 0.06 and 0.12 USD/kWh, whatever the schedule (costs
    # are rounded to 1e-6 USD, hence the tolerance).
    price = east["cost_energy"] / east["energy_kwh"]
    assert price.tolist() == pytest.approx(
        [0.06 * m for m in east["param.regions.east.electricity*"]], rel=1e-6
    )
    # A higher PUE in east means more facility energy for the same work.
    pue = east.groupby("param.regions.east.pue")["energy_kwh"].mean()
    assert pue[1.5] > pue[1.2]
    # Rerunning resumes: nothing left to solve, rows untouched.
    before = rows(store)
    again = solve_grid(SMALL, workers=2, store=store)
    assert rows(store) == before
    assert len(again) == 8
    with Store(store, readonly=True) as s:
        runs = s.runs()
    assert [(r["scenarios"], r["pending"], r["state"]) for r in runs] == [
        (8, 8, "finished"),
        (8, 0, "finished"),
    ]
    # Export: Parquet keeps the plan, CSV leaves it out; both have one row per scenario.
    pq = export(store, tmp_path / "small.parquet")
    back = pd.read_parquet(pq)
    assert len(back) == 8 and "plan" in back and "param.fleet" in back
    first = back.set_index("id").loc[spec.scenarios[0].id]
    total = Plan.from_dict(json.loads(str(first["plan"]))).total
    assert total == pytest.approx(first["cost_total"])
    csv = export(store, tmp_path / "small.csv")
    back_csv = pd.read_csv(csv)
    assert len(back_csv) == 8 and "plan" not in back_csv
    assert sorted(back_csv["cost_total"]) == pytest.approx(sorted(df["cost_total"]))
    assert len(read_store(store)) == 8


def test_ray_missing_gives_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.interfaces.grid.api import make_executor
    from planner.interfaces.grid.ray_executor import RayUnavailable

    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(RayUnavailable, match=r"pip install -e '\.\[ray\]'"):
        make_executor("ray")


def test_store_refuses_another_base(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    with Store(store) as s:
        s.bind("g", "a" * 64, "one.yaml")
        s.bind("g", "a" * 64, "one.yaml")  # same base: fine
        with pytest.raises(StoreError, match="different base instance"):
            s.bind("g", "b" * 64, "two.yaml")
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database")
    res = run_cli("grid-export", str(junk), "-o", str(tmp_path / "x.csv"))
    assert res.returncode == 2 and "not a grid store" in res.stderr


def test_failures_are_isolated_and_retried(tmp_path: Path) -> None:
    """A worker that dies (os._exit), raises, hangs past time limit + grace or exceeds its
    memory limit fails its own scenario; the others are solved; --retry-failed redoes them."""
    spec = load_grid(SMALL)
    ids = [sc.id for sc in spec.scenarios]
    crash, boom, hang, hog = ids[1], ids[2], ids[5], ids[6]
    store = tmp_path / "f.sqlite"
    hooks = {
        "TRAINPLAN_GRID_TEST_CRASH": crash,
        "TRAINPLAN_GRID_TEST_RAISE": boom,
        "TRAINPLAN_GRID_TEST_HANG": hang,
        "TRAINPLAN_GRID_TEST_ALLOC": hog,
    }
    t0 = time.monotonic()
    res = run_cli(
        "grid",
        str(SMALL),
        "-o",
        str(store),
        "--workers",
        "2",
        "--time-limit",
        "1",
        "--grace",
        "1",
        "--memory-gb",
        "1.5",
        env=hooks,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert time.monotonic() - t0 < 60
    got = rows(store)
    assert len(got) == 8
    assert got[crash]["status"] == "failed"
    assert "exited with status 1" in got[crash]["error"]
    assert got[boom]["status"] == "failed" and "RuntimeError: test hook" in got[boom]["error"]
    assert got[hang]["status"] == "timeout" and "killed after 2 s" in got[hang]["error"]
    assert got[hog]["status"] == "failed" and "out of memory" in got[hog]["error"]
    assert {got[i]["status"] for i in ids if i not in hooks.values()} == {"ok"}
    out = " ".join(res.stdout.split())
    assert "status: ok 4, timeout 1, failed 3" in out
    assert "best: " in out and "scenarios without a plan (4)" in out
    assert (tmp_path / "f.png").stat().st_size > 1000  # the chart beside the store
    # Rerun without hooks: failures stay stored (they are terminal) ...
    df = solve_grid(SMALL, workers=2, store=store)
    assert rows(store) == got and len(df) == 8
    # ... until retry_failed (--retry-failed), which redoes only them.
    df = solve_grid(SMALL, workers=2, store=store, retry_failed=True)
    after = rows(store)
    assert {after[i]["status"] for i in ids} == {"ok"} == set(df["status"])
    for i in ids:
        redone = i in hooks.values()
        assert after[i]["attempts"] == (2 if redone else 1)
        if not redone:
            assert after[i] == got[i]


def test_kill_9_then_resume(tmp_path: Path) -> None:
    """kill -9 of the whole process group mid-grid loses no stored result and duplicates
    none; the rerun solves exactly the rest. The store is readable while the grid runs."""
    grid = DATA / "grid_twenty.yaml"
    store = tmp_path / "twenty.sqlite"
    ids = {sc.id for sc in load_grid(grid).scenarios}
    assert len(ids) == 20
    env = {**os.environ, "TRAINPLAN_GRID_TEST_DELAY": "0.5", "COLUMNS": "200"}
    proc = subprocess.Popen(
        [*CLI, "grid", str(grid), "-o", str(store), "--workers", "2"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    seen: dict[str, dict[str, Any]] = {}
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if store.exists():
                try:
                    seen = rows(store)  # a second connection, while the grid writes
                except sqlite3.DatabaseError:  # being created: no tables yet
                    seen = {}
                if len(seen) >= 4:
                    break
            time.sleep(0.05)
        assert proc.poll() is None, "the grid finished before it could be killed"
        assert 4 <= len(seen) < 20
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()
    before = rows(store)
    assert set(seen) <= set(before) <= ids
    assert all(r["status"] == "ok" and r["attempts"] == 1 for r in before.values())
    res = run_cli("grid", str(grid), "-o", str(store), "--workers", "2")
    assert res.returncode == 0, res.stdout + res.stderr
    after = rows(store)
    assert set(after) == ids  # every scenario stored, exactly once (id is the primary key)
    for i, r in before.items():
        assert after[i] == r  # finished before the kill: unchanged, timestamps included
    with Store(store, readonly=True) as s:
        runs = s.runs()
    # killed: never marked finished by itself; the rerun found its process gone
    assert runs[0]["state"] == "interrupted" and runs[0]["finished_at"] is None
    assert runs[-1]["pending"] == 20 - len(before) and runs[-1]["state"] == "finished"
    assert all(after[i]["run"] == runs[-1]["run"] for i in ids - set(before))
    assert all(r["attempts"] == 1 for r in after.values())


# ----------------------------------------------------------------------------- stale runs


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    return proc.pid


def test_stale_runs_are_marked_interrupted(tmp_path: Path) -> None:
    import socket

    from planner.interfaces.grid.task import now

    path = tmp_path / "s.sqlite"
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with Store(path) as s:
            dead = s.start_run("local", 1, {}, 3, 3)  # its process: killed (gone)
            reused = s.start_run("local", 1, {}, 3, 3)  # its pid: now another process
            other = s.start_run("local", 1, {}, 3, 3)  # on another host: cannot tell
            mine = s.start_run("local", 1, {}, 3, 3)  # this process: still running
            old = "2000-01-01T00:00:00.000000+00:00"
            s.db.execute("UPDATE runs SET pid = ? WHERE run = ?", (_dead_pid(), dead))
            s.db.execute(
                "UPDATE runs SET pid = ?, started_at = ? WHERE run = ?", (alive.pid, old, reused)
            )
            s.db.execute(
                "UPDATE runs SET pid = ?, host = ? WHERE run = ?",
                (_dead_pid(), socket.gethostname() + "-elsewhere", other),
            )
            assert now() > old
        # opened again (as a new or resumed run does): only the stale ones change
        with Store(path) as s:
            state = {r["run"]: r["state"] for r in s.runs()}
        assert state == {
            dead: "interrupted",
            reused: "interrupted",
            other: "running",
            mine: "running",
        }
        # a live process that started before its run did is the run's own: left running
        with Store(path) as s:
            s.db.execute(
                "UPDATE runs SET pid = ?, started_at = ?, state = 'running' WHERE run = ?",
                (alive.pid, now(), reused),
            )
        with Store(path) as s:
            assert {r["run"]: r["state"] for r in s.runs()}[reused] == "running"
        # a reader does not change the store
        with Store(path, readonly=True) as s:
            assert len(s.runs()) == 4
    finally:
        alive.kill()
        alive.wait(timeout=10)


def test_a_store_without_the_host_column_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE runs (
          run INTEGER PRIMARY KEY AUTOINCREMENT,
          started_at TEXT NOT NULL, finished_at TEXT, pid INTEGER, executor TEXT,
          workers INTEGER, options TEXT, scenarios INTEGER, pending INTEGER,
          completed INTEGER DEFAULT 0, state TEXT
        );
    """)
    db.execute(
        "INSERT INTO runs (started_at, pid, state) VALUES (?, ?, 'running')",
        ("2024-01-01T00:00:00+00:00", _dead_pid()),
    )
    db.commit()
    db.close()
    with Store(path) as s:
        (run,) = s.runs()
    assert run["state"] == "interrupted" and run["host"] is None


# ----------------------------------------------------------------------------- worker deaths


def test_describe_exit_tells_the_oom_killer_from_a_kill() -> None:
    from planner.interfaces.grid.runner import describe_exit

    kill = -signal.SIGKILL
    assert describe_exit(1) == "the worker process exited with status 1"
    assert describe_exit(-signal.SIGSEGV) == "the worker process was killed by SIGSEGV"
    # the kernel counted out-of-memory kills while the scenario ran
    oom = describe_exit(kill, oom_kills=1, peak_gb=3.9, limit_gb=4.0)
    assert oom.startswith("the worker process was killed by SIGKILL, most likely by the kernel's")
    assert "1 out-of-memory kill(s)" in oom and "3.90 GB of a 4.00 GB limit" in oom
    # none counted: from outside, whatever the memory
    out = describe_exit(kill, oom_kills=0, peak_gb=3.9, limit_gb=4.0)
    assert "from outside" in out and "not by the out-of-memory killer" in out
    # no count to read: by the peak resident memory against the limit
    near = describe_exit(kill, peak_gb=3.5, limit_gb=4.0)
    assert "probably by the out-of-memory killer" in near and "near the limit" in near
    far = describe_exit(kill, peak_gb=0.2, limit_gb=4.0)
    assert "from outside, not for memory" in far and "far below the limit" in far
    assert "cannot" not in describe_exit(kill) and "or by the kernel's" in describe_exit(kill)


def test_a_worker_killed_from_outside_is_not_blamed_on_memory(tmp_path: Path) -> None:
    from planner.interfaces.grid.runner import oom_kills

    spec = load_grid(SMALL)
    victim = spec.scenarios[2].id
    store = tmp_path / "k.sqlite"
    before = oom_kills()
    args = ["grid", str(SMALL), "-o", str(store), "--workers", "1", "--no-chart"]
    res = run_cli(*args, env={"TRAINPLAN_GRID_TEST_KILL": victim})
    after = oom_kills()
    assert res.returncode == 0, res.stdout + res.stderr
    got = rows(store)
    assert got[victim]["status"] == "failed"
    error = got[victim]["error"]
    assert error.startswith("the worker process was killed by SIGKILL")
    assert error.endswith("while solving this scenario")
    if before is not None and after == before:  # nothing else on the machine was OOM-killed
        assert "from outside" in error and "not by the out-of-memory killer" in error, error
        assert "its peak resident memory was" in error
    assert {r["status"] for i, r in got.items() if i != victim} == {"ok"}


def test_ray_attach_failures_say_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from planner.interfaces.grid.ray_executor import attach_failure

    err = ConnectionError("Failed to connect to Ray cluster at 127.0.0.1:1")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        address = f"127.0.0.1:{port}"
        monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
        msg = attach_failure(address, err)
        assert msg.startswith(f"cannot attach to a Ray cluster at {address}: Failed to connect")
        assert "the cluster answers but refused this process" in msg
        assert "set RAY_AUTH_MODE=token" in msg
        monkeypatch.setenv("RAY_AUTH_MODE", "token")
        msg = attach_failure(address, err)
        assert "RAY_AUTH_MODE=token is set: check that RAY_AUTH_TOKEN" in msg
    # the listener is closed: nothing answers there any more
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    msg = attach_failure(address, err)
    assert f"nothing answers at {address}" in msg and "RAY_AUTH_MODE" not in msg
    # no address (the cluster on this machine, if any): the hint, conditionally
    assert "if a cluster runs with token authentication" in attach_failure(None, err)
