"""`selfplay.positions_per_iteration`: a searching Selfplayer waits for the next model once the
games it finished with the newest one hold that many positions (ModelWait, shared with the
bootstrapped learner's self-play)."""

import numpy as np
import pytest

from gamegym.config import ConfigError, GymConfig
from gamegym.data.samples import GameRecord
from gamegym.search.mcts import uniform_evaluator
from gamegym.search.play import ModelWait, SearchSelfplay
from games.tictactoe import TicTacToe

TICTACTOE = "games.tictactoe:TicTacToe"


class ChangingService:
    """A uniform model whose iteration goes up after every `every` requests."""

    def __init__(self, graph, every):
        self.evaluate = uniform_evaluator(graph.action_space_size)
        self.every, self.requests = every, 0

    def submit(self, kind, inputs, iteration=-1):
        assert kind == "evaluate"
        self.requests += 1
        n = len(inputs["x"])
        probs, values = self.evaluate([None] * n)
        result = ({"probs": probs, "values": values}, self.requests // self.every)
        return lambda: result


def config(positions: int, search: dict | None = None, **selfplay) -> GymConfig:
    return GymConfig.from_dict(
        {
            "game": TICTACTOE,
            "selfplay": {
                "selfplayprocesses": 1,
                "search": {"searchcount": 8, "threads": 1, **(search or {})},
                "evaluation_cache": 0,
                "positions_per_iteration": positions,
                **selfplay,
            },
            "train": {"min_samplecount": 20, "min_new_samples": 20, "validation_split": 0.0},
        }
    )


def test_a_searching_selfplayer_waits_for_each_new_model(monkeypatch):
    monkeypatch.setattr(ModelWait, "PROBE_SECONDS", 0.0)
    graph = TicTacToe()
    service = ChangingService(graph, every=400)
    driver = SearchSelfplay(graph, service, config(30), np.random.default_rng(0), GameRecord)
    played: dict[int, int] = {}
    idle = 0
    for finished in driver.play(lambda: len(played) >= 3):
        if finished is None:
            idle += 1
            assert driver.pause.played >= 30  # it waits only once its share is played
            continue
        record, iteration = finished
        played[iteration] = played.get(iteration, 0) + len(record)
    assert idle > 0
    # each iteration got its 30 positions and at most one game more (9 moves at most)
    assert all(positions < 30 + 9 for positions in played.values()), played
    assert sorted(played) == sorted(set(played)) and len(played) >= 3


def test_without_a_cap_it_never_waits():
    graph = TicTacToe()
    driver = SearchSelfplay(
        graph, ChangingService(graph, every=10**9), config(0), np.random.default_rng(0), GameRecord
    )
    finished = []
    for game in driver.play(lambda: len(finished) >= 20):
        assert game is not None
        finished.append(game)


def test_a_wait_gives_up_after_its_limit_and_plays_a_round_more(monkeypatch):
    monkeypatch.setattr(ModelWait, "PROBE_SECONDS", 0.0)
    monkeypatch.setattr(ModelWait, "LIMIT", 0.0)
    pause = ModelWait(5, lambda: 0)
    pause.finished(7, 0)
    assert pause.due
    assert list(pause.wait(lambda: False)) == []  # past the limit at once: no model came
    assert not pause.due and pause.iteration == 0


def test_a_cap_too_small_for_the_trainer_is_refused():
    with pytest.raises(ConfigError, match=r"'selfplay\.positions_per_iteration' \(10\)"):
        config(10)
    config(20)  # one Selfplayer's 20 positions are what the Trainer waits for
    with pytest.raises(ConfigError, match=r"selfplay\.selfplayprocesses \(2\)"):
        config(9, selfplayprocesses=2)
