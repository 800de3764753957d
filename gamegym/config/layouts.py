"""The layouts of a session's config.json that earlier gamegyms wrote, read as today's.

A session keeps its config.json for life and is resumed by later gamegyms, so every layout a
released format version had is read here, once, by `stored_layout` (its format version is
gamegym.data.formats.CONFIG_FORMAT):

- format 1 held every learner's own fields in the shared sections (FORMER_LEARNER_FIELDS):
  the session's learner's go to its own section, the others are dropped;
- format 2 and before held the search settings flat in the selfplay and evaluate sections
  (FORMER_SEARCH_FIELDS): they go to the section's search section, `selfplay.search` (then
  the root rule's name) to `selfplay.search.rule`, `evaluate.searchcount` to
  `evaluate.search.searchcount`.

Settings of the user's own (a `--config` file, a preset) are read in today's layout only: a
moved key is an unknown field, and its error names where it lives now (`moved_hint`).
"""

from __future__ import annotations

from typing import Any

from gamegym.config.checks import field_names
from gamegym.registry import LEARNERS

__all__ = [
    "FORMER_LEARNER_FIELDS",
    "FORMER_SEARCH_FIELDS",
    "learner_config_class",
    "moved_hint",
    "stored_layout",
]

# Fields that a learner's own section holds, by the shared section a config.json of format 1
# held them in (every learner's, with their defaults).
FORMER_LEARNER_FIELDS = {
    "network": ("hidden_size", "heads", "prior_scale"),
    "selfplay": ("epsilon", "head_per_side", "concurrent_games", "positions_per_iteration"),
    "train": (
        "num_unroll_steps",
        "reward_loss_weight",
        "mask_probability",
        "target_update_period",
        "double_q",
        "discount",
    ),
    "evaluate": ("q_search",),
}

# The search settings a config.json of format 2 or before held flat in the selfplay and
# evaluate sections: the flat key -> its key in that section's search section.
FORMER_SEARCH_FIELDS = {
    "selfplay": {
        "search": "rule",
        "searchcount": "searchcount",
        "searchthreadcount": "threads",
        "search_os_threads": "os_threads",
        "search_solver": "solver",
        "search_core": "core",
        "exploration_const": "exploration_const",
        "virtualloss": "virtualloss",
        "dirichlet_alpha": "dirichlet_alpha",
        "dirichlet_fraction": "dirichlet_fraction",
        "gumbel_considered": "gumbel_considered",
        "gumbel_value_scale": "gumbel_value_scale",
        "gumbel_maxvisit_init": "gumbel_maxvisit_init",
        "gumbel_rescale": "gumbel_rescale",
    },
    "evaluate": {"searchcount": "searchcount"},
}


def learner_config_class(learner: str) -> type | None:
    """The dataclass of a learner's own config section, None when it has none."""
    return getattr(LEARNERS.get(learner), "config_class", None)


def stored_layout(data: dict, version: int, learner: str) -> dict:
    """The JSON form of a session's config.json of format `version` in today's layout (a
    copy where anything moves; `learner`: the session's train.learner)."""
    if version < 2:
        data = _moved_to_learner_section(data, learner)
    if version < 3:
        data = _moved_to_search_section(data)
    return data


def _moved_to_search_section(data: dict) -> dict:
    """Flat search settings (FORMER_SEARCH_FIELDS) moved into their section's search
    section; a key the search section holds already wins."""
    if not any(
        isinstance(data.get(s), dict)
        and ((set(moved) - {"search"}) & set(data[s]) or isinstance(data[s].get("search"), str))
        for s, moved in FORMER_SEARCH_FIELDS.items()
    ):
        return data
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    for section, moved in FORMER_SEARCH_FIELDS.items():
        flat = data.get(section)
        if not isinstance(flat, dict):
            continue
        search = flat.get("search")
        search = dict(search) if isinstance(search, dict) else {}
        olds = [old for old in moved if old in flat and not isinstance(flat[old], dict)]
        for old in olds:
            search.setdefault(moved[old], flat.pop(old))
        if olds:
            flat["search"] = search
    return data


def _moved_to_learner_section(data: dict, learner: str) -> dict:
    """Format 1's learner fields (FORMER_LEARNER_FIELDS in the shared sections) in today's
    layout: the learner's fields in its section, the others dropped."""
    if not any(
        isinstance(data.get(s), dict) and set(names) & set(data[s])
        for s, names in FORMER_LEARNER_FIELDS.items()
    ):
        return data
    data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    section_cls = learner_config_class(learner) if learner in LEARNERS else None
    own_names = set(field_names(section_cls)) if section_cls else set()
    own = dict(data.get(learner, {})) if isinstance(data.get(learner), dict) else {}
    for section, names in FORMER_LEARNER_FIELDS.items():
        for name in names:
            if isinstance(data.get(section), dict) and name in data[section]:
                value = data[section].pop(name)
                if name in own_names:
                    own.setdefault(name, value)
    if own:
        data[learner] = own
    return data


def moved_hint(section: str) -> Any:
    """For the unknown keys of `section` ("selfplay"): a function giving where a key that
    moved lives now (a learner's section, the search section), or None."""

    def hint(key: str) -> str | None:
        moved = FORMER_SEARCH_FIELDS.get(section, {})
        if key in moved and key != "search":
            return f"; it is a field of the search section: '{section}.search.{moved[key]}'"
        if key in FORMER_LEARNER_FIELDS.get(section, ()):
            owners = [
                name
                for name, cls in LEARNERS.items()
                if key in field_names(getattr(cls, "config_class", None) or object)
            ]
            return "; it is a field of the learner's own section: " + " or ".join(
                f"'{owner}.{key}'" for owner in owners
            )
        return None

    return hint
