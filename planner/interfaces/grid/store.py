"""The grid store: one SQLite file, one row per scenario, written as each result arrives.

Durability. The store is opened in WAL mode, autocommit: each result is one transaction
(the ``INSERT ... ON CONFLICT`` and the run's counter), committed before the next result is
read. A process killed at any moment (``kill -9``) leaves every committed row intact and no
partial row: a commit is in the WAL file once ``COMMIT`` returns, and SQLite replays the WAL
on the next open. ``synchronous=NORMAL`` (the WAL default) skips the fsync per commit, so a
power cut or kernel crash, unlike a killed process, may lose the last results; pass
``durable=True`` (``synchronous=FULL``) to fsync every result. Readers in other connections
see committed rows while the grid runs (WAL lets readers and the single writer proceed
together). Only the parent process writes; workers send outcomes to it.

No duplicates, no lost results. ``id`` is the primary key. A result for a scenario already
stored overwrites the row only when the stored status is a retryable failure (``failed``,
``timeout``), so a finished result is never replaced, never duplicated and keeps its
timestamps. ``attempts`` counts the results received for the row.

Tables: ``scenarios`` (the results), ``runs`` (one row per invocation: executor, workers,
options, how many scenarios it had to solve, the process and host that ran it, and its
state: ``running``, ``finished``, ``interrupted``) and ``meta`` (the grid name and the
fingerprint of the base instance the IDs refer to).

Stale runs. A run killed with ``kill -9`` (or a machine that went down) never marks its row
finished. Whenever the store is opened for writing (a new run, a resumed one), every row
still ``running`` whose process is gone is marked ``interrupted``: it ran on this host (or
the row names no host) and its pid no longer exists, or it is now a process that started
after the run did (the pid was reused). A run on another host is left as it is.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.interfaces.grid.task import RETRYABLE, now
from planner.model.plan import COST_KEYS

if TYPE_CHECKING:
    import pandas as pd  # loaded where a frame is built (the CLI starts at once)

SCHEMA_VERSION = "1"

#: Result columns (besides ``id``, ``params``, ``updates``, ``run``, ``attempts``).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("status", "TEXT NOT NULL"),
    ("termination", "TEXT"),
    ("error", "TEXT"),
    ("solver", "TEXT"),
    ("objective", "REAL"),
    ("bound", "REAL"),
    ("gap", "REAL"),
    ("runtime_s", "REAL"),
    ("solve_s", "REAL"),
    ("cpu_s", "REAL"),
    ("build_s", "REAL"),
    *((f"cost_{k}", "REAL") for k in (*COST_KEYS, "total")),
    ("energy_kwh", "REAL"),
    ("emissions_t", "REAL"),
    ("makespan_h", "INTEGER"),
    ("plan", "TEXT"),
    ("started_at", "TEXT"),
    ("finished_at", "TEXT"),
    ("worker_pid", "INTEGER"),
    ("host", "TEXT"),
)
RESULT_NAMES = tuple(c for c, _ in COLUMNS)
COST_COLUMNS = tuple(f"cost_{k}" for k in (*COST_KEYS, "total"))


class StoreError(Exception):
    """The store cannot be used for this grid (another base instance, not a grid store)."""


class Store:
    """A grid store at ``path`` (created if missing). Use as a context manager."""

    def __init__(
        self,
        path: str | Path,
        timeout_s: float = 30.0,
        readonly: bool = False,
        durable: bool = False,
    ) -> None:
        """Open (and, unless ``readonly``, create) the store. A read-only store must exist
        and be a grid store; it can be read while a grid writes to it."""
        self.path = Path(path)
        self.run_id: int | None = None
        try:
            if readonly:
                if not self.path.is_file():
                    raise StoreError(f"{self.path}: no such store")
                self.db = sqlite3.connect(
                    f"{self.path.resolve().as_uri()}?mode=ro",
                    uri=True,
                    timeout=timeout_s,
                    isolation_level=None,
                )
                names = {
                    r[0]
                    for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                }
                if not {"meta", "runs", "scenarios"} <= names:
                    self.db.close()
                    raise StoreError(f"{self.path}: not a grid store (no scenarios table)")
                return
            if self.path.is_symlink():  # never written through (planner.outfiles)
                raise StoreError(
                    f"{self.path}: is a symbolic link; a store is never written through links"
                )
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=timeout_s, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            self._create()
            self.mark_stale_runs()
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: not a grid store ({e})") from None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the SQLite connection (the store is consistent after every stored result)."""
        self.db.close()

    def _create(self) -> None:
        cols = ",\n  ".join(f"{c} {t}" for c, t in COLUMNS)
        self.db.executescript(f"""
            BEGIN;
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS runs (
              run INTEGER PRIMARY KEY AUTOINCREMENT,
              started_at TEXT NOT NULL, finished_at TEXT, pid INTEGER, executor TEXT,
              workers INTEGER, options TEXT, scenarios INTEGER, pending INTEGER,
              completed INTEGER DEFAULT 0, state TEXT
            );
            CREATE TABLE IF NOT EXISTS scenarios (
              id TEXT PRIMARY KEY,
              params TEXT NOT NULL,
              updates TEXT NOT NULL,
              run INTEGER,
              attempts INTEGER NOT NULL DEFAULT 1,
              {cols}
            );
            INSERT OR IGNORE INTO meta VALUES ('schema', '{SCHEMA_VERSION}');
            COMMIT;
        """)
        cols_now = {r[1] for r in self.db.execute("PRAGMA table_info(runs)")}
        if "host" not in cols_now:  # stores written before runs recorded their host
            self.db.execute("ALTER TABLE runs ADD COLUMN host TEXT")

    # ------------------------------------------------------------------ meta and runs

    def meta(self) -> dict[str, str]:
        """The store's metadata as key -> value: schema version, grid name, the base instance's
        fingerprint and source (a resume checks it is the same grid)."""
        return dict(self.db.execute("SELECT key, value FROM meta").fetchall())

    def bind(self, grid_name: str, base_fingerprint: str, base_source: str) -> None:
        """Record which base instance the IDs refer to; refuse a store written for another.

        Scenario IDs hash the change made to the base, so results are only comparable over
        the same base instance."""
        meta = self.meta()
        old = meta.get("base_fingerprint")
        if old is not None and old != base_fingerprint:
            raise StoreError(
                f"{self.path} holds results for a different base instance "
                f"({meta.get('base_source', '?')}, fingerprint {old[:12]}); this grid's base "
                f"{base_source} has fingerprint {base_fingerprint[:12]}. Write to another "
                "store with -o, or delete this one"
            )
        self.db.execute("BEGIN")
        for k, v in (
            ("grid", grid_name),
            ("base_fingerprint", base_fingerprint),
            ("base_source", base_source),
        ):
            self.db.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (k, v))
        self.db.execute("COMMIT")

    def start_run(
        self, executor: str, workers: int, options: Mapping[str, Any], scenarios: int, pending: int
    ) -> int:
        """Record a run starting (executor, workers, options, scenario counts) and return its id;
        :meth:`finish_run` closes it."""
        cur = self.db.execute(
            "INSERT INTO runs (started_at, pid, host, executor, workers, options, scenarios,"
            " pending, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running')",
            (
                now(),
                os.getpid(),
                socket.gethostname(),
                executor,
                workers,
                json.dumps(dict(options)),
                scenarios,
                pending,
            ),
        )
        self.run_id = int(cur.lastrowid or 0)
        return self.run_id

    def finish_run(self, state: str) -> None:
        """Mark the current run ended with ``state`` (finished or interrupted); nothing when
        no run was started."""
        if self.run_id is None:
            return
        self.db.execute(
            "UPDATE runs SET finished_at = ?, state = ? WHERE run = ?", (now(), state, self.run_id)
        )

    def mark_stale_runs(self) -> list[int]:
        """Mark the runs still ``running`` whose process is gone as ``interrupted`` (see the
        module docstring); returns their numbers."""
        host = socket.gethostname()
        rows = self.db.execute(
            "SELECT run, pid, host, started_at FROM runs WHERE state = 'running'"
        ).fetchall()
        stale = [
            int(run)
            for run, pid, run_host, started in rows
            if run != self.run_id and (run_host in (None, host)) and _gone(pid, started)
        ]
        for run in stale:
            self.db.execute(
                "UPDATE runs SET state = 'interrupted' WHERE run = ? AND state = 'running'",
                (run,),
            )
        return stale

    def runs(self) -> list[dict[str, Any]]:
        """Every run recorded in the store, oldest first, as column -> value."""
        cur = self.db.execute("SELECT * FROM runs ORDER BY run")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def last_options(self) -> dict[str, Any] | None:
        """The solve options of the latest run, None before any run: a resumed grid checks it solves
        alike."""
        row = self.db.execute("SELECT options FROM runs ORDER BY run DESC LIMIT 1").fetchone()
        return None if row is None else dict(json.loads(row[0]))

    # ------------------------------------------------------------------ results

    def done_ids(self, retry_failed: bool = False) -> set[str]:
        """IDs with a stored result that is not redone (with ``retry_failed``, failures are
        redone)."""
        if retry_failed:
            marks = ",".join("?" * len(RETRYABLE))
            rows = self.db.execute(
                f"SELECT id FROM scenarios WHERE status NOT IN ({marks})", RETRYABLE
            ).fetchall()
        else:
            rows = self.db.execute("SELECT id FROM scenarios").fetchall()
        return {r[0] for r in rows}

    def put(
        self, outcome: Mapping[str, Any], params: Mapping[str, Any], updates: Mapping[str, Any]
    ) -> bool:
        """Persist one outcome (one statement, one transaction). Returns whether the row was
        written: False when a non-failure result is already stored for this ID."""
        from planner.interfaces.grid.spec import canonical_json

        values = [outcome.get(c) for c in RESULT_NAMES]
        names = ", ".join(RESULT_NAMES)
        marks = ", ".join("?" * (len(RESULT_NAMES) + 4))
        sets = ", ".join(f"{c} = excluded.{c}" for c in RESULT_NAMES)
        retry = ", ".join(f"'{s}'" for s in RETRYABLE)
        self.db.execute("BEGIN IMMEDIATE")
        try:
            cur = self.db.execute(
                f"INSERT INTO scenarios (id, params, updates, run, {names}) VALUES ({marks}) "
                f"ON CONFLICT(id) DO UPDATE SET {sets}, run = excluded.run, "
                f"attempts = scenarios.attempts + 1 WHERE scenarios.status IN ({retry})",
                [
                    outcome["id"],
                    canonical_json(dict(params)),
                    canonical_json(dict(updates)),
                    self.run_id,
                    *values,
                ],
            )
            written = cur.rowcount > 0
            if self.run_id is not None and written:
                self.db.execute(
                    "UPDATE runs SET completed = completed + 1 WHERE run = ?", (self.run_id,)
                )
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise
        return written

    def frame(self, ids: Iterable[str] | None = None, with_plan: bool = True) -> pd.DataFrame:
        """Rows as a DataFrame (all, or those of ``ids`` in that order), ``params`` expanded
        into ``param.<axis>`` columns."""
        cols = (
            "*"
            if with_plan
            else ", ".join(
                c
                for c in ("id", "params", "updates", "run", "attempts", *RESULT_NAMES)
                if c != "plan"
            )
        )
        import pandas as pd

        df = pd.read_sql_query(f"SELECT {cols} FROM scenarios", self.db)
        return tidy(df, None if ids is None else list(ids))


