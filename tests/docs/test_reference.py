"""The generated reference pages (docs/hooks/reference.py) document every config field and
every command-line flag, with a meaning for every field; the pages' field tables name fields
that exist.  Fast: nothing here builds the site or starts a process."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "docs" / "hooks" / "reference.py"


def load_hook():
    """The hook module, loaded from its file the way MkDocs loads it."""
    name = "gamegym_docs_reference"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HOOK)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


ref = load_hook()


# ----- config fields ---------------------------------------------------------------------------
def _flatten(data: dict, prefix: str = "") -> set[str]:
    """Dotted names of the leaves of a config.json dict (an empty dict is a leaf: game_args)."""
    names = set()
    for key, value in data.items():
        if isinstance(value, dict) and value:
            names |= _flatten(value, f"{prefix}{key}.")
        else:
            names.add(prefix + key)
    return names


def _learner_names() -> list[str]:
    from gamegym.registry import LEARNERS

    return list(LEARNERS.names())


def config_json_fields() -> set[str]:
    """Every key a session's config.json can hold, from what GymConfig writes for each
    learner (a learner's own section appears only when it is the session's learner)."""
    from gamegym.config import GymConfig

    names = set()
    for learner in _learner_names():
        config = GymConfig.from_dict(
            {"game": "games.tictactoe:TicTacToe", "train": {"learner": learner}}
        )
        names |= _flatten(config.to_dict())
    return names


def documented_rows(page: str) -> dict[str, str]:
    """Field name -> meaning cell of every row of the config reference's tables."""
    rows = {}
    for line in page.splitlines():
        match = re.match(r"\| `([\w.]+)`(?: \*\*fixed\*\*)? \| `.*?` \| (.*) \|$", line)
        if match:
            rows[match.group(1)] = match.group(2).strip()
    return rows


def test_every_config_field_has_an_entry_with_a_meaning():
    rows = documented_rows(ref.config_page())
    fields = config_json_fields()
    assert {
        "game",
        "seed",
        "network.width",
        "selfplay.search.searchcount",
        "train.learner",
        "evaluate.opponents",
    } <= fields  # the enumeration itself sees the sections
    missing = sorted(fields - set(rows))
    assert not missing, f"config fields without an entry in reference/config.md: {missing}"
    silent = sorted(name for name in fields if not rows[name])
    assert not silent, (
        f"config fields without a meaning (write a comment after the field in "
        f"its dataclass): {silent}"
    )
    extra = sorted(set(rows) - fields)
    assert not extra, f"reference/config.md documents fields config.json does not hold: {extra}"


def test_defaults_are_the_dataclass_defaults():
    from gamegym.config import GymConfig

    rows = {}
    for line in ref.config_page().splitlines():
        match = re.match(r"\| `([\w.]+)`(?: \*\*fixed\*\*)? \| `(.*?)` \|", line)
        if match:
            rows[match.group(1)] = match.group(2)
    defaults = GymConfig.from_dict({"game": "games.tictactoe:TicTacToe"}).to_dict()
    assert rows["selfplay.search.searchcount"] == str(defaults["selfplay"]["search"]["searchcount"])
    assert rows["train.learner"] == f'"{defaults["train"]["learner"]}"'
    assert rows["evaluate.opponents"] == ref._json(defaults["evaluate"]["opponents"])
    assert rows["game"] == '""'


@dataclasses.dataclass
class _Sample:
    """A section written in every style the reference reads."""

    _section = "sample."
    plain: int = 1  # a trailing comment
    wrapped: float = 0.5  # a comment that goes on
    #                                on the next line, aligned
    pushed: bool = True  # a comment continued
    #                                after the hash, as config.py does
    # a group header above the next fields (not a continuation)
    after_header: int = 2  # its own comment
    told: str = dataclasses.field(default="x", metadata={"doc": "from metadata"})
    docstring: int = 3
    """From an attribute docstring."""
    # from the comment block above
    above: int = 4
    factory: list = dataclasses.field(default_factory=lambda: [1, 2])  # made by a factory
    slot: Any = None  # filled at run time: not a field of its own


def test_field_meanings_reads_every_comment_style():
    meanings = ref.field_meanings(_Sample)
    assert meanings["plain"] == "a trailing comment"
    assert meanings["wrapped"] == "a comment that goes on on the next line, aligned"
    assert meanings["pushed"] == "a comment continued after the hash, as config.py does"
    assert meanings["after_header"] == "its own comment"
    assert meanings["told"] == "from metadata"
    assert meanings["docstring"] == "From an attribute docstring."
    assert meanings["above"] == "from the comment block above"
    assert meanings["factory"] == "made by a factory"


def test_sections_nest_and_skip_run_time_slots():
    sections = list(ref._walk(_Sample, "sample.", set(), set()))
    names = [f.name for f in sections[0].fields]
    assert "sample.slot" not in names and "sample.factory" in names
    factory = next(f for f in sections[0].fields if f.name == "sample.factory")
    assert factory.default == "[1, 2]"


def test_field_tables_find_a_field_by_its_short_name_and_refuse_unknown_ones():
    table = ref.config_fields_table(["threads", "train.batchsize"])
    assert "`selfplay.search.threads`" in table and "`train.batchsize`" in table
    with pytest.raises(ValueError, match="no_such_field"):
        ref.config_fields_table(["no_such_field"])


