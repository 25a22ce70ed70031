#!/usr/bin/env python
"""Rebuild the price / carbon-intensity / network-cost extracts in this folder.

Usage:
    python instances/data/make_extracts.py SHARED_DATA_DIR [--out DIR]

SHARED_DATA_DIR is the project's shared data folder (the read-only copy of upstream
MIT-licensed data described in its README.md, with folders electricity_prices/,
carbon_intensity/, network_cost/).  By default the extracts are written next to this script
(instances/data/).  Standard library only, so that rows can be copied byte-for-byte.  See
SOURCES.md for provenance and transformations.

Two windows are cut from every series: June-August 2023 (the shipped instances use these) and
the full year 2023 (the long-horizon benchmark instances use these).

The script is deterministic: running it twice gives identical files.  It exits non-zero if any
check fails (row count, hourly gaps, duplicate hours, an empty cell it cannot interpolate).
"""

from __future__ import annotations

import argparse
import csv
import io
import shutil
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

PRICE_REGIONS = [
    "AU-NSW",
    "CA-ON",
    "DE-LU",
    "ES",
    "FR",
    "JP-TK",
    "NL",
    "SG",
    "US-CAL-CISO",
    "US-MIDA-PJM",
    "US-NY-NYIS",
    "US-TEX-ERCO",
]
CI_BAS = ["AZPS", "BPAT", "CISO", "ERCO", "MISO", "NYIS", "PJM", "SOCO", "WAAT"]
NETWORK_FILES = [
    "aws_transmission_cost_matrix.csv",
    "azure_transmission_cost_matrix.csv",
    "gcp_transmission_cost_matrix.csv",
]

HOUR = timedelta(hours=1)

PRICE_START = datetime(2023, 6, 1, tzinfo=UTC)
PRICE_END = datetime(2023, 9, 1, tzinfo=UTC)  # exclusive
CI_START = datetime(2022, 6, 1, tzinfo=UTC)
CI_END = datetime(2022, 9, 1, tzinfo=UTC)  # exclusive
CI_SHIFT = timedelta(days=365)  # 2022-06-01 + 365 d = 2023-06-01 (no 29 Feb in between)
EXPECTED_HOURS = int((PRICE_END - PRICE_START) / HOUR)  # 2208

YEAR_START = datetime(2023, 1, 1, tzinfo=UTC)
YEAR_END = datetime(2024, 1, 1, tzinfo=UTC)  # exclusive
CI_YEAR_START = datetime(2022, 1, 1, tzinfo=UTC)
CI_YEAR_END = datetime(2023, 1, 1, tzinfo=UTC)  # exclusive; + 365 d = the 2023 year
YEAR_HOURS = int((YEAR_END - YEAR_START) / HOUR)  # 8760

#: (start, end exclusive, output file stem suffix) of the price windows written.
PRICE_WINDOWS = [
    (PRICE_START, PRICE_END, f"{PRICE_START:%Y-%m-%d}_{PRICE_END:%Y-%m-%d}"),
    (YEAR_START, YEAR_END, "2023"),
]
#: (source start, source end exclusive, output file stem suffix) of the carbon windows.
CI_WINDOWS = [
    (CI_START, CI_END, f"{CI_START:%Y-%m-%d}_{CI_END:%Y-%m-%d}_as_2023"),
    (CI_YEAR_START, CI_YEAR_END, "2022_as_2023"),
]

PRICE_HEADER = "Datetime (UTC),Datetime (Local),Price (USD/MWh)"
CI_OUT_HEADER = ["Datetime (UTC)", "avg_CI (gCO2/kWh)"]


class CheckError(RuntimeError):
    pass


def parse_utc(text: str) -> datetime:
    ts = datetime.fromisoformat(text)
    if ts.tzinfo is None or ts.utcoffset() != timedelta(0):
        raise CheckError(f"timestamp not in UTC: {text!r}")
    return ts.astimezone(UTC)


