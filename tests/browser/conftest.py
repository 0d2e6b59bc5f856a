"""Pages in a real browser: headless Chromium from Debian's `chromium` package, driven by Playwright for Python
(nothing downloads a browser), and axe-core from npm run inside each page. Without that Chromium the browser tests
are skipped, loudly (`-ra` lists them), unless SIGNALYARD_REQUIRE_BROWSER is set, as `.ci/run` sets it: then they
fail."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, ViewportSize, async_playwright

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("SIGNALYARD_CHROMIUM", "/usr/bin/chromium"))
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = ROOT / "screenshots"
"""Where each main page's screenshots go, at desktop and phone width (README, "Tests")."""
WIDTHS: dict[str, ViewportSize] = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(scope="session")
async def chromium() -> AsyncIterator[Browser]:
    if not CHROMIUM.exists():
        message = f"BROWSER TESTS NOT RUN: no Chromium at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("SIGNALYARD_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield browser
        await browser.close()


async def serious_violations(page: Page) -> list[dict[str, Any]]:
    """What axe-core finds serious or critical on the page as it is now (its rule, and the elements)."""
    if not await page.evaluate("typeof axe !== 'undefined'"):
        await page.evaluate(AXE.read_text())
    result = await page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        {"rule": found["id"], "nodes": [node["html"][:200] for node in found["nodes"]]}
        for found in result["violations"]
        if found["impact"] in ("serious", "critical")
    ]


async def screenshots(page: Page, name: str) -> None:
    """The page at desktop and phone width, as `screenshots/<name>-<width>.png`."""
    SCREENSHOTS.mkdir(exist_ok=True)
    for width, size in WIDTHS.items():
        await page.set_viewport_size(size)
        # caret="initial": hiding the caret injects a style sheet, which the page's policy reports
        await page.screenshot(path=SCREENSHOTS / f"{name}-{width}.png", full_page=True, caret="initial")
    await page.set_viewport_size(WIDTHS["desktop"])
