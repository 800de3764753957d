"""Config validation, JSON round trip and the fields a resume may not change."""

import json

import pytest

from gamegym.config import ConfigError, GymConfig

GAME = "games.tictactoe:TicTacToe"


def test_json_round_trip(tmp_path):
    config = GymConfig(
        game=GAME, seed=3, selfplay={"search": {"searchcount": 17}}, train={"epochs": 2}
    )
    path = tmp_path / "config.json"
    path.write_text(config.to_json())
    again = GymConfig.from_json_file(path)
    assert again == config
    assert again.selfplay.search.searchcount == 17 and again.train.epochs == 2


@pytest.mark.parametrize(
    "data,message",
    [
        (
            {"game": GAME, "selfplay": {"search": {"serchcount": 3}}},
            "unknown config field 'selfplay.search.serchcount'; did you mean "
            "'selfplay.search.searchcount'?",
        ),
        (
            {"game": GAME, "selfplay": {"searchcount": 3}},
            "unknown config field 'selfplay.searchcount'; it is a field of the search "
            "section: 'selfplay.search.searchcount'",
        ),
        (
            {"game": GAME, "selfplay": {"search": "gumbel"}},
            "config field 'selfplay.search' is the search section (a JSON object), got "
            "'gumbel'; the root rule is 'selfplay.search.rule'",
        ),
        ({"game": GAME, "trian": {}}, "unknown config field 'trian'; did you mean 'train'?"),
        (
            {"game": GAME, "selfplay": {"search": {"searchcount": 0}}},
            "config field 'selfplay.search.searchcount' must be in [1, 1000000], got 0",
        ),
        (
            {"game": GAME, "train": {"validation_split": 0.95}},
            "config field 'train.validation_split' must be in [0.0, 0.9], got 0.95",
        ),
        (
            {"game": GAME, "train": {"learner": "alphago"}},
            "config field 'train.learner' must be one of ['alphazero', ",
        ),
        (
            {"game": GAME, "train": {"compile": "jit"}},
            "config field 'train.compile' must be one of ['auto', 'xla', 'traced'], got 'jit'",
        ),
        (
            {"game": GAME, "selfplay": {"search": {"threads": "8"}}},
            "config field 'selfplay.search.threads' must be an integer, got '8'",
        ),
        (
            {"game": GAME, "selfplay": {"search": {"solver": "yes"}}},
            "config field 'selfplay.search.solver' must be true or false, got 'yes'",
        ),
        (
            {"game": GAME, "train": {"value_td_steps": -1}},
            "config field 'train.value_td_steps' must be in [0, 10000], got -1",
        ),
        ({"game": "tictactoe"}, "config field 'game' must look like 'package.module:ClassName'"),
        (
            {"game": GAME, "evaluate": {"opponents": ["random", "mcts:0"]}},
            "config field 'evaluate.opponents' has a bad entry: player 'mcts:0' needs "
            "mcts:SIMULATIONS with simulations >= 1",
        ),
        (
            {"game": GAME, "evaluate": {"opponents": ["mcts:x"]}},
            "config field 'evaluate.opponents' has a bad entry: player 'mcts:x'",
        ),
        (
            {"game": GAME, "evaluate": {"opponents": "mcts:100"}},
            "config field 'evaluate.opponents' must be a list of players",
        ),
        (
            {"game": GAME, "train": {"min_samplecount": 10, "max_samplecount": 5}},
            "config field 'train.max_samplecount' (5) must be >= train.min_samplecount (10)",
        ),
        (
            {"game": GAME, "predict": {"batch_timeout_ms": -1}},
            "config field 'predict.batch_timeout_ms' must be in [0.0, 10000.0], got -1",
        ),
        (
            {"game": GAME, "predict": {"use_gpu": "no"}},
            "config field 'predict.use_gpu' must be true or false, got 'no'",
        ),
        (
            {"game": GAME, "predict": {"int8_value_tolerance": 2.5}},
            "config field 'predict.int8_value_tolerance' must be in [0.0, 2.0], got 2.5",
        ),
        (
            {"game": GAME, "selfplay": {"nice": 25}},
            "config field 'selfplay.nice' must be in [0, 19], got 25",
        ),
        (
            {"game": GAME, "train": {"learning_rate_schedule": [[50, 1e-3], [20, 3e-4]]}},
            "config field 'train.learning_rate_schedule' needs iterations that are integers, "
            "above 0 and rising, got 20 after 50",
        ),
        (
            {"game": GAME, "train": {"learning_rate_schedule": [[50, 0]]}},
            "config field 'train.learning_rate_schedule' needs rates in (0.0, 10.0], got 0 at "
            "iteration 50",
        ),
        (
            {"game": GAME, "train": {"learning_rate_schedule": [50, 1e-3]}},
            "config field 'train.learning_rate_schedule' must be a list of [iteration, rate] "
            "pairs, got the entry 50",
        ),
        (
            {"game": GAME, "train": {"learning_rate_schedule": {"50": 1e-3}}},
            "config field 'train.learning_rate_schedule' must be a list of [iteration, rate] pairs",
        ),
        (
            {"game": GAME, "train": {"weight_average": "swa"}},
            "config field 'train.weight_average' must be one of ['none', 'ema'], got 'swa'",
        ),
        (
            {"game": GAME, "train": {"weight_average": "ema", "weight_average_decay": 1.0}},
            "config field 'train.weight_average_decay' must be a number in (0, 1) (the share of "
            "the previous average kept each iteration), got 1.0",
        ),
        (
            {"game": GAME, "train": {"weight_average_decay": 0}},
            "config field 'train.weight_average_decay' must be a number in (0, 1)",
        ),
        (
            {"game": GAME, "train": {"weight_average_decay": "0.9"}},
            "config field 'train.weight_average_decay' must be a number in (0, 1) (the share of "
            "the previous average kept each iteration), got '0.9'",
        ),
        (
            {"game": GAME, "train": {"weight_average_decay": True}},
            "config field 'train.weight_average_decay' must be a number in (0, 1)",
        ),
    ],
)
def test_bad_values_name_the_field(data, message):
    with pytest.raises(ConfigError) as error:
        GymConfig.from_dict(data)
    assert message in str(error.value)


