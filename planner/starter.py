"""``trainplan init``: a commented starter instance from a few choices (model, GPUs, regions,
deadline), that ``trainplan check`` accepts and ``trainplan solve`` solves.

The file uses the documented format only (docs/instance-format.md): GPU types by catalog name,
regions on the shipped full-year 2023 day-ahead prices as price profiles (``reference_year:
2023``; ``instances/data/prices/``), example on-demand prices from the GPU catalog (or from a
user catalog's price rows for the region's cloud region), and every assumption marked in a
comment for the user to replace.
"""

from __future__ import annotations

import math
import os
import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from planner.catalog import CatalogError, catalog_price, resolve_name

#: Market code of a shipped price extract -> its time zone.
MARKETS: dict[str, str] = {
    "AU-NSW": "Australia/Sydney",
    "CA-ON": "America/Toronto",
    "DE-LU": "Europe/Berlin",
    "ES": "Europe/Madrid",
    "FR": "Europe/Paris",
    "JP-TK": "Asia/Tokyo",
    "NL": "Europe/Amsterdam",
    "SG": "Asia/Singapore",
    "US-CAL-CISO": "America/Los_Angeles",
    "US-MIDA-PJM": "America/New_York",
    "US-NY-NYIS": "America/New_York",
    "US-TEX-ERCO": "America/Chicago",
}
#: The full-year extract of a market, relative to the prices folder.
PRICE_FILE = "price_{market}_2023.csv"
REFERENCE_YEAR = 2023


class StarterError(ValueError):
    """A choice ``init`` cannot turn into an instance; the message names the flag."""


@dataclass(frozen=True)
class RegionChoice:
    name: str
    market: str | None
    timezone: str
    cloud: str | None = None
    cloud_region: str | None = None


@dataclass(frozen=True)
class Starter:
    """What ``init`` was asked for."""

    model: str
    tokens: float
    gpu: str
    max_gpus: int
    regions: tuple[RegionChoice, ...]
    hours: int
    start: datetime
    eval_gpu: str | None = None
    eval_tokens: float = 2e8
    data_gb: float = 0.0
    data_region: str | None = None
    prices_dir: Path | None = None
    pretrain: bool = False
    notes: tuple[str, ...] = field(default=())
    #: A user catalog (``gpu_catalog``): regions on a cloud region take their offers from it.
    catalog: Path | None = None


def parse_params(text: str) -> float | None:
    """``13B`` -> 1.3e10, ``350M`` -> 3.5e8, ``1.3e10`` -> 1.3e10; None if not a count."""
    m = re.fullmatch(r"\s*([0-9.]+(?:e[0-9]+)?)\s*([kKmMbBtT]?)\s*", text)
    if not m:
        return None
    scale = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}[m.group(2).lower()]
    try:
        return float(m.group(1)) * scale
    except ValueError:
        return None


def parse_duration(text: str, start: datetime) -> int:
    """``3d`` / ``72h`` / an ISO date-time after ``start`` -> whole hours from ``start``."""
    t = text.strip()
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*([dDhHwW])", t)
    if m:
        n = float(m.group(1)) * {"h": 1, "d": 24, "w": 168}[m.group(2).lower()]
        return max(1, math.ceil(n))
    try:
        end = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise StarterError(
            f"--deadline: expected a duration such as 3d or 72h, or an ISO time; got {text!r}"
        ) from None
    if end.tzinfo is None:
        end = end.replace(tzinfo=UTC)
    hours = math.ceil((end - start).total_seconds() / 3600)
    if hours < 1:
        raise StarterError(f"--deadline: {text} is not after the start {start.isoformat()}")
    return hours


