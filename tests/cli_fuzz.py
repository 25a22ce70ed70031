"""An independent fuzzer of the command line (issue 26): every command (check, solve, verify,
report, export, solve --from, gpus, gpus import-skypilot, init, schema, grid, grid-export)
run in-process on inputs drawn from its own seeds, in a sandbox, and judged on what a user
or an attacker would see:

- **no exit 4** and no traceback (an input is never an internal error); the statuses are
  0, 1 (infeasible / invalid plan), 2 (bad input) and 3 (no plan in time);
- **no leak**: the planted secrets (a YAML of credentials, a text file, a CSV, the process
  environment) appear in no output and in no file the command writes;
- **no file written outside the folder asked for**: every file of the sandbox outside the
  output's folder (and the victim a planted link leads to) keeps its bytes;
- **no hang**: each case ends within :data:`CASE_DEADLINE_S`.

It shares no code with tests/instance/test_fuzz.py or tests/fuzz_surfaces.py: its own sandbox, its
own mutations, its own judge. ``python tests/cli_fuzz.py N SEED`` runs N cases from SEED and
prints the counts per command and outcome; tests/cli/test_fuzz_cli.py runs a few in the default
suite and many under ``-m fuzz_long``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import random
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
CASE_DEADLINE_S = 120.0
#: Exit statuses an input may end in (planner.interfaces.cli.exits): never 4.
ALLOWED = {0, 1, 2, 3}


class Hang(BaseException):
    """A case ran past its deadline."""


@dataclass
class Sandbox:
    """The files a case may name: ``work`` (the folder commands run in and write to),
    ``inst`` (instances, a grid, a catalog), ``secret`` (what must never be shown or
    written), and the planted secrets."""

    root: Path
    work: Path
    inst: Path
    secret: Path
    victim: Path
    tokens: tuple[str, ...]
    plans: dict[str, dict[str, Any]] = field(default_factory=dict)


def make_sandbox() -> Sandbox:
    """A fresh sandbox with a solved plan of tiny (with its attribution), one of a phase in
    segments, a grid, a catalog, a vms.csv, and links from the working folder to secrets."""
    from builders import two_nights

    root = Path(tempfile.mkdtemp(prefix="trainplan-cli-fuzz-"))
    work, inst, secret = root / "work", root / "inst", root / "secret"
    for d in (work, inst, secret):
        d.mkdir()
    token = secrets.token_hex(8)
    tokens = [f"SECRETKEY_{token}", f"SECRETROW_{token}", f"SECRETVICTIM_{token}"]
    (secret / "creds.yaml").write_text(f"aws_secret_access_key: {tokens[0]}\nregion: {tokens[0]}\n")
    (secret / "rows.csv").write_text(f"time,price\n{tokens[1]},1\n")
    victim = secret / "victim.txt"
    victim.write_text(tokens[2] + "\n")
    shutil.copyfile(DATA / "tiny.yaml", inst / "tiny.yaml")
    (inst / "seg.json").write_text(json.dumps(two_nights()))
    (inst / "grid.yaml").write_text(
        "name: g\nbase: tiny.yaml\naxes:\n  - {path: regions.east.pue, values: [1.1, 1.3]}\n"
    )
    (inst / "cat.yaml").write_text(
        "format: trainplan-catalog/1\ngpus:\n  MyAccel: {memory_gb: 80, memory_unit: GB, "
        "peak_tflops: {bf16: 400}, board_power_w: 500, idle_power_w: 60}\n"
    )
    (inst / "vms.csv").write_text(
        "InstanceType,AcceleratorName,AcceleratorCount,Region,Price,SpotPrice\n"
        "p5.48xlarge,H100,8,us-east-1,98.32,39.3\ng6.xlarge,L4,1,us-west-2,0.8,\n"
    )
    links = {
        "out_link.json": victim,
        "out_link.html": victim,
        "dir_link": secret,
        "plan_link.json": secret / "creds.yaml",
        "dangling.json": secret / "nowhere.json",
    }
    for name, target in links.items():
        (work / name).symlink_to(target)
    sb = Sandbox(root, work, inst, secret, victim, tuple(tokens))
    cwd = os.getcwd()
    os.chdir(work)
    try:
        for name, src in (("tiny", inst / "tiny.yaml"), ("seg", inst / "seg.json")):
            res = _invoke(["solve", str(src), "-o", f"{name}.json", "--time-limit", "20"])
            assert res[0] == 0, res
            sb.plans[name] = json.loads((work / f"{name}.json").read_text())
    finally:
        os.chdir(cwd)
    return sb


def _invoke(args: list[str]) -> tuple[int, str, BaseException | None]:
    """Run the command line in this process: (exit status, stdout + stderr, an exception
    that escaped the command, if any)."""
    from typer.testing import CliRunner

    from planner.interfaces.cli import _register, app

    _register()
    res = CliRunner().invoke(app, args, env={"TRAINPLAN_NO_PROGRESS": "1", "COLUMNS": "150"})
    exc = res.exception
    if isinstance(exc, SystemExit):
        exc = None
    return res.exit_code, res.output, exc


# ----------------------------------------------------------------------------- drawing


HOSTILE: list[Any] = [
    None, True, "", "x", "a\nb: c", "[/]\x1b[31m", "{x}", -1, 0, 0.5, 3, 13, 10**12, 1e308,
    -1e308, 2**63, [], {}, [13] * 200, list(range(-74, 0)), {"k": 1}, "9999-12-31T23:00Z",
    "../secret/creds.yaml", "/etc/passwd",
]  # fmt: skip


def _walk(node: Any, where: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    if isinstance(node, dict):
        items: Any = node.items()
    elif isinstance(node, list):
        items = list(enumerate(node))[:12]  # the first few items of long lists
    else:
        return out
    for k, v in items:
        out.append((*where, k))
        out.extend(_walk(v, (*where, k)))
    return out


def _mutate(doc: Any, rnd: random.Random, n: int) -> list[str]:
    done = []
    for _ in range(n):
        paths = _walk(doc)
        if not paths:
            break
        where = rnd.choice(paths)
        node = doc
        for k in where[:-1]:
            node = node[k]
        op = rnd.choice(["set", "set", "set", "drop"])
        if op == "drop":
            del node[where[-1]]
        else:
            node[where[-1]] = copy.deepcopy(rnd.choice(HOSTILE))
        done.append(f"{op} {where}")
    return done


def _out_file(sb: Sandbox, rnd: random.Random, suffix: str) -> str:
    """An output path: plain, in missing folders, a planted link (to the victim), a link
    that leads nowhere, a folder, inside a file, an impossible name, under the secret; half
    of them plain."""
    if rnd.random() < 0.5:
        return rnd.choice([f"out{suffix}", f"new/out{suffix}"])
    return rnd.choice(
        [
            f"out{suffix}",
            f"new/deeper/out{suffix}",
            f"out_link{suffix}" if suffix in (".json", ".html") else "out_link.json",
            "dangling.json",
            "dir_link",
            ".",
            "tiny.json/inside" + suffix,
            "a\x00b" + suffix,
            "x" * 300 + suffix,
            f"dir_link/written{suffix}",
        ]
    )


#: What a case runs (``replan`` is ``solve --from``, ``import`` is ``gpus import-skypilot``).
COMMANDS = (
    "check", "solve", "verify", "report", "export", "replan", "gpus", "import", "init", "grid",
    "schema", "estimate", "levers", "explain", "pareto",
)  # fmt: skip
#: Values drawn for a flag of ``estimate`` (numbers at and past every edge, text, NaN).
FLAG_VALUES = ["0", "1", "-1", "8", "7B", "1e30", "1e-30", "nan", "inf", "x", "", "1e400"]
ESTIMATE_FLAGS = [
    "--params", "--tokens", "--gpus", "--zero", "--seq-len", "--layers", "--hidden", "--heads",
    "--micro-batch", "--tp", "--pp", "--cp", "--ep", "--microbatches", "--interleave", "--mfu",
    "--per-doubling", "--reference-gpus", "--overlap", "--power-load", "--pue",
    "--price-usd-per-mwh", "--mtbf-hours", "--gpu-memory-gb", "--gpu-tflops", "--gpu-power-w",
]  # fmt: skip


@dataclass
class Case:
    command: str
    args: list[str]
    drawn: str
    #: Paths (relative to work) whose folder the command was asked to write into.
    outputs: list[str] = field(default_factory=list)
    #: Files written into work/ for the case (plans, instances) before it runs.
    files: dict[str, str] = field(default_factory=dict)


def _plan_file(sb: Sandbox, rnd: random.Random, name: str) -> tuple[str, dict[str, str], str]:
    which = rnd.choice(["tiny", "tiny", "seg"])
    doc = copy.deepcopy(sb.plans[which])
    drawn = [which]
    if rnd.random() < 0.75:
        drawn += _mutate(doc, rnd, rnd.randint(1, 3))
    if rnd.random() < 0.25:
        ref = rnd.choice(["../secret/creds.yaml", str(sb.secret / "creds.yaml"), "/etc/passwd"])
        if rnd.random() < 0.5:
            doc["instance_file"] = {"path": ref, "sha256": "0" * 64}
        else:
            doc.pop("instance_file", None)
            doc["instance"] = ref
        drawn.append(f"ref {ref}")
    try:
        text = json.dumps(doc)
    except (TypeError, ValueError):
        text = "{}"
    return name, {name: text}, " ".join(drawn)


def draw_case(sb: Sandbox, rnd: random.Random) -> Case:
    cmd = rnd.choice(COMMANDS)
    tiny, seg = str(sb.inst / "tiny.yaml"), str(sb.inst / "seg.json")
    if cmd == "check":
        doc = json.loads(json.dumps(_yaml(sb.inst / "tiny.yaml"), default=str))
        drawn = _mutate(doc, rnd, rnd.choice([0, 1, 1, 2, 3]))
        target = rnd.choice(["m.json", "m.json", "m.json", tiny, str(sb.secret / "creds.yaml")])
        if rnd.random() < 0.2:
            target = rnd.choice(["/etc/passwd", "/proc/self/environ", "plan_link.json"])
        files = {"m.json": json.dumps(doc, default=str)} if target == "m.json" else {}
        return Case(cmd, ["check", target], " ".join(drawn) + f" {target}", [], files)
    if cmd == "solve":
        out = _out_file(sb, rnd, ".json")
        args = ["solve", rnd.choice([tiny, tiny, seg]), "--time-limit", "3"]
        if rnd.random() < 0.8:
            args += ["-o", out]
        args += rnd.sample(["-q", "--no-attribution", "--json", "--baseline"], rnd.randint(0, 2))
        return Case(cmd, args, out, [out] if "-o" in args else [])
    if cmd in ("verify", "report", "export", "replan"):
        name, files, drawn = _plan_file(sb, rnd, "p.json")
        inst = seg if "seg" in drawn.split()[0] else tiny
        if cmd == "verify":
            return Case(cmd, ["verify", inst, name], drawn, [], files)
        if cmd == "report":
            out = _out_file(sb, rnd, ".html")
            args = ["report", name, "-o", out]
            outs = [out]
            if rnd.random() < 0.3:
                png = rnd.choice(["pngs", "dir_link", "new/pngs", "out_link.json"])
                args += ["--png", png]
                outs.append(png + "/x")
            if rnd.random() < 0.2:
                args += ["--instance", rnd.choice([inst, "../secret/creds.yaml"])]
            return Case(cmd, args, drawn, outs, files)
        if cmd == "export":
            folder = rnd.choice(["sky", "new/sky", "dir_link", "out_link.json", "tiny.json"])
            return Case(cmd, ["export", name, "-o", folder], drawn, [folder + "/x"], files)
        hour = rnd.choice([-5, 0, 3, 13, 47, 10**9])
        out = _out_file(sb, rnd, ".json")
        args = ["solve", inst, "--from", str(hour), "--plan", name, "-o", out]
        args += ["--time-limit", "3"]
        return Case(cmd, args, f"{drawn} from {hour}", [out], files)
    if cmd == "gpus":
        args = [
            "gpus",
            *rnd.sample(["H100", "L4", "H10O", "MyAccel", "[/]", "a\nb"], rnd.randint(0, 2)),
        ]
        if rnd.random() < 0.4:
            cat = rnd.choice([str(sb.inst / "cat.yaml"), "../secret/creds.yaml", "c.yaml"])
            args += ["--catalog", cat]
        if rnd.random() < 0.4:
            args.append("--json")
        files = {"c.yaml": "format: trainplan-catalog/1\ngpus: {X: {memory_gb: .nan}}\n"}
        return Case(cmd, args, " ".join(args[1:]), [], files)
    if cmd == "import":
        out = _out_file(sb, rnd, ".yaml")
        vms = rnd.choice(["v.csv", str(sb.inst / "vms.csv"), "../secret/rows.csv"])
        body = rnd.choice(
            [
                "InstanceType,AcceleratorName,AcceleratorCount,Region,Price,SpotPrice\n"
                "p,H100,1e-300,us,1e300,\n",
                "InstanceType,AcceleratorName,AcceleratorCount,Region,Price,SpotPrice\n"
                "p,H100,8,us,nan,inf\n",
                "a,b\n1,2\n",
                "",
            ]
        )
        args = ["gpus", "import-skypilot", vms, "--cloud", rnd.choice(["aws", "a\nb", ""])]
        return Case(cmd, [*args, "-o", out], vms, [out], {"v.csv": body})
    if cmd == "init":
        out = _out_file(sb, rnd, ".yaml")
        good = rnd.random() < 0.5
        year = rnd.randint(2024, 2040)
        start = rnd.choice([f"{year}-12-28T00:00Z", f"{year}-03-26T00:00Z", "9999-12-30T00:00Z"])
        pick: Callable[[list[str]], str] = (lambda xs: xs[0]) if good else rnd.choice
        args = ["init", "-o", out, "--force", "--model", pick(["7B", "llama-3-8b", "{x}"])]
        regions = ["eu=DE-LU", "a: b=JP-TK@{x}/y", "ny=US-NY-NYIS", "sg=SG", "eu=DE-LU"]
        for k in range(rnd.randint(1, 2)):
            args += ["--region", regions[k] if good else rnd.choice(regions)]
        args += ["--start", start, "--deadline", pick(["7d", "1h", "0d", "99999d"])]
        args += ["--tokens", pick(["2e9", "nan", "inf", "-1", "1e300"])]
        args += ["--gpu", pick(["H100:64", "L4:8", "H100:0", "H100:1e3", "X:1"])]
        return Case(cmd, args, " ".join(args[3:]), [out])
    if cmd == "schema":
        out = _out_file(sb, rnd, ".json")
        return Case(cmd, ["schema", "-o", out], out, [out])
    if cmd == "estimate":
        args = ["estimate"]
        if rnd.random() < 0.3:
            args += [tiny, "--phase", rnd.choice(["finetune", "prep", "nope", "[/]"])]
        else:
            args += ["--model", rnd.choice(["llama-2-7b", "llama-3-8b", "x"])]
            args += ["--gpu", rnd.choice(["H100", "L4", "H10O"])]
            for flag in rnd.sample(ESTIMATE_FLAGS, rnd.randint(0, 4)):
                args += [flag, rnd.choice(FLAG_VALUES)]
        if rnd.random() < 0.3:
            args.append("--json")
        return Case(cmd, args, " ".join(args[1:]))
    if cmd in ("levers", "explain", "pareto"):
        doc = json.loads(json.dumps(_yaml(sb.inst / "tiny.yaml"), default=str))
        drawn = _mutate(doc, rnd, rnd.choice([0, 0, 1]))
        files = {"m.json": json.dumps(doc, default=str)}
        args = [cmd, rnd.choice(["m.json", tiny]), "--time-limit", "2"]
        outs: list[str] = []
        if cmd == "pareto":
            args += ["--vs", rnd.choice(["deadline", "carbon", "x"]), "--points", "2"]
        if cmd == "levers":  # one lever: each is a solve
            args += ["--only", rnd.choice(["contracts", "time_shifting", "region", "nope"])]
        if cmd != "explain" and rnd.random() < 0.3:
            png = _out_file(sb, rnd, ".png")
            args += ["--png", png]
            outs.append(png)
        return Case(cmd, args, " ".join(drawn), outs, files)
    grid = str(sb.inst / "grid.yaml")
    body = rnd.choice(
        [
            "name: g\nbase: ../secret/creds.yaml\naxes: [{path: x, values: [1]}]\n",
            f"name: g\nbase: {sb.secret / 'creds.yaml'}\naxes: [{{path: x, values: [1]}}]\n",
            "name: g\nbase: /etc/passwd\naxes: [{path: x, values: [1]}]\n",
        ]
    )
    target = rnd.choice([grid, grid, "g.yaml"])
    if rnd.random() < 0.7:
        return Case(cmd, ["grid", target, "--dry-run"], target, [], {"g.yaml": body})
    store = rnd.choice(["s.sqlite", "new/s.sqlite", "out_link.json", "dir_link/s.sqlite"])
    args = ["grid", target, "-o", store, "--workers", "1", "--time-limit", "3", "--no-chart"]
    return Case(cmd, args, f"{target} -> {store}", [store], {"g.yaml": body})


def _yaml(path: Path) -> Any:
    from planner.instance.read import load_document

    return load_document(path)


# ----------------------------------------------------------------------------- judging


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (links not followed) -> a digest of its bytes (or of the
    link's target name)."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                out[p] = "link:" + os.readlink(p)
            else:
                try:
                    with open(p, "rb") as fh:
                        out[p] = hashlib.sha256(fh.read()).hexdigest()
                except OSError:
                    out[p] = "unreadable"
    return out


def _allowed(path: str, work: Path, outputs: list[str]) -> bool:
    """A change the case may make: inside the folder of one of its outputs, the folder as
    asked for (a folder named through a link is the folder it leads to: the user named it;
    a link planted as the output *file* is never written through, the victim check)."""
    p = Path(os.path.realpath(path))
    for o in outputs:
        folder = Path(os.path.realpath((work / o).parent))
        if p.parent == folder or folder in p.parents:
            return True
    return False


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang(f"case still running after {CASE_DEADLINE_S} s")


def judge(sb: Sandbox, case: Case) -> str:
    """Run one case; raise AssertionError on a finding; return its outcome."""
    for name, text in case.files.items():
        (sb.work / name).write_text(text)
    before = _snapshot(sb.root)
    victim = sb.victim.read_bytes()
    cwd = os.getcwd()
    os.chdir(sb.work)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_DEADLINE_S)
    try:
        code, output, exc = _invoke(case.args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        os.chdir(cwd)
    where = f"{case.command} {case.args!r:.300} ({case.drawn:.200})"
    assert exc is None, f"{where}: an exception escaped: {type(exc).__name__}: {exc}"
    assert code in ALLOWED, f"{where}: exit {code}: {output[-800:]}"
    assert "Traceback" not in output and "internal error" not in output, f"{where}: {output}"
    for t in sb.tokens:
        assert t not in output, f"{where}: leaked {t} in the output"
    assert sb.victim.read_bytes() == victim, f"{where}: wrote through a link to the victim"
    after = _snapshot(sb.root)
    for path, digest in after.items():
        if before.get(path) == digest:
            continue
        rel = Path(path)
        if rel.parent == sb.work and rel.name in case.files:
            continue
        assert _allowed(path, sb.work, case.outputs), f"{where}: wrote {path}"
        if not path.endswith((".sqlite", ".sqlite-wal", ".sqlite-shm", ".png", ".parquet")):
            try:
                text = Path(path).read_text(errors="replace")
            except OSError:
                continue
            for t in sb.tokens:
                assert t not in text, f"{where}: leaked {t} into {path}"
    for path in before:
        if path not in after:
            assert _allowed(path, sb.work, case.outputs) or Path(path).parent == sb.work, (
                f"{where}: removed {path}"
            )
    return f"{case.command}:{code}"


def _reset_work(sb: Sandbox) -> None:
    """Remove what cases wrote into work/, keep the solved plans and the planted links."""
    keep = {"tiny.json", "seg.json", "out_link.json", "out_link.html", "dir_link"}
    keep |= {"plan_link.json", "dangling.json"}
    for p in sb.work.iterdir():
        if p.name in keep:
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()


def run(n: int, seed: int, on_case: Callable[[Case, str], None] | None = None) -> Counter[str]:
    """``n`` cases from ``seed`` in one sandbox; the counts per command and outcome."""
    sb = make_sandbox()
    tally: Counter[str] = Counter()
    try:
        for i in range(n):
            rnd = random.Random(seed * 1_000_003 + i)
            case = draw_case(sb, rnd)
            outcome = judge(sb, case)
            tally[outcome] += 1
            tally["cases"] += 1
            if on_case is not None:
                on_case(case, outcome)
            if i % 25 == 24:
                _reset_work(sb)
    finally:
        shutil.rmtree(sb.root, ignore_errors=True)
    return tally


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 2026
    t0 = time.perf_counter()
    tally = run(n, seed)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(tally.items()))
    print(f"cli fuzz: {tally['cases']} cases from seed {seed} in {time.perf_counter() - t0:.0f} s")
    print(counts)
    assert math.isfinite(t0)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