def test_every_field_table_in_the_docs_names_existing_fields():
    pages = sorted((ROOT / "docs").rglob("*.md"))
    marks = [
        (page, m)
        for page in pages
        for m in ref.FIELDS_MARK.finditer(page.read_text(encoding="utf-8"))
    ]
    assert marks, "the learner pages embed field tables"
    for _page, mark in marks:
        ref.config_fields_table(mark.group(1).split())  # raises naming a missing field


# ----- the command line ------------------------------------------------------------------------
def parser_commands(parser: argparse.ArgumentParser, words: tuple = ()) -> dict[tuple, list]:
    """Every command's words -> its argument names (flags, or a positional's name)."""
    found = {words: []}
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(parser_commands(sub, words + (name,)))
        elif action.option_strings:
            found[words] += action.option_strings
        else:
            found[words].append(action.metavar or action.dest)
    return found


def page_sections(page: str) -> dict[tuple, str]:
    """The text of each `gamegym ...` heading of the command-line page."""
    parts = re.split(r"^#+ gamegym (.+)$", page, flags=re.M)
    return {tuple(parts[i].split()): parts[i + 1] for i in range(1, len(parts), 2)}


def test_every_command_and_flag_has_an_entry():
    from gamegym.cli.main import build_parser

    commands = parser_commands(build_parser())
    sections = page_sections(ref.cli_page())
    assert ("new",) in commands and ("resume",) in commands
    for words, arguments in commands.items():
        if not words:
            continue
        assert words in sections, f"no section for 'gamegym {' '.join(words)}'"
        for argument in arguments:
            assert f"`{argument}`" in sections[words], (
                f"'gamegym {' '.join(words)}' documents no {argument}"
            )


def test_sub_subcommands_are_walked():
    parser = argparse.ArgumentParser(prog="gamegym")
    sub = parser.add_subparsers()
    bench = sub.add_parser("bench", help="benchmarks").add_subparsers()
    learning = bench.add_parser("learning", help="train a game and print its curve")
    learning.add_argument("--minutes", type=float, default=10.0, help="training time")
    page = ref.cli_page(ref.cli_commands(parser))
    sections = page_sections(page)
    assert "`--minutes`" in sections[("bench", "learning")]
    assert "Train a game and print its curve." in sections[("bench", "learning")]
    assert "`10.0`" in sections[("bench", "learning")]


# ----- the hook --------------------------------------------------------------------------------
def test_the_hook_adds_the_generated_pages(tmp_path):
    """MkDocs itself loads the hook from mkdocs.yml's `hooks` and runs its on_files event."""
    pytest.importorskip(
        "mkdocs", reason='the optional extra docs is not installed: pip install -e ".[docs]"'
    )
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

    config = MkDocsConfig(config_file_path=str(ROOT / "mkdocs.yml"))
    config.load_dict(
        {
            "site_name": "t",
            "docs_dir": str(ROOT / "docs"),
            "site_dir": str(tmp_path / "site"),
            "hooks": [str(HOOK)],
        }
    )
    errors, _ = config.validate()
    assert not errors
    files = config.plugins.on_files(Files([]), config=config)
    generated = {f.src_uri: f.content_string for f in files}
    assert generated["reference/config.md"] == ref.config_page()
    assert generated["reference/cli.md"] == ref.cli_page()


def test_the_package_table_lists_every_sub_package():
    table = ref.package_layout()
    for init in (ROOT / "gamegym").glob("*/__init__.py"):
        assert f"`gamegym.{init.parent.name}`" in table
    markdown = ref.on_page_markdown(
        "a\n{{ package_layout }}\n{{ config_fields seed }}\n", None, None, None
    )
    assert "`gamegym.game`" in markdown and "| `seed` |" in markdown


def test_the_command_line_page_states_the_vocabulary_and_typed_defaults():
    from gamegym.cli.vocabulary import VOCABULARY

    page = ref.cli_page()
    vocabulary = page.split("## One vocabulary")[1].split("\n## ")[0]
    for term in VOCABULARY:
        assert f"| {term.idea} |" in vocabulary
    sections = page_sections(page)
    assert "| `--seed` `N,N` | `0` |" in sections[("bench", "learning")]  # as typed, not [0]
    assert "`uniform,curious`" in sections[("bench", "replay")]


# ----- the settings changed first --------------------------------------------------------------
def test_the_config_page_opens_with_the_settings_changed_first():
    page = ref.config_page()
    first = page.index("## The settings you will change first")
    assert first < page.index("## Top level")
    table = ref.first_settings_table()
    assert table in page[first:]
    rows = table.splitlines()[2:]
    assert len(rows) == len(ref.FIRST_SETTINGS) >= 8
    fields = {f.name: f for section in ref.config_sections() for f in section.fields}
    for (name, trade), row in zip(ref.FIRST_SETTINGS, rows):
        field = fields[name]
        assert field.meaning and trade.strip(), name
        mark = " **fixed**" if field.fixed else ""
        assert row == (  # the default and the meaning are the code's, as in the sections
            f"| `{name}`{mark} | `{ref._cell(field.default)}` | {ref._cell(field.meaning)} "
            f"| {ref._cell(trade)} |"
        )
    assert "`network.width` **fixed**" in table


def test_the_settings_changed_first_name_fields_that_exist(monkeypatch):
    monkeypatch.setattr(ref, "FIRST_SETTINGS", (("train.no_such_field", "nothing"),))
    with pytest.raises(ValueError, match="train.no_such_field"):
        ref.first_settings_table()