def test_unreadable_config_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="is not valid JSON"):
        GymConfig.from_json_file(path)
    with pytest.raises(ConfigError, match="cannot read config file"):
        GymConfig.from_json_file(tmp_path / "missing.json")


def test_resume_refuses_fixed_fields_and_accepts_others():
    stored = GymConfig(game=GAME)
    stored.check_resume(stored.updated({"selfplay": {"search": {"searchcount": 10}}}))  # allowed
    with pytest.raises(ConfigError, match="'network' cannot change on resume"):
        stored.updated({"network": {"width": 128}}).check_resume(stored)
    with pytest.raises(ConfigError, match="'game' cannot change on resume"):
        stored.updated({"game": "games.connectfour:ConnectFour"}).check_resume(stored)


def test_every_player_spec_is_an_evaluate_opponent():
    specs = [
        "previous",
        "random",
        "solver",
        "alphabeta:5",
        "alphabeta0:4",
        "mcts:1000",
        "iteration:3",
    ]
    assert GymConfig(game=GAME, evaluate={"opponents": specs}).evaluate.opponents == specs


def test_updated_keeps_other_fields():
    config = GymConfig(
        game=GAME, selfplay={"search": {"searchcount": 5, "threads": 2}, "max_moves": 30}
    )
    changed = config.updated({"selfplay": {"search": {"searchcount": 9}}})
    search = changed.selfplay.search
    assert search.searchcount == 9 and search.threads == 2 and changed.selfplay.max_moves == 30
    assert json.loads(changed.to_json())["selfplay"]["search"]["searchcount"] == 9


def test_a_learning_rate_schedule_steps_at_its_iterations_and_survives_the_json(tmp_path):
    data = {
        "game": GAME,
        "train": {"learning_rate": 3e-3, "learning_rate_schedule": [[40, 1e-3], [120, 3e-4]]},
    }
    train = GymConfig.from_dict(data).train
    rates = {it: train.learning_rate_at(it) for it in (1, 39, 40, 119, 120, 500)}
    assert rates == {1: 3e-3, 39: 3e-3, 40: 1e-3, 119: 1e-3, 120: 3e-4, 500: 3e-4}
    assert GymConfig.from_dict({"game": GAME}).train.learning_rate_at(999) == 1e-3  # none
    path = tmp_path / "config.json"
    path.write_text(GymConfig.from_dict(data).to_json())
    assert GymConfig.from_json_file(path).train.learning_rate_schedule == [[40, 1e-3], [120, 3e-4]]


