"""The report in a real browser: Debian's headless Chromium loads the page offline with no
console message, no script error, no request that leaves the file, all charts in the DOM, and
a screenshot that is not blank.

Chromium is driven over the DevTools protocol on ``--remote-debugging-pipe`` (NUL-separated
JSON on file descriptors 3 and 4; stdlib only). The screenshot is taken with the command line
flags ``--screenshot --window-size=1400,3000``. Control pages with a thrown error, a console
error and an external image show the checks can fail.

CI needs ``apt-get install -y --no-install-recommends chromium``; without /usr/bin/chromium
these tests are skipped.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import matplotlib.image
import numpy as np
import pytest

import planner
from planner.interfaces.report import CHARTS, SECTIONS, render
from planner.model.plan import Plan

CHROMIUM = Path("/usr/bin/chromium")
TINY = Path(__file__).parents[1] / "data" / "tiny.yaml"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="needs Debian's chromium at "
        "/usr/bin/chromium (apt-get install -y --no-install-recommends chromium)",
    ),
]

#: Flags for a quiet, offline, throw-away browser; DNS resolves nothing, so any attempt to
#: fetch from a host fails (and is reported) instead of reaching the network.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-default-apps",
    "--disable-extensions",
    "--mute-audio",
    "--host-resolver-rules=MAP * ~NOTFOUND",
)
TIMEOUT_S = 60.0


def _high(fd: int) -> int:
    """A close-on-exec copy of ``fd`` numbered 10 or more; ``fd`` is closed."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


class Browser:
    """Headless Chromium with the DevTools protocol on a pipe: the browser reads commands on
    its fd 3 and writes replies and events on its fd 4, each a JSON text ended by NUL."""

    def __init__(self, profile: Path, log: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # The child's ends move above 9 first, so dup2 onto 3 and 4 always copies (dup2 of a
        # descriptor onto itself would keep its close-on-exec flag).
        to_chrome_r, from_chrome_w = (_high(to_chrome_r), _high(from_chrome_w))

        def fds() -> None:  # in the child, before exec: the pipe ends become fds 3 and 4
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self._log = log.open("wb")
        # close_fds=False keeps 3 and 4; Python's own descriptors are not inheritable (PEP 446).
        self.proc = subprocess.Popen(
            [
                str(CHROMIUM),
                *FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            preexec_fn=fds,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def _read(self, deadline: float) -> dict[str, Any] | None:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium exited (status {self.proc.poll()})")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return dict(json.loads(msg))

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        """Send a command and return its result; events that arrive meanwhile are kept."""
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            reply = self._read(deadline)
            if reply is None:
                raise TimeoutError(f"no reply to {method}")
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))
            self.events.append(reply)

    def wait_for(self, method: str) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while not any(e.get("method") == method for e in self.events):
            event = self._read(deadline)
            if event is None:
                raise TimeoutError(f"no {method} event")
            self.events.append(event)

    def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (event := self._read(deadline)) is not None:
            self.events.append(event)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
        self._log.close()


#: What the first screen shows: where the answer's figures are, as the browser lays them out.
FIRST_SCREEN = (
    "JSON.stringify(Object.fromEntries(['headline', 'baseline-total', 'saving', 'plan-total']"
    ".map(id => { const e = document.getElementById(id); if (!e) return [id, null];"
    " const r = e.getBoundingClientRect(); return [id, {top: r.top, bottom: r.bottom,"
    " width: r.width, text: e.textContent, visible: getComputedStyle(e).visibility}]; })"
    ".concat([['viewport', window.innerHeight],"
    " ['schedule', document.getElementById('schedule').getBoundingClientRect().top]])))"
)


def load(
    page: Path, tmp: Path, size: tuple[int, int] = (1400, 3000), expression: str | None = None
) -> tuple[list[str], dict[str, Any]]:
    """Open ``page`` at ``size`` CSS pixels (default 1400 x 3000); return the problems seen
    (script errors, console messages, browser log warnings and errors, requests for anything
    but the file itself and data: URIs) and facts read from the DOM (``expression``'s JSON
    when given)."""
    b = Browser(tmp / "profile", tmp / "chromium.log")
    try:
        target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            b.send(f"{domain}.enable", session=s)
        b.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": False},
            session=s,
        )
        b.send("Page.navigate", {"url": page.resolve().as_uri()}, session=s)
        b.wait_for("Page.loadEventFired")
        b.drain(0.5)
        expr = expression or (
            "JSON.stringify({svgs: document.querySelectorAll('svg.chart').length,"
            " sections: [...document.querySelectorAll('section')].map(x => x.id),"
            " height: document.documentElement.scrollHeight,"
            " width: document.documentElement.scrollWidth,"
            " charts: [...document.querySelectorAll('svg.chart')].map("
            "   x => Math.round(x.getBoundingClientRect().height)),"
            " title: document.title})"
        )
        got = b.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=s)
        facts = json.loads(got["result"]["value"])
    finally:
        b.close()
    problems: list[str] = []
    for e in b.events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            problems.append(
                f"exception: {d.get('text', '')} {d.get('exception', {}).get('description', '')}"
            )
        elif m == "Runtime.consoleAPICalled":
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
            problems.append(f"console.{p['type']}: {args}")
        elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
            problems.append(f"log {p['entry']['level']}: {p['entry']['text']}")
        elif m == "Network.requestWillBeSent":
            url = p["request"]["url"]
            facts.setdefault("requests", []).append(url)
            if not (url.startswith("data:") or url == page.resolve().as_uri()):
                problems.append(f"request: {url}")
    return problems, facts


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from planner.solve import solve

    inst = planner.read(TINY)
    result = solve(inst, time_limit=30)
    assert result.plan is not None
    plan: Plan = result.plan
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render(plan, inst), encoding="utf-8")
    return path


