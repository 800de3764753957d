"""The web page in a real browser: `gamegym serve` as a subprocess on a free loopback port,
the system's Chromium driven by Playwright.

tests/chromium.py finds the browser (Debian's /usr/bin/chromium, Google Chrome, Playwright's
own build, Ubuntu's snap or $GAMEGYM_CHROMIUM); without one these tests are skipped, saying
so, or fail when GAMEGYM_REQUIRE_BROWSER=1 (CI).  GAMEGYM_SKIP_BROWSER=1 skips them even when
a browser is there.  Screenshots go to the test's tmp_path, and also to
the folder GAMEGYM_SCREENSHOTS names when it is set; then the gym also trains longer and is
evaluated against the solver too, so the charts have more to show (the README's pictures:
`GAMEGYM_SCREENSHOTS=docs python -m pytest -n 0 tests/serve/test_serve_browser.py`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from chromium import chromium_or_skip
from conftest import SMALL

from gamegym.config import GymConfig
from gamegym.game.graph import load_game
from gamegym.presets import INITIAL_MODELS, PRESETS
from gamegym.runtime.gym import GameGym

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM_ARGS = [
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PLAYED = "#play-board[data-state=your-turn], #play-board[data-state=over]"


@pytest.fixture(scope="module")
def browser():
    executable = chromium_or_skip()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright is missing: pip install -e '.[test]'")
    args = CHROMIUM_ARGS + (["--no-sandbox"] if os.geteuid() == 0 else [])
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=args)
        yield chromium
        chromium.close()


def preset_session(folder: Path, preset: str, changes: dict | None = None) -> Path:
    """A session as `gamegym new --config --initial-model` makes it, with a bundled preset's
    network and starter model; made in this process, where TensorFlow is imported once (a
    `gamegym new` imports it in a child process for every session)."""
    import tensorflow  # noqa: F401  (the starter model is then published here, not in a child)

    spec = PRESETS[preset]
    config = GymConfig.from_dict(
        {
            "game": spec["game"],
            "game_args": spec["game_args"],
            "network": spec["network"],
            **(changes or {}),
        }
    )
    path = folder / preset
    GameGym(path, config=config, initial_model=INITIAL_MODELS / f"{preset}.keras")
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


@contextlib.contextmanager
def served(session: Path, log: Path):
    """`gamegym serve SESSION --port P` running; yields the page's address."""
    port = free_port()
    with open(log, "w") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "gamegym", "serve", str(session), "--port", str(port)],
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, f"gamegym serve exited: {log.read_text()}"
            try:
                get_json(url + "api/session")
                break
            except OSError:
                assert time.monotonic() < deadline, f"no answer from {url}: {log.read_text()}"
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def open_page(browser, url: str):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    page.wait_for_selector("body[data-ready=yes]")
    return page, errors


def shoot(target, tmp_path: Path, name: str) -> Path:
    """A screenshot of a page or an element, kept in tmp_path (and GAMEGYM_SCREENSHOTS)."""
    path = tmp_path / name
    target.screenshot(path=str(path))
    if os.environ.get("GAMEGYM_SCREENSHOTS"):
        shutil.copy(path, Path(os.environ["GAMEGYM_SCREENSHOTS"]) / name)
    return path


def check_history(url: str, page, game_spec: str, game_args: dict) -> dict:
    """The game on the page, from the server: every move legal where it was played."""
    state = get_json(url + "api/games/" + page.get_attribute("#play-board", "data-game"))
    graph = load_game(game_spec, game_args)
    vertex = graph.roots[0]
    for ply, played in enumerate(state["history"]):
        assert played["side"] == ply % 2
        assert played["action"] in graph.actions_at(vertex), (ply, played)
        vertex = graph.child_by_action(vertex, played["action"])
    assert state["position"]["ply"] == len(state["history"])
    return state


def points(page, chart: str) -> int:
    return int(page.get_attribute(f"#{chart}", "data-points") or 0)


