"""Any suitable OpenSpiel game as a GameGraph, and OpenSpiel's bots as opponents.

    gamegym new sessions/c4 --game gamegym.adapters.openspiel:OpenSpielGame \\
        --game-args '{"name": "connect_four"}'
    gamegym check --game gamegym.adapters.openspiel:OpenSpielGame --game-args \\
        '{"name": "hex", "params": {"board_size": 5}}'

Needs the optional extra: `pip install -e ".[openspiel]"` (the `open_spiel` package).

The mapping (`OpenSpielGame`):
  vertex     the tuple of OpenSpiel action ids played from the initial state (hashable, compares
             by value, replays to the state); the player to move is the root's player when the
             history has even length, the other one when odd: turns must strictly alternate
  children   one per legal action of the state, in OpenSpiel's order; action id = OpenSpiel's
  score      at a terminal state the mover's return divided by the game's largest utility
             (+1 won, -1 lost, 0 draw for the usual board games); 0 elsewhere
  numpify    OpenSpiel's observation tensor for the player to move, in OpenSpiel's shape with the
             planes moved last ([C, H, W] -> [H, W, C]) so gamegym's conv networks take it
  symmetries none (subclass and override `symmetry_count`, `transform` and
             `transform_actions` to supply them)

Refused, with the property named: games that are not two-player, not zero-sum, not sequential
(simultaneous moves), that have chance nodes or imperfect information, that give rewards before
the end, that have no observation tensor, or whose turns do not strictly alternate (a player
moving twice in a row: checkers' multi-jumps, dots-and-boxes' extra turns; found by a few
random playouts when the game is built, and checked again at every expansion).

The bots (`OpenSpielPlayer`): `openspiel-random` and `openspiel-mcts:N` (OpenSpiel's MCTSBot,
N simulations with one random rollout each, UCT c = 2, solver on) play on any OpenSpielGame and,
through `to_openspiel`, on the bundled tic-tac-toe and Connect Four: an opponent no one here
wrote.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from gamegym.game.graph import GameGraph, GameSpecError, VertexError
from gamegym.game.players import Player

__all__ = [
    "OpenSpielGame",
    "OpenSpielPlayer",
    "UnsuitableGame",
    "import_pyspiel",
    "suitability",
    "to_openspiel",
    "make_openspiel_player",
    "EXTRA",
]

EXTRA = 'pip install -e ".[openspiel]"'
PROBE_GAMES = 8  # random playouts when a game is built, to see that turns alternate
PROBE_PLIES = 400  # at most this many plies of each
STATE_CACHE = 200_000  # OpenSpiel states kept for expanded vertices (replayed when evicted)


class UnsuitableGame(GameSpecError):
    """The OpenSpiel game is not a two-player, zero-sum, sequential, deterministic game of
    perfect information with alternating turns; the message names the property."""


def import_pyspiel():
    """The `pyspiel` module, or an error that names the extra to install."""
    try:
        import pyspiel
    except ImportError as error:
        raise GameSpecError(
            f"OpenSpiel is not installed: {EXTRA} (the open_spiel package) adds it ({error})"
        ) from error
    return pyspiel


def suitability(game) -> list[str]:
    """Why a loaded OpenSpiel game cannot be a GameGraph (empty when it can, as far as its type
    says; alternation is probed separately)."""
    pyspiel = import_pyspiel()
    kind = game.get_type()
    kinds = pyspiel.GameType
    reasons = []
    if game.num_players() != 2:
        reasons.append(f"it has {game.num_players()} players, not 2")
    if kind.utility != kinds.Utility.ZERO_SUM:
        reasons.append(f"it is not zero-sum (utility {kind.utility.name.lower()})")
    if kind.dynamics != kinds.Dynamics.SEQUENTIAL:
        reasons.append(f"its moves are not sequential (dynamics {kind.dynamics.name.lower()})")
    if kind.chance_mode != kinds.ChanceMode.DETERMINISTIC:
        reasons.append(f"it has chance nodes ({kind.chance_mode.name.lower()})")
    if kind.information != kinds.Information.PERFECT_INFORMATION:
        reasons.append(f"it is not a game of perfect information ({kind.information.name.lower()})")
    if kind.reward_model != kinds.RewardModel.TERMINAL:
        reasons.append("it gives rewards before the end of the game")
    if not kind.provides_observation_tensor:
        reasons.append("it provides no observation tensor")
    return reasons


class OpenSpielGame(GameGraph):
    """An OpenSpiel game by name (and parameters) as a GameGraph; see the module."""

    cache_limit = 50_000

    def __init__(self, name: str, params: dict | None = None) -> None:
        super().__init__()
        pyspiel = import_pyspiel()
        if not isinstance(name, str) or not name:
            raise ValueError(f"OpenSpielGame name must be an OpenSpiel game name, got {name!r}")
        if params is not None and not isinstance(params, dict):
            raise ValueError(f"OpenSpielGame params must be a JSON object, got {params!r}")
        self.name = name
        self.params = dict(params or {})
        if name not in pyspiel.registered_names():
            raise ValueError(
                f"OpenSpiel has no game {name!r} "
                f"({len(pyspiel.registered_names())} games are registered)"
            )
        try:
            self.game = pyspiel.load_game(name, self.params)
        except Exception as error:  # pyspiel.SpielError and friends: a bad parameter
            raise ValueError(
                f"OpenSpiel cannot load {name} with parameters {json.dumps(self.params)}: {error}"
            ) from error
        reasons = suitability(self.game)
        if reasons:
            raise UnsuitableGame(
                f"OpenSpiel game {self.spec} cannot be a gamegym game: " + "; ".join(reasons)
            )
        self._initial = self.game.new_initial_state()
        self._first = self._initial.current_player()
        shape = tuple(self.game.observation_tensor_shape())
        self._observation_shape = shape
        self._planes_last = len(shape) == 3
        self._max_utility = max(abs(self.game.max_utility()), abs(self.game.min_utility())) or 1.0
        self._states: dict = {(): self._initial}
        self._probe_alternation()

    @property
    def spec(self) -> str:
        """The game as OpenSpiel writes it, e.g. hex(board_size=5)."""
        return str(self.game)

    def _probe_alternation(self) -> None:
        rng = np.random.default_rng(0)
        for _ in range(PROBE_GAMES):
            state, plies = self._initial.clone(), 0
            while not state.is_terminal() and plies < PROBE_PLIES:
                mover = state.current_player()
                state.apply_action(int(rng.choice(state.legal_actions())))
                plies += 1
                if not state.is_terminal() and state.current_player() == mover:
                    raise UnsuitableGame(
                        f"OpenSpiel game {self.spec} cannot be a gamegym game: its turns do not "
                        f"strictly alternate (player {mover} moved twice in a row after "
                        f"{state.history()}); gamegym's search takes every move as handing "
                        "the turn to the opponent"
                    )

    # ----- the graph ---------------------------------------------------------------------
    @property
    def roots(self) -> tuple:
        return ((),)

    @property
    def outdegree_max(self) -> int:
        return self.game.num_distinct_actions()

    @property
    def action_space_size(self) -> int:
        return self.game.num_distinct_actions()

    def state(self, vertex: tuple):
        """The OpenSpiel state of a vertex (kept for expanded vertices, else replayed)."""
        state = self._states.get(vertex)
        if state is None:
            state = self._initial.clone()
            try:
                for action in vertex:
                    state.apply_action(int(action))
            except Exception as error:
                raise VertexError(
                    f"not a history of legal moves of {self.spec}: {error}", vertex
                ) from error
        return state

    def mover(self, vertex: tuple) -> int:
        """The OpenSpiel player to move at a vertex (also at a terminal one)."""
        return self._first if len(vertex) % 2 == 0 else 1 - self._first

    def expansion(self, vertex: tuple) -> tuple[tuple, tuple]:
        state = self.state(vertex)
        if state.is_terminal():
            return (), ()
        mover = state.current_player()
        if mover != self.mover(vertex):
            raise VertexError(
                f"turns do not alternate in {self.spec}: player {mover} is to move "
                f"where player {self.mover(vertex)} should be",
                vertex,
            )
        actions = tuple(state.legal_actions())
        children = tuple(vertex + (a,) for a in actions)
        if len(self._states) >= STATE_CACHE:
            self._states.clear()
            self._states[()] = self._initial
        for child, action in zip(children, actions):
            self._states[child] = state.child(action)
        return children, actions

    def forget(self) -> None:
        super().forget()
        self._states = {(): self._initial}

    def score_at(self, vertex: tuple) -> float:
        state = self.state(vertex)
        if not state.is_terminal():
            return 0.0
        value = state.returns()[self.mover(vertex)] / self._max_utility
        return float(min(1.0, max(-1.0, value)))

    def numpify(self, vertex: tuple) -> np.ndarray:
        """OpenSpiel's observation tensor for the player to move, planes last."""
        state = self.state(vertex)
        x = np.asarray(state.observation_tensor(self.mover(vertex)), np.float32)
        x = x.reshape(self._observation_shape)
        return np.ascontiguousarray(np.moveaxis(x, 0, -1)) if self._planes_last else x

    def render(self, vertex: tuple) -> str:
        state = self.state(vertex)
        to_move = "" if state.is_terminal() else f"\nplayer {state.current_player()} to move"
        return f"{state}{to_move}"

    def describe_action(self, vertex: tuple, action: int) -> str:
        state = self.state(vertex)
        return state.action_to_string(state.current_player(), int(action))


