"""Which modules a session folder may make gamegym import: the user's consent, per folder.

A session's config.json names code: its game (`package.module:Class`) and its `plugins`.  The
code comes from the import path, but the folder chooses what runs, and a folder from elsewhere
may name any module that is installed.  So a module is imported for a session only when

- it is *bundled*: in gamegym's own packages `games` and `gamegym`, found in this installation
  (a `games` folder elsewhere on the import path, shadowing the bundled one, is not); or
- the user agreed to it for this folder: by making the session here (`gamegym new`,
  `gamegym continue`, a `GameGym` given a game or a config), by `--trust` on the command line
  (`trust=True` in Python), or by answering yes at the console.

Each agreement is recorded for the user, outside the session (a folder cannot vouch for
itself): `~/.config/gamegym/trusted/<digest of the folder's path>.json` ($XDG_CONFIG_HOME, or
%APPDATA% on Windows; $GAMEGYM_TRUST_DIR replaces the whole path) holds the folder and the
modules it may import.  A folder moved or copied here, or whose config.json was changed to name
another module, asks again; the record lists modules, not the config's digest, so a
`resume --config` that changes settings does not.

Commands that only read a session (`status`, `serve`, `evaluate`, `play`) import none of its
plugins; `serve`, `evaluate` and `play` import its game, under the same rule.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gamegym.data.fileio import atomic_write_json, make_folder
from gamegym.data.session import Session, SessionError
from gamegym.game.graph import GameSpecError, game_module, module_origin

__all__ = [
    "BUNDLED_PACKAGES",
    "SessionCode",
    "UntrustedCodeError",
    "session_code",
    "trust_folder",
    "trusted_modules",
    "record_trust",
    "require_consent",
    "read_session",
]

log = logging.getLogger(__name__)
BUNDLED_PACKAGES = ("games", "gamegym")  # gamegym's own top-level packages


class UntrustedCodeError(SessionError):
    """A session folder names modules the user has not agreed to import for it."""


@dataclass(frozen=True)
class SessionCode:
    """The modules a session's config names, each with the file it would be imported from."""

    game: str  # the game's module
    plugins: tuple[str, ...]
    origins: dict  # module -> its file, or why there is none ("not found on the import path")

    def modules(self, plugins: bool = True) -> list[str]:
        """The game's module, then the plugins (when `plugins`)."""
        return [self.game, *(self.plugins if plugins else ())]

    def foreign(self, plugins: bool = True) -> list[str]:
        """The modules that are not bundled with gamegym: those that need the user's consent."""
        return [m for m in self.modules(plugins) if not is_bundled(m, self.origins[m])]

    def describe(self, plugins: bool = True) -> str:
        """One line: 'game games.tictactoe (bundled) from .../tictactoe.py; plugin x from ...'."""
        parts = []
        for module in self.modules(plugins):
            kind = "game" if module == self.game else "plugin"
            bundled = " (bundled)" if is_bundled(module, self.origins[module]) else ""
            parts.append(f"{kind} {module}{bundled} from {self.origins[module]}")
        return "; ".join(parts)


def session_code(game: str, plugins: list[str] | tuple[str, ...]) -> SessionCode:
    """The modules of a game spec and a plugins list, found without running any of them; a
    game spec that is not a module name is refused (GameSpecError)."""
    module = game_module(game)
    origins = {}
    for name in (module, *plugins):
        try:
            origins[name] = module_origin(name)
        except (GameSpecError, ImportError, ValueError):
            origins[name] = "(not found on the import path)"
    return SessionCode(module, tuple(plugins), origins)


def is_bundled(module: str, origin: str) -> bool:
    """A module of gamegym's own packages, in this installation."""
    top = module.split(".")[0]
    if top not in BUNDLED_PACKAGES:
        return False
    home = Path(__file__).resolve().parents[1]  # .../gamegym; games sits beside it
    root = home if top == "gamegym" else home.parent / "games"
    try:
        return Path(origin).resolve().is_relative_to(root)
    except (OSError, ValueError):
        return False


