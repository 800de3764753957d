"""One spelling per idea on the command line: the flags every `gamegym` command writes the same
way (the command-line reference shows this table), and the retired spellings, which the parser
refuses naming the flag to use instead."""

from __future__ import annotations

import dataclasses
import re

__all__ = ["RETIRED", "VOCABULARY", "Term", "retired_hints", "vocabulary_table"]


@dataclasses.dataclass(frozen=True)
class Term:
    """One idea, how every command spells it, and an example."""

    idea: str
    spelling: str
    example: str


VOCABULARY: tuple[Term, ...] = (
    Term(
        "the game",
        "`--game MODULE:CLASS` with `--game-args JSON`, in every command that takes a game "
        "(never a positional argument)",
        "`gamegym check --game games.tictactoe:TicTacToe`",
    ),
    Term(
        "the session",
        "the first positional argument, `SESSION` (a folder); `--session SESSION` where it "
        "is the alternative to `--game`",
        "`gamegym status sessions/ttt`",
    ),
    Term(
        "the opponent",
        "`--opponent SPEC`, a player spec (`gamegym evaluate --help` lists them); "
        "`--player SPEC` for the other side where both are chosen",
        "`gamegym evaluate sessions/ttt --opponent solver`",
    ),
    Term(
        "several values",
        "one argument, comma-separated, the flag named in the singular; only a flag whose "
        "value is JSON (`--variant NAME=JSON`) is repeated instead",
        "`--seed 0,1 --learner alphazero,muzero`",
    ),
    Term(
        "time",
        "seconds, in a flag ending in `seconds`: `--seconds` for how long a run measures, "
        "`--max-seconds` for a limit that may end a run earlier, `--PART-seconds` for a part",
        "`gamegym resume sessions/ttt --max-seconds 600`",
    ),
    Term(
        "searches a move",
        "`--searchcount N` (as `selfplay.search.searchcount`); `--eval-searchcount N` for the "
        "player a benchmark evaluates",
        "`gamegym play sessions/ttt --searchcount 400`",
    ),
    Term(
        "games to play",
        "`--games N`",
        "`gamegym evaluate sessions/ttt --games 40`",
    ),
    Term(
        "a model iteration",
        "`--iteration K` (default: the newest)",
        "`gamegym play sessions/ttt --iteration 3`",
    ),
    Term(
        "randomness",
        "`--seed N`",
        "`gamegym check --game games.tictactoe:TicTacToe --seed 1`",
    ),
    Term(
        "machine-readable output",
        "`--json`: one JSON object on stdout; progress bars, notes and errors go to stderr",
        "`gamegym status sessions/ttt --json`",
    ),
    Term(
        "files a command writes",
        "into the session folder, or where a flag says (`--plot PATH`, `--keep SESSION`); "
        "the command prints where",
        "`gamegym bench learning --game games.tictactoe:TicTacToe --plot curves.png`",
    ),
)

# a spelling no command takes any longer -> what to write instead
RETIRED: dict[str, str] = {
    "--against": "--opponent SPEC",
    "--opponents": "--opponent SPEC,SPEC",
    "--pair": "--player SPEC,... --opponent SPEC,... (every player against every opponent)",
    "--seeds": "--seed N,N",
    "--modes": "--replay MODE,MODE",
    "--paths": "--path PATH,PATH",
    "--batch-sizes": "--network-batchsize N,N",
    "--searches": "--searchcount N",
    "--minutes": "--seconds (seconds, not minutes)",
    "--interval": "--interval-seconds (seconds, not minutes)",
    "--pretrain": "--pretrain-seconds (seconds, not minutes)",
    "--end-to-end": "--end-to-end-seconds",
}


def retired_hints(message: str) -> str:
    """For a usage error that names retired flags: '; instead of --against, write --opponent
    SPEC' for each one ('' when it names none)."""
    words = {word.split("=")[0].strip(",") for word in message.split()}
    found = [flag for flag in RETIRED if flag in words]
    hints = "".join(f"; instead of {flag}, write {RETIRED[flag]}" for flag in found)
    if re.search(r"arguments are required: (.*, )?--game\b", message):
        hints += "; every command takes the game as --game MODULE:CLASS, never positionally"
    return hints


def vocabulary_table() -> str:
    """The vocabulary as a Markdown table (the command-line reference page shows it)."""
    rows = ["| idea | how every command writes it | example |", "|---|---|---|"]
    rows += [f"| {t.idea} | {t.spelling} | {t.example} |" for t in VOCABULARY]
    return "\n".join(rows)
