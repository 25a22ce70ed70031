"""Fuzz families for the surfaces beyond the instance reader (issue 26), drawn by
tests/instance/test_fuzz.py beside its instance mutations:

- ``plan file``: a solved plan (tiny, with its attribution, and a phase in segments) mutated
  at random paths and at the figures a report shows (segment work, migration hours and
  source, hours, the attribution's and re-plan's blocks, the instance references); read by
  the checker's plan reader, judged by ``verify`` and by the report's block checks. A figure
  moved away from its recomputation must be a violation, never accepted;
- ``catalog``: a user catalog mutated, read through an instance's ``gpu_catalog`` (and the
  reference itself drawn from files inside and outside the folder, links, ``/etc/passwd``);
- ``vms.csv``: SkyPilot price lists with extreme, empty and non-numeric cells, Latin-1 bytes,
  over-long fields, missing columns; imported, then written and read back as a catalog;
- ``init flags``: the starter's choices drawn (presets and counts, GPUs, markets and time
  zones, hostile names, dates around New Year and clock changes, extreme token counts);
  every starter ``init`` would write must read as a valid instance;
- ``profile``: every shipped market's 2023 prices as a profile for horizons starting
  around New Year and both clock changes of 2024-2035: always valid, every hour finite;
- ``local csv``: CSV series in naive local time across a clock change, with rows repeated,
  dropped and split into quarter hours: read as documented (the fold rule, means with a
  note) or refused naming a line, never "the last row wins".

Each case ends in an outcome ``<family>:<what>``; anything else (an exception that is not
the documented refusal, a leak of the planted secret, an accepted wrong figure) fails the
run.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import random
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import yaml
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
PRICES = ROOT / "instances" / "data" / "prices"

Draw = Callable[[st.SearchStrategy[Any]], Any]
Check = Callable[..., None]

FAMILIES = ("plan file", "catalog", "vms.csv", "init flags", "profile", "local csv")


@dataclass
class SurfaceCase:
    """One case of a family: what was drawn (for the failure report) and how to judge it."""

    family: str
    drawn: str
    judge: Callable[[Check], str]


# ----------------------------------------------------------------------------- plan files


@functools.cache
def _solved() -> dict[str, Any]:
    """The plans the plan-file family mutates: tiny's (with its attribution) and a phase in
    two segments (tests/test_segments.two_nights), each with its instance."""
    from builders import two_nights

    from planner.analysis.attribution import attribute
    from planner.instance.read import from_dict, load_document
    from planner.solve import solve

    tiny = from_dict(load_document(DATA / "tiny.yaml"), "<tiny>", DATA)
    res = solve(tiny, time_limit=30, threads=1)
    assert res.plan is not None
    doc = json.loads(res.to_json(extra={"attribution": attribute(tiny, res.plan).to_dict()}))
    seg = from_dict(two_nights(), "<segments>", DATA)
    sres = solve(seg, time_limit=30, threads=1)
    assert sres.plan is not None and sres.plan.phases[0].segmented
    return {"tiny": (tiny, doc), "segments": (seg, json.loads(sres.to_json()))}


def _paths(node: Any, where: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for k, v in items:
        out.append((*where, k))
        if not (isinstance(v, list) and len(v) > 8 and all(isinstance(x, int) for x in v)):
            out.extend(_paths(v, (*where, k)))
    return out


def _at(doc: Any, where: tuple[Any, ...]) -> Any:
    for k in where[:-1]:
        doc = doc[k]
    return doc


#: Values an edit may write: each written as a copy (the lists and mappings here are shared;
#: written as they are, a later edit into one changed every place holding it, and could make a
#: document hold itself).
VALUES: list[Any] = [
    None, True, "x", "", -1, 0, 0.5, 7, 99.0, -400.0, 5.0, 1e308, -1e308, 10**30, [], {},
    [13] * 200, list(range(-74, 0)), [10**12], "[/]\x1b[31m", "a\nb: c",
]  # fmt: skip


def _figure_edits(doc: dict[str, Any], rnd: random.Random) -> list[tuple[tuple[Any, ...], Any]]:
    """Wrong figures a report shows: a segment's work share, a migration's hours and
    source (each far from what the plan's configuration gives)."""
    out: list[tuple[tuple[Any, ...], Any]] = []
    phases = doc.get("phases")
    # an earlier random edit may have put any value where a mapping or list was
    for i, ph in enumerate(phases if isinstance(phases, list) else []):
        segments = ph.get("segments") if isinstance(ph, dict) else None
        for k, seg in enumerate(segments if isinstance(segments, list) else []):
            if not isinstance(seg, dict):
                continue
            out.append((("phases", i, "segments", k, "work"), rnd.choice([-4.0, 5.0, 0.0])))
            if isinstance(seg.get("migration"), dict):
                out.append((("phases", i, "segments", k, "migration", "hours"), 99.0))
                out.append((("phases", i, "segments", k, "migration", "from"), "7"))
    return out


def _plan_case(draw: Draw, secrets: list[str]) -> SurfaceCase:
    which = draw(st.sampled_from(["tiny", "tiny", "segments"]))
    inst, original = _solved()[which]
    doc = copy.deepcopy(original)
    rnd = random.Random(draw(st.integers(0, 2**32)))
    edits: list[str] = []
    wrong_figure = False
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["random", "random", "figure", "block", "reference"]))
        if kind == "figure" and (figs := _figure_edits(doc, rnd)):
            where, value = rnd.choice(figs)
            _at(doc, where)[where[-1]] = value
            wrong_figure = True
        elif kind == "block":
            block = rnd.choice(["attribution", "replan"])
            doc.setdefault(block, {"from_hour": 3, "changes": []} if block == "replan" else {})
            paths = _paths(doc[block]) or [()]
            where = rnd.choice(paths)
            value = copy.deepcopy(rnd.choice(VALUES))
            if where:
                _at(doc[block], where)[where[-1]] = value
            else:
                doc[block] = value
            where = (block, *where)
        elif kind == "reference":
            ref = rnd.choice(secrets)
            if rnd.random() < 0.5:
                where, value = ("instance",), ref
            else:
                where, value = ("instance_file",), {"path": ref, "sha256": "0" * 64}
            doc[where[0]] = value
        else:
            where = rnd.choice(_paths(doc))
            value = copy.deepcopy(rnd.choice(VALUES))
            _at(doc, where)[where[-1]] = value
        edits.append(f"{kind} {where} = {value!r:.40}")

    def judge(no_leak: Check) -> str:
        from planner.checker import verify
        from planner.checker.planfile import PlanFileError, plan_from_dict
        from planner.interfaces.report.blocks import BlockError, attribution_of, check_replan

        try:
            plan = plan_from_dict(doc, "<plan>")
        except PlanFileError as e:
            assert e.errors and all(fe.path or fe.message for fe in e.errors)
            no_leak(str(e))
            return "plan file:refused"
        v = verify(inst, plan)
        no_leak(*(x.message for x in v.violations))
        if wrong_figure:
            assert not v.ok, f"a wrong segment figure was accepted: {edits}"
        try:
            if "attribution" in doc:
                attribution_of(doc["attribution"], plan)
            if "replan" in doc:
                check_replan(doc["replan"], inst)
        except BlockError as e:
            assert e.code in (1, 2)
            no_leak(str(e))
            return "plan file:block refused"
        return "plan file:valid" if v.ok else "plan file:violations"

    return SurfaceCase("plan file", f"{which}: " + "; ".join(edits), judge)


