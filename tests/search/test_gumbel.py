"""The Gumbel rule and playout-cap randomization on bandits and hand-worked numbers.

A *bandit* here is a root whose every child has a known value q(a) (the mover's view): a
simulation into child a backs up exactly q(a).  `search_bandit` is the root of a Gumbel
search written out plainly: Gumbel-Top-k, then sequential halving with up to `batch`
simulations in flight, then the move and the improved policy.
"""

import math

import numpy as np
import pytest

from gamegym.search.gumbel import (
    RESCALES,
    GumbelParams,
    PlayoutCap,
    PlayoutChoice,
    SequentialHalving,
    completed_q,
    gumbel_scores,
    gumbel_top_k,
    halving_phases,
    improved_policy,
    interior_action,
    logits_from_priors,
    mean_values,
    mixed_value,
    qtransform,
    to_action_space,
    transformed_q,
)

# mctx's constants (q rescaled by the node's spread): the formulas these tests work by hand
MCTX = GumbelParams(rescale="node")


def softmax(logits):
    z = np.exp(logits - np.max(logits))
    return z / z.sum()


def search_bandit(q, logits, simulations, rng, value=0.0, batch=1, params=MCTX):
    """(move, improved policy [A], visits [A], gumbel [A], considered [m]) of a Gumbel search
    at a bandit root with child values `q` [A] and network value `value` (mctx's constants
    unless `params`)."""
    q = np.asarray(q, np.float64)
    logits = np.asarray(logits, np.float64)
    gumbel, considered = gumbel_top_k(logits, params.max_considered, rng, params.gumbel_scale)
    halving = SequentialHalving(considered, simulations)
    visits, sums = np.zeros(len(q)), np.zeros(len(q))

    def scores():
        return gumbel_scores(gumbel, logits, value, mean_values(sums, visits), visits, params)

    in_flight = []
    while halving.remaining or in_flight:
        index = halving.next_action(scores, len(in_flight)) if len(in_flight) < batch else None
        if index is None:  # back up everything in flight (one evaluator batch)
            for a in in_flight:
                visits[a] += 1
                sums[a] += q[a]
            in_flight = []
        else:
            in_flight.append(index)
    policy = improved_policy(logits, value, mean_values(sums, visits), visits, params)
    return halving.choose(scores()), policy, visits, gumbel, considered


# ----- sequential halving: the budget and the phase sizes ---------------------------------------
# worked by hand from floor(n / (ceil(log2 m) * k)) simulations per action and phase
HAND_PHASES = [
    # m, n, [(actions, simulations) per phase], simulations per action, most first
    (
        16,
        200,
        [(16, 48), (8, 48), (4, 48), (2, 56)],  # 200 // 64 = 3, 200 // 32 = 6,
        [49, 49, 21, 21, 9, 9, 9, 9] + [3] * 8,
    ),  # 200 // 16 = 12, 200 // 8 = 25 (+3 more)
    (16, 16, [(16, 16)], [1] * 16),  # 16 // 64 -> 1 each, budget spent
    (16, 4, [(16, 4)], [1] * 4 + [0] * 12),  # only the 4 best by g + logits
    (2, 2, [(2, 2)], [1, 1]),  # log2 2 = 1: 2 // 2 = 1 each
    (4, 50, [(4, 24), (2, 26)], [19, 19, 6, 6]),  # 50 // 8 = 6, 50 // 4 = 12 (+1 more)
    (3, 10, [(3, 3), (2, 7)], [5, 4, 1]),  # ceil(log2 3) = 2: 10 // 6 = 1, 10 // 4
    (16, 32, [(16, 16), (8, 8), (4, 8)], [4] * 4 + [2] * 4 + [1] * 8),  # 1, 1, 2 rounds
    (1, 5, [(1, 5)], [5]),  # one legal move takes the whole budget
]


