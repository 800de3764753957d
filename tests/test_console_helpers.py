"""Progress bars: drawn on a terminal (games done, elapsed, expected end), absent otherwise."""

import io

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