# ----------------------------------------------------------------------------- catalogs

CATALOG: dict[str, Any] = {
    "format": "trainplan-catalog/1",
    "gpus": {
        "MyAccel": {
            "memory_gb": 80,
            "memory_unit": "GB",
            "peak_tflops": {"bf16": 400},
            "board_power_w": 500,
            "idle_power_w": 60,
            "on_demand_usd_per_gpu_hour": 2.5,
        },
        "H100-lite": {"catalog": "H100-SXM", "board_power_w": 500},
    },
    "prices": [{"gpu": "H100-SXM", "region": "us-east-1", "on_demand_usd_per_gpu_hour": 6.88}],
}


def _catalog_case(draw: Draw, folder: Path, refs: list[str]) -> SurfaceCase:
    cat = copy.deepcopy(CATALOG)
    rnd = random.Random(draw(st.integers(0, 2**32)))
    edits = []
    for _ in range(rnd.choice([0, 0, 0, 1, 2, 3])):
        where = rnd.choice(_paths(cat))
        value = rnd.choice([*VALUES, math.nan, math.inf, "GiB", "TB"])
        _at(cat, where)[where[-1]] = value
        edits.append(f"{where} = {value!r:.30}")
    ref = "cat.yaml" if rnd.random() < 0.5 else rnd.choice(refs)
    every_complete = draw(st.booleans())

    def judge(no_leak: Check) -> str:
        from planner.instance import InstanceError
        from planner.instance.read import from_dict, load_document

        # beside the fuzz world's files (links in and out, a FIFO, a folder): the references
        # drawn are relative to it
        (folder / "cat.yaml").write_text(yaml.safe_dump(cat, allow_unicode=True))
        doc = load_document(DATA / "tiny.yaml")
        doc["gpu_catalog"] = ref
        if not every_complete:
            doc["gpu_types"]["A100"] = {"catalog": "H100-lite"}
        try:
            inst = from_dict(doc, "<cat>", folder)
        except InstanceError as e:
            no_leak(str(e))
            if ref != "cat.yaml":  # not a catalog, outside, a link, a device: refused
                assert any(fe.path == "gpu_catalog" for fe in e.errors), str(e)
            return "catalog:refused"
        assert ref == "cat.yaml", ref
        for g in inst.spec.gpu_types.values():
            assert g.memory_unit in ("GiB", "GB")
        return "catalog:valid"

    return SurfaceCase("catalog", f"ref {ref!r}; " + "; ".join(edits), judge)


