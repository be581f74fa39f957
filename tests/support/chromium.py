"""Headless Chromium from Debian's packages, driven by its chromedriver (selenium).

Network is cut at the resolver (`--host-resolver-rules`), so a page that tried
to load anything from outside would log a console error, which tests refuse.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
)


def available() -> bool:
    return Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()


@contextmanager
def chromium(profile: Path) -> Iterator[webdriver.Chrome]:
    """A fresh browser (its own --user-data-dir); quit (and its processes gone) at exit."""
    if not available():
        raise RuntimeError("chromium/chromedriver missing: run `make tools` (hack/tools.sh)")
    profile.mkdir(parents=True, exist_ok=True)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver: webdriver.Chrome) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def wait_for_title(driver: webdriver.Chrome, title: str, timeout: float = 30) -> None:
    """Wait until the page after a click or submit is the one titled `title`.

    A click returns once the browser has taken it, not always once the next page
    has loaded: under load the old page's title was read (seen once in make test).
    """
    with suppress(TimeoutException):  # the assertion below says what was there instead
        WebDriverWait(driver, timeout).until(expected_conditions.title_is(title))
    assert driver.title == title
