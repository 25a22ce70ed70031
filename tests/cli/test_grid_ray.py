"""The Ray executor on a real local Ray cluster (started here with ``ray.init`` and shut down
with ``ray.shutdown``): the same results as the local executor, failures isolated, and the
CLI attaching to the cluster by address."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from planner.interfaces.grid import load_grid, solve_grid
from planner.interfaces.grid.store import Store

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")

pytestmark = pytest.mark.ray

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "data" / "grid_small.yaml"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ModuleType]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def test_ray_grid_matches_local(cluster: ModuleType, tmp_path: Path) -> None:
    on_ray = solve_grid(SMALL, executor="ray", store=tmp_path / "ray.sqlite")
    local = solve_grid(SMALL, executor="local", workers=2, store=tmp_path / "local.sqlite")
    assert list(on_ray["id"]) == [sc.id for sc in load_grid(SMALL).scenarios]
    assert set(on_ray["status"]) == {"ok"}
    assert on_ray["cost_total"].tolist() == pytest.approx(local["cost_total"].tolist(), rel=1e-9)
    # The tasks ran in Ray's worker processes, not in this one.
    assert os.getpid() not in set(on_ray["worker_pid"])
    with Store(tmp_path / "ray.sqlite", readonly=True) as s:
        runs = s.runs()
    assert runs[0]["executor"] == "ray" and runs[0]["workers"] == 2
    assert cluster.is_initialized()  # the executor does not shut down a session it did not open


def test_ray_worker_crash_is_isolated(
    cluster: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [sc.id for sc in load_grid(SMALL).scenarios]
    monkeypatch.setenv("TRAINPLAN_GRID_TEST_CRASH", ids[3])
    df = solve_grid(SMALL, executor="ray", store=tmp_path / "crash.sqlite").set_index("id")
    assert df.loc[ids[3], "status"] == "failed"
    assert "died" in str(df.loc[ids[3], "error"])
    assert set(df.drop(index=ids[3])["status"]) == {"ok"}


def _grid_on(address: str, store: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`trainplan grid grid_small.yaml --executor ray --address ADDRESS` in a fresh process."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from planner.interfaces.cli import main; main()",
            "grid",
            str(SMALL),
            "--executor",
            "ray",
            "--address",
            address,
            "-o",
            str(store),
            "--no-chart",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "COLUMNS": "200"},
    )


@pytest.mark.slow  # the default run stays under 10 minutes on CI's 2 cores
def test_cli_attaches_by_address(cluster: ModuleType, tmp_path: Path) -> None:
    address = cluster.get_runtime_context().gcs_address
    store = tmp_path / "cli.sqlite"
    res = _grid_on(address, store, dict(os.environ))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "on 2 ray workers" in res.stdout
    with Store(store, readonly=True) as s:
        df = s.frame()
    assert len(df) == 8 and set(df["status"]) == {"ok"}


@pytest.mark.slow  # the default run stays under 10 minutes on CI's 2 cores
def test_cli_without_the_auth_mode_says_what_to_set(cluster: ModuleType, tmp_path: Path) -> None:
    # the cluster started above uses token authentication (Ray 2.60's default for ray.init,
    # which set RAY_AUTH_MODE=token in this process); a process without it cannot attach,
    # and trainplan says what to set instead of Ray's bare "Failed to connect"
    address = cluster.get_runtime_context().gcs_address
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}
    res = _grid_on(address, tmp_path / "no-auth.sqlite", env)
    assert res.returncode == 3, res.stdout + res.stderr
    err = " ".join(res.stderr.split())
    assert f"error: cannot attach to a Ray cluster at {address}" in err
    assert "the cluster answers but refused this process" in err
    assert "set RAY_AUTH_MODE=token" in err
    assert "Traceback" not in res.stderr