# ----- OpenSpiel's bots --------------------------------------------------------------------
def to_openspiel(graph: GameGraph, vertex: Any):
    """The OpenSpiel state of a vertex of an OpenSpielGame or of a bundled game OpenSpiel also
    has (tic-tac-toe, Connect Four, with the same action ids); GameSpecError otherwise."""
    if isinstance(graph, OpenSpielGame):
        return graph.state(vertex)
    mapping = _BUNDLED.get(f"{type(graph).__module__}:{type(graph).__name__}")
    if mapping is None:
        raise GameSpecError(
            f"OpenSpiel's bots play OpenSpiel games and the bundled tic-tac-toe "
            f"and Connect Four, not {type(graph).__name__}"
        )
    return mapping(graph, vertex)


def _from_board(game_name: str, graph: GameGraph, vertex, drop: bool):
    """Rebuild a bundled board game's position in OpenSpiel from numpify (planes: the mover's
    pieces, the opponent's; stable whatever the vertex looks like) by replaying a legal order
    of the moves that made it.  `drop`: pieces fall to the lowest empty cell (Connect Four);
    the action id is the column there and the cell (row * columns + column) otherwise.  Only
    for positions where the game goes on: no subset of their pieces has ended the game, so
    any order that fits the pieces is legal."""
    pyspiel = import_pyspiel()
    if not graph.children_at(vertex):
        raise VertexError("the game is over: there is no move to ask OpenSpiel for", vertex)
    planes = np.asarray(graph.numpify(vertex))
    rows, columns = planes.shape[:2]
    mine, theirs = planes[..., 0] > 0.5, planes[..., 1] > 0.5
    # the player to move moves first when both have as many pieces
    first, second = (mine, theirs) if mine.sum() == theirs.sum() else (theirs, mine)
    cells = [[(int(r), int(c)) for r, c in zip(*np.nonzero(p))] for p in (first, second)]
    state = pyspiel.load_game(game_name).new_initial_state()
    budget = [100_000]

    def playable(cell, filled) -> bool:
        r, c = cell
        return not drop or filled[c] == rows - 1 - r  # every cell below it is taken

    def replay(state, left, filled):
        if not left[0] and not left[1]:
            return state
        turn = len(state.history()) % 2
        if state.is_terminal() or budget[0] <= 0:
            return None
        for cell in left[turn]:
            if not playable(cell, filled):
                continue
            budget[0] -= 1
            rest = list(left)
            rest[turn] = [x for x in left[turn] if x != cell]
            now = dict(filled)
            now[cell[1]] = now.get(cell[1], 0) + 1
            done = replay(state.child(cell[1] if drop else cell[0] * columns + cell[1]), rest, now)
            if done is not None:
                return done
        return None

    found = replay(state, cells, {c: 0 for c in range(columns)})
    if found is None:
        raise VertexError(f"this position cannot be rebuilt in OpenSpiel's {game_name}", vertex)
    return found


