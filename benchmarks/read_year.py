"""Reading a year: how long ``planner.read`` takes, and how much memory, on year-long
instances whose hourly series are written inline.

    .venv/bin/python benchmarks/read_year.py [--regions 10 20] [--repeat 3] [--keep DIR]

``year-R`` (:func:`document`): a full-year (8,760 h) instance from 2023-01-01 over R regions
(the ten long-horizon markets, then again under a second name), four GPU types each; per
region its real 2023 electricity prices inline (instances/data/prices/price_<market>_2023.csv)
and per GPU type three inline hourly series: capacity (the other tenants' daily cycle and a
weekly maintenance window, as the long horizons have) and the on-demand and spot prices
(each the offer's list price every hour: no price curve is made up). ``year-20`` holds
20 x 4 x 3 x 8,760 = 2,102,400 such values (the largest real instance the reader's caps are
set for) and 175,200 prices; ``year-10`` half. Each is written as YAML the way PyYAML writes
it (a value a line) and as JSON, and read in a fresh process: wall and CPU seconds of
``planner.read`` and the process's peak resident memory.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

HOURS = 8760


def _prices(market: str) -> list[float]:
    from generate import FULL_YEAR_PRICES, ROOT

    with (ROOT / FULL_YEAR_PRICES.format(market=market)).open() as fh:
        return [round(float(r["Price (USD/MWh)"]), 4) for r in csv.DictReader(fh)]


def document(regions: int) -> dict[str, Any]:
    """The year-R instance (module docstring), a document for ``from_dict``."""
    from generate import (
        LONG_MARKETS,
        MODELS,
        QUARTER_GPUS,
        QUARTER_POOL,
        QUARTER_PRICE,
        _capacity_series,
    )

    start = datetime(2023, 1, 1, tzinfo=UTC)
    out: dict[str, Any] = {}
    for k in range(regions):
        market, tz, pue = LONG_MARKETS[k % len(LONG_MARKETS)]
        name = market if k < len(LONG_MARKETS) else f"{market}-b"
        out[name] = {
            "timezone": tz,
            "pue": pue,
            "electricity": {"values": _prices(market)},
            "price_adder_usd_per_mwh": 30.0,
            "capacity": {
                g: _capacity_series(QUARTER_POOL[g], tz, start, HOURS) for g in QUARTER_GPUS
            },
            "offers": {
                g: {
                    "on_demand": {"usd_per_gpu_hour": {"values": [QUARTER_PRICE[g]] * HOURS}},
                    "spot": {
                        "usd_per_gpu_hour": {"values": [round(QUARTER_PRICE[g] * 0.45, 4)] * HOURS},
                        "preemptions_per_hour": 0.02,
                    },
                }
                for g in QUARTER_GPUS
            },
        }
    return {
        "name": f"year-{regions}",
        "description": f"a year of inline hourly series in {regions} regions",
        "horizon": {"start": "2023-01-01T00:00:00Z", "hours": HOURS},
        "gpu_types": QUARTER_GPUS,
        "regions": out,
        "models": MODELS,
        "phases": [
            {
                "name": "finetune",
                "kind": "fine_tuning",
                "model": "m7b",
                "work": {"tokens": 2.0e10},
                "gpu_types": ["H100"],
                "options": {"gpu_counts": [64]},
            }
        ],
    }


PROBE = """
import json, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import planner
t1, c1 = time.perf_counter(), time.process_time()
inst = planner.read(sys.argv[1])
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"import_s": t1 - t0, "read_s": t2 - t1, "read_cpu_s": c2 - c1,
    "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "hours": inst.hours, "regions": len(inst.spec.regions)}))
"""


def main(argv: list[str] | None = None) -> int:
    import yaml

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regions", type=int, nargs="*", default=[10, 20])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="write the files here")
    args = ap.parse_args(argv)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="trainplan-year-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"# load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    print("| file | MB | values | read s (median) | read CPU s | peak MB |")
    print("|---|---|---|---|---|---|")
    for r in args.regions:
        d = document(r)
        values = sum(
            len(s)
            for reg in d["regions"].values()
            for s in (
                reg["electricity"]["values"],
                *reg["capacity"].values(),
                *(o[c]["usd_per_gpu_hour"]["values"] for o in reg["offers"].values() for c in o),
            )
        )
        files = {
            f"year-{r}.yaml": yaml.safe_dump(d, sort_keys=False),
            f"year-{r}.json": json.dumps(d),
        }
        for fname, text in files.items():
            path = folder / fname
            path.write_text(text)
            runs = []
            for _ in range(args.repeat):
                out = subprocess.run(
                    [sys.executable, "-c", PROBE, str(path)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            runs.sort(key=lambda x: x["read_s"])
            m = runs[len(runs) // 2]
            each = ", ".join(f"{x['read_s']:.2f}" for x in runs)
            print(
                f"| {fname} | {path.stat().st_size / 1e6:.1f} | {values:,} | "
                f"{m['read_s']:.2f} ({each}) | "
                f"{m['read_cpu_s']:.2f} | {m['peak_mb']:.0f} |",
                flush=True,
            )
    print(f"# load average at the end {os.getloadavg()[0]:.2f}; files in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
