"""Solved-position benchmarks: positions of a game with the exact value of every legal move, in
bands by the number of moves played, to tell how often a player's move is optimal
(`gamegym bench accuracy`).

A benchmark is a text file: a first line `# ` + JSON (format, version, the game's spec and
arguments, the bands, how it was made), then one tab-separated line a position:

    band    actions    values    scores

`actions` are the action ids played from the game's first root (space-separated); `values` and
`scores` have one space-separated entry per action id of the game: "." where the action is not
legal, else the move's exact game-theoretic value for the player making it (1 win, 0 draw,
-1 loss) and, in `scores`, a finer exact score where the solver gave one (a larger one is a
faster win or a slower loss; "?" where it was not computed).  A move is *optimal* when its value
is the position's best; *exactly optimal* when its score is also the best (only for positions
whose scores are all known).

A game names its benchmark with the optional GameGraph member `benchmark_positions` (a path,
or None).

May import: numpy and gamegym.game.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gamegym.game.graph import GameGraph

__all__ = ["BenchmarkPosition", "PositionBenchmark", "load_positions", "write_positions"]

FORMAT, VERSION = "gamegym-positions", 1


@dataclass(frozen=True)
class BenchmarkPosition:
    band: str
    actions: tuple[int, ...]  # from the game's first root
    values: dict[int, int]  # legal action id -> exact value (-1, 0, 1) for the mover
    scores: dict[int, int] | None  # legal action id -> exact score, or None if not all known

    @property
    def optimal(self) -> frozenset[int]:
        best = max(self.values.values())
        return frozenset(a for a, v in self.values.items() if v == best)

    @property
    def exactly_optimal(self) -> frozenset[int] | None:
        if self.scores is None:
            return None
        best = max(self.scores.values())
        return frozenset(a for a, s in self.scores.items() if s == best)


@dataclass(frozen=True)
class PositionBenchmark:
    header: dict  # the file's first line: game, game_args, bands, how it was made
    positions: tuple[BenchmarkPosition, ...]

    @property
    def bands(self) -> tuple[str, ...]:
        return tuple(self.header["bands"])

    def vertices(self, graph: GameGraph) -> list:
        """Each position's vertex in `graph`, checking that the moves are legal and that the
        legal moves are the ones the file lists (a file made for another game fails here)."""
        found = []
        for i, position in enumerate(self.positions):
            vertex = graph.roots[0]
            for action in position.actions:
                if action not in graph.actions_at(vertex):
                    raise ValueError(
                        f"benchmark position {i + 1}: action {action} is not legal after "
                        f"{position.actions}: the file is not for this game"
                    )
                vertex = graph.child_by_action(vertex, action)
            if set(graph.actions_at(vertex)) != set(position.values):
                raise ValueError(
                    f"benchmark position {i + 1}: its legal actions {sorted(position.values)} are "
                    f"not the game's {sorted(graph.actions_at(vertex))}: the file is not for this game"
                )
            found.append(vertex)
        return found


def _entries(text: str, size: int, where: str, unknown_ok: bool) -> dict[int, int] | None:
    parts = text.split()
    if len(parts) != size:
        raise ValueError(f"{where}: {len(parts)} entries where the game has {size} action ids")
    found: dict[int, int] = {}
    for action, part in enumerate(parts):
        if part == ".":
            continue
        if part == "?" and unknown_ok:
            return None
        try:
            found[action] = int(part)
        except ValueError:
            raise ValueError(f"{where}: {part!r} is not a number, '.' or '?'") from None
    return found


def load_positions(path: Path | str) -> PositionBenchmark:
    """Read a benchmark file (see the module doc); a malformed one raises ValueError naming
    the line."""
    path = Path(path)
    lines = path.read_text().splitlines()
    if not lines or not lines[0].startswith("# "):
        raise ValueError(f"{path}: not a position benchmark (no '# {{...}}' header line)")
    try:
        header = json.loads(lines[0][2:])
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: the header line is not JSON ({e})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f"{path}: not a position benchmark (format is not {FORMAT!r})")
    if header.get("version") != VERSION:
        raise ValueError(
            f"{path}: benchmark version {header.get('version')!r}, this gamegym reads {VERSION}"
        )
    size, bands = int(header["action_space_size"]), header["bands"]
    positions = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        fields = line.split("\t")
        if len(fields) != 4:
            raise ValueError(f"{where}: {len(fields)} tab-separated fields, not 4")
        band, actions, values, scores = fields
        if band not in bands:
            raise ValueError(f"{where}: band {band!r} is not one of {list(bands)}")
        try:
            played = tuple(int(a) for a in actions.split())
        except ValueError:
            raise ValueError(f"{where}: the actions are not integers") from None
        legal = _entries(values, size, where, unknown_ok=False)
        assert legal is not None
        if not legal or any(v not in (-1, 0, 1) for v in legal.values()):
            raise ValueError(f"{where}: values must be -1, 0 or 1 for at least one action")
        exact = _entries(scores, size, where, unknown_ok=True)
        if exact is not None and set(exact) != set(legal):
            raise ValueError(f"{where}: the scores' legal actions differ from the values'")
        positions.append(BenchmarkPosition(band, played, legal, exact))
    return PositionBenchmark(header, tuple(positions))


def write_positions(path: Path | str, header: dict, positions) -> None:
    """Write a benchmark file (header: game, game_args, action_space_size, bands, ...)."""
    size = int(header["action_space_size"])

    def row(legal: dict[int, int], entries: dict[int, int] | None) -> str:
        return " ".join(
            "." if a not in legal else "?" if entries is None else str(entries[a])
            for a in range(size)
        )

    lines = ["# " + json.dumps({"format": FORMAT, "version": VERSION, **header})]
    for p in positions:
        fields = (
            p.band,
            " ".join(map(str, p.actions)),
            row(p.values, p.values),
            row(p.values, p.scores),
        )
        lines.append("\t".join(fields))
    Path(path).write_text("\n".join(lines) + "\n")


def policy_moves(probs: np.ndarray, legal: list) -> list[int]:
    """The most probable legal action of each row of `probs` (a network's raw policy)."""
    moves = []
    for row, actions in zip(probs, legal):
        actions = list(actions)
        moves.append(int(actions[int(np.argmax(row[actions]))]))
    return moves