_BUNDLED = {
    "games.tictactoe:TicTacToe": lambda g, v: _from_board("tic_tac_toe", g, v, drop=False),
    "games.connectfour:ConnectFour": lambda g, v: _from_board("connect_four", g, v, drop=True),
}


class OpenSpielPlayer(Player):
    """OpenSpiel's random bot (`simulations` 0) or its MCTSBot with `simulations` random-rollout
    simulations a move; seeded by the match's rng."""

    def __init__(self, simulations: int = 0, uct_c: float = 2.0):
        import_pyspiel()
        if isinstance(simulations, bool) or not isinstance(simulations, int) or simulations < 0:
            raise ValueError(f"simulations must be an integer >= 0, got {simulations!r}")
        self.simulations, self.uct_c = simulations, uct_c

    def choose(self, graph: GameGraph, vertex, rng: np.random.Generator) -> int:
        state = to_openspiel(graph, vertex)
        if state.is_terminal():
            raise VertexError("no legal action: the game is over", vertex)
        seed = np.random.RandomState(int(rng.integers(2**31 - 1)))
        if self.simulations == 0:
            actions = state.legal_actions()
            return int(actions[seed.randint(len(actions))])
        from open_spiel.python.algorithms import mcts

        bot = mcts.MCTSBot(
            state.get_game(),
            self.uct_c,
            self.simulations,
            mcts.RandomRolloutEvaluator(1, seed),
            random_state=seed,
            solve=True,
        )
        return int(bot.step(state))


def make_openspiel_player(spec: str) -> Player | None:
    """'openspiel-random' or 'openspiel-mcts:N' as a Player; None for other specs."""
    name, _, arg = spec.partition(":")
    if name == "openspiel-random" and not arg:
        return OpenSpielPlayer(0)
    if name == "openspiel-mcts":
        if not arg.isdigit() or int(arg) < 1:
            raise ValueError(f"bad player {spec!r}: openspiel-mcts:N needs N >= 1 simulations")
        return OpenSpielPlayer(int(arg))
    return None