def parse_region(text: str) -> RegionChoice:
    """``eu-de=DE-LU``, ``DE-LU`` (name ``de-lu``), ``eu-de=DE-LU@aws/eu-central-1``, or
    ``lab=Europe/Berlin`` (a time zone: a region without shipped prices)."""
    spec, _, cloud = text.partition("@")
    name, _, what = spec.partition("=")
    if not what:
        what, name = name, name.lower()
    cloud_name = cloud_region = None
    if cloud:
        cloud_name, _, cloud_region = cloud.partition("/")
        cloud_region = cloud_region or None
    market = what.upper()
    if market in MARKETS:
        return RegionChoice(name, market, MARKETS[market], cloud_name, cloud_region)
    if "/" in what:
        from zoneinfo import ZoneInfo

        try:
            ZoneInfo(what)
        except Exception:
            pass
        else:
            return RegionChoice(name, None, what, cloud_name, cloud_region)
    raise StarterError(
        f"--region {text!r}: expected NAME=MARKET with a market of the shipped prices "
        f"({', '.join(MARKETS)}) or NAME=TIME/ZONE, optionally @cloud/cloud-region"
    )


#: The comment ``init`` writes beside a region's ``site`` (who pays the power).
POWER_NOTE = {
    "cloud": "power is included in the cloud's GPU price: counted in kWh and emissions, "
    "not billed (an offer may say energy: metered)",
    "colocation": "power is metered at the electricity price below, on top of the rental "
    "(site: cloud if the GPU price includes it)",
}


def site_of_choice(r: RegionChoice) -> str:
    """The site ``init`` writes: a region on a named cloud is a cloud site (its prices include
    power), any other a colocation site (power metered on top)."""
    return "cloud" if r.cloud else "colocation"


def power_notes(s: Starter) -> list[str]:
    """One line per region saying who pays its power, for ``init``'s output."""
    words = {"cloud": "power included in the GPU price", "colocation": "power metered on top"}
    return [f"{r.name}: {words[site_of_choice(r)]} (site: {site_of_choice(r)})" for r in s.regions]


def catalog_gpu(flag: str, text: str) -> str:
    try:
        return resolve_name(text)
    except CatalogError as e:
        raise StarterError(f"{flag}: " + "; ".join(fe.message for fe in e.errors)) from None


def next_monday(now: datetime | None = None) -> datetime:
    """00:00 UTC of the next Monday (today's if it is Monday before any hour has passed)."""
    n = (now or datetime.now(UTC)).astimezone(UTC)
    day = n.replace(hour=0, minute=0, second=0, microsecond=0)
    return day + timedelta(days=(7 - day.weekday()) % 7 or (7 if n > day else 0))


def _model_yaml(model: str) -> tuple[str, str]:
    """(the models entry, a comment) for a preset name or a parameter count."""
    from planner.physics.presets import PresetError, preset_fields

    params = parse_params(model)
    if params is not None:
        return (
            f"{{params: {number(params)}, seq_len: 4096}}",
            "architecture inferred from the parameter count; give layers/hidden/heads or a "
            "preset (trainplan estimate --help lists them) for accuracy",
        )
    try:
        preset_fields(model)
    except PresetError as e:
        raise StarterError(f"--model: {e}") from None
    return f"{{preset: {model}}}", f"published architecture of {model} (planner/data/models.yaml)"


def _counts(gpn: int, max_gpus: int) -> list[int]:
    """Whole-node counts up to ``max_gpus`` (every node count up to 8 nodes, then doublings):
    the planner tries only the counts listed."""
    if max_gpus < gpn:
        return sorted({c for c in (1, 2, 4, max_gpus) if c <= max_gpus})
    nodes = max_gpus // gpn
    out = {n * gpn for n in range(1, min(nodes, 8) + 1)}
    n = 8
    while n * 2 <= nodes:
        n *= 2
        out.add(n * gpn)
    out.add(nodes * gpn)
    return sorted(out)


def number(x: float) -> str:
    """A number every YAML reader takes for one: ``2.0e+9`` (YAML 1.1, PyYAML's, wants the
    dot and the exponent's sign), ``0.8``, ``64``."""
    if x == int(x) and abs(x) < 1e6:
        return str(int(x))
    mant, _, exp = f"{x:.4e}".partition("e")
    mant = mant.rstrip("0")
    mant = mant + "0" if mant.endswith(".") else mant
    return f"{mant}e{int(exp):+d}"


