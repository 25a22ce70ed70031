"""README's flow from a blank file to a launch and a re-plan, run as a new user would: the
block under "Your own run" is read from README.md and every line of it run with bash in a
fresh folder, with a fake ``sky`` and ``kubectl`` on PATH that record their calls
(tests/data/fakes), SkyPilot's local catalog at ``$SKY_RUNTIME_DIR`` (a small vms.csv), and
``now`` a time inside the plan's horizon. Then: the phases were launched in dependency
order, the spot ones as managed jobs; every task parses in SkyPilot and every Kubernetes
manifest validates (with the extras installed); the re-plan verifies as printed and its
export gets new job names in the same bucket."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FAKES = Path(__file__).parents[1] / "data" / "fakes"

#: A small catalog in the layout of SkyPilot's AWS vms.csv. The prices are placeholders: the
#: check reads only accelerators, counts per node, regions and whether a spot price exists.
VMS = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Region,"
    "AvailabilityZone,Price,SpotPrice\n"
    """p5.48xlarge,H100,8,192,2048,x,us-east-1,us-east-1a,55.04,30.0
p5.48xlarge,H100,8,192,2048,x,us-east-2,us-east-2a,55.04,31.0
g6.xlarge,L4,1,4,16,x,us-east-1,us-east-1a,0.80,0.35
g6.2xlarge,L4,2,8,32,x,us-east-1,us-east-1a,1.60,0.70
g6.12xlarge,L4,4,48,192,x,us-east-1,us-east-1a,4.60,1.90
g6.48xlarge,L4,8,192,768,x,us-east-1,us-east-1a,13.35,5.40
g6.xlarge,L4,1,4,16,x,us-east-2,us-east-2a,0.80,0.36
g6.2xlarge,L4,2,8,32,x,us-east-2,us-east-2a,1.60,0.71
g6.12xlarge,L4,4,48,192,x,us-east-2,us-east-2a,4.60,1.91
g6.48xlarge,L4,8,192,768,x,us-east-2,us-east-2a,13.35,5.41
"""
)


def readme_lines() -> list[str]:
    """The commands of README's block, continuation lines joined, comment lines dropped."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Your own run, from a blank file to a launch and a re-plan", 1)[1]
    m = re.search(r"```bash\n(.*?)```", section, re.S)
    assert m is not None, "README lost its flow"
    joined = m.group(1).replace("\\\n", " ")
    return [ln for ln in joined.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def _env(folder: Path) -> dict[str, str]:
    runtime = folder / "skyhome"
    (runtime / ".sky" / "catalogs" / "v8" / "aws").mkdir(parents=True, exist_ok=True)
    (runtime / ".sky" / "catalogs" / "v8" / "aws" / "vms.csv").write_text(VMS)
    return {
        "PATH": f"{FAKES}:{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(folder),
        "SKY_RUNTIME_DIR": str(runtime),
        "FAKE_LOG": str(folder / "calls.log"),
        "FAKE_STATE": str(folder / "fake-state.json"),
        "TRAINPLAN_POLL_S": "0.05",
        "TRAINPLAN_NO_PROGRESS": "1",
        "NO_WAIT": "1",
        "PYTHON": sys.executable,
        "COLUMNS": "200",
    }


def _sh(line: str, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail; {line}"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("newuser")
    env = _env(folder)
    out: dict[str, Any] = {"folder": folder, "env": env, "runs": []}
    for line in readme_lines():
        run_env = dict(env)
        if "--from now" in line:
            # "now": an hour inside the evaluation's run, so that it is under way
            plan = json.loads((folder / "mine" / "plan.json").read_text())
            ev = next(p for p in plan["phases"] if p["name"] == "evaluation")
            out["hour"] = ev["hours"][0] + 1
            line = line.replace("--from now", f"--from {out['hour']}")
        if line.startswith("sky jobs queue"):
            # the evaluation is still running when the user looks
            launch = json.loads((folder / "mine" / "sky" / "launch.json").read_text())
            held = [u["job"] for u in launch["units"] if u["phase"] == "evaluation"]
            run_env["FAKE_HOLD"] = ",".join(held)
        res = _sh(line, folder, run_env)
        out["runs"].append((line, res))
        assert res.returncode == 0, f"{line}\n{res.stdout}\n{res.stderr}"
    return out


def _calls(flow: dict[str, Any]) -> list[str]:
    return (flow["folder"] / "calls.log").read_text().splitlines()


@pytest.mark.slow  # the default run stays under 10 minutes on CI's 2 cores
def test_every_line_of_the_readme_runs(flow: dict[str, Any]) -> None:
    lines = [line for line, _ in flow["runs"]]
    assert lines[0].startswith("trainplan init") and any("launch.sh" in x for x in lines)
    assert any(x.startswith("trainplan export mine/replan.json") for x in lines)


def test_phases_launch_in_dependency_order_spot_as_managed_jobs(flow: dict[str, Any]) -> None:
    folder = flow["folder"]
    plan = json.loads((folder / "mine" / "plan.json").read_text())
    launch = json.loads((folder / "mine" / "sky" / "launch.json").read_text())
    units = launch["units"]
    calls = _calls(flow)
    launched = [c.split()[-2] for c in calls if c.startswith("sky jobs launch")]
    assert launched == [u["job"] for u in units]  # every run, once, in plan order
    contract = {p["name"]: p["contract"] for p in plan["phases"]}
    for u in units:
        assert u["mode"] == "managed"  # spot always; on-demand by default
        if u["after"]:
            at = next(
                i for i, c in enumerate(calls) if c.startswith("sky jobs launch") and u["job"] in c
            )
            for a in u["after"]:
                assert any(
                    c.startswith("sky jobs queue") and f"{a}=SUCCEEDED" in c for c in calls[:at]
                )
    eval_units = [u for u in units if u["phase"] == "evaluation"]
    ft_units = [u for u in units if u["phase"] == "finetune"]
    assert eval_units[0]["after"] == [ft_units[-1]["job"]]
    assert not any(" stop" in c for c in calls)
    spot = [u for u in units if contract[u["phase"]] == "spot"]
    for u in spot:
        task = yaml.safe_load((folder / "mine" / "sky" / u["file"]).read_text())
        assert task["resources"]["use_spot"] is True


def test_every_task_parses_in_skypilot(flow: dict[str, Any]) -> None:
    sky = pytest.importorskip("sky", reason="the skypilot extra is not installed")
    folder = flow["folder"]
    plan = {p["name"]: p for p in json.loads((folder / "mine" / "plan.json").read_text())["phases"]}
    for sub in ("sky", "sky2"):
        for f in sorted((folder / "mine" / sub).glob("*.yaml")):
            task = sky.Task.from_yaml(str(f))
            (res,) = list(task.resources)
            if sub == "sky":
                p = plan[task.envs["TRAINPLAN_PHASE"]]
                name = {"H100-SXM": "H100", "L4": "L4"}[p["gpu"]]
                per = min(p["gpus"], 8.0)
                assert res.accelerators == {name: per} and str(res.cloud) == "AWS"
                assert res.use_spot is (p["contract"] == "spot")
                assert task.num_nodes == max(1, -(-p["gpus"] // 8))
    # SkyPilot's local catalog was read: the export says it checked against it
    export = next(r for line, r in flow["runs"] if line.startswith("trainplan export mine/plan"))
    assert "checked against SkyPilot's catalog" in export.stdout


def test_the_replan_keeps_the_past_verifies_and_gets_new_names(flow: dict[str, Any]) -> None:
    folder = flow["folder"]
    new = json.loads((folder / "mine" / "replan.json").read_text())
    state = new["replan"]["state"]
    assert state["phases.finetune.done"] is True  # SUCCEEDED in SkyPilot's queue
    assert 0 < state["phases.evaluation.progress"]["fraction"] < 1
    assert new["instance_file"]["path"] == "replan.instance.json"
    first = json.loads((folder / "mine" / "sky" / "launch.json").read_text())
    second = json.loads((folder / "mine" / "sky2" / "launch.json").read_text())
    assert first["bucket"] == second["bucket"]
    assert not {u["job"] for u in first["units"]} & {u["job"] for u in second["units"]}


def test_the_kubernetes_target_launches_in_order_and_validates(flow: dict[str, Any]) -> None:
    folder = flow["folder"]
    env = dict(flow["env"])
    env["FAKE_STATE"] = str(folder / "kube-state.json")
    res = _sh(
        "trainplan export mine/plan.json --to kubernetes -o mine/k8s --run 'torchrun train.py'"
        " && mine/k8s/launch.sh",
        folder,
        env,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    launch = json.loads((folder / "mine" / "k8s" / "launch.json").read_text())
    applied = [Path(c.split()[3]).name for c in _calls(flow) if c.startswith("kubectl apply")]
    assert applied == ["00-storage.yaml"] + [u["file"] for u in launch["units"]]
    kv = pytest.importorskip("kubernetes_validate", reason="the kubernetes extra is not installed")
    for f in sorted((folder / "mine" / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            kv.validate(doc, kv.latest_version(), strict=True)


def test_the_fakes_are_what_the_launcher_talks_to(flow: dict[str, Any]) -> None:
    # the calls were recorded by the fakes, not a real SkyPilot: nothing left this machine
    assert os.access(FAKES / "sky", os.X_OK) and os.access(FAKES / "kubectl", os.X_OK)
    assert any(c.startswith("sky jobs queue -o json") for c in _calls(flow))
