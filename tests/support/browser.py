"""Real headless Chromium for the viewer's tests (tests/faces/test_viewer.py) and its bench
(bench/report.py): Debian's `chromium` and `chromium-driver` through selenium, given their paths
(SE_OFFLINE: selenium never downloads a browser or a driver), with the performance log on so that
a test sees every request the page made."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import wait_for as polled

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"


def missing() -> str | None:
    """Why the browser cannot be had here, or None."""
    for path in (CHROMIUM, DRIVER):
        if not (Path(path).exists() or shutil.which(Path(path).name)):
            return f"{path} is not installed (.ci/run installs Debian's chromium and chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


@contextlib.contextmanager
def chromium(width: int = 1500, height: int = 1300) -> Iterator:
    """A headless Chromium driven by selenium, quit on the way out."""
    os.environ["SE_OFFLINE"] = "true"
    os.environ["SE_AVOID_STATS"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-default-apps", "--disable-extensions", f"--window-size={width},{height}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER if Path(DRIVER).exists() else shutil.which("chromedriver")),
                              options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(condition, *, timeout: float = 20.0, what: str = "the condition"):
    """`condition()` once it is truthy, polled until `timeout` seconds (then AssertionError):
    tests.conftest.wait_for with keywords."""
    return polled(condition, timeout, what, interval=0.02)


def open_page(driver, url: str, *, timeout: float = 30.0) -> float:
    """Load `url` and wait until the viewer says it is ready; the seconds it took."""
    start = time.monotonic()
    driver.get(url)
    wait_for(lambda: driver.execute_script("return document.body && document.body.dataset.ready"),
             timeout=timeout, what="the viewer's ready flag")
    return time.monotonic() - start


def requests(driver) -> list[str]:
    """The URL of every request the page made since the last call (the performance log's
    Network.requestWillBeSent events)."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def memory_mb(driver) -> dict[str, float]:
    """The page's JavaScript heap and the resident memory of the whole browser (every process of
    the driver's Chromium, by proportional set size: shared pages counted once), in MB."""
    driver.execute_cdp_cmd("Performance.enable", {})
    metrics = {m["name"]: m["value"] for m in driver.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]}
    return {"js_heap_mb": metrics.get("JSHeapUsedSize", 0) / 1e6, "browser_pss_mb": _browser_pss(driver) / 1e6}


def _browser_pss(driver, *, renderers_only: bool = False) -> float:
    """The proportional set size in bytes of the driver's descendants (the browser's processes),
    or of its renderer processes only (the pages')."""
    pid = driver.service.process.pid
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(proc.name))
    total, todo = 0.0, list(children.get(pid, []))
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            if renderers_only and b"--type=renderer" not in Path(f"/proc/{p}/cmdline").read_bytes():
                continue
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def renderer_pss_mb(driver) -> float:
    """The proportional set size of the browser's renderer processes (the page's), in MB."""
    return _browser_pss(driver, renderers_only=True) / 1e6
