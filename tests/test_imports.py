"""The package's imports run down its floors, and no module imports, even lazily, one that
imports it back.

Each sub-package (and each module at the package's top) stands on one floor; a module may
import modules of its own floor and of the floors below, never one above (FLOORS, from the
top).  docs/architecture.md draws the same floors.  The graph is drawn from every `import`
statement in every module (those inside functions and under TYPE_CHECKING too); the implicit
import of a parent package's __init__ is not an edge.  No module (of the package or of
scripts/) is over 500 lines unless its docstring says why.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import gamegym

PACKAGE = Path(gamegym.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"

# the floors, from the top: (floor, the packages and modules on it).  A module stands on the
# floor of the longest name here that is it or contains it.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cli", ("gamegym.cli", "gamegym.__main__", "gamegym")),  # `gamegym`: the package's API
    ("bench", ("gamegym.bench",)),
    ("serve", ("gamegym.serve",)),
    ("runtime", ("gamegym.runtime",)),
    ("evaluation", ("gamegym.evaluation",)),
    ("learners", ("gamegym.learners", "gamegym.presets")),
    ("search", ("gamegym.search",)),
    ("nets", ("gamegym.nets",)),
    ("data", ("gamegym.data",)),
    ("config", ("gamegym.config",)),
    ("game", ("gamegym.game", "gamegym.adapters")),
    (
        "base",
        (
            "gamegym.registry",
            "gamegym.workmeter",
            "gamegym.console",
            "gamegym.parentwatch",
        ),
    ),
)


def module_names() -> list[str]:
    names = ["gamegym"]
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="gamegym."):
        names.append(info.name)
    return sorted(names)


def module_path(name: str) -> Path:
    relative = Path(*name.split(".")[1:])
    package = PACKAGE / relative / "__init__.py"
    return package if package.is_file() else (PACKAGE / relative).with_suffix(".py")


def import_lines(name: str, known: set[str]) -> dict[str, int]:
    """The package modules a module imports anywhere in its body, each with the line of its
    first import there."""
    tree = ast.parse(module_path(name).read_text(encoding="utf-8"))
    is_package = module_path(name).name == "__init__.py"
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # a relative import
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from gamegym import bench` imports the module gamegym.bench
            targets = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            if target in known and target != name:
                found[target] = min(found.get(target, node.lineno), node.lineno)
    return found


def imports_of(name: str, known: set[str]) -> set[str]:
    """The package modules a module imports anywhere in its body."""
    return set(import_lines(name, known))


def floor_of(name: str, floors=FLOORS) -> int | None:
    """The index in `floors` (0: the top) of the floor `name` stands on; None: on none."""
    best, best_length = None, -1
    for index, (_, members) in enumerate(floors):
        for member in members:
            if (name == member or name.startswith(member + ".")) and len(member) > best_length:
                best, best_length = index, len(member)
    return best


def upward_imports(graph: dict[str, set[str]], floors=FLOORS) -> list[tuple[str, str]]:
    """(importer, imported) for every import from a floor to a floor above it (a module on no
    floor is left to test_every_module_stands_on_a_floor)."""
    up = []
    for a, targets in graph.items():
        for b in targets:
            below, above = floor_of(a, floors), floor_of(b, floors)
            if below is not None and above is not None and above < below:
                up.append((a, b))
    return sorted(up)


def floor(name: str) -> str:
    """The name of the floor `name` stands on ("no" for none)."""
    index = floor_of(name)
    return "no" if index is None else FLOORS[index][0]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_every_module_imports():
    for name in module_names():
        importlib.import_module(name)


def test_no_import_circles():
    names = module_names()
    known = set(names)
    graph = {name: imports_of(name, known) - {"gamegym"} for name in names}
    found = cycles(graph)
    described = [
        "; ".join(f"{a} -> {', '.join(sorted(graph[a] & set(c)))}" for a in c) for c in found
    ]
    assert not found, "import circles:\n" + "\n".join(described)


def test_every_module_stands_on_a_floor():
    unplaced = [name for name in module_names() if floor_of(name) is None]
    assert not unplaced, (
        "modules on no floor (give each a floor in FLOORS, tests/test_imports.py, and in the "
        "drawing of docs/architecture.md):\n  " + "\n  ".join(unplaced)
    )


def test_no_import_runs_back_up_the_floors():
    names = module_names()
    known = set(names)
    lines = {name: import_lines(name, known) for name in names}
    upward = upward_imports({name: set(found) for name, found in lines.items()})
    described = [
        f"  {module_path(a).relative_to(PACKAGE.parent)}:{lines[a][b]}  {a} ({floor(a)} floor) "
        f"-> {b} ({floor(b)} floor)"
        for a, b in upward
    ]
    assert not upward, (
        f"{len(upward)} imports run back up the floors (FLOORS in tests/test_imports.py; "
        "move the shared code down, or the importer up):\n" + "\n".join(described)
    )


def test_the_floor_checker_finds_an_import_that_runs_up():
    floors = (("top", ("p.top",)), ("middle", ("p.mid", "p.side")), ("bottom", ("p",)))
    graph = {
        "p.top.a": {"p.mid.b", "p.c"},  # down: fine
        "p.mid.b": {"p.side"},  # along its own floor: fine
        "p.side": set(),
        "p.c": {"p.mid.b"},  # up from the bottom
    }
    assert upward_imports(graph, floors) == [("p.c", "p.mid.b")]
    assert floor_of("p.top.a.deep", floors) == 0 and floor_of("p.other", floors) == 2
    assert floor_of("q", floors) is None


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_architecture_page_draws_these_floors():
    """docs/architecture.md's drawing of the floors (the text block under "The floors") names
    the floors of FLOORS, from the top, and the packages and modules on each."""
    page = ARCHITECTURE.read_text(encoding="utf-8")
    section = page.split("## The floors", 1)[1]
    drawing = section.split("```text", 1)[1].split("```", 1)[0]
    drawn = [line.split()[0] for line in drawing.splitlines() if re.match(r"^ ?\w", line)]
    assert drawn == [name for name, _ in FLOORS]
    for _, members in FLOORS:
        for member in members:
            if member != "gamegym":
                assert member.removeprefix("gamegym.") in drawing, member


def test_no_module_is_over_500_lines_unless_its_docstring_says_why():
    """A module over 500 lines (the package's, and the scripts') says in its docstring why it
    is one module: the words "500 lines" there."""
    long = {}
    for path in sorted([*PACKAGE.rglob("*.py"), *(PACKAGE.parent / "scripts").glob("*.py")]):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 500 and "500 lines" not in (ast.get_docstring(ast.parse(text)) or ""):
            long[str(path.relative_to(PACKAGE.parent))] = text.count("\n")
    assert long == {}
