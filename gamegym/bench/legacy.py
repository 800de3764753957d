"""The one-command spelling `gamegym bench --FLAG ...`, taken apart so that each subcommand
module can say how it spells the same job (its `legacy_argv`)."""

from __future__ import annotations

__all__ = ["has", "rename", "take"]


def has(tail: list[str], flag: str) -> bool:
    """Whether the option `flag` is in `tail` (as `--flag` or `--flag=VALUE`)."""
    return any(token == flag or token.startswith(flag + "=") for token in tail)


def take(tail: list[str], flag: str, count: int = 1) -> list[str] | None:
    """Remove every `flag` from `tail` with its `count` values and return the values of the
    last one (argparse's rule), or None when it is absent."""
    found, i = None, 0
    while i < len(tail):
        token = tail[i]
        if count and token.startswith(flag + "="):
            found = [token.split("=", 1)[1]]
            del tail[i]
        elif token == flag:
            found = tail[i + 1 : i + 1 + count]
            del tail[i : i + 1 + count]
        else:
            i += 1
    return found


def rename(tail: list[str], flag: str, new: str) -> list[str]:
    """`tail` with the option `flag` spelt `new` (its values stay where they are)."""
    return [
        new
        if token == flag
        else new + token[len(flag) :]
        if token.startswith(flag + "=")
        else token
        for token in tail
    ]
