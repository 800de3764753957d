"""Games between a person on the page and a model iteration, played in the server process.

`ModelPlayers` loads a model iteration once (TensorFlow in this process, on the CPU) and keeps
the last few; a player is then made per move with the searches per move asked for, as
`gamegym play` makes it (`Learner.player`: an MCTS over the model for AlphaZero and MuZero).
`PlayTable` holds the games in play under server-side tokens; a move is checked against the
legal action ids and changes nothing when it is refused.  One lock serialises every move and
model search: one graph, one model call at a time (a page for one person, not a game server).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np

from gamegym.data.session import Session
from gamegym.game.graph import GameGraph
from gamegym.serve.boards import (
    describe,
    move_cells,
    move_shares,
    position_view,
    side_names,
    winner,
)

__all__ = ["ModelPlayers", "PlayTable", "PlayError", "NotFound", "Conflict", "MAX_SEARCHCOUNT"]

MAX_SEARCHCOUNT = 5000  # searches per move a request may ask for
MAX_GAMES = 64  # games kept; the oldest is dropped beyond
KEPT_MODELS = 4  # model iterations kept loaded


class PlayError(ValueError):
    """A request the table refuses; nothing changed (HTTP 400)."""

    status = 400


class NotFound(PlayError):
    """No such game or model iteration (HTTP 404)."""

    status = 404


class Conflict(PlayError):
    """The game is over, or it is not the person's turn (HTTP 409)."""

    status = 409


class ModelPlayers:
    """The session's model iterations as players, each loaded once and kept (the last
    KEPT_MODELS used)."""

    def __init__(self, session: Session, config):
        self.session, self.config = session, config
        self._services: OrderedDict[int, object] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, iteration: int) -> None:
        if iteration not in self.session.model_iterations():
            raise NotFound(
                f"the session has no model iteration {iteration} "
                f"(it has {self.session.model_iterations()})"
            )

    def player(self, iteration: int, searchcount: int, graph: GameGraph):
        """The model iteration as its learner plays, searching as the session's
        evaluate.search says at `searchcount` searches a move (no more threads than that)."""
        from gamegym.learners import get_learner
        from gamegym.search.tree import SearchParams

        learner = get_learner(self.config.train.learner)
        search = self.config.evaluate.search
        search = replace(
            search, searchcount=searchcount, threads=max(1, min(search.threads, searchcount))
        )
        params = SearchParams.from_config(search, noise=False)
        return learner.player(graph, self._service(iteration, learner), params, self.config)

    def _service(self, iteration: int, learner):
        with self._lock:
            if iteration in self._services:
                self._services.move_to_end(iteration)
                return self._services[iteration]
            self.check(iteration)
            from gamegym.nets.inference import LocalService
            from gamegym.nets.tfsetup import configure_tensorflow, load_model

            configure_tensorflow(use_gpu=False)
            try:
                model = load_model(self.session.model_path(iteration))
            except (ValueError, OSError) as error:  # pruned or damaged meanwhile
                raise NotFound(f"model iteration {iteration} cannot be loaded: {error}") from error
            service = LocalService(learner.make_evaluator(model, iteration))
            self._services[iteration] = service
            while len(self._services) > KEPT_MODELS:
                self._services.popitem(last=False)
            return service


@dataclass
class PlayGame:
    """One game in play: the person is side `human` (0 moves first)."""

    token: str
    iteration: int
    searchcount: int
    human: int
    vertex: object
    ply: int = 0
    history: list = field(default_factory=list)  # {"ply", "side", "action", "text"}
    model_move: dict | None = None  # the model's last move and its visit shares
    rng: np.random.Generator = field(default_factory=np.random.default_rng)
    touched: float = field(default_factory=time.time)


