"""Export a grid store to Parquet or CSV (by the output's extension)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from planner.interfaces.grid.store import Store

FORMATS = (".parquet", ".csv")


def read_store(store: str | Path, with_plan: bool = True) -> pd.DataFrame:
    """Every row of a store, ``params`` expanded into ``param.<axis>`` columns."""
    with Store(store, readonly=True) as s:
        return s.frame(with_plan=with_plan)


def export(store: str | Path, out: str | Path, with_plan: bool | None = None) -> Path:
    """Write the store's rows to ``out`` (``.parquet`` or ``.csv``). The plan JSON is kept in
    Parquet and left out of CSV unless ``with_plan``. Parameter columns holding mixed types
    (numbers and labels) are written as text, which Parquet requires."""
    o = Path(out)
    suffix = o.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"{o}: expected a .parquet or .csv file name")
    keep_plan = (suffix == ".parquet") if with_plan is None else with_plan
    df = read_store(store, with_plan=keep_plan)
    for c in df.columns:
        if df[c].dtype == object:
            kinds = {type(v) for v in df[c] if v is not None and not pd.isna(v)}
            if len(kinds) > 1:
                df[c] = df[c].map(lambda v: None if v is None or pd.isna(v) else str(v))
    from planner.outfiles import check_output, replacing

    check_output(o)  # no link written through; the folder made
    with replacing(o) as tmp:
        if suffix == ".parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False)
    return o
