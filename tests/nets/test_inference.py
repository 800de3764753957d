"""The Selfplayers' evaluator over a model service (`NetworkPositionValuer`): its cache."""

import numpy as np

from gamegym.nets.inference import NetworkPositionValuer
from games.tictactoe import TicTacToe


class CountingService:
    """Answers "evaluate" with a value that names the call (so a cached answer is told from a
    fresh one) at the iteration set in `iteration`; keeps every batch it was asked."""

    def __init__(self, action_space_size: int):
        self.size = action_space_size
        self.iteration = 0
        self.batches: list[int] = []
        self.requests = 0

    def submit(self, kind, inputs, iteration=-1):
        assert kind == "evaluate"
        self.requests += 1
        n = len(inputs["x"])
        self.batches.append(n)
        outputs = {
            "probs": np.full((n, self.size), 1.0 / self.size, np.float32),
            "values": np.full(n, float(self.requests), np.float32),
        }
        answer = (outputs, self.iteration)
        return lambda: answer


def evaluator_with(cache_size: int, n: int):
    """(evaluator on tic-tac-toe over a CountingService, that service, `n` distinct positions)."""
    graph = TicTacToe()
    service = CountingService(graph.action_space_size)
    return NetworkPositionValuer(graph, service, cache_size), service, positions(graph, n)


def positions(graph, n):
    """`n` distinct positions of `graph`, the root's children and grandchildren."""
    found = []
    for child in graph.children_at(graph.roots[0]):
        found += [child, *graph.children_at(child)]
    assert len(found) >= n
    return found[:n]


def test_the_cache_answers_repeats_keeps_its_size_and_drops_the_oldest_first():
    evaluator, service, (a, b, c, d, e, f) = evaluator_with(cache_size=4, n=6)

    _, values = evaluator([a, b, c, d])
    assert service.batches == [4] and values.tolist() == [1.0] * 4
    _, values = evaluator([b, a, e])  # a and b from the cache: only e is asked
    assert service.batches == [4, 1] and values.tolist() == [1.0, 1.0, 2.0]
    assert evaluator.cache_hits == 2
    assert evaluator.cached() == [b, c, d, e]  # a, the oldest, made room for e

    order = [a, b, c, d, e, f]
    asked = len(service.batches)
    for i in range(60):  # six positions in turn through four places: each one is asked again
        evaluator([order[i % 6]])
    assert len(service.batches) == asked + 60 and len(evaluator.cached()) == 4
    assert evaluator.cached() == [c, d, e, f]  # the last four asked, oldest first
    evaluator([f, c])
    assert len(service.batches) == asked + 60


def test_a_new_model_iteration_clears_the_cache():
    evaluator, service, (a, b) = evaluator_with(cache_size=10, n=2)
    evaluator([a, b])
    service.iteration = 1
    evaluator([b])  # an answer held in the cache was given by iteration 0: no request
    assert service.batches == [2]
    evaluator([evaluator.graph.roots[0]])  # the next request is answered by iteration 1
    assert evaluator.iteration == 1 and len(evaluator.cached()) == 1
    _, values = evaluator([a])  # forgotten with iteration 0: asked again
    assert service.batches == [2, 1, 1] and values.tolist() == [3.0]


def test_no_cache_asks_for_every_position():
    evaluator, service, (a, b) = evaluator_with(cache_size=0, n=2)
    evaluator([a, b])
    evaluator([a, b])
    assert service.batches == [2, 2] and evaluator.cache_hits == 0 and not evaluator.cached()


def test_an_answer_from_the_cache_is_taken_when_asked_not_when_collected():
    evaluator, service, (a, b, c, d) = evaluator_with(cache_size=2, n=4)
    evaluator([a, b])  # value 1.0, in both rows
    from_cache = evaluator.submit([a])
    evaluator([c, d])  # value 2.0, written over a's and b's rows before the first is collected
    assert from_cache()[1].tolist() == [1.0]
    assert evaluator.cached() == [c, d]


def test_a_batch_with_repeats_or_more_new_positions_than_rows_keeps_the_last():
    evaluator, service, (a, b, c, d) = evaluator_with(cache_size=3, n=4)
    _, values = evaluator([a, b, a, c, d])  # five misses (a twice) for three rows
    assert values.tolist() == [1.0] * 5 and evaluator.cached() == [a, c, d]
    _, values = evaluator([d, a, c])
    assert service.batches == [5] and values.tolist() == [1.0] * 3
    evaluator([b])  # asked again, in the oldest row (a's)
    assert service.batches == [5, 1] and evaluator.cached() == [c, d, b]
