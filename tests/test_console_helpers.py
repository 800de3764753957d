"""Progress bars: drawn on a terminal (games done, elapsed, expected end), absent otherwise."""

import io
import time

from conftest import TICTACTOE

from gamegym.console import ProgressBars


def test_bars_on_a_terminal_show_progress_elapsed_and_the_expected_end():
    out = io.StringIO()
    with ProgressBars(enabled=True, file=out) as bars:
        games = bars.add("iteration:3 vs solver", total=4, unit="games")
        for done in range(1, 4):
            bars.update(games, completed=done)
        bars.update(games, description="iteration:3 vs solver, nearly")
    text = out.getvalue()
    assert "iteration:3 vs solver, nearly" in text and "3/4" in text and "games" in text
    assert "0:00:0" in text  # elapsed


def test_no_bars_where_the_output_is_not_a_terminal():
    with ProgressBars(file=io.StringIO()) as bars:  # a file, not a terminal: off
        assert not bars.enabled
        bar = bars.add("x", total=3, unit="games")
        bars.update(bar, completed=1)  # no-ops
        bars.remove(bar)
    assert bar is None


def test_a_timed_bar_fills_with_the_clock_and_goes_when_done():
    out = io.StringIO()
    with ProgressBars(enabled=True, file=out) as bars:
        with bars.timed("search ceiling", 30.0):
            time.sleep(0.6)
            (task,) = bars._progress.tasks
            assert 0.2 < task.completed < 30.0 and task.total == 30.0
        assert bars._progress.tasks == []
    assert "search ceiling" in out.getvalue()
    with ProgressBars(file=io.StringIO()) as bars, bars.timed("off", 1.0):  # a no-op
        assert not bars.enabled


def test_check_shows_the_random_games_it_has_played(drawn_bars, capsys):
    from gamegym.cli.main import main

    assert main(["check", "--game", TICTACTOE, "--games", "7"]) == 0
    text = drawn_bars.getvalue()
    assert f"checking {TICTACTOE}" in text and "7/7" in text and "random games" in text
    assert "no contract violations found" in capsys.readouterr().out
