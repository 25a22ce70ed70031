"""``trainplan init -o FILE``: write a commented starter instance from a few flags, and
``trainplan schema``: print the JSON Schema of instance files (for editors)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import typer

from planner.interfaces.cli.app import command, fail, note, output_path, result, write_output


@command("schema")
def schema_cmd(
    output: Path | None = typer.Option(None, "-o", "--output", help="write it here"),
) -> None:
    """Print the JSON Schema of instance files, with every field's meaning, unit and an
    example (save it as trainplan.schema.json for an editor's YAML support)."""
    from planner.instance.docs import json_schema

    if output is not None:
        output_path(output, "-o")
    text = json.dumps(json_schema(), indent=2)
    if output is None:
        typer.echo(text)
        return
    write_output(output, text + "\n", "-o")
    result(f"wrote {output}")


@command("init")
def init_cmd(
    output: Path = typer.Option(..., "-o", "--output", help="the instance file to write"),
    model: str = typer.Option(
        ..., help="a model preset (llama-2-13b, ...) or a parameter count (13B)"
    ),
    gpu: str = typer.Option(
        "H100-SXM:64", help="training GPU (catalog name) and the most to use: NAME:N"
    ),
    region: list[str] = typer.Option(
        [],
        help="NAME=MARKET (shipped 2023 prices: DE-LU, FR, US-TEX-ERCO, ...) or "
        "NAME=TIME/ZONE, optionally @cloud/cloud-region; repeatable",
    ),
    deadline: str = typer.Option("3d", help="3d, 72h or an ISO time"),
    start: str | None = typer.Option(
        None, help="horizon start, ISO (default: next Monday 00:00 UTC)"
    ),
    tokens: float = typer.Option(2e9, help="tokens to train on"),
    pretrain: bool = typer.Option(False, "--pretrain", help="a pre-training, not a fine-tune"),
    eval_gpu: str | None = typer.Option(
        None, help="add an evaluation phase on this GPU (catalog name)"
    ),
    data_gb: float = typer.Option(0.0, help="size of the training data (GB)"),
    data_region: str | None = typer.Option(None, help="the region the data lives in"),
    catalog: Path | None = typer.Option(
        None,
        help="a user catalog (trainplan gpus import-skypilot): regions given @cloud/region "
        "take their on-demand and spot offers from its prices",
    ),
    prices_dir: Path | None = typer.Option(
        None, help="folder of the price extracts (default: instances/data/prices)"
    ),
    force: bool = typer.Option(False, "--force", help="overwrite an existing file"),
) -> None:
    """Write a commented starter instance (GPUs by catalog name, regions on 2023 prices as a
    price profile) that `trainplan check` accepts and `trainplan solve` solves."""
    from planner.interfaces.starter import (
        Starter,
        StarterError,
        catalog_gpu,
        check_starter,
        default_prices_dir,
        next_monday,
        parse_duration,
        parse_region,
        power_notes,
        render,
    )

    if not (math.isfinite(tokens) and tokens > 0):
        fail(f"--tokens: expected a positive number of tokens, got {tokens:g}")
    if not (math.isfinite(data_gb) and data_gb >= 0):
        fail(f"--data-gb: expected a size in GB >= 0, got {data_gb:g}")
    output_path(output, "-o")
    if output.exists() and not force:
        fail(f"-o {output}: exists; pass --force to overwrite it")
    try:
        name, _, count = gpu.partition(":")
        gname = catalog_gpu("--gpu", name)
        if count and not count.isdigit():
            fail(f"--gpu: expected NAME:N with a whole number N, got {gpu!r}")
        max_gpus = int(count) if count else 8
        if max_gpus < 1:
            fail("--gpu: the count must be at least 1")
        if start is not None:
            try:
                t0 = datetime.fromisoformat(start.replace("Z", "+00:00"))
            except ValueError:
                fail(f"--start: expected an ISO time such as 2026-12-07T00:00Z, got {start!r}")
            t0 = t0 if t0.tzinfo is not None else t0.replace(tzinfo=UTC)
        else:
            t0 = next_monday()
        regions = tuple(parse_region(r) for r in (region or ["eu-de=DE-LU"]))
        names = [r.name for r in regions]
        if len(set(names)) != len(names):
            fail(f"--region: names listed twice: {', '.join(names)}")
        if data_region is not None and data_region not in names:
            fail(f"--data-region: {data_region!r} is not one of the regions {', '.join(names)}")
        ev = catalog_gpu("--eval-gpu", eval_gpu) if eval_gpu else None
        s = Starter(
            model=model,
            tokens=tokens,
            gpu=gname,
            max_gpus=max_gpus,
            regions=regions,
            hours=parse_duration(deadline, t0),
            start=t0,
            eval_gpu=ev,
            data_gb=data_gb,
            data_region=data_region,
            prices_dir=prices_dir if prices_dir is not None else default_prices_dir(),
            pretrain=pretrain,
            catalog=catalog,
        )
        text = render(s, output)
        check_starter(text, output)
    except StarterError as e:
        fail(str(e))
    write_output(output, text, "-o")
    result(f"wrote {output}")
    if s.prices_dir is None:
        note("no price extracts found: electricity is a constant placeholder (see the file)")
    for line in power_notes(s):
        note(line)
    note(f"next: trainplan check {output}; trainplan solve {output} -o plan.json")
