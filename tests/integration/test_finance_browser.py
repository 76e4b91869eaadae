"""The reconciliation's HTML file (`jackpot-report reconcile --format html`) in a real browser: Debian's headless
Chromium, driven by Playwright, opens the file of a hand-built Reconciliation as a finance officer would. It
renders without an error, draws one line per pool, ticks every identity, and reads in dollars and cents with the
sub-cent remainders explained. A full-page screenshot goes to artifacts/finance-report.png. No server: the
end-to-end path is tested elsewhere."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from jackpot_finance.render import render_reconciliation

from ..unit.test_finance_render import reconciliation
from .browser import ARGS, CHROMIUM, require_chromium

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

require_chromium()

from playwright.async_api import async_playwright  # noqa: E402


async def test_reconciliation_page_in_chromium() -> None:
    rec = reconciliation()
    pools = [p.pool for p in rec.pools]
    work = Path(tempfile.mkdtemp(prefix="finance-chromium-"))
    try:
        page_file = work / "reconciliation.html"
        page_file.write_text(render_reconciliation(rec, "html"), encoding="utf-8")
        errors: list[str] = []
        async with async_playwright() as pw:
            context = await pw.chromium.launch_persistent_context(
                str(work / "profile"), executable_path=CHROMIUM, args=ARGS, headless=True,
                viewport={"width": 1280, "height": 900})
            try:
                page = context.pages[0] if context.pages else await context.new_page()
                page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
                page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}")
                        if m.type in ("error", "warning") else None)
                await page.goto(page_file.as_uri(), wait_until="load")

                assert await page.title() == f"Reconciliation demo {rec.gaming_day}"
                lines = page.locator("svg.chart polyline.series")
                assert await lines.count() == len(pools)
                assert [await lines.nth(i).get_attribute("data-pool") for i in range(len(pools))] == pools
                for i in range(len(pools)):  # drawn, not just present: each line spans part of the plot
                    box = await lines.nth(i).bounding_box()
                    assert box is not None and box["width"] > 100, f"{pools[i]}'s line is not drawn: {box}"
                assert await page.locator("svg.chart .legend").count() == len(pools)

                rows = page.locator("table.identities tbody tr")
                assert await rows.count() == len(rec.identities) > 0
                for i in range(await rows.count()):
                    assert (await rows.nth(i).locator("td.mark").inner_text()).strip() == "✓"
                    assert await rows.nth(i).locator("td.mark").is_visible()
                assert "every identity holds" in await page.locator("#verdict").inner_text()
                # the hostile round id is text on the page, not markup
                assert "<script>alert(1)</script>" in await page.locator("table.hits").inner_text()
                assert await page.locator("script").count() == 0
                # dollars and cents, MINOR's half cent beside its closing and explained once; hands by name
                closing = "".join((await page.locator('#pools tr[data-row="closing"]').inner_text()).split())
                assert "$10,073.80+0.00014¢" in closing and "$1,000.67+0.5¢" in closing, closing
                assert await page.locator("#subcent-note").is_visible()
                assert "Four of a kind" in await page.locator("table.hits").inner_text()
                assert "0.00000000" not in await page.locator("body").inner_text()

                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                await page.screenshot(path=str(ARTIFACTS / "finance-report.png"), full_page=True)
            finally:
                await context.close()
        assert not errors, errors
    finally:
        shutil.rmtree(work, ignore_errors=True)
