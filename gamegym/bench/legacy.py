"""The one-command spelling `gamegym bench --FLAG ...`, taken apart so that each subcommand
module can say how it spells the same job (its `legacy_argv`)."""
from __future__ import annotations

__all__ = ["has", "take"]


def has(tail: list[str], flag: str) -> bool:
    """Whether the option `flag` is in `tail` (as `--flag` or `--flag=VALUE`)."""
    return any(token == flag or token.startswith(flag + "=") for token in tail)


def take(tail: list[str], flag: str, count: int | None = 1) -> list[str] | None:
    """Remove every `flag` from `tail` with its values (`count` of them; None: up to the next
    option) and return the values of the last one (argparse's rule), or None when absent."""
    found, i = None, 0
    while i < len(tail):
        token = tail[i]
        if token.startswith(flag + "=") and count:
            found = [token.split("=", 1)[1]]
            del tail[i]
        elif token == flag:
            end = i + 1 + (count if count is not None else 0)
            if count is None:
                while end < len(tail) and not tail[end].startswith("-"):
                    end += 1
            found = tail[i + 1:end]
            del tail[i:end]
        else:
            i += 1
    return found