# ----------------------------------------------------------------------------- vms.csv

VMS_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,Region,Price,SpotPrice"
CELLS = ["1", "8", "0", "", "-1", "nan", "inf", "1e308", "1e-300", "98.32", "x", "1" * 400]


def _vms_case(draw: Draw) -> SurfaceCase:
    rnd = random.Random(draw(st.integers(0, 2**32)))
    header = VMS_HEADER if rnd.random() < 0.9 else "a,b,c"
    lines = [header]
    for _ in range(rnd.randint(0, 6)):
        acc = rnd.choice(["H100", "A100-80GB", "L4", "Gaudi", "", "é", "[/]", "a\x00b"])
        cells = [f"p{rnd.randint(1, 9)}", acc, rnd.choice(CELLS), rnd.choice(["us", "", "eu"])]
        cells += [rnd.choice(CELLS), rnd.choice(CELLS)]
        lines.append(",".join(cells))
    data = ("\n".join(lines) + "\n").encode()
    extra = rnd.choice(["", "latin1", "long", "bom"])
    if extra == "latin1":
        data += b"p9,H\xe9100,8,us,1,\n"
    elif extra == "long":
        data += b"p9," + b"A" * 140_000 + b",8,us,1,\n"
    elif extra == "bom":
        data = b"\xef\xbb\xbf" + data

    def judge(no_leak: Check) -> str:
        from planner.instance.catalog import CatalogError
        from planner.instance.skypilot_catalog import import_vms_csv
        from planner.instance.usercatalog import catalog_document, read_user_catalog

        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp, "vms.csv")
            src.write_bytes(data)
            try:
                rows, _unknown = import_vms_csv(src, "aws")
            except CatalogError as e:
                no_leak(str(e))
                return "vms.csv:refused"
            out = Path(tmp, "cat.yaml")
            out.write_text(yaml.safe_dump(catalog_document(rows), sort_keys=False))
            back = read_user_catalog(out)  # what the import writes reads back
            assert len(back.prices) == len(rows)
            json.dumps([r.model_dump() for r in rows], allow_nan=False)
            return "vms.csv:imported"

    return SurfaceCase("vms.csv", f"{len(lines) - 1} rows, {extra or 'plain'}", judge)


# ----------------------------------------------------------------------------- init flags

MODELS = ["7B", "13B", "350M", "llama-2-13b", "llama-3-8b", "mixtral-8x7b", "1e30", "{x}", ""]
GPUS = ["H100-SXM", "H100", "L4", "A100-80GB", "A100", "H10O", "{x}"]
REGIONS = [
    "eu-de=DE-LU", "DE-LU", "jp=JP-TK@aws/ap-northeast-1", "ny=US-NY-NYIS", "sg=SG", "au=AU-NSW",
    "tx=US-TEX-ERCO", "lab=Europe/Berlin", "a: b=FR@{x}/y: z", "[/]=NL", "eu=DE-LUX",
    "x=Mars/Olympus", "q=US-CAL-CISO@gcp", "r=CA-ON@/", "#c=ES",
]  # fmt: skip
TOKENS = [2e9, 1.0, 1e15, 1e30, 0.0, -5.0, math.nan, math.inf]