def _price_lines(gpu: str, spot: bool) -> tuple[str, str]:
    price = catalog_price(gpu)
    if price is None:
        return (
            "{on_demand: {usd_per_gpu_hour: 2.00}}",
            f"{gpu}: no example price in the catalog; 2.00 USD/GPU-h is a PLACEHOLDER",
        )
    text = f"on_demand: {{usd_per_gpu_hour: {price:.2f}}}"
    why = f"ASSUMPTION: {gpu} at the catalog's example list price (trainplan gpus)"
    if spot:
        text += f", spot: {{usd_per_gpu_hour: {price * 0.4:.2f}, preemptions_per_hour: 0.05}}"
        why += "; spot 60% off"
    return "{" + text + "}", why


def render(s: Starter, out_file: Path) -> str:
    """The starter instance as commented YAML, with CSV paths relative to ``out_file``."""
    model_yaml, model_note = _model_yaml(s.model)
    gpn = 8
    from planner.catalog import gpu_by_name

    gpn = gpu_by_name(s.gpu).gpus_per_node
    counts = _counts(gpn, s.max_gpus)
    end = s.start + timedelta(hours=s.hours)
    lines = [
        "# yaml-language-server: $schema=trainplan.schema.json",
        "# A starter instance written by `trainplan init`; every field is described in",
        "# docs/instance-format.md, `trainplan schema > trainplan.schema.json` lets an editor",
        "# complete and check it. Check it with `trainplan check FILE`, solve it with",
        "# `trainplan solve FILE -o plan.json`. Lines marked ASSUMPTION are guesses to replace.",
        f"name: {_slug(s.model)}-{'pretrain' if s.pretrain else 'finetune'}",
        f"horizon: {{start: {s.start.strftime('%Y-%m-%dT%H:%M:%SZ')}, hours: {s.hours}}}"
        f"   # to {end.strftime('%Y-%m-%d %H:%M')} UTC",
        "",
        "gpu_types:          # by catalog name: every figure from `trainplan gpus`",
        f"  {s.gpu}: {{}}",
    ]
    if s.catalog is not None:
        lines[-2:-2] = [
            f"gpu_catalog: {_local_copy(s.catalog, out_file, 'catalogs')}   # prices imported "
            "with `trainplan gpus import-skypilot`",
            "",
        ]
    if s.eval_gpu and s.eval_gpu != s.gpu:
        lines.append(f"  {s.eval_gpu}: {{}}")
    lines += ["", "regions:"]
    gpus = [s.gpu] + ([s.eval_gpu] if s.eval_gpu and s.eval_gpu != s.gpu else [])
    for r in s.regions:
        lines.append(f"  {r.name}:")
        lines.append(f"    timezone: {r.timezone}")
        lines.append("    pue: 1.3              # ASSUMPTION: the site's PUE (or cooling: liquid)")
        if r.cloud:
            lines.append(f"    cloud: {r.cloud}")
        if r.cloud_region:
            lines.append(f"    cloud_region: {r.cloud_region}   # for trainplan export")
        lines.append(f"    site: {site_of_choice(r)}   # {POWER_NOTE[site_of_choice(r)]}")
        csv = _price_csv(s, r, out_file)
        if csv is not None:
            lines += [
                "    electricity:        # day-ahead prices of 2023 as a price profile:",
                "      # each hour reads 2023's price of the same weekday and local hour",
                f"      csv: {csv}",
                '      column: "Price (USD/MWh)"',
                '      time_column: "Datetime (UTC)"',
                f"      reference_year: {REFERENCE_YEAR}",
                "    price_adder_usd_per_mwh: 40   # ASSUMPTION: taxes and grid fees",
            ]
        else:
            lines.append(
                "    electricity: {constant: 100}   # ASSUMPTION: USD/MWh; put a CSV series here"
            )
        cap = ", ".join(f"{g}: {s.max_gpus if g == s.gpu else 16}" for g in gpus)
        lines.append(f"    capacity: {{{cap}}}   # ASSUMPTION: GPUs you can rent at once")
        own = [g for g in gpus if not _from_catalog(s, r, g)]
        lines.append("    offers:" if own else "    offers: {}")
        for g in gpus:
            if g not in own:
                lines.append(
                    f"      # {g}: on-demand and spot prices from gpu_catalog "
                    f"({r.cloud}/{r.cloud_region or r.name}, the cheapest standard zone)"
                )
                continue
            text, why = _price_lines(g, spot=g != s.gpu)
            lines.append(f"      # {why}")
            lines.append(f"      {g}: {text}")
    lines += [
        "",
        "models:",
        f"  model: {model_yaml}   # {model_note}",
        "",
        "phases:",
        f"  - name: {'pretrain' if s.pretrain else 'finetune'}",
        "    model: model",
        f"    work: {{tokens: {number(s.tokens)}}}   # ASSUMPTION: tokens to train on",
        f"    gpu_types: [{s.gpu}]",
        f"    options: {{gpu_counts: [{', '.join(map(str, counts))}], contracts: [on_demand]}}",
        "    # the planner tries only the GPU counts listed",
    ]
    if s.data_gb or s.data_region:
        home = f", home_region: {s.data_region}" if s.data_region else ""
        lines.append(f"    data: {{size_gb: {number(s.data_gb)}{home}}}")
    if s.eval_gpu:
        lines += [
            "  - name: evaluation",
            "    kind: evaluation",
            "    model: model",
            "    predecessors: [" + ("pretrain" if s.pretrain else "finetune") + "]",
            f"    work: {{tokens: {number(s.eval_tokens)}, passes: forward}}"
            "   # forward passes only (kind is a label)",
            f"    gpu_types: [{s.eval_gpu}]",
            "    preemptible: true   # it may pause through dear hours and run on spot",
            "    options: {gpu_counts: [1, 2, 4, 8], contracts: [on_demand, spot]}",
        ]
    return "\n".join(lines) + "\n"


