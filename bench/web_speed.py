"""The web client's speed in Debian's Chromium against a real `tokendance serve`.

Two figures of issue 32 (targets: the chat view interactive within 1.5 s of navigation;
a run streaming 200 events per second renders without dropping any):

- **Interactive**: a session with `--history` answered turns is opened by navigating to
  its address, `--loads` times with a cold cache (a new browser context each time) and as
  many warm (the same context again). The time is from the navigation's start to the
  moment the page shows the whole history and the message box takes input, read in the
  page (`performance.now()`) right after Playwright saw both: an upper bound.
- **Streaming**: one answer of `--words` words streams to the open chat as fast as the
  server sends it (one SSE `content` event per word, far above 200 a second). The page
  counts the `content` events its fetch received and, on every DOM change, the text of
  the growing answer; each text seen must be the start of the answer (a dropped or
  doubled chunk breaks that) and the last one seen before the stored message replaces the
  chunks must hold every chunk. Also: the longest gap between animation frames while
  streaming (the page stayed responsive or it did not).

Needs `chromium` on PATH and a built `web/dist` (or WEB_DIST naming a build).

python -m bench.web_speed [--loads 5] [--history 25] [--words 3000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import yaml
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

from bench.api_harness import Account, api_stack, machine, register

ROOT = Path(__file__).parents[1]
DIST = Path(os.environ.get("WEB_DIST") or ROOT / "web" / "dist")

PROBE = (Path(__file__).parent / "web_probe.js").read_text()  # counts what the page got


PACES = {
    "about 200/s": 0.0045,
    "as fast as it can": 0.0,
}  # seconds between the long answers' chunks


def _script(path: Path, history: int, words: int) -> str:
    """History turns, then the long answer at each pace; the long answer's text."""
    long = " ".join(f"w{i}" for i in range(words))
    turns: list[dict[str, object]] = [
        {"text": f"Answer {i}: **fine**, thank you. " * 4} for i in range(history)
    ]
    # A real model's first token comes a while after the call: delay 0.3 s.
    turns.extend({"text": long, "pace": pace, "delay": 0.3} for pace in PACES.values())
    path.write_text(yaml.safe_dump(turns))
    return long


def _chat(http: httpx.Client, account: Account, session: str, text: str) -> None:
    """One message through the API, read to its end."""
    with http.stream(
        "POST",
        f"/api/v1/chat/{session}/message",
        json={"content": text},
        headers=account.headers,
        timeout=60,
    ) as r:
        assert r.status_code == 200, r.read()
        for _ in r.iter_lines():
            pass


def _signed_in(browser: Browser, tokens: dict[str, str]) -> BrowserContext:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
    access, refresh = json.dumps(tokens["access_token"]), json.dumps(tokens["refresh_token"])
    context.add_init_script(
        f"localStorage.setItem('td.access_token', {access});"
        f" localStorage.setItem('td.refresh_token', {refresh})"
    )
    return context


def _interactive(page: Page, url: str, history: int) -> float:
    """Milliseconds from the navigation's start to history shown and input ready."""
    page.goto(url, wait_until="commit")
    page.locator("article[data-role='assistant']").nth(history - 1).wait_for()
    page.get_by_placeholder("Ask the agent…").wait_for(state="visible")
    return float(page.evaluate("performance.now()"))


