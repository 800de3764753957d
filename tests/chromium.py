"""The Chromium the browser tests (tests/serve/test_serve_browser.py) drive through Playwright:
found where Debian, Ubuntu, Google and Playwright put one, never downloaded.

`find_chromium()` looks, in this order, at
1. `$GAMEGYM_CHROMIUM` (an executable file; anything else is an error naming it);
2. Debian's `/usr/bin/chromium` (`apt-get install chromium`);
3. `chromium`, `google-chrome`, `google-chrome-stable` on the PATH (Google's .deb);
4. Playwright's own builds, newest first (`python -m playwright install chromium`, in
   `$PLAYWRIGHT_BROWSERS_PATH`, else `$XDG_CACHE_HOME/ms-playwright` or
   `~/.cache/ms-playwright`);
5. Ubuntu's `/usr/bin/chromium-browser` and `/snap/bin/chromium` (a snap: last, because snap
   confinement may keep it from the profile folder Playwright makes under /tmp).

`chromium_or_skip()` is what the tests' fixture calls: the path, or a skip with a one-line
reason when there is none (or `GAMEGYM_SKIP_BROWSER=1`); with `GAMEGYM_REQUIRE_BROWSER=1`
(CI) a missing browser fails instead.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

DEBIAN = ("/usr/bin/chromium",)
ON_PATH = ("chromium", "google-chrome", "google-chrome-stable")
SNAP = ("/usr/bin/chromium-browser", "/snap/bin/chromium")
INSTALL = (
    "apt-get install chromium (Debian) or python -m playwright install --with-deps chromium "
    "(Ubuntu, others)"
)


def _executable(path: str | Path) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def playwright_builds(environ: Mapping[str, str]) -> list[Path]:
    """The Chromium executables in Playwright's browser folder, newest revision first."""
    folder = environ.get("PLAYWRIGHT_BROWSERS_PATH", "")
    if folder in ("", "0"):  # 0: inside the playwright package, where we do not look
        cache = environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME", "~"), ".cache")
        folder = os.path.join(os.path.expanduser(cache), "ms-playwright")
    found = [p for p in Path(folder).glob("chromium-*/chrome-linux*/chrome") if _executable(p)]

    def revision(path: Path) -> int:
        digits = re.fullmatch(r"chromium-(\d+)", path.parent.parent.name)
        return int(digits.group(1)) if digits else -1

    return sorted(found, key=revision, reverse=True)


def find_chromium(
    environ: Mapping[str, str] | None = None,
    debian: Sequence[str] = DEBIAN,
    snap: Sequence[str] = SNAP,
) -> str | None:
    """The first Chromium of the module's list, or None.  ValueError when $GAMEGYM_CHROMIUM
    names no executable file (a browser asked for by name and missing is not a skip)."""
    environ = os.environ if environ is None else environ
    chosen = environ.get("GAMEGYM_CHROMIUM")
    if chosen:
        if not _executable(chosen):
            raise ValueError(f"GAMEGYM_CHROMIUM={chosen} is not an executable file")
        return chosen
    for path in debian:
        if _executable(path):
            return path
    search = environ.get("PATH", os.defpath)
    for command in ON_PATH:
        found = shutil.which(command, path=search)
        if found and not (found in snap or found.startswith("/snap/")):  # a snap comes last
            return found
    builds = playwright_builds(environ)
    if builds:
        return str(builds[0])
    return next((path for path in snap if _executable(path)), None)


def chromium_or_skip(
    environ: Mapping[str, str] | None = None,
    debian: Sequence[str] = DEBIAN,
    snap: Sequence[str] = SNAP,
) -> str:
    """The Chromium to drive; else the test is skipped with a one-line reason, or fails when
    $GAMEGYM_REQUIRE_BROWSER is 1 or $GAMEGYM_CHROMIUM names no executable file."""
    environ = os.environ if environ is None else environ
    if environ.get("GAMEGYM_SKIP_BROWSER") == "1":
        pytest.skip("GAMEGYM_SKIP_BROWSER=1")
    try:
        found, problem = find_chromium(environ, debian, snap), ""
    except ValueError as error:
        found, problem = None, str(error)
    if problem:
        pytest.fail(problem)
    if found is not None:
        return found
    reason = (
        "no Chromium found (GAMEGYM_CHROMIUM, /usr/bin/chromium, chromium or google-chrome on "
        f"the PATH, Playwright's builds, Ubuntu's snap): {INSTALL}"
    )
    if environ.get("GAMEGYM_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (GAMEGYM_REQUIRE_BROWSER=1)")
    pytest.skip(reason)
