"""The reference pages, generated from the code inside `mkdocs build` (a MkDocs hook).

- `reference/config.md`: every config field, its default and its meaning, from the config
  dataclasses (`gamegym.config.GymConfig` and every section reachable from it or listed in
  `gamegym.config.SECTIONS`).  The meaning is the field's own documentation: `metadata["doc"]`
  when given, else an attribute docstring under the field, else the comment after it (with the
  comment lines that continue it), else the comment block above it.  Its first table is the
  settings users change first (`FIRST_SETTINGS`), each with what changing it trades.
- `reference/cli.md`: every `gamegym` command, sub-command and flag, walked from the argparse
  parser of `gamegym.cli.main.build_parser()`.
- The package layout on the architecture page: each sub-package's `__init__` docstring, read
  from the source (`{{ package_layout }}` in a page is replaced by it).

The functions that build the page text are plain functions, so tests/docs/test_reference.py
can check that every field and flag has its entry.
"""

import argparse
import ast
import dataclasses
import inspect
import io
import json
import re
import sys
import textwrap
import tokenize
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # the checkout these docs describe
if str(ROOT) not in sys.path:  # MkDocs restores sys.path after loading a hook, so import
    sys.path.insert(0, str(ROOT))  # the checkout's package now, before any installed copy
import gamegym  # noqa: E402,F401


# ----- config fields -------------------------------------------------------------------------
@dataclasses.dataclass
class FieldDoc:
    """One config field: its dotted name in config.json, default (JSON) and meaning."""

    name: str
    default: str
    meaning: str
    fixed: bool = False


@dataclasses.dataclass
class SectionDoc:
    """One config section: its dotted prefix ("" for the top level), class and fields."""

    name: str
    cls: type
    doc: str
    fields: list[FieldDoc]


