"""`gamegym continue OLD NEW`: a new session that carries on from another under changed rules.

The new session is OLD's config with another `game_args` (or game: one with the same network
input shape and action space, so the model still fits) and any other change from a config
file, except `network` and `train.learner`, which describe the carried model.  It gets:

  models/<K+1>.keras   OLD's current model K, as its first iteration: the carried samples keep
                       their iterations 0..K and games under the new rules start at K+1
  models/<K+1>.raw.keras  OLD's trained weights of K, where its model K is an average of
                       weights (train.weight_average): training and the average go on
  samples/<0..K>/      OLD's sample files (hard links where the file system allows, else
                       copies; published sample files never change)
  replay/<K+1>.npz     OLD's replay state, when it has one: the carried samples keep their
                       replay counts and priorities, so a curious replay tells them from new ones
  origin.json          where it came from (folder, iteration, game and game_args)

OLD is only read.  This is how the adaptation experiment changes the world under a learner
(gamegym.bench.replay_modes), and how a user moves a trained model to a variant of the game.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

from gamegym.config import ConfigError, GymConfig
from gamegym.data.fileio import atomic_publish, atomic_write_json, temporary_path
from gamegym.data.reanalysis import reanalysis_path
from gamegym.data.samplefolder import sample_files, sample_iterations
from gamegym.data.session import Session, SessionError
from gamegym.data.trust import record_trust, require_consent, session_code
from gamegym.game.ref import GameRef

__all__ = ["continue_session"]

log = logging.getLogger(__name__)
CARRIED = ("network", "train.learner")  # fields that describe the carried model


def continue_session(
    source,
    target,
    game: str | None = None,
    game_args: dict | None = None,
    overrides: dict | None = None,
    trust: bool = False,
    ask=None,
) -> Session:
    """Make the session `target` from `source` under `game` / `game_args` (unchanged when
    None) and `overrides` (config sections, as GymConfig.updated takes); returns it.
    `source`'s game is imported, and the new session will run its plugins: both need the
    user's agreement for `source` when they are not bundled (`trust`, `ask`: see
    gamegym.data.trust.require_consent); `game` is the caller's own."""
    old = Session(source)
    stored = old.load_config()
    require_consent(
        old,
        session_code(stored.game, stored.plugins),
        trust=trust,
        command="continue",
        ask=ask,
    )
    if old.lock_path.exists() and old.lock_holder() is not None:
        raise SessionError(f"session {old.path} is running; stop it before continuing from it")
    iteration = old.current_iteration()
    if iteration < 0 or not old.model_is_sound(iteration):
        raise SessionError(f"session {old.path} has no sound current model to carry on from")
    changes = dict(overrides or {})
    if game is not None:
        changes["game"] = game
    if game_args is not None:
        changes["game_args"] = dict(game_args)
    changes.setdefault("game", stored.game)
    changes.setdefault("game_args", stored.game_args if changes["game"] == stored.game else {})
    changes["game_args"] = _same_shape(stored, changes["game"], changes["game_args"]).game_args
    config = stored.updated(changes)
    for path in CARRIED:
        before, after = stored.value_at(path), config.value_at(path)
        if before != after:
            raise ConfigError(
                f"config field '{path}' cannot change when continuing a session: "
                f"it describes the carried model (session has {before!r}, "
                f"the change asks for {after!r})"
            )
    new = Session(target)
    if new.path.exists() and (not new.path.is_dir() or any(new.path.iterdir())):
        raise SessionError(
            f"{new.path} exists and is not an empty folder; continue into a new folder"
        )
    folder_was_there = new.path.exists()
    try:
        new.create(config)
        record_trust(new.path, session_code(config.game, config.plugins).foreign())
        carry(old, new, iteration)
    except BaseException:
        _remove_contents(new.path)  # all made here: the folder was new or empty
        if not folder_was_there:
            shutil.rmtree(new.path, ignore_errors=True)
        raise
    log.info(
        "continued %s (iteration %d, %s %s) into %s (%s %s)",
        old.path,
        iteration,
        stored.game,
        stored.game_args,
        new.path,
        config.game,
        config.game_args,
    )
    return new


def carry(old: Session, new: Session, iteration: int) -> None:
    """Copy the model, the sample files (with their reanalysed targets) and the replay state;
    write origin.json."""
    first = iteration + 1
    _copy(old.model_path(iteration), new.model_path(first), link=False)
    if old.raw_model_path(iteration).exists():  # an average: training goes on from the raw
        _copy(old.raw_model_path(iteration), new.raw_model_path(first), link=False)
    files = 0
    for it in sample_iterations(old.samples_dir):
        for path in sample_files(old.samples_dir, it):
            _copy(path, new.samples_dir / str(it) / path.name, link=True)
            if reanalysis_path(path).is_file():  # its targets searched again (train.reanalyze)
                target = reanalysis_path(new.samples_dir / str(it) / path.name)
                _copy(reanalysis_path(path), target, link=True)
            files += 1
    states = (
        sorted(
            (int(p.stem), p)
            for p in old.replay_dir.glob("*.npz")
            if p.stem.isdigit() and int(p.stem) <= iteration
        )
        if old.replay_dir.is_dir()
        else []
    )
    if states:
        _copy(states[-1][1], new.replay_dir / f"{first}.npz", link=False)
    old_config = old.load_config()
    atomic_write_json(
        new.path / "origin.json",
        {
            "source": str(old.path),
            "iteration": iteration,
            "first_iteration": first,
            "game": old_config.game,
            "game_args": old_config.game_args,
            "sample_files": files,
            "replay_state": states[-1][1].name if states else None,
            "time": time.time(),
        },
    )
    atomic_write_json(
        new.models_dir / "current.json",
        {"iteration": first, "file": f"{first}.keras", "time": time.time()},
    )


def _copy(source: Path, target: Path, link: bool) -> None:
    """Publish a copy of `source` at `target` (a hard link when `link` and possible)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if link:
        try:
            os.link(source, target)
            return
        except OSError:
            pass  # another file system, or no hard links there: copy
    tmp = temporary_path(target)
    try:
        shutil.copyfile(source, tmp)
        atomic_publish(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _same_shape(stored: GymConfig, game: str, game_args: dict):
    """The new game's graph, checked to take the carried model: its input shape and action
    space are the old game's (the gym checked the model against the old game)."""
    before, after = stored.game_ref.build(), GameRef(game, game_args).build()
    shapes = [tuple(g.numpify(g.roots[0]).shape) for g in (before, after)]
    actions = [g.action_space_size for g in (before, after)]
    if shapes[0] != shapes[1] or actions[0] != actions[1]:
        raise ConfigError(
            f"{game} {game_args} has input shape {shapes[1]} and {actions[1]} "
            f"actions, the session's game {shapes[0]} and {actions[0]}: the "
            "carried model would not fit"
        )
    return after


def _remove_contents(folder: Path) -> None:
    if not folder.is_dir():
        return
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)  # a hard link goes, its source stays
        else:
            child.unlink(missing_ok=True)