def _start(rnd: random.Random) -> datetime:
    """Around a New Year or a clock change (March, October, April, November) of 2024-2035."""
    year = rnd.randint(2024, 2035)
    month, day = rnd.choice([(12, 24), (12, 28), (12, 31), (1, 1), (3, 25), (10, 26), (4, 3)])
    return datetime(year, month, day, rnd.randint(0, 23), tzinfo=UTC)


def _init_case(draw: Draw) -> SurfaceCase:
    rnd = random.Random(draw(st.integers(0, 2**32)))
    good = rnd.random() < 0.6  # mostly flags init takes; the rest from the hostile pools
    model = rnd.choice(MODELS[:4] if good else MODELS)
    gpu = rnd.choice(GPUS[:4] if good else GPUS)
    regions = rnd.sample(REGIONS[:8] if good else REGIONS, rnd.randint(1, 3))
    start, hours = _start(rnd), rnd.choice([24, 72, 168, 400] if good else [1, 24, 72, 168, 400])
    tokens = rnd.choice(TOKENS[:2] if good else TOKENS)
    count = rnd.choice([1, 8, 64, 4096])
    ev = rnd.choice([None, "L4", "H100"])
    data_gb = rnd.choice([0.0, 50.0, 1e15])

    def judge(no_leak: Check) -> str:
        from planner.interfaces.starter import (
            Starter,
            StarterError,
            catalog_gpu,
            check_starter,
            default_prices_dir,
            parse_region,
            render,
        )

        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp, "i.yaml")
            try:
                if not (math.isfinite(tokens) and tokens > 0):
                    return "init flags:refused flag"  # the command refuses these first
                s = Starter(
                    model=model,
                    tokens=tokens,
                    gpu=catalog_gpu("--gpu", gpu),
                    max_gpus=count,
                    regions=tuple(parse_region(r) for r in regions),
                    hours=hours,
                    start=start,
                    eval_gpu=catalog_gpu("--eval-gpu", ev) if ev else None,
                    data_gb=data_gb,
                    prices_dir=default_prices_dir(),
                )
                if len({r.name for r in s.regions}) < len(s.regions):
                    return "init flags:refused flag"
                text = render(s, out)
                check_starter(text, out)
            except StarterError as e:
                no_leak(str(e))
                return "init flags:refused"
            from planner.instance.read import read

            out.write_text(text)
            inst = read(out)  # what init writes, check reads
            assert inst.hours == hours
            return "init flags:written"

    drawn = f"{model!r} {gpu!r}x{count} {regions} {start.isoformat()}+{hours}h tokens {tokens}"
    return SurfaceCase("init flags", drawn, judge)


# ----------------------------------------------------------------------------- profiles


def _profile_case(draw: Draw) -> SurfaceCase:
    from planner.interfaces.starter import MARKETS, PRICE_FILE

    rnd = random.Random(draw(st.integers(0, 2**32)))
    market = rnd.choice(sorted(MARKETS))
    start, hours = _start(rnd), rnd.choice([1, 6, 48, 200])

    def judge(no_leak: Check) -> str:
        import numpy as np

        from planner.instance.read import from_dict, load_document

        doc = load_document(DATA / "tiny.yaml")
        doc["horizon"] = {"start": start.isoformat(), "hours": hours}
        for p in doc["phases"]:
            p.pop("deadline", None)
            p.pop("release", None)
        doc["regions"]["east"]["timezone"] = MARKETS[market]
        doc["regions"]["east"]["electricity"] = {
            "csv": PRICE_FILE.format(market=market),
            "column": "Price (USD/MWh)",
            "time_column": "Datetime (UTC)",
            "reference_year": 2023,
        }
        inst = from_dict(doc, "<profile>", PRICES)  # never refused: every hour has a value
        assert len(inst.price["east"]) == hours and np.all(np.isfinite(inst.price["east"]))
        return "profile:valid"

    return SurfaceCase("profile", f"{market} {start.isoformat()} + {hours} h", judge)