# a session's selfplay section as config.json format 2 wrote it: the search settings flat
FORMAT_2_SELFPLAY = {
    "selfplayprocesses": 2,
    "searchthreadcount": 12,
    "search_os_threads": False,
    "search_solver": True,
    "search_core": "python",
    "searchcount": 64,
    "search": "gumbel",
    "gumbel_considered": 8,
    "gumbel_value_scale": 0.2,
    "gumbel_maxvisit_init": 40.0,
    "gumbel_rescale": "node",
    "playout_cap_probability": 0.5,
    "fast_searchcount": 16,
    "exploration_const": 2.0,
    "virtualloss": 2.0,
    "temperature": 1.0,
    "temperature_drop_move": 6,
    "dirichlet_alpha": 0.3,
    "dirichlet_fraction": 0.1,
    "max_moves": 200,
    "gamelog_dump_threshold": 10,
    "evaluation_cache": 100000,
    "positions_per_iteration": 0,
    "nice": 3,
    "backend": "processes",
    "ray_address": "local",
    "ray_selfplayer_cpus": 0.5,
    "ray_predictor_cpus": 0.5,
    "ray_object_store_mib": 128,
}


def test_a_stored_config_with_flat_search_fields_reads_into_the_search_section():
    """A session's config.json of format 2 held the search settings flat in the selfplay
    section (the root rule as `selfplay.search`) and the players' searches per move as
    `evaluate.searchcount`: read, each is in its section's search section."""
    old = {
        **GymConfig(game=GAME).to_dict(),
        "selfplay": dict(FORMAT_2_SELFPLAY),
        "evaluate": {"every": 2, "games": 20, "opponents": ["random"], "searchcount": 30},
    }
    config = GymConfig.from_dict(old, stored=2)
    players = config.evaluate.search
    assert (players.searchcount, players.threads, players.core) == (30, 8, "python")
    search = config.selfplay.search
    assert (search.rule, search.searchcount, search.threads, search.os_threads) == (
        "gumbel",
        64,
        12,
        False,
    )
    assert (search.solver, search.core, search.exploration_const, search.virtualloss) == (
        True,
        "python",
        2.0,
        2.0,
    )
    assert (search.dirichlet_alpha, search.dirichlet_fraction) == (0.3, 0.1)
    assert (
        search.gumbel_considered,
        search.gumbel_value_scale,
        search.gumbel_maxvisit_init,
        search.gumbel_rescale,
    ) == (8, 0.2, 40.0, "node")
    selfplay = config.selfplay
    assert (selfplay.playout_cap_probability, selfplay.fast_searchcount, selfplay.nice) == (
        0.5,
        16,
        3,
    )
    assert GymConfig.from_dict(config.to_dict()) == config  # written in today's layout
    assert GymConfig.from_dict(config.to_dict(), stored=3) == config  # and read as it is
    with pytest.raises(ConfigError, match="'selfplay.searchthreadcount'; it is a field of the "):
        GymConfig.from_dict(old)  # settings of the user's own: today's layout only


def test_a_session_of_format_2_resumes_with_its_search_settings(tmp_path):
    """An old session folder: its config.json (format 2, flat search fields) loads."""
    from gamegym.data.session import Session

    session = Session(tmp_path / "s")
    session.create(GymConfig(game=GAME))
    data = {**GymConfig(game=GAME).to_dict(), "selfplay": dict(FORMAT_2_SELFPLAY)}
    session.config_path.write_text(json.dumps({**data, "format_version": 2}))
    search = session.load_config().selfplay.search
    assert (search.rule, search.searchcount, search.threads) == ("gumbel", 64, 12)


