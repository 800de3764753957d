"""The package's imports run one way: no module imports, even lazily, one that imports it back.

cli/bench -> gym -> supervisor -> roles -> search/learners/samples -> graph/config/files.  The
graph is drawn from every `import` statement in every module (those inside functions too);
the implicit import of a parent package's __init__ is not an edge.
"""

import ast
import importlib
import pkgutil
from pathlib import Path

import gamegym

PACKAGE = Path(gamegym.__file__).parent


def module_names() -> list[str]:
    names = ["gamegym"]
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="gamegym."):
        names.append(info.name)
    return sorted(names)


def module_path(name: str) -> Path:
    relative = Path(*name.split(".")[1:])
    package = PACKAGE / relative / "__init__.py"
    return package if package.is_file() else (PACKAGE / relative).with_suffix(".py")


def imports_of(name: str, known: set[str]) -> set[str]:
    """The package modules a module imports anywhere in its body."""
    tree = ast.parse(module_path(name).read_text(encoding="utf-8"))
    is_package = module_path(name).name == "__init__.py"
    found = set()
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
            # `from gamegym import bench` imports the module gamegym.bench.throughput
            targets = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module
                for alias in node.names
            ]
        else:
            continue
        found.update(t for t in targets if t in known and t != name)
    return found


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


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
