"""The spread over seeds of a learning bench's runs on the solved positions
(gamegym.bench.spread): mean, lowest and highest share per band and kind at each curve point
and the final one, for each variant with two or more seeds, and its report lines."""

from gamegym.bench.spread import spread_over_seeds, spread_text


def accuracy(middle_search: float, middle_policy: float, late_search: float) -> dict:
    return {
        "middle": {
            "positions": 1000,
            "search": {"optimal": middle_search},
            "policy": {"optimal": middle_policy},
        },
        "late": {"positions": 1000, "search": {"optimal": late_search}},
    }


def run(label: str, seed: int, points: list[dict], final: dict) -> dict:
    curve = [{"minutes": 5.0 * i, "accuracy": a} for i, a in enumerate(points)]
    return {
        "label": label,
        "seed": seed,
        "learner": "alphazero",
        "curve": curve,
        "final": {"accuracy": final},
    }


def test_each_variant_s_seeds_give_a_mean_and_a_range_per_band_and_point():
    runs = [
        run(
            "preset seed 0",
            0,
            [accuracy(0.70, 0.30, 0.9), accuracy(0.85, 0.70, 0.94)],
            accuracy(0.86, 0.71, 0.95),
        ),
        run(
            "preset seed 1",
            1,
            [accuracy(0.70, 0.30, 0.9), accuracy(0.87, 0.72, 0.96)],
            accuracy(0.88, 0.73, 0.95),
        ),
        run(
            "ema seed 0", 0, [accuracy(0.70, 0.30, 0.9)], accuracy(0.80, 0.60, 0.90)
        ),  # one seed only
        {"label": "other seed 0", "seed": 0, "learner": "alphazero", "curve": [{"minutes": 0}]},
    ]
    spread = spread_over_seeds(runs)
    assert list(spread) == ["preset"]  # ema has one seed, other no solved positions
    preset = spread["preset"]
    assert preset["seeds"] == [0, 1] and preset["minutes"] == [0.0, 5.0]
    assert preset["curve"][1]["middle"]["search"] == {"mean": 0.86, "low": 0.85, "high": 0.87}
    assert preset["curve"][1]["middle"]["policy"] == {"mean": 0.71, "low": 0.70, "high": 0.72}
    assert preset["curve"][1]["late"] == {"search": {"mean": 0.95, "low": 0.94, "high": 0.96}}
    assert preset["final"]["middle"]["search"] == {"mean": 0.87, "low": 0.86, "high": 0.88}
    lines = spread_text(spread)
    assert lines[0].startswith("solved positions, middle band, optimal moves with search")
    assert lines[1].split() == ["minutes", "preset", "(seeds", "0,", "1)"]
    assert lines[3].split() == ["5", "86.0%", "(85.0%-87.0%)"]
    assert lines[4].split() == ["final", "87.0%", "(86.0%-88.0%)"]


def test_runs_of_one_seed_each_have_no_spread():
    runs = [run("preset", 0, [accuracy(0.7, 0.3, 0.9)], accuracy(0.7, 0.3, 0.9))]
    assert spread_over_seeds(runs) == {} and spread_text({}) == []
