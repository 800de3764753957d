"""What the benchmarks can measure of a learner is declared when it registers
(gamegym.bench.capabilities), not asked through methods of the Learner interface."""

import pytest
from conftest import TICTACTOE

from gamegym.bench import capabilities
from gamegym.config import GymConfig
from gamegym.learners import Learner
from gamegym.search.mcts import SearchParams
from games.tictactoe import TicTacToe

BENCH_ONLY = (
    "searches_in_selfplay",
    "compares_network_paths",
    "stub_search",
    "player_searches",
    "play_rule",
)


def config(learner: str, **sections) -> GymConfig:
    return GymConfig.from_dict({"game": TICTACTOE, "train": {"learner": learner}, **sections})


def test_the_learner_interface_holds_nothing_only_a_benchmark_asks():
    assert [name for name in BENCH_ONLY if hasattr(Learner, name)] == []


def test_alphazero_searches_its_game_and_times_its_network_on_each_path():
    assert capabilities.selfplay_searches("alphazero")
    assert capabilities.network_paths("alphazero")
    assert capabilities.player_searches(config("alphazero"))
    assert capabilities.play_rule(config("alphazero")) == "the best move of its network"
    search = capabilities.stub_search("alphazero", TicTacToe(), SearchParams(core="python"))
    assert type(search).__name__ == "Search"


def test_muzero_searches_its_latent_model_with_its_own_evaluator():
    assert capabilities.selfplay_searches("muzero") and not capabilities.network_paths("muzero")
    search = capabilities.stub_search("muzero", TicTacToe(), SearchParams(core="python"))
    assert type(search).__name__ == "LatentSearch"


def test_bootstrapped_plays_from_its_heads_unless_its_player_searches():
    assert not capabilities.selfplay_searches("bootstrapped")
    assert not capabilities.network_paths("bootstrapped")
    voting = config("bootstrapped", bootstrapped={"heads": 5})
    assert not capabilities.player_searches(voting)
    assert capabilities.play_rule(voting) == "the majority vote of its 5 heads"
    one = config("bootstrapped", bootstrapped={"heads": 1, "q_search": True})
    assert capabilities.player_searches(one)
    assert capabilities.play_rule(one) == "the best move of its one head"


def test_a_learner_from_outside_inherits_what_its_base_declared():
    import toylearner  # noqa: F401  (registers "toy", an AlphaZeroLearner subclass)

    assert capabilities.network_paths("toy") and capabilities.selfplay_searches("toy")


def test_an_unknown_learner_is_named():
    with pytest.raises(KeyError, match="unknown learner 'nosuch'"):
        capabilities.selfplay_searches("nosuch")