def test_watch_a_session_learn_and_play_it_out(browser, tmp_path):
    pictures = bool(os.environ.get("GAMEGYM_SCREENSHOTS"))
    changes = {
        "selfplay": SMALL["selfplay"],
        "train": SMALL["train"],
        "status_interval": 1.0,
        "evaluate": {"every": 1, "opponents": ["random"], "games": 4, "search": {"searchcount": 8}},
    }
    if pictures:
        search = {**SMALL["selfplay"]["search"], "searchcount": 32}
        changes["selfplay"] = {**SMALL["selfplay"], "search": search}
        changes["train"] = {**SMALL["train"], "min_samplecount": 400, "min_new_samples": 400}
        changes["evaluate"] = {
            "every": 1,
            "opponents": ["random", "solver"],
            "games": 10,
            "search": {"searchcount": 32},
        }
    session = preset_session(tmp_path, "tictactoe", changes)
    with served(session, tmp_path / "serve.log") as url:
        page, errors = open_page(browser, url)
        assert points(page, "chart-scores") == 0
        # a gym trains the session meanwhile: the page follows it, and disturbs nothing; the
        # gym is stopped (SIGTERM: a clean stop) once an iteration has been trained and rated
        with open(tmp_path / "gym.log", "w") as output:
            gym = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "gamegym",
                    "resume",
                    str(session),
                    "--max-iterations",
                    "8" if pictures else "50",
                    "--max-seconds",
                    "900",
                ],
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        try:
            page.wait_for_selector("#running.on", timeout=300_000)
            page.wait_for_function(
                "['chart-scores', 'chart-loss'].every(id => Number("
                "document.getElementById(id).dataset.points || 0) > 0)",
                timeout=900_000,
            )
            if not pictures:
                gym.send_signal(signal.SIGTERM)
            assert gym.wait(timeout=900) == 0, (tmp_path / "gym.log").read_text()
        finally:
            if gym.poll() is None:
                gym.kill()
                gym.wait(timeout=60)
        page.wait_for_selector("#running:not(.on)", timeout=30_000)
        assert points(page, "chart-loss") > 0 and points(page, "chart-rate") > 0
        assert int(page.inner_text("#stat-iteration")) >= 1
        shoot(page.locator("#progress"), tmp_path, "serve-progress.png")

        # a whole game against the newest iteration, by clicks
        page.reload()
        page.wait_for_selector("body[data-ready=yes]")
        page.fill("#searchcount", "16")
        page.click("#new-game")
        page.wait_for_selector(PLAYED, timeout=120_000)
        rng = np.random.default_rng(0)
        for _ in range(5):
            if page.get_attribute("#play-board", "data-state") == "over":
                break
            ply = int(page.get_attribute("#play-board", "data-ply"))
            if ply:  # a click on a taken cell is refused on the page, nothing is sent
                page.click("#play-board .cell:has(.piece) >> nth=0")
                assert page.inner_text("#play-error") == "no move starts there"
            targets = page.locator("#play-board .cell.target")
            targets.nth(int(rng.integers(targets.count()))).click()
            page.wait_for_function(
                f"document.getElementById('play-board').dataset.ply > {ply}"
                " && document.getElementById('play-board').dataset.state"
                " !== 'busy'",
                timeout=120_000,
            )
            check_history(url, page, "games.tictactoe:TicTacToe", {})
        state = check_history(url, page, "games.tictactoe:TicTacToe", {})
        assert page.get_attribute("#play-board", "data-state") == "over"
        assert state["position"]["over"]
        assert page.locator("#play-board .piece").count() == len(state["history"])
        result = page.inner_text("#play-result")
        assert result == f"{state['position']['result']}: {state['outcome']}"
        assert any(line in result for line in ("X won", "O won", "a draw"))
        shoot(page.locator("#play"), tmp_path, "serve-play.png")

        # the model moves first when asked
        page.select_option("#side", "second")
        page.click("#new-game")
        page.wait_for_selector("#play-board[data-state=your-turn][data-ply='1']", timeout=120_000)
        assert page.locator("#play-board .piece").count() == 1

        # a self-play game replayed with its visit shares
        page.wait_for_selector("#selfplay-list li[data-key]", timeout=30_000)
        page.click("#selfplay-list li[data-key] >> nth=0")
        page.wait_for_selector("#replay-board .cell")
        page.click("#replay-next")
        assert page.get_attribute("#replay-board", "data-step") == "1"
        assert page.locator("#replay-shares li").count() > 0
        assert page.locator("#replay-board .piece").count() == 1
        shoot(page.locator("#selfplay"), tmp_path, "serve-replay.png")
        assert not errors


def test_connect_four_and_santorini_by_clicks(browser, tmp_path):
    c4 = preset_session(tmp_path, "connectfour")
    with served(c4, tmp_path / "c4.log") as url:
        page, errors = open_page(browser, url)
        page.fill("#searchcount", "8")
        page.click("#new-game")
        page.wait_for_selector("#play-board[data-state=your-turn]", timeout=120_000)
        page.click("#play-board [data-cell='3']")  # the top of column 4: the disc drops
        page.wait_for_selector("#play-board[data-ply='2'][data-state=your-turn]", timeout=120_000)
        state = check_history(url, page, "games.connectfour:ConnectFour", {"rows": 6, "columns": 7})
        assert state["history"][0]["action"] == 3
        assert page.locator("#play-board [data-cell='38'] .piece.p0").count() == 1
        assert page.locator("#play-board .piece").count() == 2
        assert page.locator("#play-board .cell.last .piece.p1").count() == 1  # its reply
        shoot(page.locator("#play"), tmp_path, "serve-connectfour.png")
        assert not errors

    santorini = preset_session(tmp_path, "santorini-3-1")
    args = PRESETS["santorini-3-1"]["game_args"]
    with served(santorini, tmp_path / "santorini.log") as url:
        page, errors = open_page(browser, url)
        page.fill("#searchcount", "8")
        page.click("#new-game")
        page.wait_for_selector("#play-board[data-state=your-turn]", timeout=120_000)
        page.click("#play-board [data-cell='4']")  # place the worker in the centre
        page.wait_for_selector("#play-board[data-ply='2'][data-state=your-turn]", timeout=120_000)
        # the only worker is chosen by itself: click where it goes, then where it builds
        assert page.locator("#play-board .cell.selected").count() == 1
        destination = page.get_attribute("#play-board .cell.target >> nth=0", "data-cell")
        page.click(f"#play-board [data-cell='{destination}']")
        assert page.locator("#play-board .cell.selected").count() == 2
        page.click(f"#play-board [data-cell='{destination}']")  # taken back
        assert page.locator("#play-board .cell.selected").count() == 1
        page.click(f"#play-board [data-cell='{destination}']")
        page.click("#play-board .cell.target >> nth=0")
        page.wait_for_selector(
            "#play-board[data-ply='4'], #play-board[data-state=over]", timeout=120_000
        )
        page.wait_for_selector(PLAYED, timeout=120_000)
        state = check_history(url, page, "games.santorini:Santorini", args)
        assert len(state["history"]) >= 3 and "builds" in state["history"][2]["text"]
        assert page.locator("#play-board .piece").count() == 2
        shoot(page.locator("#play"), tmp_path, "serve-santorini.png")
        assert not errors
