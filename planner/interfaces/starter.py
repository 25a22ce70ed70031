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

import yaml

from planner.instance.catalog import CatalogError, catalog_price, resolve_name

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
        hours = max(1, math.ceil(n)) if math.isfinite(n) else 0
        try:
            start + timedelta(hours=hours)
        except OverflowError:
            hours = 0
        if hours < 1:
            raise StarterError(
                f"--deadline: {text} from {start.isoformat()} ends past the year 9999"
            )
        return hours
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
    if not text.isprintable():
        raise StarterError(
            f"--region {text!r}: names must be printable text (no line breaks or control "
            "characters)"
        )
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
    import difflib

    close = difflib.get_close_matches(market, list(MARKETS), n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise StarterError(
        f"--region {text!r}: unknown market {what!r}{hint}; expected NAME=MARKET with a market "
        f"of the shipped prices ({', '.join(MARKETS)}) or NAME=TIME/ZONE, optionally "
        "@cloud/cloud-region"
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
    """The catalog name ``text`` resolves to (aliases and partial names resolve), or a
    :class:`StarterError` naming ``flag`` and the catalog's message."""
    try:
        return resolve_name(text)
    except CatalogError as e:
        raise StarterError(f"{flag}: " + "; ".join(fe.message for fe in e.errors)) from None


def next_monday(now: datetime | None = None) -> datetime:
    """00:00 UTC of the next Monday (today's if it is Monday before any hour has passed)."""
    n = (now or datetime.now(UTC)).astimezone(UTC)
    day = n.replace(hour=0, minute=0, second=0, microsecond=0)
    return day + timedelta(days=(7 - day.weekday()) % 7 or (7 if n > day else 0))


def _model_entry(model: str) -> tuple[dict[str, object], str]:
    """(the models entry, a comment) for a preset name or a parameter count."""
    from planner.physics.presets import PresetError, preset_fields

    params = parse_params(model)
    if params is not None:
        return (
            {"params": _number(params), "seq_len": 4096},
            "architecture inferred from the parameter count; give layers/hidden/heads or a "
            "preset (trainplan estimate --help lists them) for accuracy",
        )
    try:
        preset_fields(model)
    except PresetError as e:
        raise StarterError(f"--model: {e}") from None
    return {"preset": model}, f"published architecture of {model} (planner/data/models.yaml)"


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


def _number(x: float) -> int | float:
    """A whole number as an int (``64``, ``2000000000``), else the float."""
    return int(x) if float(x).is_integer() and abs(x) < 1e18 else float(x)


def _offers(gpu: str, spot: bool) -> tuple[dict[str, object], str]:
    price = catalog_price(gpu)
    if price is None:
        return (
            {"on_demand": {"usd_per_gpu_hour": 2.0}},
            f"{gpu}: no example price in the catalog; 2.00 USD/GPU-h is a PLACEHOLDER",
        )
    offer: dict[str, object] = {"on_demand": {"usd_per_gpu_hour": round(price, 2)}}
    why = f"ASSUMPTION: {gpu} at the catalog's example list price (trainplan gpus)"
    if spot:
        offer["spot"] = {"usd_per_gpu_hour": round(price * 0.4, 2), "preemptions_per_hour": 0.05}
        why += "; spot 60% off"
    return offer, why


HEADER = (
    "yaml-language-server: $schema=trainplan.schema.json",
    "A starter instance written by `trainplan init`; every field is described in",
    "docs/instance-format.md, `trainplan schema > trainplan.schema.json` lets an editor",
    "complete and check it. Check it with `trainplan check FILE`, solve it with",
    "`trainplan solve FILE -o plan.json`. Lines marked ASSUMPTION are guesses to replace.",
)


def render(s: Starter, out_file: Path) -> str:
    """The starter instance as commented YAML, with CSV paths relative to ``out_file``.

    Every key and value is written by a YAML serializer (:class:`_Doc`), never pasted into
    the text: a region called ``a: b``, ``{x}`` or one with a newline is a quoted string, not
    new keys. The text is read back and compared with the document it was written from
    (:meth:`_Doc.text`), so what the file holds is what was meant."""
    from planner.instance.catalog import gpu_by_name

    model_entry, model_note = _model_entry(s.model)
    counts = _counts(gpu_by_name(s.gpu).gpus_per_node, s.max_gpus)
    end = s.start + timedelta(hours=s.hours)
    d = _Doc()
    d.value(0, "name", f"{_slug(s.model)}-{'pretrain' if s.pretrain else 'finetune'}")
    d.value(
        0,
        "horizon",
        {"start": s.start.strftime("%Y-%m-%dT%H:%M:%SZ"), "hours": s.hours},
        f"to {end.strftime('%Y-%m-%d %H:%M')} UTC",
    )
    d.blank()
    if s.catalog is not None:
        d.value(
            0,
            "gpu_catalog",
            _local_copy(s.catalog, out_file, "catalogs"),
            "prices imported with `trainplan gpus import-skypilot`",
        )
        d.blank()
    gpus = [s.gpu] + ([s.eval_gpu] if s.eval_gpu and s.eval_gpu != s.gpu else [])
    d.block(0, "gpu_types", "by catalog name: every figure from `trainplan gpus`")
    for g in gpus:
        d.value(1, g, {})
    d.blank()
    d.block(0, "regions")
    for r in s.regions:
        d.block(1, r.name)
        d.value(2, "timezone", r.timezone)
        d.value(2, "pue", 1.3, "ASSUMPTION: the site's PUE (or cooling: liquid)")
        if r.cloud:
            d.value(2, "cloud", r.cloud)
        if r.cloud_region:
            d.value(2, "cloud_region", r.cloud_region, "for trainplan export")
        site = site_of_choice(r)
        d.value(2, "site", site, POWER_NOTE[site])
        csv = _price_csv(s, r, out_file)
        if csv is not None:
            d.block(2, "electricity", "day-ahead prices of 2023 as a price profile:")
            d.comment(3, "each hour reads 2023's price of the same weekday and local hour")
            d.value(3, "csv", csv)
            d.value(3, "column", "Price (USD/MWh)")
            d.value(3, "time_column", "Datetime (UTC)")
            d.value(3, "reference_year", REFERENCE_YEAR)
            d.value(2, "price_adder_usd_per_mwh", 40, "ASSUMPTION: taxes and grid fees")
        else:
            d.value(
                2,
                "electricity",
                {"constant": 100},
                "ASSUMPTION: USD/MWh; put a CSV series here",
            )
        cap = {g: s.max_gpus if g == s.gpu else 16 for g in gpus}
        d.value(2, "capacity", cap, "ASSUMPTION: GPUs you can rent at once")
        own = [g for g in gpus if not _from_catalog(s, r, g)]
        if not own:
            d.value(2, "offers", {})
        else:
            d.block(2, "offers")
        for g in gpus:
            if g not in own:
                d.comment(
                    3,
                    f"{g}: on-demand and spot prices from gpu_catalog "
                    f"({r.cloud}/{r.cloud_region or r.name}, the cheapest standard zone)",
                )
                continue
            offer, why = _offers(g, spot=g != s.gpu)
            d.comment(3, why)
            d.value(3, g, offer)
    d.blank()
    d.block(0, "models")
    d.value(1, "model", model_entry, model_note)
    d.blank()
    main = "pretrain" if s.pretrain else "finetune"
    phase: dict[str, object] = {
        "name": main,
        "model": "model",
        "work": {"tokens": _number(s.tokens)},
        "gpu_types": [s.gpu],
        "options": {"gpu_counts": counts, "contracts": ["on_demand"]},
    }
    notes = {"work": "ASSUMPTION: tokens to train on", "options": "the planner tries only these"}
    if s.data_gb or s.data_region:
        data: dict[str, object] = {"size_gb": _number(s.data_gb)}
        if s.data_region:
            data["home_region"] = s.data_region
        phase["data"] = data
    phases = [(phase, notes)]
    if s.eval_gpu:
        ev: dict[str, object] = {
            "name": "evaluation",
            "kind": "evaluation",
            "model": "model",
            "predecessors": [main],
            "work": {"tokens": _number(s.eval_tokens), "passes": "forward"},
            "gpu_types": [s.eval_gpu],
            "preemptible": True,
            "options": {"gpu_counts": [1, 2, 4, 8], "contracts": ["on_demand", "spot"]},
        }
        ev_notes = {
            "work": "forward passes only (kind is a label)",
            "preemptible": "it may pause through dear hours and run on spot",
        }
        phases.append((ev, ev_notes))
    d.items(0, "phases", phases)
    return d.text()


def _flow(value: object) -> str:
    """``value`` as one line of YAML in flow style, by the serializer (quoted where YAML
    would read it otherwise: ``'a: b'``, ``'{x}'``, ``"a\\nb"``)."""
    text = yaml.safe_dump(
        value, default_flow_style=True, width=1 << 30, allow_unicode=True, sort_keys=False
    )
    lines = [ln for ln in text.splitlines() if ln != "..."]
    if len(lines) != 1:  # a flow scalar never spans lines at this width
        raise StarterError(f"cannot write {value!r} on one line")
    return lines[0]


def _comment(text: str) -> str:
    """A comment's text on one line (a newline in it would end the comment)."""
    return " ".join(text.split())


class _Doc:
    """A YAML document written line by line with comments: keys and values go through the
    serializer (:func:`_flow`); the document they make is kept alongside (``data``) and
    compared with the text read back (:meth:`text`)."""

    def __init__(self) -> None:
        self.lines = [f"# {h}" for h in HEADER]
        self.data: dict[str, object] = {}
        self._path: list[dict[str, object]] = [self.data]

    def _at(self, level: int) -> dict[str, object]:
        del self._path[level + 1 :]
        return self._path[level]

    def _line(self, level: int, text: str, note: str | None) -> None:
        self.lines.append("  " * level + text + (f"   # {_comment(note)}" if note else ""))

    def value(self, level: int, key: str, value: object, note: str | None = None) -> None:
        self._at(level)[key] = value
        self._line(level, f"{_flow(key)}: {_flow(value)}", note)

    def block(self, level: int, key: str, note: str | None = None) -> None:
        child: dict[str, object] = {}
        self._at(level)[key] = child
        self._path.append(child)
        self._line(level, f"{_flow(key)}:", note)

    def items(
        self, level: int, key: str, entries: list[tuple[dict[str, object], dict[str, str]]]
    ) -> None:
        """A list of mappings in block style, a comment after the fields named in each
        entry's notes."""
        self._at(level)[key] = [e for e, _ in entries]
        self._line(level, f"{_flow(key)}:", None)
        for entry, notes in entries:
            for i, (k, v) in enumerate(entry.items()):
                lead = "  " * (level + 1) + ("- " if i == 0 else "  ")
                self.lines.append(
                    lead
                    + f"{_flow(k)}: {_flow(v)}"
                    + (f"   # {_comment(notes[k])}" if k in notes else "")
                )

    def comment(self, level: int, text: str) -> None:
        self.lines.append("  " * level + f"# {_comment(text)}")

    def blank(self) -> None:
        self.lines.append("")

    def text(self) -> str:
        from planner.instance.load import load_yaml_text

        out = "\n".join(self.lines) + "\n"
        if load_yaml_text(out, "<init>") != self.data:  # a bug, never a user's input
            raise RuntimeError("the starter instance does not read back as written")
        return out


def check_starter(text: str, out_file: Path) -> None:
    """The starter, read as ``trainplan check`` would read it from ``out_file`` (its price
    extracts beside it): :class:`StarterError` with every problem when it is refused, so that
    ``init`` never writes a file ``check`` refuses (a name the schema does not take, a count
    beyond the caps, a horizon past year 9999)."""
    from planner.instance.errors import InstanceError
    from planner.instance.load import load_yaml_text
    from planner.instance.read import from_dict

    try:
        from_dict(load_yaml_text(text, str(out_file)), str(out_file), out_file.parent)
    except InstanceError as e:
        raise StarterError(
            "the starter would not be a valid instance: " + "; ".join(str(fe) for fe in e.errors)
        ) from None


def _from_catalog(s: Starter, r: RegionChoice, gpu: str) -> bool:
    """The user catalog prices ``gpu`` in the region's cloud region (so its offers come from
    there: :func:`planner.instance.usercatalog.catalog_offers`)."""
    if s.catalog is None or r.cloud is None:
        return False
    from planner.instance.usercatalog import catalog_offers, read_user_catalog

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
        from planner.outfiles import OutputError, check_output, replacing

        local = folder / "data" / kind / path.name
        try:
            check_output(local)  # no link written through, the folders made
            if not local.is_file():
                with replacing(local) as tmp:
                    shutil.copyfile(path, tmp)
        except (OutputError, OSError) as e:
            raise StarterError(f"-o: cannot copy the file to {local}: {e}") from None
        rel = local.relative_to(folder)
    return rel.as_posix()


def default_prices_dir() -> Path | None:
    """The shipped prices folder: ``instances/data/prices`` of the working directory, else
    of the source tree trainplan runs from."""
    for base in (Path.cwd(), Path(__file__).resolve().parents[2]):
        p = base / "instances" / "data" / "prices"
        if p.is_dir():
            return p
    return None
