"""Pages in a real browser: headless Chromium from Debian's `chromium` package, driven by Playwright for Python
(nothing downloads a browser), and axe-core from npm run inside each page. Without that Chromium the browser tests
fail, saying how to install it: the pages' rules are checked wherever the suite runs, or the run is red."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from playwright.async_api import Browser, Page, Playwright, ViewportSize, async_playwright

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("SIGNALYARD_CHROMIUM", "/usr/bin/chromium"))
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = ROOT / "screenshots"
"""Where each main page's screenshots go, at desktop and phone width (README, "Tests")."""
WIDTHS: dict[str, ViewportSize] = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(scope="session")
async def playwright() -> AsyncIterator[Playwright]:
    if not CHROMIUM.exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: install Debian's package (sudo apt-get install chromium)")
    async with async_playwright() as started:
        yield started


@pytest.fixture(scope="session")
async def chromium(playwright: Playwright) -> AsyncIterator[Browser]:
    browser = await playwright.chromium.launch(executable_path=str(CHROMIUM))
    yield browser
    await browser.close()


@pytest.fixture(autouse=True)
async def nothing_left_open(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """After each test, whatever it left open in the session's browsers (a failed test's context) is closed: an open
    page goes on running for the rest of the session. In a CI run where a test failed with its page open, the
    browser's GPU process and a renderer took most of a core from then until the run ended."""
    yield
    for name in ("chromium", "camera_chromium"):
        if name in request.fixturenames:
            browser: Browser = request.getfixturevalue(name)
            for context in browser.contexts:
                await context.close()


PORTRAIT = ROOT / "node_modules" / "paper-kit-2" / "assets" / "img" / "faces" / "erik-lucatero-2.jpg"
"""A real portrait (a package's; `npm ci` installs it): what the fake camera films."""


def y4m(image: Path, destination: Path, size: int = 480, frames: int = 2) -> Path:
    """A still photo as a short YUV4MPEG2 (4:2:0) video, the format Chromium's fake camera plays."""
    frame = Image.open(image).convert("RGB").resize((size, size)).convert("YCbCr")
    luma, blue, red = frame.split()
    half = (size // 2, size // 2)
    planes = luma.tobytes() + blue.resize(half).tobytes() + red.resize(half).tobytes()
    destination.write_bytes(f"YUV4MPEG2 W{size} H{size} F30:1 Ip A1:1 C420jpeg\n".encode())
    with destination.open("ab") as out:
        for _ in range(frames):
            out.write(b"FRAME\n" + planes)
    return destination


@pytest.fixture(scope="session")
async def camera_chromium(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Browser]:
    """Chromium whose camera is its fake device filming PORTRAIT (and which grants the camera without asking)."""
    video = y4m(PORTRAIT, tmp_path_factory.mktemp("camera") / "portrait.y4m")
    browser = await playwright.chromium.launch(
        executable_path=str(CHROMIUM),
        args=[
            "--use-fake-device-for-media-stream",
            "--use-fake-ui-for-media-stream",
            f"--use-file-for-fake-video-capture={video}",
        ],
    )
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
