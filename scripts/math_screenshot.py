"""A full-page Chromium screenshot of a math certificate (issue 24) for artifacts/math-certificate.png: the DOMAIN
split link of clients/math/examples/split.toml, played at 20 tables × 6 seats × 60 hands an hour, a year simulated,
with the what-if of clients/math/examples/rates-change.toml (more of each wager to MAJOR, its reset raised).
Debian's chromium (never a download) opens the file with every request other than the file itself blocked, and the
script fails if any was made.

    PYTHONPATH=... python scripts/math_screenshot.py [--days 365] [--paths 20] [--sample | --from-json FILE]
                                                     [--out artifacts]

`--sample` lays out the hand-built document of tests/unit/math_samples.py instead (no figures computed)."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "clients" / "math" / "examples"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def certificate(days: int, paths: int, sample: bool) -> dict[str, Any]:
    """The split link's certificate with a proposed rate change (or the hand-built sample)."""
    sys.path.insert(0, str(ROOT))
    from tests.unit.math_samples import certificate as hand_built
    if sample:
        return hand_built()
    from jackpot_math.certificate import build_certificate

    try:  # the example files through jackpot-math's own TOML codec
        from jackpot_math.link_toml import load_link, play_of_flags
        from jackpot_math.what_if import load_change
    except ImportError:  # the codec not merged yet: the same link and a rate change built here
        from jackpot_math.certificate import balances_for

        from jackpotd.domain import hands as h
        from jackpotd.odds.play import Play
        from tests.unit.math_samples import rate_change, split_config

        config = split_config()
        play = Play({h.CARIBBEAN_STUD: 20}, 6, 60)
        source: dict[str, str] = {"kind": "file", "path": "clients/math/examples/split.toml (built in code)"}
        balances, proposed = balances_for(config, {}), rate_change(config)
    else:
        link = load_link(EXAMPLES / "split.toml")
        config, play, source, balances = link.config, play_of_flags(link.config, link.play), dict(link.source), \
            dict(link.balances_uc)
        source["path"] = "clients/math/examples/split.toml"  # not this machine's path
        proposed = load_change(EXAMPLES / "rates-change.toml", config, int(time.time() * 1000))
    started = time.monotonic()
    cert = build_certificate(config, source, play, balances, days=days, paths=paths, seed=1, simulate=True,
                             progress=None, proposed=proposed)
    print(f"certificate built in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return cert


async def shoot(html_file: Path, png: Path, width: int) -> None:
    """Open `html_file` in Chromium with every other request blocked; save a full-page screenshot."""
    from playwright.async_api import Route, async_playwright

    asked: list[str] = []  # requests the route blocked
    made: list[str] = []  # every request the browser made
    errors: list[str] = []

    async def guard(route: Route) -> None:
        """Let the file itself through; abort and record anything else."""
        if route.request.url == html_file.as_uri():
            await route.continue_()
        else:
            asked.append(route.request.url)
            await route.abort()

    profile = Path(tempfile.mkdtemp(prefix="math-chromium-"))
    try:
        async with async_playwright() as pw:
            context = await pw.chromium.launch_persistent_context(
                str(profile), executable_path=CHROMIUM, args=ARGS, headless=True,
                viewport={"width": width, "height": 900})
            try:
                await context.route("**/*", guard)
                context.on("request", lambda r: made.append(r.url))
                page = context.pages[0] if context.pages else await context.new_page()
                page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
                page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}")
                        if m.type in ("error", "warning") else None)
                await page.goto(html_file.as_uri(), wait_until="load")
                charts = await page.locator("svg.chart").count()
                assert charts >= 2, f"expected the return curve and the bands, found {charts} charts"
                await page.screenshot(path=str(png), full_page=True)
            finally:
                await context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert not asked, f"the page asked for something other than itself: {asked}"
    assert set(made) <= {html_file.as_uri()}, f"requests other than the file itself: {made}"
    assert not errors, errors


def main() -> int:
    """Build, render, shoot."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--paths", type=int, default=20)
    parser.add_argument("--sample", action="store_true", help="the hand-built document (no figures computed)")
    parser.add_argument("--from-json", type=Path, help="lay out a certificate.json already built (no figures computed)")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts")
    args = parser.parse_args()
    from jackpot_math.html import render_html

    cert = (json.loads(args.from_json.read_text(encoding="utf-8")) if args.from_json else
            certificate(args.days, args.paths, args.sample))
    args.out.mkdir(parents=True, exist_ok=True)
    html_file = args.out / "math-certificate.html"
    html_file.write_text(render_html(cert), encoding="utf-8")
    (args.out / "math-certificate.json").write_text(json.dumps(cert, indent=1), encoding="utf-8")
    asyncio.run(shoot(html_file.resolve(), args.out / "math-certificate.png", args.width))
    print(f"wrote {args.out / 'math-certificate.png'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
