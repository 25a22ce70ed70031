"""``trainplan gpus``: the GPU catalog (specs, sources, example prices), a user catalog, and
the import of SkyPilot price catalogs into a user catalog.

- ``trainplan gpus [GPU] [--cloud C] [--region R] [--catalog FILE] [--json]``: every GPU an
  instance may name by catalog name, with memory, dense peak TFLOPS, power, node size, an
  example on-demand price and the source of the figures; with ``--catalog``, the user
  catalog's GPUs first and its prices. ``GPU``, ``--cloud`` and ``--region`` filter as
  ``sky show-gpus GPU --cloud C --region R`` does: the GPU (by catalog name or alias) and
  the price rows of that cloud and region.
- ``trainplan gpus import-skypilot VMS_CSV --cloud CLOUD -o FILE [--all-zones]``: a user
  catalog with a price row per accelerator, region and standard availability zone of a
  SkyPilot ``vms.csv`` (Local Zones and Wavelength zones only with ``--all-zones``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table
from typer import _click as click
from typer.core import TyperGroup

from planner.interfaces.cli.app import (
    app,
    fail,
    guarded,
    note,
    output_path,
    result,
    results,
    write_output,
)

if TYPE_CHECKING:
    from planner.instance.usercatalog import CatalogEntry, PriceRow, UserCatalog


class _GpusGroup(TyperGroup):
    """``trainplan gpus [NAME ...]``: words before any option that are not a subcommand's
    name are GPU names to list (``gpus H100``), kept in ``ctx.meta["gpus"]``; a subcommand
    (``gpus import-skypilot ...``) is run as one."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        names: list[str] = []
        rest = list(args)
        while rest and not rest[0].startswith("-") and rest[0] not in self.commands:
            names.append(rest.pop(0))
        ctx.meta["gpus"] = names
        return super().parse_args(ctx, rest)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, "[NAME]... [OPTIONS] | COMMAND [ARGS]...")