def trust_folder() -> Path:
    """Where this user's consents are recorded (one file per session folder)."""
    if os.environ.get("GAMEGYM_TRUST_DIR"):
        return Path(os.environ["GAMEGYM_TRUST_DIR"])
    if os.name == "nt":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "gamegym" / "trusted"


def _record_path(folder: Path) -> Path:
    digest = hashlib.sha256(str(Path(folder).resolve()).encode("utf-8")).hexdigest()
    return trust_folder() / f"{digest[:32]}.json"


def trusted_modules(folder: Path) -> set[str]:
    """The modules the user agreed to import for the session folder `folder` (none when
    there is no record, or it is unreadable)."""
    folder = Path(folder).resolve()
    try:
        record = json.loads(_record_path(folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    modules = record.get("modules") if isinstance(record, dict) else None
    if record.get("folder") != str(folder) or not isinstance(modules, list):
        return set()
    return {m for m in modules if isinstance(m, str)}


def record_trust(folder: Path, modules: list[str]) -> None:
    """Record that the user agreed to import `modules` for `folder` (added to what was agreed
    before).  A record that cannot be written is a warning: the next run asks again."""
    folder = Path(folder).resolve()
    modules = sorted(set(modules) | trusted_modules(folder))
    if not modules:
        return
    path = _record_path(folder)
    try:
        make_folder(path.parent)
        atomic_write_json(path, {"folder": str(folder), "modules": modules, "time": time.time()})
    except OSError as error:
        log.warning("could not record the modules allowed for %s in %s: %s", folder, path, error)


def require_consent(
    session: Session,
    code: SessionCode,
    plugins: bool = True,
    trust: bool = False,
    command: str = "resume",
    ask: Callable[[str], bool] | None = None,
    given: tuple[str, ...] = (),
) -> list[str]:
    """Check that the modules of `code` (the game, and the plugins when `plugins`) may be
    imported for `session`: bundled, or agreed to before for this folder, or now (`trust`, or
    `ask(question)` answering True; both are recorded).  `given`: modules the user named
    themselves (a config file or a game of their own), which need no agreement and are
    recorded.  Returns the modules that are not bundled; UntrustedCodeError naming them and
    the `--trust` flag otherwise."""
    foreign = code.foreign(plugins)
    allowed = trusted_modules(session.path)
    unknown = [m for m in foreign if m not in allowed and m not in given]
    if unknown and not trust:
        listed = ", ".join(_named(code, m) for m in unknown)
        question = (
            f"session {session.path} names code that is not part of gamegym and that you "
            f"have not allowed for this folder: {listed}"
        )
        if ask is None or not ask(question):
            raise UntrustedCodeError(
                f"{question}. gamegym imports it only with your consent: check it, then run "
                f"'gamegym {command}' again with --trust (remembered for this folder, in "
                f"{trust_folder()}; in Python: trust=True)"
            )
    if set(foreign) - allowed:
        record_trust(session.path, foreign)
    return foreign


def _named(code: SessionCode, module: str) -> str:
    kind = "game module" if module == code.game else "plugin"
    return f"{kind} {module} (from {code.origins[module]})"


def read_session(path, command: str, trust: bool = False, ask=None):
    """(session, config) for a command that only reads a session and runs none of its
    plugins (`serve`, `evaluate`, `play`): the config with its plugins not imported, its
    game's module allowed (bundled, agreed to for the folder, or `trust` / `ask`), and every
    registered name it uses known without the plugins.  SessionError (UntrustedCodeError)
    naming what is missing otherwise."""
    session = Session(path)
    config = session.load_config()
    missing = config.unregistered()
    if missing:
        raise SessionError(
            f"session {session.path} uses {', '.join(missing)}, which only its plugins "
            f"({', '.join(config.plugins) or 'none'}) could register; 'gamegym {command}' "
            "imports no plugin of a session folder ('gamegym resume' does, once you allowed "
            "them)"
        )
    require_consent(session, session_code(config.game, ()), False, trust, command, ask)
    return session, config