def _gone(pid: int | None, started_at: str | None) -> bool:
    """The process ``pid`` of a run started at ``started_at`` (UTC ISO text) no longer runs:
    no such pid, or the pid now belongs to a process that started after the run did."""
    if pid is None:
        return True
    if pid == os.getpid():
        return False  # this process: its own run, still going
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, ValueError):
        return False  # exists (another user's), or not a pid this system knows: leave it
    began = _process_start(int(pid))
    if began is None or started_at is None:
        return False
    try:
        run_start = datetime.fromisoformat(started_at).timestamp()
    except ValueError:
        return False
    return began > run_start + 1.0


def _process_start(pid: int) -> float | None:
    """When process ``pid`` started (Unix time), from /proc (Linux); None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
        with open("/proc/stat", encoding="ascii") as f:
            btime = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, StopIteration, ValueError):
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        ticks = int(fields[19])  # field 22 of stat: start time in clock ticks after boot
    except (IndexError, ValueError):
        return None
    return btime + ticks / os.sysconf("SC_CLK_TCK")


def tidy(df: pd.DataFrame, ids: list[str] | None) -> pd.DataFrame:
    """Expand ``params`` JSON into ``param.<axis>`` columns; order rows by ``ids``."""
    import pandas as pd

    if ids is not None:
        df = df.set_index("id").reindex([i for i in ids if i in set(df["id"])]).reset_index()
    params = [json.loads(p) for p in df["params"]] if len(df) else []
    axes: list[str] = []
    for p in params:
        for k in p:
            if k not in axes:
                axes.append(k)
    front = pd.DataFrame(
        {f"param.{a}": [_cell(p.get(a)) for p in params] for a in axes}, index=df.index
    )
    out = pd.concat([df[["id"]], front, df.drop(columns=["id"])], axis=1)
    return out.reset_index(drop=True)


def _cell(v: Any) -> Any:
    """Parameter values as cells: scalars as they are, mappings and lists as JSON text."""
    if isinstance(v, dict | list):
        return json.dumps(v, sort_keys=True)
    return v