def _from_catalog(s: Starter, r: RegionChoice, gpu: str) -> bool:
    """The user catalog prices ``gpu`` in the region's cloud region (so its offers come from
    there: :func:`planner.usercatalog.catalog_offers`)."""
    if s.catalog is None or r.cloud is None:
        return False
    from planner.usercatalog import catalog_offers, read_user_catalog

    user = read_user_catalog(s.catalog)
    return catalog_offers(user, r.cloud, r.cloud_region or r.name, gpu, (gpu,)) is not None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "model"


def _price_csv(s: Starter, r: RegionChoice, out_file: Path) -> str | None:
    """The region's price CSV as a path relative to ``out_file``: the shipped extract,
    copied to ``data/prices/`` beside the instance when it lies outside the instance's
    folder (the instance then travels with its data)."""
    if r.market is None or s.prices_dir is None:
        return None
    path = s.prices_dir / PRICE_FILE.format(market=r.market)
    if not path.is_file():
        return None
    return _local_copy(path, out_file, "prices")


def _local_copy(path: Path, out_file: Path, kind: str) -> str:
    """``path`` relative to ``out_file``'s folder, copied to ``data/<kind>/`` beside it first
    when it lies outside (an instance reads files from its own folder only)."""
    folder = out_file.resolve().parent
    rel = Path(os.path.relpath(path.resolve(), folder))
    if rel.parts and rel.parts[0] == "..":
        local = folder / "data" / kind / path.name
        if not local.is_file():
            local.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, local)
        rel = local.relative_to(folder)
    return rel.as_posix()


def default_prices_dir() -> Path | None:
    """The shipped prices folder: ``instances/data/prices`` of the working directory, else
    of the source tree trainplan runs from."""
    for base in (Path.cwd(), Path(__file__).resolve().parents[1]):
        p = base / "instances" / "data" / "prices"
        if p.is_dir():
            return p
    return None