gpus_app = typer.Typer(
    cls=_GpusGroup,
    help="The GPU catalog: list it (or the GPUs named: trainplan gpus H100 L4; --cloud C "
    "filters prices like sky show-gpus), or import a "
    "SkyPilot price catalog.",
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(gpus_app, name="gpus")


def _peak(fields: dict[str, Any]) -> str:
    peak = fields.get("peak_tflops") or {}
    return ", ".join(f"{k} {v:g}" for k, v in peak.items() if v)


def _entry_dict(e: CatalogEntry) -> dict[str, Any]:
    return {
        "name": e.name,
        **dict(e.fields),
        "memory_unit": e.memory_unit,
        "example_on_demand_usd_per_gpu_hour": e.price,
        "from": e.origin,
    }


def _table(entries: list[CatalogEntry], title: str) -> Table:
    t = Table(title=title, title_justify="left")
    for col in ("name", "memory", "dense peak TFLOPS", "board W (idle)", "per node", "USD/GPU-h"):
        t.add_column(col, justify="left" if col in ("name", "dense peak TFLOPS") else "right")
    t.add_column("source", overflow="fold")
    for e in entries:
        f = dict(e.fields)
        t.add_row(
            e.name,
            f"{f['memory_gb']:g} {e.memory_unit}",
            _peak(f),
            f"{f['board_power_w']:g} ({f['idle_power_w']:g})",
            str(f.get("gpus_per_node", 8)),
            "-" if e.price is None else f"{e.price:.2f}",
            str(f.get("source") or e.origin),
        )
    return t


def _prices_table(user: UserCatalog, rows: list[PriceRow]) -> Table:
    t = Table(title=f"prices in {user.file} (USD per GPU-hour)", title_justify="left")
    for col in ("gpu", "cloud", "region", "zone", "instance type", "GPUs", "on demand", "spot"):
        t.add_column(col, justify="right" if col in ("GPUs", "on demand", "spot") else "left")
    for r in rows:
        t.add_row(
            r.gpu,
            r.cloud or "-",
            r.region,
            r.zone or "-",
            r.instance_type or "-",
            "-" if r.gpus_per_instance is None else f"{r.gpus_per_instance:g}",
            "-" if r.on_demand_usd_per_gpu_hour is None else f"{r.on_demand_usd_per_gpu_hour:.4f}",
            "-" if r.spot_usd_per_gpu_hour is None else f"{r.spot_usd_per_gpu_hour:.4f}",
        )
    return t


@gpus_app.callback(invoke_without_command=True)
@guarded
def gpus_cmd(
    ctx: typer.Context,
    catalog: Path | None = typer.Option(
        None, "--catalog", metavar="FILE", help="A user catalog (YAML or JSON) to list as well."
    ),
    only: str | None = typer.Option(
        None, "--only", metavar="GPU", help="Only this GPU (also the first argument: gpus H100)."
    ),
    cloud: str | None = typer.Option(
        None, "--cloud", help="Only the user catalog's prices on this cloud (as sky show-gpus)."
    ),
    region: str | None = typer.Option(
        None, "--region", help="Only the user catalog's prices in this cloud region."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the catalog as JSON."),
) -> None:
    """List the GPU catalog: the GPUs an instance may name in gpu_types (H100-SXM: {}),
    their figures, an example on-demand price and their sources. ``trainplan gpus H100
    --cloud aws --catalog FILE`` shows one GPU and its imported prices on one cloud, as
    ``sky show-gpus H100 --cloud aws`` does."""
    if ctx.invoked_subcommand is not None:
        return
    from planner.instance.usercatalog import builtin_entries, read_user_catalog

    user = read_user_catalog(catalog) if catalog is not None else None
    builtin = builtin_entries()
    names = list(ctx.meta.get("gpus") or []) + ([only] if only else [])
    if names:
        builtin, user = _only(names, builtin, user)
    mine = [] if user is None else list(user.entries.values())
    rows = (
        []
        if user is None
        else [
            r
            for r in user.prices
            if (cloud is None or (r.cloud or "").lower() == cloud.lower())
            and (region is None or r.region == region)
        ]
    )
    if as_json:
        doc = {
            "builtin": [_entry_dict(e) for e in builtin],
            "user": None
            if user is None
            else {
                "file": user.file,
                "gpus": [_entry_dict(e) for e in mine],
                "prices": [r.model_dump() for r in rows],
            },
        }
        typer.echo(json.dumps(doc, indent=2, allow_nan=False))
        return
    if user is not None:
        if mine:
            results.print(_table(mine, f"GPUs in {user.file}"))
        if rows:
            results.print(_prices_table(user, rows))
        elif cloud is not None or region is not None:
            note(
                f"no price rows in {user.file} for "
                + " ".join(x for x in (*names, cloud, region) if x)
            )
    elif cloud is not None or region is not None:
        note(
            "--cloud and --region filter a user catalog's prices: give --catalog FILE "
            "(trainplan gpus import-skypilot makes one from SkyPilot's vms.csv)"
        )
    if builtin:
        results.print(
            _table(
                builtin, "built-in GPU catalog (planner/data/gpus.yaml; dense peak, no sparsity)"
            )
        )
    note(
        "name one in an instance as `gpu_types: {H100-SXM: {}}` (any figure may be given to "
        "override the catalog's); example prices are list prices with their date in the source"
    )


def _only(
    names: list[str], builtin: list[CatalogEntry], user: UserCatalog | None
) -> tuple[list[CatalogEntry], UserCatalog | None]:
    """The entries the names match (the user catalog's by name, the built-in one's as an
    instance names them: aliases and partial names resolve); an unknown name exits 2 with
    the closest names."""
    import dataclasses

    from planner.instance.catalog import CatalogError, resolve_name

    keep_builtin: set[str] = set()
    keep_user: set[str] = set()
    for name in names:
        mine = user.find(name) if user is not None else None
        if mine is not None:
            keep_user.add(mine.name)
            continue
        try:
            keep_builtin.add(resolve_name(name))
        except CatalogError as e:
            fail("gpus: " + "; ".join(fe.message for fe in e.errors))
    if user is not None:
        user = dataclasses.replace(
            user,
            entries={k: v for k, v in user.entries.items() if k in keep_user},
            prices=tuple(
                r
                for r in user.prices
                if any(r.gpu.lower() == k.lower() for k in keep_user | keep_builtin)
            ),
        )
    return [e for e in builtin if e.name in keep_builtin], user


@gpus_app.command("import-skypilot")
@guarded
def import_skypilot(
    vms_csv: Path = typer.Argument(..., metavar="VMS_CSV", help="A SkyPilot catalog vms.csv."),
    output: Path = typer.Option(..., "-o", "--output", help="The user catalog to write (YAML)."),
    cloud: str | None = typer.Option(
        None, "--cloud", help="The cloud of the catalog (default: the CSV's folder name)."
    ),
    gpu: list[str] = typer.Option([], "--gpu", help="Keep only these GPUs (repeatable)."),
    region: list[str] = typer.Option([], "--region", help="Keep only these regions."),
    all_zones: bool = typer.Option(
        False,
        "--all-zones",
        help="Keep Local Zones and Wavelength zones too (default: standard zones only).",
    ),
) -> None:
    """Import a SkyPilot price catalog (vms.csv) into a user catalog: one price row per
    accelerator, region and availability zone (standard zones only unless --all-zones), USD
    per GPU-hour on demand and spot. A region of an instance with this catalog as its
    gpu_catalog, mapped to a cloud region (cloud, cloud_region), takes its offers from it."""
    import yaml

    from planner.instance.catalog import CatalogError, resolve_name
    from planner.instance.skypilot_catalog import import_vms_csv
    from planner.instance.usercatalog import catalog_document

    name = cloud or vms_csv.resolve().parent.name
    if not name:
        fail("--cloud: give the cloud the catalog belongs to (aws, gcp, azure, ...)")
    output_path(output, "-o")
    keep: set[str] | None = None
    if gpu:
        keep = set()
        for g in gpu:
            try:
                keep.add(resolve_name(g))
            except CatalogError:
                keep.add(g)
    rows, unknown = import_vms_csv(vms_csv, name, keep, set(region) or None, all_zones)
    if not rows:
        fail(f"{vms_csv}: no priced accelerator rows matched", 2)
    doc = catalog_document(rows, note=f"imported from SkyPilot's {vms_csv.name} ({name})")
    # the comment names the file as text on one line; the rest is the serializer's
    shown = " ".join(output.name.split()) if output.name.isprintable() else "FILE"
    header = f"# A trainplan user catalog; list it with: trainplan gpus --catalog {shown}\n"
    write_output(output, header + yaml.safe_dump(doc, sort_keys=False), "-o")
    result(
        f"wrote {output}: {len(rows)} price rows, "
        f"{len({r.gpu for r in rows})} GPUs, {len({r.region for r in rows})} regions, "
        f"{len({(r.region, r.zone) for r in rows})} zones"
        + ("" if all_zones else " (standard zones only; --all-zones for Local Zones)"),
    )
    if unknown:
        note(
            "not in the built-in catalog (add their figures under 'gpus:' to use them): "
            + ", ".join(unknown)
        )