def _default_of(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _json(value: Any) -> str:
    if value is dataclasses.MISSING:
        return "(required)"
    if isinstance(value, Path):
        value = str(value)
    try:
        return json.dumps(value)
    except TypeError:
        return repr(value)


def _comment_lines(source: str) -> dict[int, tuple[int, str, bool]]:
    """line -> (column, text, whether the line holds nothing but the comment)."""
    code_lines: set[int] = set()
    comments: dict[int, tuple[int, str]] = {}
    skip = {
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.COMMENT,
        tokenize.ENDMARKER,
    }
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = (token.start[1], token.string)
        elif token.type not in skip:
            code_lines.update(range(token.start[0], token.end[0] + 1))
    return {line: (col, text, line not in code_lines) for line, (col, text) in comments.items()}


def _continues(column: int, text: str, indent: int) -> bool:
    """A comment-only line continues the comment above when it is indented past the fields or
    its text is pushed right after the '#' (`#     more words`)."""
    return column > indent or re.match(r"#\s{2,}\S", text) is not None


def _clean(text: str) -> str:
    return text.lstrip("#").strip()


def field_meanings(cls: type) -> dict[str, str]:
    """The documentation of each field of a dataclass, read from its source."""
    meanings = {
        f.name: str(f.metadata.get("doc") or f.metadata.get("help") or "")
        for f in dataclasses.fields(cls)
    }
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return meanings
    comments = _comment_lines(source)
    body = ast.parse(source).body[0].body
    for i, node in enumerate(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        name = node.target.id
        if name not in meanings or meanings[name]:
            continue
        nxt = body[i + 1] if i + 1 < len(body) else None
        if (
            isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            meanings[name] = inspect.cleandoc(nxt.value.value)
            continue
        parts = [
            _clean(comments[line][1])
            for line in range(node.lineno, node.end_lineno + 1)
            if line in comments
        ]
        line = node.end_lineno + 1
        while (
            parts
            and line in comments
            and comments[line][2]
            and _continues(comments[line][0], comments[line][1], node.col_offset)
        ):
            parts.append(_clean(comments[line][1]))
            line += 1
        if not parts:  # a comment block right above the field
            line = node.lineno - 1
            while line in comments and comments[line][2]:
                parts.insert(0, _clean(comments[line][1]))
                line -= 1
        meanings[name] = " ".join(p for p in parts if p)
    return meanings


def _is_slot(f: dataclasses.Field, default: Any) -> bool:
    """A field that holds a section chosen at run time (e.g. the learner's own section, typed
    Any, None by default): documented through the sections that can fill it, not itself."""
    return default is None and f.type in (Any, "Any")


def _walk(
    cls: type, prefix: str, fixed: set[str], seen: set[type], instance: Any = None
) -> Iterator[SectionDoc]:
    """The section `cls` at `prefix` and the sections nested in it; the defaults are those of
    `instance` where given (a section nested with defaults of its own, as evaluate.search)."""
    seen.add(cls)
    meanings = field_meanings(cls)
    own: list[FieldDoc] = []
    nested: list[tuple[type, str, Any]] = []
    fixed = fixed | {prefix + name for name in getattr(cls, "FIXED", ()) if isinstance(name, str)}
    for f in dataclasses.fields(cls):
        default = getattr(instance, f.name) if instance is not None else _default_of(f)
        name = prefix + f.name
        if _is_slot(f, default):
            continue
        if dataclasses.is_dataclass(default) and not isinstance(default, type):
            nested.append((type(default), name + ".", default))
        elif (
            isinstance(default, dict)
            and default
            and all(dataclasses.is_dataclass(v) for v in default.values())
        ):
            nested += [(type(v), f"{name}.{key}.", v) for key, v in default.items()]
        else:
            own.append(
                FieldDoc(
                    name,
                    _json(default),
                    meanings.get(f.name, ""),
                    name in fixed or name.split(".")[0] in fixed,
                )
            )
    yield SectionDoc(prefix.rstrip("."), cls, inspect.getdoc(cls) or "", own)
    for sub, sub_prefix, default in nested:  # one class may be nested in several sections
        yield from _walk(sub, sub_prefix, fixed, seen, default)


def config_sections() -> list[SectionDoc]:
    """Every config section with its fields: the top level, each section reachable from
    GymConfig, and any class of gamegym.config.SECTIONS not reached that way."""
    from gamegym import config

    fixed = set(getattr(config.GymConfig, "FIXED", ()))
    seen: set[type] = set()
    sections = list(_walk(config.GymConfig, "", fixed, seen))
    for name, cls in getattr(config, "SECTIONS", {}).items():
        if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls not in seen:
            sections += list(_walk(cls, name + ".", fixed, seen))
    for name, cls in registered_sections():
        if cls not in seen:
            sections += list(_walk(cls, getattr(cls, "_section", name + "."), fixed, seen))
    return sections


def registered_sections() -> list[tuple[str, type]]:
    """The config sections of registered learners (and of anything else a registry holds that
    has a `config_class`), by name: stored in config.json under that name."""
    try:
        from gamegym import registry
    except ImportError:
        return []
    found = []
    for kind in ("LEARNERS", "REPLAYS", "BACKENDS", "SEARCHES"):
        reg = getattr(registry, kind, None)
        if reg is None:
            continue
        for name in reg.names():
            cls = getattr(reg.get(name), "config_class", None)
            if isinstance(cls, type) and dataclasses.is_dataclass(cls):
                found.append((name, cls))
    return found


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


# The settings users change first, each with what changing it trades: the first table of the
# configuration reference (its default and meaning come from the code, as in every table).
FIRST_SETTINGS: tuple[tuple[str, str], ...] = (
    (
        "selfplay.selfplayprocesses",
        "more games played at once; each Selfplayer takes a core's share from the Trainer "
        "and its own memory (as many as the cores, one fewer for the Trainer on a small "
        "machine)",
    ),
    (
        "selfplay.search.searchcount",
        "better moves and policy targets per position against fewer positions a second",
    ),
    (
        "network.width",
        "a network that can learn more against a slower evaluation in every search and a "
        "slower training step; fixed when the session is made",
    ),
    (
        "network.blocks",
        "as `network.width`: capacity against the cost of every evaluation and training step",
    ),
    (
        "train.max_samplecount",
        "a larger window trains each sample fewer times and reaches older games, and an "
        "iteration takes longer",
    ),
    (
        "train.max_sampleage",
        "as `train.max_samplecount`: more samples in the window, from games of older "
        "iterations, played by weaker models",
    ),
    (
        "train.epochs",
        "a closer fit of the window against longer iterations and each sample trained on "
        "more times (fitting the window too closely)",
    ),
    (
        "train.learning_rate",
        "a higher rate learns faster and less steadily; a loss that is not finite calls for a "
        "lower one, and `train.learning_rate_schedule` "
        "steps it down from given iterations",
    ),
    (
        "selfplay.nice",
        "where the Trainer bounds the run, more iterations for it against fewer self-play "
        "positions",
    ),
    (
        "seed",
        "another run of the same settings: two seeds show how far a result moves by chance",
    ),
)


def first_settings_table(sections: list[SectionDoc] | None = None) -> str:
    """The table of FIRST_SETTINGS: each field with its default and meaning from the code and
    what changing it trades; a ValueError names a field that does not exist."""
    every = {
        f.name: f
        for section in (config_sections() if sections is None else sections)
        for f in section.fields
    }
    rows = ["| field | default | meaning | what it trades |", "|---|---|---|---|"]
    for name, trade in FIRST_SETTINGS:
        if name not in every:
            raise ValueError(f"the first settings name a config field {name!r} that does not exist")
        f = every[name]
        mark = " **fixed**" if f.fixed else ""
        rows.append(
            f"| `{f.name}`{mark} | `{_cell(f.default)}` | {_cell(f.meaning)} | {_cell(trade)} |"
        )
    return "\n".join(rows)


def config_page(sections: list[SectionDoc] | None = None) -> str:
    """The Markdown of reference/config.md."""
    sections = config_sections() if sections is None else sections
    out = [
        "# Configuration reference",
        "",
        "Every setting of a session, generated from the config classes (`gamegym/config/` "
        "and the sections registered learners add) when this site is built. A session's "
        "`config.json` holds all of them; `gamegym new --config FILE` and `gamegym resume "
        "--config FILE` take a JSON file with any subset, nested by section:",
        "",
        "```json",
        '{"selfplay": {"search": {"searchcount": 200}},',
        ' "train": {"replay": "curious", "num_updates_per_train_iter": 200}}',
        "```",
        "",
        "Unknown keys are errors that suggest the closest known one; a value out of range is "
        "an error naming the field. Fields marked **fixed** cannot change on resume.",
        "",
        "## The settings you will change first",
        "",
        "The fields most often changed, with what changing each trades. A preset "
        "(`gamegym presets`) sets several of them for its game, so a session made from one "
        "starts from the preset's values, not the defaults shown here; its `config.json` "
        "holds what it uses.",
        "",
        first_settings_table(sections),
        "",
    ]
    for section in sections:
        out += [f"## `{section.name}`" if section.name else "## Top level", ""]
        if section.doc:
            out += [section.doc.split("\n\n")[0].replace("\n", " "), ""]
        if not section.fields:
            continue
        out += ["| field | default | meaning |", "|---|---|---|"]
        for f in section.fields:
            mark = " **fixed**" if f.fixed else ""
            out.append(f"| `{f.name}`{mark} | `{_cell(f.default)}` | {_cell(f.meaning)} |")
        out.append("")
    return "\n".join(out)


# ----- the command line ----------------------------------------------------------------------
@dataclasses.dataclass
class ArgDoc:
    """One argument of a command: its flags (or name), metavar, default and help."""

    names: list[str]
    metavar: str
    default: str
    help: str
    required: bool


@dataclasses.dataclass
class CommandDoc:
    """One command: its words after `gamegym`, help, usage line and arguments."""

    words: list[str]
    help: str
    usage: str
    arguments: list[ArgDoc]


def _typed(value: Any) -> str:
    """A flag's default as it is typed on the command line (a list comma-separated)."""
    from gamegym.cli.util import default_text

    return default_text(value)


def _arg_doc(parser: argparse.ArgumentParser, action: argparse.Action) -> ArgDoc:
    formatter = parser._get_formatter()
    help_text = action.help or ""
    if help_text and help_text != argparse.SUPPRESS:
        try:
            help_text = formatter._expand_help(action)
        except (KeyError, TypeError, ValueError):
            pass
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        help_text += f" (one of: {', '.join(map(str, action.choices))})"
    default = action.default
    shown = (
        ""
        if default is None or default is False or default == argparse.SUPPRESS
        else _typed(default)
    )
    if action.option_strings:
        args = formatter._format_args(action, action.dest.upper()) if action.nargs != 0 else ""
        names = list(action.option_strings)
    else:
        args, names = "", [action.metavar or action.dest]
    return ArgDoc(names, args, shown, help_text, bool(action.required or not action.option_strings))


def cli_commands(
    parser: argparse.ArgumentParser | None = None, words: list[str] | None = None
) -> list[CommandDoc]:
    """Every command and sub-command of the parser, depth first, with its arguments."""
    if parser is None:
        from gamegym.cli.main import build_parser

        parser = build_parser()
    words = words or []
    found = [CommandDoc(words, parser.description or "", parser.format_usage().strip(), [])]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            done: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) in done:  # an alias of a command already listed
                    continue
                done.add(id(sub))
                below = cli_commands(sub, words + [name])
                below[0].help = helps.get(name, "") or below[0].help
                found += below
            continue
        found[0].arguments.append(_arg_doc(parser, action))
    return found


def cli_page(commands: list[CommandDoc] | None = None) -> str:
    """The Markdown of reference/cli.md."""
    from gamegym.cli.vocabulary import vocabulary_table

    commands = cli_commands() if commands is None else commands
    out = [
        "# Command-line reference",
        "",
        "Every `gamegym` command and flag, generated from the command's argument parser "
        "(`gamegym.cli.main.build_parser`) when this site is built. `python -m gamegym` is "
        "the same command. `gamegym COMMAND --help` prints the same at the console.",
        "",
        "## One vocabulary",
        "",
        "Every command spells the same idea the same way (`gamegym.cli.vocabulary`); a "
        "retired spelling is refused with the one to write instead, and a flag is never "
        "taken abbreviated:",
        "",
        vocabulary_table(),
        "",
    ]
    for command in commands[1:]:
        depth = min(len(command.words) + 1, 4)
        out += ["#" * depth + f" gamegym {' '.join(command.words)}", ""]
        if command.help:
            out += [command.help[0].upper() + command.help[1:] + ".", ""]
        out += ["```text", command.usage, "```", ""]
        if not command.arguments:
            continue
        out += ["| argument | default | meaning |", "|---|---|---|"]
        for arg in command.arguments:
            name = ", ".join(f"`{n}`" for n in arg.names)
            if arg.metavar:
                name += f" `{arg.metavar}`"
            default = f"`{_cell(arg.default)}`" if arg.default else ""
            out.append(f"| {name} | {default} | {_cell(arg.help)} |")
        out.append("")
    return "\n".join(out)


# ----- the package layout --------------------------------------------------------------------
def package_layout(package: Path = ROOT / "gamegym") -> str:
    """A table of the package and its sub-packages with the first paragraph of each
    `__init__` docstring and what it may import (read from the source, not imported)."""
    rows = ["| package | what it is | may import |", "|---|---|---|"]
    for init in sorted(package.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        name = ".".join(init.parent.relative_to(package.parent).parts)
        what = doc.split("\n\n")[0]
        may = re.search(r"May import:(.*?)(\n\n|$)", doc, re.S)
        rows.append(f"| `{name}` | {_cell(what)} | {_cell(may.group(1)) if may else ''} |")
    return "\n".join(rows)


# ----- the MkDocs hook -----------------------------------------------------------------------
GENERATED = {"reference/config.md": config_page, "reference/cli.md": cli_page}


def on_files(files, config):
    """Add the generated reference pages to the site (they never exist on disk)."""
    from mkdocs.structure.files import File

    for path, make in GENERATED.items():
        files.append(File.generated(config, path, content=make()))
    return files


FIELDS_MARK = re.compile(r"\{\{ config_fields ([\w. ]+?) \}\}")


def config_fields_table(names: list[str], sections: list[SectionDoc] | None = None) -> str:
    """A table of the named config fields with their defaults and meanings.  A name with a dot
    is a full dotted name; a plain name matches the field of that name in any section, so a
    page keeps working when a field moves to another section."""
    every = [
        f
        for section in (config_sections() if sections is None else sections)
        for f in section.fields
    ]
    rows = ["| field | default | meaning |", "|---|---|---|"]
    for name in names:
        found = [
            f
            for f in every
            if f.name == name or ("." not in name and f.name.rsplit(".", 1)[-1] == name)
        ]
        if not found:
            raise ValueError(f"the docs name a config field {name!r} that does not exist")
        rows += [f"| `{f.name}` | `{_cell(f.default)}` | {_cell(f.meaning)} |" for f in found]
    return "\n".join(rows)


def on_page_markdown(markdown, page, config, files):
    """Fill `{{ package_layout }}` with the package table and `{{ config_fields a b ... }}`
    with those fields' table (from the code, so it cannot drift)."""
    if "{{ package_layout }}" in markdown:
        markdown = markdown.replace("{{ package_layout }}", package_layout())
    return FIELDS_MARK.sub(lambda m: config_fields_table(m.group(1).split()), markdown)