def test_the_search_section_is_the_one_table_of_search_defaults():
    """SearchParams (the search's parameters) and GumbelParams (the Gumbel rule's constants)
    take the defaults the config's search section has."""
    from gamegym.config import SearchConfig
    from gamegym.search.gumbel import GumbelParams
    from gamegym.search.tree import SearchParams

    section, params, gumbel = SearchConfig(), SearchParams(), GumbelParams()
    assert (gumbel.max_considered, gumbel.value_scale) == (
        section.gumbel_considered,
        section.gumbel_value_scale,
    )
    assert (gumbel.maxvisit_init, gumbel.rescale) == (
        section.gumbel_maxvisit_init,
        section.gumbel_rescale,
    )
    mapped = SearchParams.from_config(section)
    same = ("searchcount", "exploration_const", "virtualloss", "dirichlet_alpha", "rule")
    same += ("os_threads", "solver", "gumbel_considered", "gumbel_value_scale")
    same += ("gumbel_maxvisit_init", "gumbel_rescale", "forced_playouts")
    assert {name: getattr(params, name) for name in same} == {
        name: getattr(mapped, name) for name in same
    }
    assert (mapped.threads, mapped.core, mapped.dirichlet_fraction) == (8, "auto", 0.25)


def test_check_config_holds_the_rules_that_span_sections():
    from gamegym.config import check_config

    config = GymConfig(game=GAME)
    check_config(config)  # the defaults keep every rule
    config.selfplay.playout_cap_probability = 0.5
    config.selfplay.fast_searchcount = config.selfplay.search.searchcount + 1
    with pytest.raises(ConfigError, match="'selfplay.fast_searchcount' .* selfplay.search"):
        check_config(config)
    config.selfplay.fast_searchcount = 1
    config.selfplay.positions_per_iteration = 1  # the Trainer waits for 500 samples
    with pytest.raises(ConfigError, match="'selfplay.positions_per_iteration' \\(1\\)"):
        check_config(config)


VALIDATE = """
import sys
from gamegym.config import GymConfig
GymConfig(game="games.tictactoe:TicTacToe")
GymConfig.from_dict({"game": "games.tictactoe:TicTacToe", "train": {"learner": "muzero"},
                     "selfplay": {"search": {"rule": "gumbel"}, "backend": "ray"}})
print(" ".join(sorted(sys.modules)))
"""


@pytest.mark.slow
def test_validating_a_config_imports_neither_the_search_nor_the_runtime_nor_tensorflow():
    """A fresh interpreter that builds and checks configs (a learner, a search rule and a
    backend named) imports the learners the registry names, and not the search, the
    runtime's processes or TensorFlow."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", VALIDATE], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "gamegym.learners.muzero" in out  # what the config names is imported
    heavy = [
        m
        for m in out
        if m.split(".")[0] in ("tensorflow", "keras", "numba", "ray")
        or m == "gamegym.search"
        or m.startswith("gamegym.search.")
        or (m.startswith("gamegym.runtime") and m not in ALLOWED_RUNTIME)
    ]
    assert heavy == []


# the learners' network calls (gamegym.nets.inference) import the messages of the Predictor's
# pipe with PipeService, which lives beside them
ALLOWED_RUNTIME = {"gamegym.runtime", "gamegym.runtime.messages"}


def test_the_players_search_section_keeps_its_own_defaults():
    """evaluate.search is a search section with defaults of its own (50 searches, the Python
    core); keys given change only themselves, and a moved key names its new place."""
    players = GymConfig(game=GAME).evaluate.search
    assert (players.searchcount, players.threads, players.core) == (50, 8, "python")
    changed = GymConfig(game=GAME, evaluate={"search": {"threads": 2}}).evaluate.search
    assert (changed.searchcount, changed.threads, changed.core) == (50, 2, "python")
    assert GymConfig(game=GAME).selfplay.search.core == "auto"  # self-play's own defaults
    with pytest.raises(ConfigError, match="'evaluate.search.searchcount' must be in"):
        GymConfig(game=GAME, evaluate={"search": {"searchcount": 0}})
    with pytest.raises(ConfigError, match="'evaluate.searchcount'; it is a field of the search"):
        GymConfig(game=GAME, evaluate={"searchcount": 10})
