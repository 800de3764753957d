"""The latest self-play games of a session, replayed from its sample files.

A sample file stores every position of its games as the network sees it (`x`), the move played
(`action`) and the search's visit shares (`pi`), so a game is rebuilt from its first position
(the root whose numpify matches, or `unnumpify`) and the actions played, move by move.  Files
are read with gamegym.data.samples' reader, which checks them against the session's game
(`SampleShape`), and never written: a file that is damaged, of a newer format or of another
game is left out of the list, refused with its reason when asked for (HTTP 422), and left for
the trainer to quarantine.

A game is named by (iteration, file name, game index); the file name is only accepted when it
is one of the files the sample folder of that iteration lists, so no request builds a path.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from gamegym.data.formats import FormatError
from gamegym.data.samplefolder import sample_files, sample_iterations
from gamegym.data.samples import SampleShape, read_sample_file
from gamegym.data.session import Session
from gamegym.game.graph import GameGraph
from gamegym.serve.boards import (
    describe,
    move_cells,
    move_shares,
    position_view,
    result_line,
    side_names,
)

__all__ = ["SelfplayGames", "GameLookupError", "UnreadableGame"]

CACHED_FILES = 64


class GameLookupError(LookupError):
    """The game asked for is not (or no longer) in the session; the message says why."""

    status = 404  # HTTP


class UnreadableGame(GameLookupError):
    """The sample file is there, but holds no game of this session to replay: damaged, of a
    newer format, of another game, or a move that is not legal; the message says which."""

    status = 422


class SelfplayGames:
    """Lists and rebuilds self-play games.  `graph` is this object's own graph instance (its
    cache is not shared between threads); calls are serialised."""

    def __init__(self, session: Session, graph: GameGraph):
        self.session, self.graph = session, graph
        self.shape = SampleShape.of(graph)
        self._summaries: dict[str, tuple[float, list]] = {}  # path -> (mtime, games)
        self._lock = threading.Lock()
        self.names = side_names(graph.board_at(graph.roots[0]) if graph.has_board else None)

    def latest(self, count: int = 20) -> list[dict]:
        """The newest `count` games: [{"iteration", "file", "game", "moves", "result"}], the
        newest first (by iteration, then file time)."""
        games: list[dict] = []
        with self._lock:
            for iteration in reversed(sample_iterations(self.session.samples_dir)):
                files = sample_files(self.session.samples_dir, iteration)
                for path in sorted(files, key=_mtime, reverse=True):
                    for summary in reversed(self._summary(path)):
                        games.append({"iteration": iteration, "file": path.name, **summary})
                        if len(games) >= count:
                            return games
        return games

    def _summary(self, path) -> list[dict]:
        mtime = _mtime(path)
        known = self._summaries.get(str(path))
        if known is not None and known[0] == mtime:
            return known[1]
        try:
            arrays = self._read(path)
        except UnreadableGame:
            return []
        games = []
        for game, result in enumerate(arrays["result"]):
            moves = int(np.count_nonzero(arrays["game"] == game))
            if not moves:  # a game row without positions: nothing to replay
                continue
            truncated = bool(arrays["truncated"][game])
            games.append(
                {
                    "game": game,
                    "moves": moves,
                    "truncated": truncated,
                    "result": "cut"
                    if truncated
                    else f"{self.names[0]} won"
                    if result > 0
                    else f"{self.names[1]} won"
                    if result < 0
                    else "a draw",
                }
            )
        if len(self._summaries) >= CACHED_FILES:
            self._summaries.clear()
        self._summaries[str(path)] = (mtime, games)
        return games

    def game(self, iteration: int, file: str, game: int) -> dict:
        """Every position of one game with the move played there and the search's visit
        shares; GameLookupError when the game is not there."""
        with self._lock:
            if iteration not in sample_iterations(self.session.samples_dir):
                raise GameLookupError(f"no self-play games of iteration {iteration}")
            by_name = {p.name: p for p in sample_files(self.session.samples_dir, iteration)}
            if file not in by_name:
                raise GameLookupError(f"no sample file {file!r} in iteration {iteration}")
            arrays = self._read(by_name[file])
            if not 0 <= game < len(arrays["result"]):
                raise GameLookupError(f"sample file {file!r} has no game {game}")
            return self._rebuild(arrays, game, iteration, file)

    def _read(self, path) -> dict:
        """The file's arrays, checked against the session's game; UnreadableGame says why not."""
        try:
            return read_sample_file(path, self.shape)
        except (ValueError, OSError, FormatError) as error:  # the reader names the file
            raise UnreadableGame(str(error).replace(str(path), repr(path.name))) from error

    def _rebuild(self, arrays: dict, game: int, iteration: int, file: str) -> dict:
        graph = self.graph
        rows = np.flatnonzero(arrays["game"] == game)
        if not len(rows):
            raise UnreadableGame(f"sample file {file!r} holds no positions of game {game}")
        rows = rows[np.argsort(arrays["step"][rows], kind="stable")]
        vertex = self._first_vertex(arrays["x"][rows[0]], file)
        positions = []
        for ply, row in enumerate(rows):
            action = int(arrays["action"][row])
            if action not in graph.actions_at(vertex):
                raise UnreadableGame(
                    f"game {game} of {file!r} plays action {action}, which is "
                    f"not legal at move {ply + 1}: not a game of this session's "
                    "rules"
                )
            view = position_view(graph, vertex, ply)
            view["played"] = {
                "action": action,
                "text": describe(graph, vertex, action),
                "cells": move_cells(view["board"], action),
            }
            view["shares"] = move_shares(graph, vertex, arrays["pi"][row])
            view["root_value"] = round(float(arrays["root_value"][row]), 3)
            positions.append(view)
            vertex = graph.child_by_action(vertex, action)
        truncated = bool(arrays["truncated"][game])
        last = position_view(graph, vertex, len(rows))
        if truncated:
            last["result"] = result_line(
                graph, vertex, len(rows), side_names(last["board"]), truncated=True
            )
        positions.append(last)
        return {
            "iteration": iteration,
            "file": file,
            "game": game,
            "truncated": truncated,
            "positions": positions,
            "result": last["result"],
        }

    def _first_vertex(self, x: np.ndarray, file: str):
        graph = self.graph
        for root in graph.roots:
            if np.array_equal(graph.numpify(root), x):
                return root
        try:
            return graph.unnumpify(x)
        except NotImplementedError:
            raise UnreadableGame(
                f"a game of {file!r} starts away from the game's roots and the game cannot "
                "unnumpify it"
            ) from None
        except Exception as error:  # the game's own code, on an array it never made
            raise UnreadableGame(
                f"a game of {file!r} starts at a position the game cannot rebuild: "
                f"{type(error).__name__}: {error}"
            ) from error


def _mtime(path) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0
