"""GPU types by catalog name, user catalogs, and SkyPilot price catalogs imported into one.

Every catalog file here is written by the test itself; the SkyPilot rows follow the columns
of SkyPilot's catalog schema (InstanceType, AcceleratorName, AcceleratorCount, vCPUs,
MemoryGiB, GpuInfo, Region, AvailabilityZone, Price, SpotPrice; Price and SpotPrice in USD
per instance-hour).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import assert_valid, instance_from, tiny_dict
from typer.testing import CliRunner

from planner.instance import InstanceError
from planner.instance.catalog import gpu_by_name
from planner.instance.read import from_dict
from planner.instance.skypilot_catalog import import_vms_csv
from planner.instance.usercatalog import catalog_document, read_user_catalog
from planner.interfaces.cli import _register, app
from planner.solve import solve

_register()


def test_a_catalog_name_alone_is_a_gpu_type() -> None:
    d = tiny_dict()
    d["gpu_types"]["L4"] = {}
    inst = instance_from(d)
    cat = gpu_by_name("L4")
    g = inst.gpu("L4")
    for f in ("memory_gb", "peak_tflops", "board_power_w", "idle_power_w", "gpus_per_node"):
        assert getattr(g, f) == getattr(cat, f), f
    assert g.catalog == "L4"


def test_figures_given_override_the_catalog_and_aliases_resolve() -> None:
    d = tiny_dict()
    d["gpu_types"]["L4"] = {"board_power_w": 70}
    d["gpu_types"]["A100"] = {"catalog": "a100-80gb"}  # a partial, lower-case name
    inst = instance_from(d)
    assert inst.gpu("L4").board_power_w == 70
    assert inst.gpu("L4").idle_power_w == gpu_by_name("L4").idle_power_w
    assert inst.gpu("A100").catalog == "A100-SXM-80GB"
    assert inst.gpu("A100").memory_gb == 80 and inst.gpu("A100").peak_tflops["bf16"] == 312.0


def test_a_complete_entry_is_left_alone() -> None:
    # tiny's A100 gives every figure: it is not looked up (the catalog's A100 is ambiguous)
    inst = instance_from(tiny_dict())
    assert inst.gpu("A100").catalog is None
    assert inst.gpu("A100").node_overhead_w == 1600


def test_an_unknown_name_says_what_is_close_and_what_is_missing() -> None:
    d = tiny_dict()
    d["gpu_types"]["H100-SXMM"] = {}
    with pytest.raises(InstanceError) as e:
        instance_from(d, "x.yaml")
    msg = str(e.value)
    assert "x.yaml: gpu_types.H100-SXMM: unknown GPU 'H100-SXMM'" in msg
    assert "did you mean H100-SXM" in msg
    assert "memory_gb, peak_tflops, board_power_w, idle_power_w are missing" in msg


def test_user_catalog_gpus_by_name(tmp_path: Path) -> None:
    cat = {
        "format": "trainplan-catalog/1",
        "gpus": {
            "Lab-X1": {
                "memory_gb": 64,
                "peak_tflops": {"bf16": 400},
                "board_power_w": 500,
                "idle_power_w": 60,
                "on_demand_usd_per_gpu_hour": 1.25,
            },
            "H100-lowpower": {"catalog": "H100", "board_power_w": 500},
        },
    }
    (tmp_path / "cat.yaml").write_text(yaml.safe_dump(cat))
    d = tiny_dict()
    d["gpu_catalog"] = "cat.yaml"
    d["gpu_types"]["Lab-X1"] = {}
    d["gpu_types"]["slow"] = {"catalog": "H100-lowpower"}
    inst = from_dict(d, str(tmp_path / "i.yaml"), tmp_path)
    assert inst.gpu("Lab-X1").memory_gb == 64 and inst.gpu("Lab-X1").catalog == "Lab-X1"
    slow = inst.gpu("slow")
    assert slow.board_power_w == 500 and slow.peak_tflops == gpu_by_name("H100-SXM").peak_tflops
    user = read_user_catalog(tmp_path / "cat.yaml")
    assert user.entries["Lab-X1"].price == 1.25
    # an entry based on a built-in one keeps the built-in's example price
    assert user.entries["H100-lowpower"].price == 3.78


def test_user_catalog_errors_name_the_file_and_entry(tmp_path: Path) -> None:
    (tmp_path / "cat.yaml").write_text(
        yaml.safe_dump({"gpus": {"X": {"memory_gb": 8}, "Y": {"catalog": "H100", "tdp": 1}}})
    )
    with pytest.raises(InstanceError) as e:
        read_user_catalog(tmp_path / "cat.yaml")
    text = str(e.value)
    assert "gpus.X: unknown GPU 'X'" in text
    assert "gpus.Y.tdp: unknown field" in text
    d = tiny_dict()
    d["gpu_catalog"] = "missing.yaml"
    d["gpu_types"]["L4"] = {}
    with pytest.raises(InstanceError) as e:
        from_dict(d, "i.yaml", tmp_path)
    assert "gpu_catalog: file" in str(e.value) and "does not exist" in str(e.value)


HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Region,"
    "AvailabilityZone,Price,SpotPrice\n"
)
VMS = (
    HEADER
    + """m5.large,,,2,8,,us-east-1,us-east-1a,0.096,0.04