class PlayTable:
    """The games in play, by token."""

    def __init__(self, graph: GameGraph, models: ModelPlayers, max_moves: int):
        self.graph, self.models, self.max_moves = graph, models, max_moves
        self.games: OrderedDict[str, PlayGame] = OrderedDict()
        self.names = side_names(graph.board_at(graph.roots[0]) if graph.has_board else None)
        self.lock = threading.RLock()

    def new(self, iteration: int, human: int, searchcount: int) -> dict:
        """A new game from the first root; when the model moves first it has moved."""
        if human not in (0, 1):
            raise PlayError("side must be 'first' or 'second'")
        if not 1 <= searchcount <= MAX_SEARCHCOUNT:
            raise PlayError(f"searches per move must be in 1..{MAX_SEARCHCOUNT}")
        self.models.check(iteration)
        with self.lock:
            game = PlayGame(
                secrets.token_urlsafe(16), iteration, searchcount, human, self.graph.roots[0]
            )
            if human == 1:
                self._model_moves(game)
            self.games[game.token] = game
            while len(self.games) > MAX_GAMES:
                self.games.popitem(last=False)
            return self.state(game.token)

    def _game(self, token: str) -> PlayGame:
        game = self.games.get(token) if isinstance(token, str) else None
        if game is None:
            raise NotFound("no such game (it may have been dropped: start a new one)")
        game.touched = time.time()
        return game

    def move(self, token: str, action: int) -> dict:
        """The person plays `action`, then the model answers; refused moves change nothing."""
        with self.lock:
            game = self._game(token)
            if self._over(game):
                raise Conflict("the game is over")
            if game.ply % 2 != game.human:
                raise Conflict("it is not your turn")
            actions = self.graph.actions_at(game.vertex)
            if action not in actions:
                raise PlayError(
                    f"action {action} is not a legal move here; the legal ones are "
                    f"{[int(a) for a in actions]}"
                )
            saved = (game.vertex, game.ply, len(game.history), game.model_move)
            self._play(game, action)
            try:
                if not self._over(game):
                    self._model_moves(game)
            except Exception:  # the model could not answer (its file pruned): undo the move
                game.vertex, game.ply, kept, game.model_move = saved
                del game.history[kept:]
                raise
            return self.state(token)

    def _play(self, game: PlayGame, action: int) -> None:
        side = game.ply % 2
        game.history.append(
            {
                "ply": game.ply,
                "side": side,
                "action": int(action),
                "text": describe(self.graph, game.vertex, action),
            }
        )
        game.vertex = self.graph.child_by_action(game.vertex, action)
        game.ply += 1

    def _model_moves(self, game: PlayGame) -> None:
        graph, vertex = self.graph, game.vertex
        player = self.models.player(game.iteration, game.searchcount, graph)
        shares = []
        if hasattr(player, "search"):  # a search player: its visit shares are shown
            from gamegym.search.mcts import choose_action, visit_policy

            root = player.search(graph, vertex, game.rng)
            shares = move_shares(graph, vertex, visit_policy(root, graph.action_space_size))
            action = int(root.actions[choose_action(root, 0.0, game.rng)])
        else:
            action = int(player.choose(graph, vertex, game.rng))
        board = graph.board_at(vertex) if graph.has_board else None
        game.model_move = {
            "ply": game.ply,
            "action": action,
            "cells": move_cells(board, action),
            "text": describe(graph, vertex, action),
            "shares": shares,
        }
        self._play(game, action)

    def _over(self, game: PlayGame) -> bool:
        return not self.graph.actions_at(game.vertex) or game.ply >= self.max_moves

    def state(self, token: str) -> dict:
        """What the page shows of a game."""
        with self.lock:
            game = self._game(token)
            view = position_view(self.graph, game.vertex, game.ply)
            outcome = ""
            if view["over"]:
                side = winner(self.graph, game.vertex, game.ply)
                outcome = (
                    "a draw" if side is None else "you won" if side == game.human else "you lost"
                )
            elif game.ply >= self.max_moves:
                view["over"] = True
                view["result"] = f"cut at {game.ply} moves (selfplay.max_moves): neither won"
                outcome = "a draw"
            return {
                "id": game.token,
                "iteration": game.iteration,
                "searchcount": game.searchcount,
                "human": game.human,
                "you": view["players"][game.human],
                "position": view,
                "your_turn": not view["over"] and game.ply % 2 == game.human,
                "history": game.history,
                "model_move": game.model_move,
                "outcome": outcome,
            }
