"""The soak's mutation check (scripts/soak.py --mutation-check): a short soak per protection
switched off in the gym (GAMEGYM_MUTATE, gamegym/data/faults.py), with the faults that expose it,
must report the violations the check names."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from soak_checks import INVARIANTS

SOAK = Path(__file__).with_name("soak.py")


@dataclass(frozen=True)
class MutationCheck:
    """A short soak that must catch one protection switched off in the gym (GAMEGYM_MUTATE,
    gamegym/data/faults.py)."""

    mutation: str  # the protection switched off (MUTATIONS)
    faults: tuple[str, ...]  # the faults of its cycles, in turn
    catches: tuple[str, ...]  # the violations it must report, every one
    settings: dict = field(default_factory=dict)  # changes to its session's settings (--set)
    writers: int = 0  # processes whose sample files its cycle waits for before the fault
    iterations: int = 0  # iterations its cycle waits for the gym to train before the fault
    cycles: int = 1  # a violation the next start of the gym shows takes two


MUTATION_CHECKS = {
    "atomic_publish:model": MutationCheck(
        "atomic_publish", ("disk_full:model",), ("unsound_model",)
    ),
    # a torn sample file, which the Trainer moves to quarantine (in the first cycle, or once it
    # has trained in the second); when the soak read it first, it also finds it invalid, then lost
    "atomic_publish:sample": MutationCheck(
        "atomic_publish",
        ("disk_full:sample", "exit"),
        ("quarantined_file",),
        iterations=1,
        cycles=2,
    ),
    "atomic_publish:replay_state": MutationCheck(
        "atomic_publish", ("disk_full:replay_state",), ("replay_state_mismatch",)
    ),
    # two processes drawing from one seed play the same games only with the same model, so the
    # Trainer of this soak waits for a full buffer (some 800 games) before its first model: one
    # published while a Selfplayer was still starting, as on a loaded machine, would part the
    # two processes' games from their first; a repeat shows once both have written games
    "seed": MutationCheck(
        "seed",
        ("exit",),
        ("repeated_game",),
        settings={
            "selfplay": {"positions_per_iteration": 0},
            "train": {"min_samplecount": 5000, "min_new_samples": 5000},
        },
        writers=2,
    ),
    # the stopped Trainer is never killed: the soak continues it, the gym plays on
    "heartbeat": MutationCheck(
        "heartbeat", ("stop_long:trainer",), ("hung_process_not_killed", "unexpected_stop")
    ),
    "lock": MutationCheck("lock", ("orphan",), ("lock_not_held",)),
    "quarantine": MutationCheck("quarantine", ("bad_sample",), ("bad_sample_not_quarantined",)),
    "tidy": MutationCheck("tidy", ("disk_full:sample",), ("temporary_file_left",)),
    "parent_watch": MutationCheck("parent_watch", ("kill_gym",), ("orphan_process",)),
    # current.json names a model the full disk kept from being written; the next gym goes
    # back to the newest model there is
    "publish_order": MutationCheck(
        "publish_order", ("disk_full:model",), ("iteration_went_back",), cycles=2
    ),
    # the record of the gym killed in the first cycle keeps the second from starting
    "stale_lock": MutationCheck("stale_lock", ("kill_gym",), ("gym_did_not_start",), cycles=2),
    # the first averaged model holds the weights trained; from the second they differ
    "fast_form": MutationCheck(
        "fast_form",
        ("exit",),
        ("fast_form_differs",),
        settings={"train": {"weight_average": "ema"}},
        iterations=3,
    ),
}
# the invariants no mutation check shows firing, and why (docs/guides/reliability.md)
NOT_MUTATED = {
    "iteration_published_twice": "its one protection is the lock (one Trainer); the lock check "
    "stops a Trainer mid-iteration only by chance",
    "model_does_not_load": "a torn model file is not a sound archive, counted as unsound_model",
    "sample_file_lost": "only quarantine moves a sample file: atomic_publish:sample shows it "
    "when the soak read the torn file before the Trainer moved it",
    "live_writer_temp_deleted": "the lock check stops a child mid-write only by chance",
}


def mutation_check(folder: Path, seed: int, names: list[str]) -> int:
    """A short soak per mutation check (one protection switched off, GAMEGYM_MUTATE), each
    with the faults that expose it: every one must report the violations it names.  Prints one
    JSON object: checks ({check: {caught, violations}}), shown (the invariants some check saw
    fire) and not_shown (the others, each with why); exit status 1 unless every check caught
    its violations."""
    report = {}
    for name in names:
        check = MUTATION_CHECKS[name]
        run_folder = folder / name.replace(":", "-")
        command = [sys.executable, str(SOAK), "--minutes", "0", "--cycles", str(check.cycles)]
        command += ["--seed", str(seed), "--json", "--folder", str(run_folder)]
        command += ["--wait-writers", str(check.writers)]
        command += ["--wait-iterations", str(check.iterations), "--faults-in-order"]
        command += ["--mutate", check.mutation, "--faults", *check.faults]
        if check.settings:
            command += ["--set", json.dumps(check.settings)]
        done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        try:
            violations = json.loads(done.stdout.strip().splitlines()[-1])["violations"]
        except (IndexError, json.JSONDecodeError, KeyError):
            violations = {}
            print(f"[soak] the soak of check {name} failed: {done.stderr[-2000:]}", flush=True)
        found = {v: n for v, n in violations.items() if n}
        caught = all(found.get(v) for v in check.catches)
        report[name] = {"caught": caught, "violations": found}
    shown = sorted({v for r in report.values() for v in r["violations"]})
    print(
        json.dumps(
            {
                "checks": report,
                "shown": shown,
                "not_shown": {
                    v: NOT_MUTATED.get(v, "no check reported it")
                    for v in INVARIANTS
                    if v not in shown
                },
            },
            sort_keys=True,
        )
    )
    return 0 if all(r["caught"] for r in report.values()) else 1
