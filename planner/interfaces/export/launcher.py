"""The plan's launcher: copied by ``trainplan export`` into its folder as ``launch.py`` (run by
``launch.sh``), it starts each run of the plan when its planned hour has come *and* the runs
it depends on have succeeded, and follows them to the end.

Standard library only (Python 3.8+), so it runs wherever SkyPilot or kubectl does. It reads
``launch.json`` beside it (written by the export through ``json``)::

    {"format": "trainplan-launch/1", "target": "skypilot" | "kubernetes",
     "units": [{"job": "tp-1a2b3c-pretrain", "phase": "pretrain", "file": "02-pretrain.yaml",
                "start": "2026-03-02T06:00:00+00:00", "end": "...", "after": ["tp-..."],
                "mode": "managed" | "cluster" | "kubernetes", "context": null}, ...]}

A *unit* is one run of consecutive planned hours of a phase on one configuration; ``after``
lists the units that must have succeeded first (the phase's previous run, else the last run
of each predecessor phase). How a unit starts and how its state is read:

- ``managed``: ``sky jobs launch -y -d -n JOB FILE`` (a managed job: SkyPilot recovers it
  from preemptions and failures); states from ``sky jobs queue -o json`` (the newest record
  of the job's name; SUCCEEDED, or FAILED*/CANCELLED, else still going);
- ``cluster``: ``sky launch -y --down -c JOB FILE`` in the foreground of a child process
  (the cluster goes when the job ends); its exit status is the job's;
- ``kubernetes``: ``kubectl apply -f FILE`` (``--context`` when the region names one); states
  from ``kubectl get job JOB -o json`` (``status.succeeded`` reaching ``spec.completions``,
  or a ``Failed`` condition).

Nothing is ever stopped: a paused phase's run ends by itself (the job is told its run's end
in ``TRAINPLAN_RUN_END`` and checkpoints before it); the next run resumes from the
checkpoint. Units already known to the target when the launcher starts (a second start after
a crash) are followed, not launched again. A unit started more than
:data:`LATE_S` seconds after its planned start is announced as late, with how late.

Environment: ``DRY_RUN=1`` prints the commands in the order they would run (each unit
assumed to end at its planned end) and runs nothing; ``NO_WAIT=1`` ignores the planned
hours (dependencies still hold); ``TRAINPLAN_POLL_S`` is the seconds between looks at the
jobs (default 60); ``SKY`` and ``KUBECTL`` name the programs (default ``sky``, ``kubectl``).

Exit status: 0 when every unit succeeded; 1 when one failed (its dependents are not
started; the others run on); 2 for a bad ``launch.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from typing import Any

FORMAT = "trainplan-launch/1"
#: Seconds after its planned start from which a unit's start is announced as late.
LATE_S = 300.0
#: Managed-job states that end a job without success.
FAILED_STATES = (
    "FAILED",
    "FAILED_SETUP",
    "FAILED_PRECHECKS",
    "FAILED_NO_RESOURCE",
    "FAILED_CONTROLLER",
    "CANCELLED",
)


class ManifestError(ValueError):
    """launch.json cannot be read; the message says what is wrong."""


def _say(text: str) -> None:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"[{stamp}] {text}", flush=True)


def _time(text: Any, where: str) -> float:
    if not isinstance(text, str):
        raise ManifestError(f"{where}: expected an ISO time, got {text!r}")
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise ManifestError(f"{where}: expected an ISO time, got {text!r}") from None
    if t.tzinfo is None:
        raise ManifestError(f"{where}: expected a time with a UTC offset, got {text!r}")
    return t.timestamp()


def load(path: str) -> dict[str, Any]:
    """The manifest, checked: every unit has a job, a file, a mode, times and known
    dependencies, and the units' order respects them."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as e:
        raise ManifestError(f"{path}: cannot read ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ManifestError(f"{path}: expected a {FORMAT} document")
    units = doc.get("units")
    if not isinstance(units, list):
        raise ManifestError(f"{path}: units: expected a list")
    prepare = doc.setdefault("prepare", [])
    if not isinstance(prepare, list) or any(
        not isinstance(p, dict)
        or not isinstance(p.get("file"), str)
        or os.path.basename(p["file"]) != p["file"]
        for p in prepare
    ):
        raise ManifestError(f"{path}: prepare: expected a list of {{file, context}} objects")
    seen = set()
    for i, u in enumerate(units):
        where = f"{path}: units[{i}]"
        if not isinstance(u, dict):
            raise ManifestError(f"{where}: expected an object")
        for key in ("job", "phase", "file", "mode"):
            if not isinstance(u.get(key), str) or not u[key]:
                raise ManifestError(f"{where}.{key}: expected a non-empty string")
        if u["mode"] not in ("managed", "cluster", "kubernetes"):
            raise ManifestError(f"{where}.mode: expected managed, cluster or kubernetes")
        if os.path.basename(u["file"]) != u["file"]:
            raise ManifestError(f"{where}.file: expected a file name in the launch folder")
        u["_start"] = _time(u.get("start"), f"{where}.start")
        u["_end"] = _time(u.get("end"), f"{where}.end")
        after = u.get("after", [])
        if not isinstance(after, list) or any(a not in seen for a in after):
            raise ManifestError(f"{where}.after: expected jobs listed before it")
        if u["job"] in seen:
            raise ManifestError(f"{where}.job: {u['job']!r} is listed twice")
        seen.add(u["job"])
    return doc


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def _apply(item: dict[str, Any], folder: str) -> list[str]:
    cmd = [os.environ.get("KUBECTL", "kubectl"), "apply", "-f", os.path.join(folder, item["file"])]
    if item.get("context"):
        cmd += ["--context", str(item["context"])]
    return cmd


def _command(u: dict[str, Any], folder: str) -> list[str]:
    path = os.path.join(folder, u["file"])
    if u["mode"] == "managed":
        return [os.environ.get("SKY", "sky"), "jobs", "launch", "-y", "-d", "-n", u["job"], path]
    if u["mode"] == "cluster":
        return [os.environ.get("SKY", "sky"), "launch", "-y", "--down", "-c", u["job"], path]
    return _apply(u, folder)


def parse_queue_json(text: str) -> dict[str, str]:
    """Job name -> state of its newest record, from ``sky jobs queue -o json``."""
    records = json.loads(text)
    newest: dict[str, Any] = {}
    for r in records if isinstance(records, list) else []:
        if not isinstance(r, dict) or not isinstance(r.get("job_name"), str):
            continue
        key = r["job_name"]
        jid = r.get("job_id") if isinstance(r.get("job_id"), int) else -1
        if key not in newest or jid >= newest[key][0]:
            newest[key] = (jid, str(r.get("status", "")).split(".")[-1].upper())
    return {k: v[1] for k, v in newest.items()}


def parse_queue_table(text: str) -> dict[str, str]:
    """Job name -> state, from ``sky jobs queue``'s table (older SkyPilot without ``-o``):
    the header names the columns ``NAME`` and ``STATUS``; the newest job is listed first."""
    out: dict[str, str] = {}
    header: list[str] | None = None
    for line in text.splitlines():
        cells = [c for c in line.strip().split("  ") if c.strip()]
        cells = [c.strip() for c in cells]
        if header is None:
            if "NAME" in cells and "STATUS" in cells:
                header = cells
            continue
        if len(cells) != len(header):
            continue
        row = {h: cells[i] for i, h in enumerate(header)}
        out.setdefault(row["NAME"], row["STATUS"].split()[0].upper())
    return out


class Launcher:
    """Starts and follows the units of one manifest."""

    def __init__(self, doc: dict[str, Any], folder: str) -> None:
        self.prepare: list[dict[str, Any]] = doc["prepare"]
        self.units: list[dict[str, Any]] = doc["units"]
        self.folder = folder
        self.state: dict[str, str] = {u["job"]: "WAITING" for u in self.units}
        self.children: dict[str, subprocess.Popen] = {}
        self.poll_s = float(os.environ.get("TRAINPLAN_POLL_S", "60") or 60)
        self.no_wait = os.environ.get("NO_WAIT", "0") == "1"

    # -- reading states
    def _managed_states(self) -> dict[str, str]:
        sky = os.environ.get("SKY", "sky")
        res = _run([sky, "jobs", "queue", "-o", "json"])
        if res.returncode == 0:
            try:
                return parse_queue_json(res.stdout)
            except ValueError:
                pass
        res = _run([sky, "jobs", "queue"])
        if res.returncode != 0:
            _say(f"warning: sky jobs queue failed ({res.stderr.strip()[:200]}); will retry")
            return {}
        return parse_queue_table(res.stdout)

    def _kube_state(self, u: dict[str, Any]) -> str | None:
        cmd = [os.environ.get("KUBECTL", "kubectl"), "get", "job", u["job"], "-o", "json"]
        if u.get("context"):
            cmd += ["--context", str(u["context"])]
        res = _run(cmd)
        if res.returncode != 0:
            return None
        try:
            job = json.loads(res.stdout)
        except ValueError:
            return None
        status = job.get("status", {}) if isinstance(job, dict) else {}
        for c in status.get("conditions", []) or []:
            if c.get("type") == "Failed" and c.get("status") == "True":
                return "FAILED"
            if c.get("type") == "Complete" and c.get("status") == "True":
                return "SUCCEEDED"
        want = job.get("spec", {}).get("completions", 1)
        if isinstance(status.get("succeeded"), int) and status["succeeded"] >= (want or 1):
            return "SUCCEEDED"
        return "RUNNING"

    def refresh(self, first: bool = False) -> None:
        """Bring the state of every launched unit (every unit, the first time) up to date."""
        look = [u for u in self.units if first or self.state[u["job"]] == "LAUNCHED"]
        managed = [u for u in look if u["mode"] == "managed"]
        states = self._managed_states() if managed else {}
        for u in look:
            job = u["job"]
            new: str | None = None
            if u["mode"] == "managed":
                new = states.get(job)
            elif u["mode"] == "kubernetes":
                new = self._kube_state(u)
            else:
                child = self.children.get(job)
                if child is not None and child.poll() is not None:
                    new = "SUCCEEDED" if child.returncode == 0 else "FAILED"
            if new is None:
                continue
            if new == "SUCCEEDED":
                self._set(job, "SUCCEEDED", first)
            elif new in FAILED_STATES:
                self._set(job, f"FAILED ({new})" if new != "FAILED" else "FAILED", first)
            elif first:
                self._set(job, "LAUNCHED", first)

    def _set(self, job: str, state: str, first: bool) -> None:
        if self.state[job] == state:
            return
        if first and state != "WAITING":
            _say(f"{job}: already known to the target ({state}); following it")
        elif state == "SUCCEEDED":
            _say(f"{job}: succeeded")
        elif state.startswith("FAILED"):
            _say(f"{job}: {state.lower()}; the runs that depend on it will not start")
        self.state[job] = "FAILED" if state.startswith("FAILED") else state

    # -- starting
    def _blocked_jobs(self) -> set[str]:
        """Units that can never start: failed, or depending on one that failed."""
        out: set[str] = set()
        for u in self.units:
            if self.state[u["job"]] == "FAILED" or any(a in out for a in u["after"]):
                out.add(u["job"])
        return out

    def ready(self, u: dict[str, Any], now: float) -> bool:
        """Whether job ``u`` starts now: still waiting, every job it comes after succeeded, and its
        planned hour has come (at once with ``no_wait``)."""
        if self.state[u["job"]] != "WAITING":
            return False
        if any(self.state[a] != "SUCCEEDED" for a in u["after"]):
            return False
        return self.no_wait or now >= u["_start"]

    def start(self, u: dict[str, Any], now: float) -> None:
        """Launch job ``u`` (saying so when its planned start passed long ago): LAUNCHED, or FAILED
        when the launch command fails."""
        late = now - u["_start"]
        if late > LATE_S:
            _say(
                f"{u['job']} ({u['phase']}): its planned start {_iso(u['_start'])} passed "
                f"{late / 3600.0:.1f} h ago; starting it now"
            )
        cmd = _command(u, self.folder)
        _say("run: " + " ".join(cmd))
        if u["mode"] == "cluster":
            self.children[u["job"]] = subprocess.Popen(cmd)
            self.state[u["job"]] = "LAUNCHED"
            return
        res = subprocess.run(cmd, check=False)
        if res.returncode != 0:
            _say(f"{u['job']}: the launch command failed with status {res.returncode}")
            self.state[u["job"]] = "FAILED"
            return
        self.state[u["job"]] = "LAUNCHED"

    def run(self) -> int:
        """Apply the preparation manifests, then start every job when it is ready and poll until all
        have ended; 1 when a preparation or a job failed, else 0."""
        for item in self.prepare:
            cmd = _apply(item, self.folder)
            _say("run: " + " ".join(cmd))
            if subprocess.run(cmd, check=False).returncode != 0:
                _say(f"{item['file']}: could not be applied; nothing is started")
                return 1
        self.refresh(first=True)
        now = time.time()
        passed = [
            u
            for u in self.units
            if self.state[u["job"]] == "WAITING" and u["_start"] < now - LATE_S
        ]
        for u in passed:
            when = _iso(u["_start"])
            _say(f"note: {u['job']} ({u['phase']}) was planned to start at {when}, in the past")
        while True:
            now = time.time()
            for u in self.units:
                if self.ready(u, now):
                    self.start(u, now)
            if all(s in ("SUCCEEDED", "FAILED") for s in self.state.values()):
                break
            blocked = self._blocked_jobs()
            live = [j for j, s in self.state.items() if s in ("LAUNCHED",)]
            waiting = [
                u
                for u in self.units
                if self.state[u["job"]] == "WAITING" and u["job"] not in blocked
            ]
            if not live and not waiting:
                break
            nxt = [u["_start"] - now for u in waiting if not self.no_wait and u["_start"] > now]
            time.sleep(max(0.0, min([self.poll_s, *nxt]) if nxt else self.poll_s))
            self.refresh()
        failed = [j for j, s in self.state.items() if s != "SUCCEEDED"]
        if failed:
            _say("not succeeded: " + ", ".join(failed))
            return 1
        _say("every run of the plan succeeded")
        return 0


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat()


def dry_run(doc: dict[str, Any], folder: str) -> None:
    """The commands in the order they would run, each unit assumed to take its planned time."""
    for item in doc["prepare"]:
        print(" ".join(_apply(item, ".")))
    end: dict[str, float] = {}
    rows = []
    for i, u in enumerate(doc["units"]):
        begin = max([u["_start"], *(end[a] for a in u["after"])])
        end[u["job"]] = begin + (u["_end"] - u["_start"])
        rows.append((begin, i, u))
    for begin, _i, u in sorted(rows, key=lambda r: (r[0], r[1])):
        after = f" after {', '.join(u['after'])}" if u["after"] else ""
        print(f"# at {_iso(begin)}{after}")
        print(" ".join(_command(u, ".")))


def main(argv: list[str] | None = None) -> int:
    """``launch.sh``'s entry: read the manifest (default ``launch.json`` beside this file; exit 2
    when it is invalid), list the launches with ``DRY_RUN=1``, else run them."""
    args = sys.argv[1:] if argv is None else argv
    folder = os.path.dirname(os.path.abspath(__file__))
    path = args[0] if args else os.path.join(folder, "launch.json")
    try:
        doc = load(path)
    except ManifestError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    folder = os.path.dirname(os.path.abspath(path))
    if os.environ.get("DRY_RUN", "0") == "1":
        dry_run(doc, folder)
        return 0
    return Launcher(doc, folder).run()


if __name__ == "__main__":
    sys.exit(main())
