"""Numerical hygiene (planner.model.hygiene.check_numerics): one case per warning, on tiny.yaml with
one number changed, the exact warning it must give (its field path first), the threshold
from both sides where it matters, and no warning on any shipped or test instance."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import planner.model.hygiene as hygiene
from planner.instance import InstanceError, read
from planner.instance.read import from_dict, load_document
from planner.interfaces.cli.hygiene_hook import print_numeric_warnings
from planner.model.hygiene import check_numerics

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
TINY = DATA / "tiny.yaml"

Doc = dict[str, Any]


def tiny_doc() -> Doc:
    return copy.deepcopy(load_document(TINY))


def warnings_of(change: Callable[[Doc], None]) -> list[str]:
    doc = tiny_doc()
    change(doc)
    return check_numerics(from_dict(doc, "<test>", DATA))


def east(doc: Doc) -> Doc:
    region: Doc = doc["regions"]["east"]
    return region


def a100(doc: Doc) -> Doc:
    gpu: Doc = doc["gpu_types"]["A100"]
    return gpu


# m1b (L = 24, h = 2048, V = 32000, s = 2048): P = 12 L h^2 (1 + 13/(12 h) + (V + s)/(12 L h))
# = 1,207,959,552 x 1.0582547 = 1,278,328,832 (Narayanan et al. 2021, eq. 2); a training
# token costs 6 P = 7,669,972,992 FLOPs (6ND, the default FLOPs convention).
FLOPS_PER_TOKEN = 7_669_972_992


def test_clean_instances_have_no_warnings() -> None:
    files = [
        TINY,
        *sorted((ROOT / "instances").glob("*.yaml")),
        *sorted(DATA.glob("explain_*.yaml")),
        DATA / "levers_tou.yaml",
    ]
    for f in files:
        if "horizon" not in load_document(f):
            continue  # a grid file beside the instances
        assert check_numerics(read(f)) == [], f


# ----------------------------------------------------------------------------- electricity


def test_price_above_ten_thousand_per_mwh() -> None:
    assert warnings_of(lambda d: east(d)["electricity"].update(constant=15_000)) == [
        "regions.east.electricity: 15,000 USD/MWh at hour 0 is beyond 10,000 USD/MWh "
        "(wholesale caps are lower: ERCOT 5,000); was the price given per GWh, or in cents?"
    ]
    # the threshold itself is allowed, and so is a large negative price up to it
    assert warnings_of(lambda d: east(d)["electricity"].update(constant=10_000)) == []
    assert warnings_of(lambda d: east(d)["electricity"].update(constant=-10_000)) == []
    (w,) = warnings_of(lambda d: east(d)["electricity"].update(constant=-10_001))
    assert w.startswith("regions.east.electricity: -10,001 USD/MWh at hour 0 is beyond")


def test_findings_are_computed_once_per_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    # `trainplan solve` prints the findings and the solve warns with them: one computation;
    # a caller changing the list it got changes no other caller's
    doc = tiny_doc()
    east(doc)["electricity"].update(constant=15_000)
    inst = from_dict(doc, "<test>", DATA)
    calls = []
    computed = hygiene._numerics
    monkeypatch.setattr(hygiene, "_numerics", lambda i: calls.append(i) or computed(i))
    first = check_numerics(inst)
    first.clear()
    assert len(check_numerics(inst)) == 1 and calls == [inst]
    other = from_dict(doc, "<test>", DATA)  # an equal instance is another object: its own
    assert len(check_numerics(other)) == 1 and len(calls) == 2


def test_price_spike_names_its_hour() -> None:
    # 48 hourly values, all 50 but hour 30 at 20,000
    values = [50.0] * 48
    values[30] = 20_000.0
    (w,) = warnings_of(lambda d: east(d).update(electricity={"values": values}))
    assert w.startswith("regions.east.electricity: 20,000 USD/MWh at hour 30 is beyond")


def test_prices_per_kwh() -> None:
    # 0.06 USD/kWh written as USD/MWh; the 15 USD/MWh adder has its own field and does not
    # hide it (the series alone is checked)
    assert warnings_of(
        lambda d: east(d).update(electricity={"constant": 0.06}, price_adder_usd_per_mwh=15)
    ) == [
        "regions.east.electricity: every hour is below 1 USD/MWh (at most 0.06); this looks "
        "like USD/kWh: multiply by 1,000 (0.05 USD/kWh = 50 USD/MWh)"
    ]
    # one hour at 1 USD/MWh or more, or free electricity, is not that mistake
    assert warnings_of(lambda d: east(d).update(electricity={"constant": 1.0})) == []
    assert warnings_of(lambda d: east(d).update(electricity={"constant": 0})) == []


def test_price_adder_above_ten_thousand() -> None:
    assert warnings_of(lambda d: east(d).update(price_adder_usd_per_mwh=15_000)) == [
        "regions.east.price_adder_usd_per_mwh: 15,000 USD/MWh is beyond 10,000 USD/MWh; was "
        "it given per GWh, or in cents?"
    ]


def test_carbon_in_kg_per_kwh() -> None:
    assert warnings_of(lambda d: east(d).update(carbon_intensity={"constant": 0.4})) == [
        "regions.east.carbon_intensity: every hour is below 1 gCO2/kWh (at most 0.4); this "
        "looks like kgCO2/kWh: multiply by 1,000"
    ]
    assert warnings_of(lambda d: east(d).update(carbon_intensity={"constant": 400})) == []


# ----------------------------------------------------------------------------- hardware


def test_memory_in_bytes() -> None:
    assert warnings_of(lambda d: a100(d).update(memory_gb=80e9)) == [
        "gpu_types.A100.memory_gb: 8e+10 GB per GPU is beyond 10,000 GB (the largest GPUs "
        "have a few hundred); was it given in bytes or MB?"
    ]
    assert warnings_of(lambda d: a100(d).update(memory_gb=10_000)) == []


def test_peak_in_flops() -> None:
    # 312e12 FLOP/s written as TFLOPS: the work is in GPU-hours on A100, so its FLOPs scale
    # with the peak and nothing else moves
    assert warnings_of(lambda d: a100(d)["peak_tflops"].update(bf16=312e12)) == [
        "gpu_types.A100.peak_tflops.bf16: 3.12e+14 TFLOPS per GPU is beyond 100,000; was it "
        "given in FLOP/s instead of TFLOPS?"
    ]


def test_board_power_in_milliwatts() -> None:
    assert warnings_of(lambda d: a100(d).update(board_power_w=400e3, idle_power_w=50e3)) == [
        "gpu_types.A100.board_power_w: 400,000 W per GPU is beyond 10,000 W; was it given in "
        "mW, or per node?"
    ]


def test_rental_per_month() -> None:
    # 1.80 USD/GPU-hour x 730 hours = 1,314 USD per GPU-month
    assert warnings_of(
        lambda d: d["regions"]["west"]["offers"]["A100"]["on_demand"].update(usd_per_gpu_hour=1314)
    ) == [
        "regions.west.offers.A100.on_demand.usd_per_gpu_hour: 1,314 USD per GPU-hour is beyond "
        "1,000; was it given in cents, or per node or month?"
    ]


def test_spot_preemptions_as_a_percentage() -> None:
    assert warnings_of(
        lambda d: d["regions"]["west"]["offers"]["A100"]["spot"].update(preemptions_per_hour=2)
    ) == [
        "regions.west.offers.A100.spot.preemptions_per_hour: 2 per hour is beyond 1; was a "
        "percentage given?"
    ]


@pytest.mark.parametrize(
    ("change", "field", "gpus"),
    [
        # per GPU-hour on the GPU type
        (
            lambda d: a100(d).update(failures_per_gpu_hour=2.5),
            "gpu_types.A100.failures_per_gpu_hour",
            {"A100": "2.5"},
        ),
        # 500,000 per 1,000 node-days on 8-GPU nodes: 500,000 / 1,000 / 24 / 8 = 2.604 per GPU-hour
        (
            lambda d: d["gpu_types"]["L4"].update(failures_per_1000_node_days=500_000),
            "gpu_types.L4.failures_per_1000_node_days",
            {"L4": "2.604"},
        ),
        # the default rate applies to both GPU types
        (
            lambda d: d.update(failure={"failures_per_gpu_hour": 5}),
            "failure.failures_per_gpu_hour",
            {"A100": "5", "L4": "5"},
        ),
    ],
)
def test_failure_rate_above_one_per_gpu_hour(
    change: Callable[[Doc], None], field: str, gpus: dict[str, str]
) -> None:
    assert warnings_of(change) == [
        f"{field}: {rate} failures per GPU-hour (for {g}) is beyond 1; Llama 3 saw 1.97e-5; "
        "was a count per 1,000 GPU-hours or a percentage given?"
        for g, rate in gpus.items()
    ]


def test_capacity_above_ten_million() -> None:
    assert warnings_of(lambda d: east(d)["capacity"].update(L4=20_000_000)) == [
        "regions.east.capacity.L4: 20,000,000 GPUs is beyond 10,000,000 in one region; a typo "
        "or a unit?"
    ]
    assert warnings_of(lambda d: east(d)["capacity"].update(L4=10_000_000)) == []


# ----------------------------------------------------------------------------- work


def test_work_so_small_that_every_configuration_takes_one_hour() -> None:
    # finetune's slowest configuration: its fewest GPUs (8, of gpu_counts [8, 16]) on the
    # slowest GPU (L4, 121 bf16 TFLOPS) at MFU 0.4 with full recomputation (x 0.75):
    # 8 x 121e12 x 0.4 x 0.75 = 2.904e14 FLOP/s. One minute is 1.7424e16 FLOPs, 2,271,716
    # tokens at 7,669,972,992 FLOPs each.
    # 2.0e6 tokens: 1.5340e16 FLOPs / 2.904e14 = 52.82 s, under a minute: warned;
    # 2.4e6 tokens: 63.39 s: not.
    assert warnings_of(lambda d: d["phases"][1]["work"].update(tokens=2.0e6)) == [
        "phases[1] (finetune).work: 1.53e+16 FLOPs take 52.82 s even on the slowest "
        "configuration (8 L4 at bf16); every configuration is billed one whole hour; is the "
        "work in the right unit (tokens in billions?)"
    ]
    assert warnings_of(lambda d: d["phases"][1]["work"].update(tokens=2.4e6)) == []


def test_work_a_hundred_times_the_horizon() -> None:
    # the fastest: 16 A100 (gpu_counts' most, and east's capacity) x 312e12 x MFU 0.4 =
    # 1.9968e15 FLOP/s with perfect scaling; 100 x 48 h = 4,800 h holds 3.4504e22 FLOPs,
    # 4.499e12 tokens.
    # 4.8e12 tokens: 3.6816e22 FLOPs / 1.9968e15 / 3600 = 5,122 h: warned;
    # 4.4e12 tokens: 4,695 h: not (the phase still cannot fit: `check` says so).
    assert warnings_of(lambda d: d["phases"][1]["work"].update(tokens=4.8e12)) == [
        "phases[1] (finetune).work: 3.68e+22 FLOPs take at least 5,122 h even on 16 A100 at "
        "bf16 with perfect scaling, over 100 times the 48 h horizon; is the work in the right "
        "unit (tokens, FLOPs, GPU-hours)?"
    ]
    assert warnings_of(lambda d: d["phases"][1]["work"].update(tokens=4.4e12)) == []
    assert (
        4.8e12 * FLOPS_PER_TOKEN / 1.9968e15 / 3600
        > 4800
        > 4.4e12 * FLOPS_PER_TOKEN / 1.9968e15 / 3600
    )


def test_empty_gpu_counts_are_refused_before_any_check() -> None:
    doc = tiny_doc()
    doc["phases"][1]["options"]["gpu_counts"] = []
    with pytest.raises(InstanceError, match="gpu_counts"):
        from_dict(doc, "<test>", DATA)


# ----------------------------------------------------------------------------- scaling


def test_cost_coefficients_spanning_more_than_a_billion() -> None:
    # free electricity in east and L4s rented there at 1e-10 USD/GPU-hour: prep on one L4
    # costs 1e-10 USD/h (no energy, no storage, failure cost ~2e-15), finetune on 16 east
    # A100s 16 x 2.0 = 32 USD/h rental + failure cost (0.01): a range of 3.2e11
    def change(d: Doc) -> None:
        east(d)["electricity"] = {"constant": 0}
        east(d)["offers"]["L4"]["on_demand"]["usd_per_gpu_hour"] = 1e-10

    assert warnings_of(change) == [
        "objective: hourly costs span 3.2e+11x, beyond 1e+09x: from 1e-10 USD/h (phases[0] "
        "(prep) on 1 L4 on_demand in east) to 32.01 USD/h (phases[1] (finetune) on 16 A100 "
        "on_demand in east); the solver's tolerances cannot resolve the small ones; check the "
        "units of the prices that stand out"
    ]

    # at 1e-7 USD/GPU-hour the range is 3.2e8: within bounds
    def milder(d: Doc) -> None:
        change(d)
        east(d)["offers"]["L4"]["on_demand"]["usd_per_gpu_hour"] = 1e-7

    assert warnings_of(milder) == []


def test_overflowing_costs_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # a cost that overflows to infinity (1e308 USD/MWh times any power does, while the
    # reader accepts it: test_fuzz.test_extreme_magnitudes_are_refused) is named by its
    # configuration, the first in the space's order
    monkeypatch.setattr(
        hygiene, "hourly_cost", lambda inst, c, w, mode="billed": np.full(inst.hours, np.inf)
    )
    assert check_numerics(read(TINY)) == [
        "objective: the hourly cost of phases[0] (prep) on 1 A100 on_demand in east is not a "
        "finite number (overflow); look for numbers many orders of magnitude off"
    ]


def test_configurations_that_cannot_be_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    def overflow(*args: Any, **kwargs: Any) -> None:
        raise OverflowError("cannot convert float infinity to integer")

    monkeypatch.setattr(hygiene, "config_space", overflow)
    assert check_numerics(read(TINY)) == [
        "objective: the configurations' costs cannot be computed (OverflowError: cannot "
        "convert float infinity to integer); look for numbers many orders of magnitude off"
    ]


# ----------------------------------------------------------------------------- printing


def test_print_numeric_warnings_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    doc = tiny_doc()
    a100(doc)["memory_gb"] = 80e9
    east(doc)["capacity"]["L4"] = 20_000_000
    found = print_numeric_warnings(from_dict(doc, "<test>", DATA))
    out, err = capsys.readouterr()
    assert out == ""
    assert [line.removeprefix("warning: ") for line in err.splitlines()] == found
    assert [w.split(":")[0] for w in found] == [
        "gpu_types.A100.memory_gb",
        "regions.east.capacity.L4",
    ]
    assert print_numeric_warnings(read(TINY)) == [] and capsys.readouterr().err == ""


# ----------------------------------------------------------------------------- wiring


def _bytes_for_gb(tmp_path: Path) -> Path:
    doc = tiny_doc()
    a100(doc)["memory_gb"] = 80e9
    f = tmp_path / "bytes.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    return f


MEMORY_WARNING = "gpu_types.A100.memory_gb: 8e+10 GB per GPU is beyond 10,000 GB"


def test_check_prints_the_numeric_warnings(tmp_path: Path) -> None:
    import planner.interfaces.cli.check  # noqa: F401  (registers the command)
    from planner.interfaces.cli.app import app

    res = CliRunner().invoke(app, ["check", str(_bytes_for_gb(tmp_path))])
    assert res.exit_code == 0, res.output
    assert MEMORY_WARNING in res.stdout


def test_solve_prints_the_numeric_warnings(tmp_path: Path) -> None:
    import planner.interfaces.cli.solve  # noqa: F401  (registers the command)
    from planner.interfaces.cli.app import app

    res = CliRunner().invoke(app, ["solve", str(_bytes_for_gb(tmp_path)), "--time-limit", "5"])
    assert res.exit_code == 0, res.output
    assert f"warning: {MEMORY_WARNING}" in res.stderr
