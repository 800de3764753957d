"""Config validation, JSON round trip and the fields a resume may not change."""

import json

import pytest

from gamegym.config import ConfigError, GymConfig

GAME = "games.tictactoe:TicTacToe"


def test_json_round_trip(tmp_path):
    config = GymConfig(game=GAME, seed=3, selfplay={"searchcount": 17}, train={"epochs": 2})
    path = tmp_path / "config.json"
    path.write_text(config.to_json())
    again = GymConfig.from_json_file(path)
    assert again == config
    assert again.selfplay.searchcount == 17 and again.train.epochs == 2


@pytest.mark.parametrize(
    "data,message",
    [
        (
            {"game": GAME, "selfplay": {"serchcount": 3}},
            "unknown config field 'selfplay.serchcount'; did you mean 'selfplay.searchcount'?",
        ),
        ({"game": GAME, "trian": {}}, "unknown config field 'trian'; did you mean 'train'?"),
        (
            {"game": GAME, "selfplay": {"searchcount": 0}},
            "config field 'selfplay.searchcount' must be in [1, 1000000], got 0",
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
            {"game": GAME, "selfplay": {"searchthreadcount": "8"}},
            "config field 'selfplay.searchthreadcount' must be an integer, got '8'",
        ),
        (
            {"game": GAME, "selfplay": {"search_solver": "yes"}},
            "config field 'selfplay.search_solver' must be true or false, got 'yes'",
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
    stored.check_resume(stored.updated({"selfplay": {"searchcount": 10}}))  # allowed
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
    config = GymConfig(game=GAME, selfplay={"searchcount": 5, "max_moves": 30})
    changed = config.updated({"selfplay": {"searchcount": 9}})
    assert changed.selfplay.searchcount == 9 and changed.selfplay.max_moves == 30
    assert json.loads(changed.to_json())["selfplay"]["searchcount"] == 9


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