def fmt_utc(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S+00:00")


def check_hourly(stamps: list[datetime], start: datetime, end: datetime, what: str) -> None:
    """Exactly one row per hour of [start, end), in order."""
    n = int((end - start) / HOUR)
    if len(stamps) != n:
        counts = Counter(stamps)
        dups = sorted(fmt_utc(t) for t, c in counts.items() if c > 1)
        missing = [
            fmt_utc(start + i * HOUR) for i in range(n) if start + i * HOUR not in set(stamps)
        ]
        raise CheckError(
            f"{what}: {len(stamps)} rows, expected {n}; duplicates {dups}; missing {missing}"
        )
    for i, ts in enumerate(stamps):
        if ts != start + i * HOUR:
            raise CheckError(
                f"{what}: row {i} is {fmt_utc(ts)}, expected {fmt_utc(start + i * HOUR)}"
            )


def check_price_cells(lines: list[str], what: str) -> None:
    """Every row has three cells and a finite number in the price column (rows are copied
    byte for byte, so an empty or malformed price cell is an error, not a fill)."""
    for i, line in enumerate(lines):
        cells = line.split(",")
        if len(cells) != 3:
            raise CheckError(f"{what}: row {i + 1} has {len(cells)} cells, expected 3: {line!r}")
        try:
            value = float(cells[2])
        except ValueError:
            raise CheckError(f"{what}: row {i + 1} has no price: {line!r}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise CheckError(f"{what}: row {i + 1} has a non-finite price: {line!r}")


def extract_prices(src_dir: Path, out_dir: Path) -> list[str]:
    notes = []
    out_dir.mkdir(parents=True, exist_ok=True)
    for region in PRICE_REGIONS:
        src = src_dir / f"price_{region}_2023.csv"
        raw = src.read_bytes().decode("utf-8")
        lines = raw.splitlines()  # source uses "\n"; rows themselves are kept verbatim
        if lines[0] != PRICE_HEADER:
            raise CheckError(f"{src}: unexpected header {lines[0]!r}")
        body = [line for line in lines[1:] if line]
        # Whole-year check first, so that gaps/duplicates in the source are reported; the
        # full-year extract below makes it binding.
        all_stamps = [parse_utc(line.split(",", 1)[0]) for line in body]
        try:
            check_hourly(all_stamps, YEAR_START, YEAR_END, f"{src.name} (full year)")
        except CheckError as exc:  # reported here; each window is checked on its own below
            notes.append(f"WARNING {exc}")
        for start, end, suffix in PRICE_WINDOWS:
            kept, stamps = [], []
            for line, ts in zip(body, all_stamps, strict=True):
                if start <= ts < end:
                    kept.append(line)
                    stamps.append(ts)
            check_hourly(stamps, start, end, f"{src.name} [{fmt_utc(start)}, {fmt_utc(end)})")
            check_price_cells(kept, src.name)
            dst = out_dir / f"price_{region}_{suffix}.csv"
            dst.write_bytes(("\n".join([lines[0], *kept]) + "\n").encode("utf-8"))
            notes.append(f"{dst.name}: {len(kept)} rows")
    return notes


def interpolate_gaps(stamps: list[datetime], values: list[str]) -> dict[int, float]:
    """Linear interpolation (in time) of empty cells between the nearest non-empty neighbours."""
    filled: dict[int, float] = {}
    n = len(values)
    i = 0
    while i < n:
        if values[i].strip() != "":
            i += 1
            continue
        j = i
        while j < n and values[j].strip() == "":
            j += 1
        if i == 0 or j == n:
            raise CheckError(
                f"cannot interpolate empty run at the edge of the series: rows {i}..{j - 1}"
            )
        t0, v0 = stamps[i - 1], float(values[i - 1])
        t1, v1 = stamps[j], float(values[j])
        span = (t1 - t0).total_seconds()
        for k in range(i, j):
            w = (stamps[k] - t0).total_seconds() / span
            filled[k] = v0 + (v1 - v0) * w
        i = j
    return filled


def extract_carbon(src_dir: Path, out_dir: Path) -> list[str]:
    notes = []
    out_dir.mkdir(parents=True, exist_ok=True)
    for ba in CI_BAS:
        src = src_dir / f"ci_2022_{ba}.csv"
        with src.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        header, body = rows[0], [r for r in rows[1:] if r]
        # The timestamp column is the first one (named "timestamp", or unnamed in WAAT).
        ci_col = header.index("avg_CI")
        stamps = [parse_utc(r[0]) for r in body]
        values = [r[ci_col] for r in body]
        check_hourly(stamps, CI_YEAR_START, CI_YEAR_END, f"{src.name} (full year)")
        # Interpolate on the whole year so that neighbours outside the window are used if needed.
        filled = interpolate_gaps(stamps, values)
        for start, end, suffix in CI_WINDOWS:
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(CI_OUT_HEADER)
            out_stamps = []
            for k, (ts, v) in enumerate(zip(stamps, values, strict=True)):
                if not (start <= ts < end):
                    continue
                shifted = ts + CI_SHIFT
                if k in filled:
                    v = repr(filled[k])
                    notes.append(
                        f"filled {ba} ({suffix}): source {fmt_utc(ts)} -> output "
                        f"{fmt_utc(shifted)} = {v}"
                    )
                w.writerow([fmt_utc(shifted), v])
                out_stamps.append(shifted)
            check_hourly(out_stamps, start + CI_SHIFT, end + CI_SHIFT, f"ci {ba} output {suffix}")
            dst = out_dir / f"ci_{ba}_{suffix}.csv"
            dst.write_text(buf.getvalue(), encoding="utf-8", newline="")
            notes.append(f"{dst.name}: {len(out_stamps)} rows")
    return notes


def copy_network_and_licences(shared: Path, out: Path) -> list[str]:
    notes = []
    (out / "network").mkdir(parents=True, exist_ok=True)
    for name in NETWORK_FILES:
        shutil.copyfile(shared / "network_cost" / name, out / "network" / name)
        notes.append(f"network/{name}: copied unchanged")
    lic_sc = shared / "electricity_prices" / "LICENSE-sustain-cluster.txt"
    lic_sc2 = shared / "network_cost" / "LICENSE-sustain-cluster.txt"
    if lic_sc.read_bytes() != lic_sc2.read_bytes():
        raise CheckError("the two sustain-cluster licence copies differ")
    shutil.copyfile(lic_sc, out / "LICENSE-sustain-cluster.txt")
    shutil.copyfile(shared / "carbon_intensity" / "LICENSE-dc-rl.txt", out / "LICENSE-dc-rl.txt")
    notes.append("LICENSE-sustain-cluster.txt, LICENSE-dc-rl.txt: copied unchanged")
    return notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shared_data_dir", type=Path, help="the shared data folder (see its README.md)")
    ap.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent,
        help="output folder (default: the folder of this script)",
    )
    args = ap.parse_args(argv)
    shared, out = args.shared_data_dir, args.out
    try:
        notes = extract_prices(shared / "electricity_prices", out / "prices")
        notes += extract_carbon(shared / "carbon_intensity", out / "carbon")
        notes += copy_network_and_licences(shared, out)
    except CheckError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 1
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
