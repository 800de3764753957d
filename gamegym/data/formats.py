"""Format versions of the files a session keeps, and the check every reader makes.

  config.json     "format_version" (CONFIG_FORMAT); it stands for the session folder's layout
  sample files    member "format_version" (SAMPLE_FORMAT)
  replay state    member "version" (REPLAY_FORMAT)

A file that records no version is version 1 (what gamegym wrote before it kept versions).  A
config.json or replay state of a newer version than this gamegym reads is refused with a
`FormatError` naming both versions; it is never quarantined or rewritten, so a newer gamegym can
still open it.  A sample file is one of thousands: one of a version it cannot read (newer, or
not a number) is left out and moved whole to the session's quarantine, where a newer gamegym
can still read it, and training goes on with the others (gamegym.data.samples).  When a format
changes, its number goes up and its reader learns to read (or migrate) every older one.
"""

from __future__ import annotations

__all__ = ["CONFIG_FORMAT", "SAMPLE_FORMAT", "REPLAY_FORMAT", "FormatError", "check_format"]

# 3: the search settings in the selfplay section's search section ("selfplay": {"search":
#    {"searchcount": ...}}); 2 kept them flat in the selfplay section, read by moving them there
# 2: each learner's own fields in its own section ("muzero": {...}, "bootstrapped": {...});
#    1 kept every learner's in the shared sections, read by moving the session learner's there
#    (gamegym.config.layouts reads each)
CONFIG_FORMAT = 3
# 2: the policy_weight column (0 after a fast search of playout-cap randomization); a file of
#    format 1 has none and reads as all 1
SAMPLE_FORMAT = 2
REPLAY_FORMAT = 1


class FormatError(Exception):
    """A file was written by a newer gamegym (or names a version that does not exist)."""


def check_format(found, newest: int, what: str) -> int:
    """The version `found` in a file (None: 1), or FormatError when this gamegym cannot read
    it; `what` names the file in the message."""
    if found is None:
        return 1
    try:
        version = int(found)
    except (TypeError, ValueError):
        raise FormatError(f"{what} has format version {found!r}, which is not a number") from None
    if version > newest:
        raise FormatError(
            f"{what} has format version {version}; this gamegym reads format "
            f"versions up to {newest}: it was written by a newer gamegym, "
            "update gamegym to use it"
        )
    if version < 1:
        raise FormatError(f"{what} has format version {version}; versions start at 1")
    return version
