"""A child process that leaves when its parent dies: `watch_parent`, used by every role's entry
point (gamegym.runtime.process.child_entry) and by the short-lived child that converts a model
to the fast path (gamegym.nets.fastmodels).

May import: the standard library only; nothing of gamegym (every floor may use it).
"""

from __future__ import annotations

import multiprocessing
import threading

__all__ = ["watch_parent"]


def watch_parent(on_death) -> None:
    """Call `on_death()` in a daemon thread as soon as the parent process is gone."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watcher():
        from multiprocessing.connection import wait

        wait([parent.sentinel])
        on_death()

    threading.Thread(target=watcher, name="parent-watch", daemon=True).start()