@pytest.mark.parametrize("m,n,phases,per_action", HAND_PHASES)
def test_halving_phases_match_hand_worked_cases(m, n, phases, per_action):
    assert halving_phases(m, n) == phases
    q = np.random.default_rng(m * 1000 + n).uniform(-1, 1, m)
    _, _, visits, _, _ = search_bandit(q, np.zeros(m), n, np.random.default_rng(0))
    assert sorted(visits.tolist(), reverse=True) == per_action


def reference_visits(m: int, n: int) -> list[int]:
    """Simulations per rank (best first) of sequential halving at a root whose ranking never
    changes, by a plain loop over rounds (mctx's schedule, independently written)."""
    if m == 1:
        return [n]
    levels = math.ceil(math.log2(m))
    given, k, spent = [0] * m, m, 0
    while spent < n:
        for _ in range(max(1, n // (levels * k))):
            for i in range(k):
                if spent < n:
                    given[i] += 1
                    spent += 1
        k = max(2, k // 2)
    return given


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 32])
def test_halving_spends_exactly_the_budget(m):
    for n in list(range(0, 70)) + [99, 100, 128, 200, 257, 400, 800]:
        phases = halving_phases(m, n)
        assert sum(count for _, count in phases) == n
        assert all(a > b for (a, _), (b, _) in zip(phases, phases[1:]))  # each phase halves
        halving = SequentialHalving(list(range(m)), n)
        order = [halving.next_action(lambda: -np.arange(m, dtype=float)) for _ in range(n)]
        assert halving.remaining == 0 and halving.next_action(lambda: None) is None
        assert [order.count(a) for a in range(m)] == reference_visits(m, n), (m, n)


def test_a_halving_waits_for_the_simulations_in_flight():
    halving = SequentialHalving([3, 1, 0, 2], 8)  # phases (4, 4), (2, 4)
    scores = np.array([0.0, 5.0, 1.0, 2.0])  # the ranking when the phase is over
    first = [halving.next_action(lambda: scores, in_flight=i) for i in range(4)]
    assert first == [3, 1, 0, 2]  # round one: best by g + logits first
    assert halving.next_action(lambda: scores, in_flight=4) is None  # not backed up yet
    assert halving.issued == 4
    second = [halving.next_action(lambda: scores, in_flight=i) for i in range(4)]
    assert second == [1, 3, 1, 3]  # the two best by scores, twice each
    assert halving.next_action(lambda: scores) is None and halving.remaining == 0
    assert halving.finalists() == [1, 3]
    assert halving.choose(np.array([0.0, 1.0, 3.0, 2.0])) == 3  # child 2 is out


def test_concurrent_simulations_do_not_change_the_search():
    """The halving waits for the simulations in flight, so batches change nothing."""
    for seed in range(50):
        bandit = np.random.default_rng(seed)
        size = int(bandit.integers(2, 20))
        q, logits = bandit.uniform(-1, 1, size), bandit.normal(size=size)
        n = int(bandit.integers(1, 100))
        runs = [
            search_bandit(q, logits, n, np.random.default_rng(seed), batch=batch)
            for batch in (1, 3, 8)
        ]
        for move, policy, visits, _, _ in runs[1:]:
            assert move == runs[0][0]
            np.testing.assert_array_equal(visits, runs[0][2])
            np.testing.assert_allclose(policy, runs[0][1])


# ----- Gumbel-Top-k ------------------------------------------------------------------------------
def test_gumbel_top_k_samples_without_replacement_from_the_prior():
    logits = np.log(np.array([0.5, 0.25, 0.125, 0.125]))
    gumbel, considered = gumbel_top_k(logits, 3, np.random.default_rng(7))
    again, same = gumbel_top_k(logits, 3, np.random.default_rng(7))
    np.testing.assert_array_equal(gumbel, again)
    np.testing.assert_array_equal(considered, same)
    assert len(set(considered.tolist())) == 3
    assert np.all(np.diff((gumbel + logits)[considered]) <= 0)  # best first
    assert len(gumbel_top_k(logits, 16, np.random.default_rng(0))[1]) == 4
    rng = np.random.default_rng(1)
    firsts = np.bincount([gumbel_top_k(logits, 2, rng)[1][0] for _ in range(20000)], minlength=4)
    np.testing.assert_allclose(firsts / 20000, np.exp(logits), atol=0.015)  # Gumbel-max trick


# ----- finding the one winning move --------------------------------------------------------------
def one_winner(size: int, rest: float) -> np.ndarray:
    q = np.full(size, rest)
    q[size // 2] = 1.0
    return q


@pytest.mark.parametrize("rest", [0.0, -1.0])
@pytest.mark.parametrize("simulations", [2, 4])
def test_finds_the_winning_move_when_every_move_is_searched(simulations, rest):
    """As many legal moves as simulations (m >= legal): each is visited once, and the move
    worth +1 is played from a uniform prior (fixed seeds: sigma gives the winner a margin of
    (50 + 1) * 0.1 = 5.1 over the rest, which a Gumbel gap exceeds with chance ~0.6%)."""
    q = one_winner(simulations, rest)
    for seed in range(10):
        move, policy, visits, _, _ = search_bandit(
            q, np.zeros(simulations), simulations, np.random.default_rng(seed)
        )
        assert visits.tolist() == [1] * simulations
        assert move == simulations // 2
        assert np.argmax(policy) == simulations // 2


@pytest.mark.parametrize("rest", [0.0, -1.0])
@pytest.mark.parametrize("simulations", [2, 4])
def test_finds_the_winning_move_whenever_it_is_searched(simulations, rest):
    """Nine legal moves, 2 or 4 simulations: only the best `simulations` of the 9 considered
    by g + logits are visited.  Whenever the winner is one of them it is played (fixed seeds),
    and the policy target puts the most weight on it; the noiseless rule (gumbel_scale 0, for
    matches) plays it whenever it is visited, always once the budget covers every move."""
    q, winner = one_winner(9, rest), 4
    visited = 0
    for seed in range(40):
        move, policy, visits, _, _ = search_bandit(
            q, np.zeros(9), simulations, np.random.default_rng(seed)
        )
        assert visits.sum() == simulations
        if visits[winner]:
            visited += 1
            assert move == winner, seed
            assert np.argmax(policy) == winner
    assert visited >= 4  # about 40 * simulations / 9
    noiseless = GumbelParams(gumbel_scale=0.0, rescale="node")
    for uniform_logits in (np.zeros(9), np.full(9, -2.0)):
        move, _, visits, _, _ = search_bandit(
            q, uniform_logits, 9, np.random.default_rng(0), params=noiseless
        )
        assert visits.tolist() == [1] * 9 and move == winner


# ----- policy improvement on random bandits -----------------------------------------------------
def random_bandit(seed: int):
    """(q [A], logits [A], simulations, rng) of a random bandit."""
    rng = np.random.default_rng(seed)
    size = int(rng.integers(2, 13))
    return (
        rng.uniform(-1, 1, size),
        rng.normal(size=size) * 1.5,
        int(rng.choice([1, 2, 3, 4, 8, 16, 32, 64])),
        rng,
    )


def test_the_move_is_never_worse_than_the_priors_sample():
    """The paper's guarantee for the move: argmax(g + logits) is a sample of the prior, and
    the move played never has a lower q than it, so E[q(move)] >= E_prior[q]."""
    moves, samples, prior_means = [], [], []
    for seed in range(500):
        q, logits, n, rng = random_bandit(seed)
        move, _, _, gumbel, _ = search_bandit(q, logits, n, rng)
        sample = int(np.argmax(gumbel + logits))
        assert q[move] >= q[sample], seed
        moves.append(q[move])
        samples.append(q[sample])
        prior_means.append(softmax(logits) @ q)
    assert np.mean(moves) > np.mean(samples) > np.mean(prior_means) - 0.05
    assert np.mean(moves) > np.mean(prior_means) + 0.05


@pytest.mark.parametrize("rescale", RESCALES)
def test_the_improved_policy_improves_on_the_prior(rescale):
    """E_pi'[q] >= E_pi[q] per bandit: always in the completed q (the paper's appendix C, any
    value estimate); in the true q when every move was searched, and over 500 bandits (their
    value v = E_pi[q], what a value network of the prior would say) on average and never
    by more than 0.01 below (with unsearched moves completed by v_mix it is not a theorem).
    The same with q rescaled by the node's spread (mctx) or by the score range."""
    params = GumbelParams(rescale=rescale)
    gains = []
    for seed in range(500):
        q, logits, n, rng = random_bandit(seed)
        prior = softmax(logits)
        value = float(prior @ q) if seed % 2 else float(rng.uniform(-1, 1))
        _, policy, visits, _, _ = search_bandit(q, logits, n, rng, value=value, params=params)
        completed = completed_q(value, logits, q, visits)
        assert policy @ completed >= prior @ completed - 1e-12, seed
        if visits.all():
            assert policy @ q >= prior @ q - 1e-12, seed
        if seed % 2:
            gains.append(policy @ q - prior @ q)
    assert min(gains) >= -0.01 and np.mean(gains) > 0.05


# ----- the completed-Q transform, by hand -----------------------------------------------------
def test_completed_q_and_sigma_match_the_papers_formula():
    """priors (0.4, 0.3, 0.2, 0.1), visits (3, 1, 0, 0), q (0.5, -0.5, -, -), value 0.2:
    v_mix = (0.2 + 4 / 0.7 * (0.4 * 0.5 + 0.3 * -0.5)) / (1 + 4) = (0.2 + 2/7) / 5 = 17/175;
    completed q = (0.5, -0.5, 17/175, 17/175), rescaled by its min -0.5 and span 1 to
    q_hat = (1, 0, 0.5 + 17/175, 0.5 + 17/175); sigma = (50 + 3) * 0.1 * q_hat;
    improved policy = softmax(log prior + sigma), i.e. prior * exp(sigma) normalised."""
    logits = logits_from_priors([0.4, 0.3, 0.2, 0.1])
    visits = np.array([3, 1, 0, 0])
    q = np.array([0.5, -0.5, np.nan, np.nan])  # unvisited entries are never read
    v_mix = 17 / 175
    assert mixed_value(0.2, logits, q, visits) == pytest.approx(v_mix, rel=1e-12)
    completed = completed_q(0.2, logits, q, visits)
    np.testing.assert_allclose(completed, [0.5, -0.5, v_mix, v_mix], rtol=1e-12)
    sigma = [5.3, 0.0, 5.3 * (0.5 + v_mix), 5.3 * (0.5 + v_mix)]  # 5.3 * 0.5971428... = 3.16486
    np.testing.assert_allclose(
        transformed_q(completed, visits, MCTX), sigma, rtol=1e-12, atol=1e-12
    )
    sigma_q = qtransform(0.2, logits, q, visits, MCTX)
    np.testing.assert_allclose(sigma_q, sigma, rtol=1e-12, atol=1e-12)
    weights = np.array([0.4, 0.3, 0.2, 0.1]) * np.exp(sigma)  # 80.135, 0.3, 4.737, 2.369
    expected = weights / weights.sum()  # 0.9154, 0.0034, 0.0541, 0.0271
    np.testing.assert_allclose(improved_policy(logits, 0.2, q, visits, MCTX), expected, rtol=1e-12)
    assert expected[0] == pytest.approx(0.91540, abs=1e-5)


def test_sigma_by_the_score_range_on_hand_cases():
    """rescale "score": q_hat = (q + 1) / 2 with q clipped to [-1, 1], so sigma no longer
    stretches a small spread to the full scale. Completed q (0.5, -0.5, 1.4) with visits
    (3, 1, 2): q_hat (0.75, 0.25, 1), sigma = (50 + 3) * 0.1 * q_hat; by the node's spread
    the same q give q_hat (0.5263..., 0, 1)."""
    score = GumbelParams(rescale="score")
    completed, visits = np.array([0.5, -0.5, 1.4]), np.array([3, 1, 2])
    np.testing.assert_allclose(
        transformed_q(completed, visits, score), [3.975, 1.325, 5.3], rtol=1e-12
    )
    np.testing.assert_allclose(
        transformed_q(completed, visits, MCTX), [5.3 * 1.0 / 1.9, 0.0, 5.3], rtol=1e-12
    )
    # two drawn-looking moves 0.01 apart: the node's spread makes it the whole scale (6.0),
    # the score range a hundredth of its half (0.03)
    logits = logits_from_priors([0.5, 0.5])
    by_node = qtransform(0.0, logits, [0.01, 0.02], [5, 10], MCTX)
    by_score = qtransform(0.0, logits, [0.01, 0.02], [5, 10], score)
    assert by_node[1] - by_node[0] == pytest.approx(6.0)
    assert by_score[1] - by_score[0] == pytest.approx(0.03)
    assert improved_policy(logits, 0.0, [0.01, 0.02], [5, 10], score)[1] == pytest.approx(
        1 / (1 + math.exp(-0.03))
    )


def test_completed_q_edge_cases():
    logits = logits_from_priors([0.5, 0.5])
    # nothing visited: v_mix is the network value, every q the same, sigma 0, the prior back
    assert mixed_value(-0.3, logits, np.zeros(2), np.zeros(2)) == -0.3
    np.testing.assert_allclose(qtransform(-0.3, logits, np.zeros(2), np.zeros(2), MCTX), [0, 0])
    np.testing.assert_allclose(improved_policy(logits, -0.3, np.zeros(2), np.zeros(2)), [0.5, 0.5])
    # all visited: v_mix unused; q (0.2, 0.6) -> q_hat (0, 1), sigma (0, (50 + 10) * 0.1)
    np.testing.assert_allclose(qtransform(0.9, logits, [0.2, 0.6], [10, 2], MCTX), [0.0, 6.0])
    # one visited child of prior 0.5: v_mix = (v + N * q) / (1 + N) = (0.9 + 3 * -1) / 4
    assert mixed_value(0.9, logits, [-1.0, 0.0], [3, 0]) == pytest.approx(-2.1 / 4)
    # other constants
    params = GumbelParams(value_scale=1.0, maxvisit_init=0.0, rescale="node")
    np.testing.assert_allclose(qtransform(0.9, logits, [0.2, 0.6], [10, 2], params), [0, 10])


def test_a_policy_target_puts_nothing_on_illegal_moves():
    policy = improved_policy(logits_from_priors([0.2, 0.8]), 0.0, [1.0, -1.0], [1, 1])
    target = to_action_space(policy, [6, 2], 9)
    assert target.dtype == np.float32 and target.shape == (9,)
    assert target[[0, 1, 3, 4, 5, 7, 8]].sum() == 0
    assert target[6] > target[2] and target.sum() == pytest.approx(1.0)
    assert logits_from_priors([0.0, 1.0])[0] > -1e3  # a zero prior still has a finite logit


# ----- below the root --------------------------------------------------------------------------
def test_interior_selection_on_a_hand_case():
    """priors (0.5, 0.3, 0.2), value 0.4.
    1. visits (1, 0, 0), q0 = -0.5: v_mix = (0.4 + 1 / 0.5 * 0.5 * -0.5) / 2 = -0.05;
       completed (-0.5, -0.05, -0.05) -> q_hat (0, 1, 1), sigma 5.1 * q_hat;
       pi' = (0.5, 0.3 e^5.1, 0.2 e^5.1) / sum = (0.0061, 0.5964, 0.3976);
       minus N / (1 + 1) = (0.5, 0, 0): (-0.494, 0.596, 0.398) -> child 1, not the prior's 0.
    2. visits (1, 1, 0), q1 = 0.2: v_mix = (0.4 + 2 / 0.8 * (0.5 * -0.5 + 0.3 * 0.2)) / 3
       = -0.025; q_hat (0, 1, 0.475 / 0.7); pi' = (0.0089, 0.8775, 0.1136);
       minus N / 3: (-0.324, 0.544, 0.114) -> child 1 again."""
    logits = logits_from_priors([0.5, 0.3, 0.2])
    visits = np.array([1, 0, 0])
    q = np.array([-0.5, 0.0, 0.0])
    assert mixed_value(0.4, logits, q, visits) == pytest.approx(-0.05)
    weights = np.array([0.5, 0.3 * math.exp(5.1), 0.2 * math.exp(5.1)])
    np.testing.assert_allclose(
        improved_policy(logits, 0.4, q, visits, MCTX), weights / weights.sum()
    )
    assert interior_action(logits, 0.4, q, visits, MCTX) == 1
    visits, q = np.array([1, 1, 0]), np.array([-0.5, 0.2, 0.0])
    assert mixed_value(0.4, logits, q, visits) == pytest.approx(-0.025)
    weights = np.array([0.5, 0.3 * math.exp(5.1), 0.2 * math.exp(5.1 * 0.475 / 0.7)])
    policy = improved_policy(logits, 0.4, q, visits, MCTX)
    np.testing.assert_allclose(policy, weights / weights.sum())
    assert policy[1] == pytest.approx(0.8775, abs=1e-4)
    assert interior_action(logits, 0.4, q, visits, MCTX) == 1


def test_interior_visits_follow_the_improved_policy():
    """With sigma off (value_scale 0) pi' is the prior, and the deterministic selection's
    visit shares track it to within one visit."""
    prior = np.array([0.45, 0.3, 0.15, 0.1])
    logits, params = logits_from_priors(prior), GumbelParams(value_scale=0.0)
    visits = np.zeros(4)
    for step in range(1, 201):
        visits[interior_action(logits, 0.0, np.zeros(4), visits, params)] += 1
        assert np.all(np.abs(visits - step * prior) <= 1.0 + 1e-9), (step, visits)


# ----- playout-cap randomization ----------------------------------------------------------------
def test_playout_cap_is_seeded_and_has_the_expected_frequency():
    cap = PlayoutCap(full_searchcount=100, fast_searchcount=16)  # full_probability 0.25
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    a = [cap.draw(rng_a) for _ in range(20000)]
    b = [cap.draw(rng_b) for _ in range(20000)]
    assert a == b
    assert all(c == PlayoutChoice(True, 100) or c == PlayoutChoice(False, 16) for c in a)
    share = sum(c.full for c in a) / len(a)
    assert abs(share - 0.25) < 4 * math.sqrt(0.25 * 0.75 / len(a))
    # exactly one number per move, whatever the settings: the rest of the game stays seeded
    for p in (0.0, 0.25, 1.0):
        rng, twin = np.random.default_rng(5), np.random.default_rng(5)
        PlayoutCap(100, 16, p).draw(rng)
        twin.random()
        assert rng.random() == twin.random()
    assert not any(PlayoutCap(10, 2, 0.0).draw(rng).full for _ in range(100))
    assert all(PlayoutCap(10, 2, 1.0).draw(rng) == (True, 10) for _ in range(100))


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(full_searchcount=0, fast_searchcount=1),
        dict(full_searchcount=8, fast_searchcount=9),
        dict(full_searchcount=8, fast_searchcount=0),
        dict(full_searchcount=8, fast_searchcount=2, full_probability=1.5),
    ],
)
def test_playout_cap_refuses_bad_settings(kwargs):
    with pytest.raises(ValueError):
        PlayoutCap(**kwargs)


def test_gumbel_params_refuse_bad_settings():
    for kwargs in (dict(max_considered=0), dict(value_scale=-1.0), dict(epsilon=0.0)):
        with pytest.raises(ValueError):
            GumbelParams(**kwargs)
    with pytest.raises(ValueError, match=r"rescale must be one of \('node', 'score'\)"):
        GumbelParams(rescale="minmax")