p5.48xlarge,H100,8,192,2048,"{'Gpus': []}",us-east-1,us-east-1a,98.32,40.0
p5.48xlarge,H100,8,192,2048,"{'Gpus': []}",us-east-1,us-east-1b,98.32,36.0
p5.48xlarge,H100,8,192,2048,"{'Gpus': []}",us-east-1,us-east-1-atl-2a,98.32,10.24
g6.xlarge,L4,1,4,16,,us-east-1,us-east-1a,0.805,0.3
g6.48xlarge,L4,8,192,768,,us-east-1,us-east-1a,13.35,5.0
p5.48xlarge,H100,8,192,2048,,eu-central-1,eu-central-1a,110.0,
trn1.32xlarge,Trainium,16,128,512,,us-east-1,us-east-1a,21.5,
"""
)


def test_skypilot_import_prices_per_gpu_hour(tmp_path: Path) -> None:
    csv = vms_file(tmp_path)
    rows, unknown = import_vms_csv(csv, "aws")
    by = {(r.gpu, r.region, r.zone): r for r in rows}
    # one row per standard zone: 98.32 USD per p5.48xlarge-hour / 8 H100 = 12.29 on demand;
    # spot 40.0 / 8 = 5.0 in us-east-1a and 36.0 / 8 = 4.5 in us-east-1b
    a, b = by[("H100-SXM", "us-east-1", "us-east-1a")], by[("H100-SXM", "us-east-1", "us-east-1b")]
    assert a.on_demand_usd_per_gpu_hour == pytest.approx(12.29) == b.on_demand_usd_per_gpu_hour
    assert (a.spot_usd_per_gpu_hour, b.spot_usd_per_gpu_hour) == pytest.approx((5.0, 4.5))
    assert a.instance_type == "p5.48xlarge" and a.gpus_per_instance == 8
    # the Local Zone (us-east-1-atl-2a, a 1.28 USD spot H100) is left out unless asked
    assert not any(r.zone == "us-east-1-atl-2a" for r in rows)
    every, _ = import_vms_csv(csv, "aws", all_zones=True)
    local = [r for r in every if r.zone == "us-east-1-atl-2a"]
    assert [r.spot_usd_per_gpu_hour for r in local] == [pytest.approx(1.28)]
    # the node with the most GPUs, not the cheapest single card: g6.48xlarge 13.35 / 8
    l4 = by[("L4", "us-east-1", "us-east-1a")]
    assert l4.instance_type == "g6.48xlarge"
    assert l4.on_demand_usd_per_gpu_hour == pytest.approx(13.35 / 8)
    assert l4.spot_usd_per_gpu_hour == pytest.approx(5.0 / 8)
    # no spot price in the row: none in the catalog
    assert by[("H100-SXM", "eu-central-1", "eu-central-1a")].spot_usd_per_gpu_hour is None
    # the CPU-only instance is skipped; an accelerator the catalog lacks is kept and listed
    assert ("Trainium", "us-east-1", "us-east-1a") in by and unknown == ["Trainium"]
    assert len(rows) == 5


def test_standard_zones() -> None:
    from planner.instance.skypilot_catalog import standard_zone

    for zone, region in (
        ("us-east-1a", "us-east-1"),  # AWS
        ("us-central1-a", "us-central1"),  # GCP
        ("2", "eastus"),  # Azure
        (None, "us-east-1"),
        ("us-east-1", "us-east-1"),
    ):
        assert standard_zone(zone, region), zone
    for zone in ("us-east-1-bos-1a", "us-east-1-wl1-bos-wlz-1", "us-east-1-atl-2a"):
        assert not standard_zone(zone, "us-east-1"), zone


def vms_file(tmp_path: Path, cloud: str = "aws") -> Path:
    """The catalog above as ``<cloud>/vms.csv`` (SkyPilot's layout) under ``tmp_path``."""
    csv = tmp_path / cloud / "vms.csv"
    csv.parent.mkdir(exist_ok=True)
    csv.write_text(VMS)
    return csv


def catalog_instance(tmp_path: Path, all_zones: bool = False) -> Any:
    """tiny.yaml's regions on AWS: ``east`` mapped to us-east-1 with H100 capacity and no H100
    offer, its prices imported from the SkyPilot catalog above."""
    rows, _ = import_vms_csv(vms_file(tmp_path), "aws", all_zones=all_zones)
    (tmp_path / "cat.yaml").write_text(yaml.safe_dump(catalog_document(rows)))
    d = tiny_dict()
    d["gpu_catalog"] = "cat.yaml"
    d["gpu_types"]["H100-SXM"] = {}
    east = d["regions"]["east"]
    east.update(cloud="aws", cloud_region="us-east-1")
    east["capacity"]["H100-SXM"] = 64
    d["phases"][1]["gpu_types"] = ["H100-SXM"]
    d["phases"][1]["preemptible"] = True
    d["phases"][1]["regions"] = ["east"]
    return from_dict(d, "i.yaml", tmp_path)


def test_a_region_mapped_to_a_cloud_region_takes_its_offers_from_the_catalog(
    tmp_path: Path,
) -> None:
    # east is aws/us-east-1 with H100 capacity and no H100 offer: on demand 12.29 (both
    # zones; the first), spot 4.5 in us-east-1b, the cheapest standard zone (not the Local
    # Zone's 1.28); a cloud region's prices include power.
    inst = catalog_instance(tmp_path)
    offers = inst.region("east").offers["H100-SXM"]
    assert offers.on_demand is not None and offers.spot is not None
    assert (offers.on_demand.usd_per_gpu_hour, offers.on_demand.zone) == (12.29, "us-east-1a")
    assert (offers.spot.usd_per_gpu_hour, offers.spot.zone) == (4.5, "us-east-1b")
    res = solve(inst, solver="milp", time_limit=30)
    assert res.plan is not None
    assert_valid(inst, res.plan)
    ft = res.plan.phase("finetune")
    assert ft.gpu == "H100-SXM" and ft.info["energy"] == "included"
    assert ft.info["zone"] == ("us-east-1b" if ft.contract == "spot" else "us-east-1a")
    assert ft.costs["energy"] == 0.0
    # asked for every zone (--all-zones), the Local Zone's spot price is the offer
    inst = catalog_instance(tmp_path, all_zones=True)
    spot = inst.region("east").offers["H100-SXM"].spot
    assert spot is not None and (spot.usd_per_gpu_hour, spot.zone) == (1.28, "us-east-1-atl-2a")


def test_cli_gpus_filters_like_sky_show_gpus(tmp_path: Path) -> None:
    out = tmp_path / "mine.yaml"
    runner = CliRunner()
    res = runner.invoke(app, ["gpus", "import-skypilot", str(vms_file(tmp_path)), "-o", str(out)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["gpus", "H100", "--cloud", "aws", "--catalog", str(out), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert {r["gpu"] for r in doc["user"]["prices"]} == {"H100-SXM"}
    assert {r["zone"] for r in doc["user"]["prices"]} == {
        "us-east-1a",
        "us-east-1b",
        "eu-central-1a",
    }
    assert [e["name"] for e in doc["builtin"]] == ["H100-SXM"]
    res = runner.invoke(app, ["gpus", "H100", "--cloud", "gcp", "--catalog", str(out), "--json"])
    assert json.loads(res.stdout)["user"]["prices"] == []
    res = runner.invoke(app, ["gpus", "NoSuchGPU"])
    assert res.exit_code == 2


def test_skypilot_import_refuses_a_file_that_is_not_a_catalog(tmp_path: Path) -> None:
    bad = tmp_path / "vms.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(InstanceError, match=r"not a SkyPilot vms\.csv"):
        import_vms_csv(bad, "aws")
    bad.write_text(VMS.replace("98.32,40.0", "lots,40.0"))
    with pytest.raises(InstanceError, match="line 3: 'Price' is not a number"):
        import_vms_csv(bad, "aws")


def test_cli_import_then_list_the_user_catalog(tmp_path: Path) -> None:
    csv = tmp_path / "gcp" / "vms.csv"
    csv.parent.mkdir()
    csv.write_text(VMS)
    out = tmp_path / "mine.yaml"
    runner = CliRunner()
    res = runner.invoke(app, ["gpus", "import-skypilot", str(csv), "-o", str(out), "--gpu", "H100"])
    assert res.exit_code == 0, res.output
    doc = yaml.safe_load(out.read_text())
    assert doc["format"] == "trainplan-catalog/1"
    assert {r["gpu"] for r in doc["prices"]} == {"H100-SXM"}
    assert {r["cloud"] for r in doc["prices"]} == {"gcp"}  # from the folder name
    res = runner.invoke(app, ["gpus", "--catalog", str(out), "--json"])
    assert res.exit_code == 0, res.output
    listed = json.loads(res.output)
    assert len(listed["user"]["prices"]) == 3  # us-east-1a, us-east-1b, eu-central-1a
    names = [e["name"] for e in listed["builtin"]]
    assert "H100-SXM" in names and "L4" in names
    h100 = next(e for e in listed["builtin"] if e["name"] == "H100-SXM")
    assert h100["example_on_demand_usd_per_gpu_hour"] == 3.78 and h100["source"]


def test_gpus_lists_the_catalog_with_prices_and_sources() -> None:
    res = CliRunner().invoke(app, ["gpus"])
    assert res.exit_code == 0, res.output
    assert "H100-SXM" in res.output and "3.78" in res.output
    assert "NVIDIA H100 datasheet" in res.output
