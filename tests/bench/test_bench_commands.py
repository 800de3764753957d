"""`gamegym bench JOB`: one subcommand per benchmark module, each with only its own flags and
an example in its help; the one-command spellings of before still run the same job, with one
deprecation line on stderr."""
import json

import pytest
from conftest import TICTACTOE, gamegym

from gamegym import bench
from gamegym.bench import calibration, learning, peer, replay, throughput
from gamegym.cli.main import build_parser, parse_args

NAMES = {"throughput", "learning", "replay", "calibrate", "peer"}

# old spelling -> the subcommand spelling of the same job, and the command that runs it
OLD_SPELLINGS = [
    (["bench"], ["bench", "throughput"], throughput.cmd_throughput),
    (["bench", "--game", TICTACTOE, "--seconds", "3", "--learner", "alphazero,muzero"],
     ["bench", "throughput", "--game", TICTACTOE, "--seconds", "3", "--learner",
      "alphazero,muzero"], throughput.cmd_throughput),
    (["bench", "--learning", TICTACTOE, "--minutes", "0.5", "--opponents", "solver"],
     ["bench", "learning", TICTACTOE, "--minutes", "0.5", "--opponents", "solver"],
     learning.cmd_learning),
    (["bench", "--minutes", "3", f"--learning={TICTACTOE}", "--replay", "window", "curious",
      "--seeds", "0", "1"],
     ["bench", "replay", TICTACTOE, "--minutes", "3", "--modes", "window", "curious",
      "--seeds", "0", "1"], replay.cmd_replay),
    (["bench", "--learning", TICTACTOE, "--adapt-to", "games.tictactoe:TicTacToeVariant",
      "--pretrain", "1"],
     ["bench", "replay", TICTACTOE, "--adapt-to", "games.tictactoe:TicTacToeVariant",
      "--pretrain", "1"], replay.cmd_replay),
    (["bench", "--calibrate", "--pair", "mcts:10", "random", "--games", "2"],
     ["bench", "calibrate", "--pair", "mcts:10", "random", "--games", "2"],
     calibration.cmd_calibrate),
    (["bench", "--peer", "openspiel", "--seconds", "0.5"],
     ["bench", "peer", "openspiel", "--seconds", "0.5"], peer.cmd_peer),
]


@pytest.mark.parametrize("old, new, command", OLD_SPELLINGS,
                         ids=[" ".join(old[1:3]) or "bare" for old, _, _ in OLD_SPELLINGS])
def test_an_old_spelling_says_so_once_and_runs_the_same_job(old, new, command, capsys):
    old_args = parse_args(old)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "deprecated" in lines[0]
    assert lines[0].endswith("gamegym " + " ".join(new))          # the spelling to use now
    new_args = parse_args(new)
    assert capsys.readouterr().err == ""                            # the new one: no notice
    assert old_args.run is command and vars(old_args) == vars(new_args)


def test_the_bench_collects_one_subcommand_per_module(capsys):
    assert {module.COMMAND for module in bench.SUBCOMMANDS} == NAMES
    with pytest.raises(SystemExit) as stop:
        parse_args(["bench", "--help"])
    assert stop.value.code == 0
    listed = capsys.readouterr().out
    assert all(f"    {name}" in listed for name in NAMES)


@pytest.mark.parametrize("name", sorted(NAMES))
def test_each_subcommand_has_a_help_text_with_an_example(name, capsys):
    with pytest.raises(SystemExit) as stop:
        parse_args(["bench", name, "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert f"usage: gamegym bench {name}" in text
    example = text[text.index("example"):]
    assert f"gamegym bench {name}" in example


@pytest.mark.parametrize("argv", [
    ["bench", "learning", TICTACTOE, "--seconds", "3"],      # a throughput flag
    ["bench", "throughput", "--minutes", "3"],                # a learning flag
    ["bench", "calibrate", "--learner", "muzero"],            # nobody's flag there
    ["bench", "peer", "openspiel", "--pair", "a", "b"],       # a calibrate flag
    ["bench", "replay", TICTACTOE, "--keep", "folder"],       # a learning flag
])
def test_a_subcommand_takes_only_its_own_flags(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


def test_an_old_spelling_with_a_flag_of_no_job_is_still_refused(capsys):
    with pytest.raises(SystemExit):
        parse_args(["bench", "--learning", TICTACTOE, "--no-such-flag"])
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


@pytest.mark.slow
def test_an_old_spelling_runs_from_the_console():
    done = gamegym("bench", "--calibrate", "--game", TICTACTOE, "--pair", "random", "solver",
                   "--games", "2", "--json")
    assert done.returncode == 0, done.stderr
    notices = [line for line in done.stderr.splitlines() if "deprecated" in line]
    assert len(notices) == 1 and "gamegym bench calibrate --game" in notices[0]
    figures = json.loads(done.stdout)
    row, = figures["pairs"]
    assert (row["player"], row["opponent"], row["games"], row["wins"]) == (
        "random", "solver", 2, 0)