def _stream(page: Page, long: str) -> dict[str, float]:
    page.evaluate(
        "Object.assign(window.__probe,"
        " {events: 0, chars: 0, first: 0, last: 0, seen: [], frames: [], streaming: true})"
    )
    answers = page.locator("article[data-role='assistant']")
    before = answers.count()
    box = page.get_by_placeholder("Ask the agent…")
    box.fill("the long one")
    box.press("Enter")
    last_word = long.rsplit(" ", 1)[-1]
    answers.nth(before).get_by_text(last_word).wait_for(timeout=120_000)
    page.locator("article[data-live='true']").first.wait_for(state="detached")
    probe = page.evaluate("window.__probe.streaming = false, window.__probe")
    want = "".join(long.split())
    seen = ["".join(s.split()) for s in probe["seen"]]
    broken = [s for s in seen if not want.startswith(s)]
    if os.environ.get("WEB_SPEED_DEBUG"):
        print("broken samples:", [b[:80] for b in broken[:3]], "want:", want[:80])
    longest = max((len(s) for s in seen), default=0)
    span = (probe["last"] - probe["first"]) / 1000 or float("nan")
    return {
        "events": probe["events"],
        "chunks_sent": len(long.split(" ")),
        "chars_received": probe["chars"],
        "chars_sent": len(long),
        "rate": probe["events"] / span,
        "samples": len(seen),
        "broken": len(broken),
        "longest_seen": longest,
        "frame_gap_max": max(probe["frames"], default=0.0),
        "frame_gap_p95": _p95(probe["frames"]),
    }


def _p95(values: list[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


@contextmanager
def _browser() -> Iterator[Browser]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("no chromium on PATH (apt-get install chromium)")
    if not (DIST / "index.html").exists():
        raise SystemExit(f"{DIST} is not built (npm --prefix web run build)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium)
        try:
            yield launched
        finally:
            launched.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--history", type=int, default=25)
    parser.add_argument("--words", type=int, default=3000)
    o = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as tmp, _browser() as browser:
        script = Path(tmp) / "web_speed.yaml"
        long = _script(script, o.history, o.words)
        env = {"TOKENDANCE_WEB_DIR": str(DIST)}
        with (
            api_stack(script=script, env=env) as stack,
            httpx.Client(base_url=stack.server.url) as http,
        ):
            account = register(http, "speed@example.com")
            login = http.post(
                "/api/v1/auth/login",
                json={"email": "speed@example.com", "password": "correct horse battery"},
            ).json()
            made = http.post(
                "/api/v1/sessions",
                json={"workspace_id": str(account.workspace_id), "title": "speed"},
                headers=account.headers,
            ).json()
            session = made["id"]
            for i in range(o.history):
                _chat(http, account, session, f"question {i}")
            url = f"{stack.server.url}/sessions/{session}"
            cold, warm = [], []
            warm_context = _signed_in(browser, login)
            warm_page = warm_context.new_page()
            _interactive(warm_page, url, o.history)  # fills the warm cache
            for _ in range(o.loads):
                context = _signed_in(browser, login)
                cold.append(_interactive(context.new_page(), url, o.history))
                context.close()
                warm.append(_interactive(warm_page, url, o.history))
            warm_context.close()
            context = _signed_in(browser, login)
            context.add_init_script(PROBE)
            page = context.new_page()
            _interactive(page, url, o.history)
            streamed = {pace: _stream(page, long) for pace in PACES}
            context.close()
    print(f"chat view interactive, {o.history} answered turns, {o.loads} loads each:")
    for name, values in (("cold cache", cold), ("warm cache", warm)):
        print(
            f"  {name}: median {statistics.median(values):.0f} ms, max {max(values):.0f} ms"
            f" ({', '.join(f'{v:.0f}' for v in values)})"
        )
    print(f"streaming an answer of {o.words} words, one SSE content event a word:")
    for pace, s in streamed.items():
        print(
            f"  sent {pace}: {s['events']:.0f} events received at {s['rate']:.0f} events/s,"
            f" {s['chars_received']:.0f} of {s['chars_sent']} characters;"
            f" {s['samples']:.0f} renders seen, {s['broken']:.0f} not a start of the answer,"
            f" the fullest held {s['longest_seen']:.0f} of {len(''.join(long.split()))}"
            f" non-blank characters; frame gaps p95 {s['frame_gap_p95']:.0f} ms,"
            f" max {s['frame_gap_max']:.0f} ms"
        )


if __name__ == "__main__":
    main()