# ----------------------------------------------------------------------------- local csv


def _local_case(draw: Draw) -> SurfaceCase:
    rnd = random.Random(draw(st.integers(0, 2**32)))
    tz = rnd.choice(["Europe/Berlin", "America/New_York", "Australia/Sydney"])
    changes = {
        "Europe/Berlin": [datetime(2023, 3, 26), datetime(2023, 10, 29)],
        "America/New_York": [datetime(2023, 3, 12), datetime(2023, 11, 5)],
        "Australia/Sydney": [datetime(2023, 4, 2), datetime(2023, 10, 1)],
    }[tz]
    day = rnd.choice(changes)
    zone = ZoneInfo(tz)
    # the day's UTC hours as a meter logs them in local wall-clock time (the repeated hour
    # twice, the skipped one never), then rows dropped, doubled and split
    start = (day - timedelta(hours=2)).replace(tzinfo=zone).astimezone(UTC)
    rows: list[tuple[str, float]] = []
    for h in range(10):
        local = (start + timedelta(hours=h)).astimezone(zone).replace(tzinfo=None)
        rows.append((local.isoformat(timespec="minutes"), float(10 + h)))
    quarter = rnd.random() < 0.3
    if quarter:
        rows = [
            (
                (datetime.fromisoformat(t) + timedelta(minutes=15 * q)).isoformat(
                    timespec="minutes"
                ),
                v,
            )
            for t, v in rows
            for q in range(4)
        ]
    logged = Counter(t for t, _ in rows)  # as the meter wrote them (02:00 twice in autumn)
    drop = False
    if rnd.random() < 0.3:
        i = rnd.randrange(len(rows))
        rows.insert(i, rows[i])
    if rnd.random() < 0.2:
        del rows[rnd.randrange(len(rows))]
        drop = True
    # a time written more often than the meter wrote it: one row too many for one instant
    dup = any(n > logged[t] for t, n in Counter(t for t, _ in rows).items())
    hours = 10  # every row in the horizon (rows outside it are not kept, nor compared)

    def judge(no_leak: Check) -> str:
        import numpy as np

        from planner.instance import InstanceError
        from planner.instance.read import from_dict, load_document

        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "p.csv").write_text("time,price\n" + "".join(f"{t},{v}\n" for t, v in rows))
            doc = load_document(DATA / "tiny.yaml")
            doc["horizon"] = {"start": start.isoformat(), "hours": hours}
            for p in doc["phases"]:
                p.pop("deadline", None)
                p.pop("release", None)
            doc["regions"]["east"]["electricity"] = {
                "csv": "p.csv", "column": "price", "time_column": "time", "timezone": tz,
            }  # fmt: skip
            try:
                inst = from_dict(doc, "<local>", Path(tmp))
            except InstanceError as e:
                msg = str(e)
                assert "line" in msg or "no value for" in msg, msg
                return "local csv:refused"
            assert not dup, "a row given twice was read (the last one winning)"
            prices = np.asarray(inst.price["east"])
            assert np.all(np.isfinite(prices))
            if not quarter and not drop:  # each UTC hour reads its own row, in order
                assert list(prices) == [10.0 + h for h in range(hours)], list(prices)
            if quarter:
                assert any("mean" in w for w in inst.warnings)
            return "local csv:read"

    drawn = f"{tz} {day:%Y-%m-%d}: {'quarter hours ' if quarter else ''}{'dup ' if dup else ''}"
    return SurfaceCase("local csv", drawn + ("drop" if drop else ""), judge)


# ----------------------------------------------------------------------------- the strategy


@st.composite
def surface_cases(draw: Draw, folder: Path, refs: list[str], secrets: list[str]) -> SurfaceCase:
    """A case of one of :data:`FAMILIES`; ``folder`` is where a catalog may be named from,
    ``refs`` the file references drawn (inside and outside it), ``secrets`` files a plan
    may name that must never be read."""
    family = draw(st.sampled_from(FAMILIES))
    if family == "plan file":
        return _plan_case(draw, secrets)
    if family == "catalog":
        return _catalog_case(draw, folder, refs)
    if family == "vms.csv":
        return _vms_case(draw)
    if family == "init flags":
        return _init_case(draw)
    if family == "profile":
        return _profile_case(draw)
    return _local_case(draw)