def test_report_loads_offline_without_console_errors(report: Path, tmp_path: Path) -> None:
    problems, facts = load(report, tmp_path)
    assert problems == []
    assert facts["title"] == "trainplan report: tiny"
    assert facts["sections"] == list(SECTIONS)
    assert facts["svgs"] == len(CHARTS)
    # The network listener saw the page itself, and nothing else was fetched.
    assert facts["requests"] == [report.resolve().as_uri()]
    # Every chart is laid out with a real height, and nothing is wider than the window.
    assert all(h > 80 for h in facts["charts"]), facts["charts"]
    assert facts["width"] <= 1400 and facts["height"] > 3000


def test_console_check_catches_errors_and_external_requests(tmp_path: Path) -> None:
    """Control: the same check on a page that misbehaves reports each problem."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><html><head><title>bad</title></head><body><p>bad</p>"
        '<img src="http://report-test.invalid/x.png" alt="">'
        "<script>console.error('boom'); notDefined();</script></body></html>",
        encoding="utf-8",
    )
    problems, _ = load(bad, tmp_path)
    text = "\n".join(problems)
    assert "console.error: boom" in text
    assert "exception: Uncaught ReferenceError: notDefined is not defined" in text
    assert "request: http://report-test.invalid/x.png" in text


@pytest.mark.slow  # the default run stays under 10 minutes on CI's 2 cores
def test_screenshot_is_not_blank(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    proc = subprocess.run(
        [
            str(CHROMIUM),
            *FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1400,3000",
            report.resolve().as_uri(),
        ],
        capture_output=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    img = matplotlib.image.imread(shot)[..., :3]
    assert img.shape[:2] == (3000, 1400)
    colours = np.unique((img.reshape(-1, 3) * 255).astype(np.uint8), axis=0)
    # Text, tables and six charts in a dozen colours antialiased: thousands of colours. A
    # blank or unstyled page has a handful.
    assert len(colours) > 500
    assert float(img.std()) > 0.1
    # Content all the way down: every 500-pixel band has ink (non-white pixels).
    for top in range(0, 3000, 500):
        band = img[top : top + 500]
        assert float((band < 0.85).any(axis=2).mean()) > 0.01, f"band at {top} px is empty"
    # Phase colours of the charts are on screen: tab10 blue (31, 119, 180) of the first phase.
    blue = np.all(np.abs(img * 255 - np.array([31, 119, 180])) < 8, axis=2)
    assert int(blue.sum()) > 200


@pytest.fixture(scope="module")
def answered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The report of tiny's solved plan with its attribution, as ``trainplan report``
    writes it."""
    from planner.analysis.attribution import attribute
    from planner.solve import solve

    inst = planner.read(TINY)
    result = solve(inst, time_limit=30)
    assert result.plan is not None
    a = attribute(inst, result.plan)
    path = tmp_path_factory.mktemp("answer") / "report.html"
    path.write_text(render(result.plan, inst, attribution=a), encoding="utf-8")
    return path, a


def test_first_screen_shows_the_baseline_and_the_saving(
    answered: tuple[Path, Any], tmp_path: Path
) -> None:
    """At 1400 x 900 CSS pixels (a laptop's first screen, nothing scrolled) the baseline's
    total and the saving are laid out, visible, inside the viewport and above the schedule,
    with the attribution's figures."""
    from planner.interfaces.report.html import usd

    page, a = answered
    problems, facts = load(page, tmp_path, size=(1400, 900), expression=FIRST_SCREEN)
    assert problems == []
    assert facts["viewport"] == 900
    for key in ("headline", "baseline-total", "saving", "plan-total"):
        box = facts[key]
        assert box is not None, key
        assert box["visible"] == "visible" and box["width"] > 0, key
        assert box["top"] >= 0 and box["bottom"] <= 900, (key, box)
    assert usd(a.baseline_objective) in facts["baseline-total"]["text"]
    assert usd(abs(a.saving)) in facts["saving"]["text"]
    assert f"{a.saving_pct:.1%}" in facts["saving"]["text"]
    assert usd(a.plan_objective) in facts["plan-total"]["text"]
    # the answer comes before the schedule
    assert facts["saving"]["bottom"] < facts["schedule"]


def test_first_screen_check_fails_on_a_page_without_the_answer(
    report: Path, tmp_path: Path
) -> None:
    """Control: the report rendered without an attribution has no baseline figure to find."""
    problems, facts = load(report, tmp_path, size=(1400, 900), expression=FIRST_SCREEN)
    assert problems == []
    assert facts["baseline-total"] is None and facts["saving"] is None
