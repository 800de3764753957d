"""Where the browser tests find their Chromium (tests/chromium.py), and that without one they
are skipped with a one-line reason unless a browser is required (CI)."""

from pathlib import Path

import pytest
from chromium import chromium_or_skip, find_chromium, playwright_builds


def executable(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def machine(tmp_path):
    """A machine with every kind of Chromium, in folders of tmp_path: its environment and
    the Debian and snap paths, as find_chromium takes them."""
    bin_dir = tmp_path / "bin"
    places = {
        "debian": executable(tmp_path / "usr-bin" / "chromium"),
        "on_path": executable(bin_dir / "google-chrome"),
        "playwright": executable(
            tmp_path / "cache" / "ms-playwright" / "chromium-1200" / "chrome-linux" / "chrome"
        ),
        "snap": executable(tmp_path / "snap" / "chromium"),
    }
    environ = {"PATH": str(bin_dir), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return places, environ, {"debian": (places["debian"],), "snap": (places["snap"],)}


def test_each_place_is_tried_in_order(machine):
    places, environ, paths = machine
    for name in ("debian", "on_path", "playwright", "snap"):
        assert find_chromium(environ, **paths) == places[name]
        Path(places[name]).unlink()
    assert find_chromium(environ, **paths) is None


def test_gamegym_chromium_comes_first_and_a_wrong_one_is_named(machine, tmp_path):
    places, environ, paths = machine
    chosen = executable(tmp_path / "elsewhere" / "chrome")
    assert find_chromium({**environ, "GAMEGYM_CHROMIUM": chosen}, **paths) == chosen
    missing = {**environ, "GAMEGYM_CHROMIUM": str(tmp_path / "none")}
    with pytest.raises(ValueError, match=r"GAMEGYM_CHROMIUM=.*none is not an executable file"):
        find_chromium(missing, **paths)
    with pytest.raises(pytest.fail.Exception, match="is not an executable file"):
        chromium_or_skip(missing, **paths)  # asked for by name: a failure, not a skip


def test_a_snap_on_the_path_comes_after_playwrights_build(machine, tmp_path):
    places, environ, paths = machine
    Path(places["debian"]).unlink()
    Path(places["on_path"]).unlink()
    snap_on_path = executable(tmp_path / "bin" / "chromium")
    found = find_chromium(environ, debian=paths["debian"], snap=(snap_on_path,))
    assert found == places["playwright"]


def test_playwrights_builds_newest_first(tmp_path):
    cache = tmp_path / "ms-playwright"
    old = executable(cache / "chromium-999" / "chrome-linux" / "chrome")
    new = executable(cache / "chromium-1187" / "chrome-linux64" / "chrome")
    executable(cache / "chromium_headless_shell-1187" / "chrome-linux" / "headless_shell")
    (cache / "chromium-1190" / "chrome-linux").mkdir(parents=True)  # a download cut short
    assert playwright_builds({"PLAYWRIGHT_BROWSERS_PATH": str(cache)}) == [Path(new), Path(old)]


def test_without_a_browser_the_tests_skip_saying_so_unless_one_is_required(machine):
    places, environ, paths = machine
    assert chromium_or_skip(environ, **paths) == places["debian"]
    with pytest.raises(pytest.skip.Exception, match="GAMEGYM_SKIP_BROWSER=1"):
        chromium_or_skip({**environ, "GAMEGYM_SKIP_BROWSER": "1"}, **paths)
    for place in places.values():
        Path(place).unlink()
    with pytest.raises(pytest.skip.Exception) as skipped:
        chromium_or_skip(environ, **paths)
    reason = str(skipped.value)
    assert reason.startswith("no Chromium found") and "apt-get install chromium" in reason
    assert "\n" not in reason
    with pytest.raises(pytest.fail.Exception, match=r"GAMEGYM_REQUIRE_BROWSER=1\)$"):
        chromium_or_skip({**environ, "GAMEGYM_REQUIRE_BROWSER": "1"}, **paths)
