"""The package's layout: src/j1's imports form no circle, and docs/layout.md names every module where it is.

The import graph is read with ``ast`` from every module under src/j1. An arrow A -> B is any import of B
by A: at module level, under ``if TYPE_CHECKING:``, and inside functions (a deferred import still ties the
two modules: STYLE 16, "imports inside functions count"). ``from j1.x import name`` draws an arrow to
``j1.x.name`` when that is a module, else to ``j1.x``; a package's ``__init__`` is a module of its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PACKAGE = SRC / "j1"
LAYOUT = REPO / "docs" / "layout.md"


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The j1 modules ``path`` imports, wherever in the file the import stands."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)
    return {m for m in out if m in known and m != name}


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports(path, name, known) for name, path in mods.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; returns the groups of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    group.append(top)
                    if top == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_strongly_connected_finds_a_circle():
    # a -> b -> c -> a is one group; d hangs off it and e imports itself through nobody.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": set()}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_graph_reads_every_kind_of_import(tmp_path):
    # The reader counts TYPE_CHECKING and in-function imports: checked on real edges of the tree.
    graph = import_graph()
    assert "j1.formats.verdict" in graph["j1.formats.base"]  # module level
    assert "j1.formats.base" in graph["j1.pairs"]  # under TYPE_CHECKING only
    assert "j1.backends.local" in graph["j1.backends"]  # inside a function


def test_no_import_circles():
    groups = strongly_connected(import_graph())
    assert groups == [], "modules that import each other (counting TYPE_CHECKING and in-function imports): " + \
        "; ".join(" <-> ".join(g) for g in groups)


def layout_paths(text: str) -> list[str]:
    """The paths docs/layout.md's tree names: its first fenced block, one entry a line (``name.py`` or
    ``folder/``, then its description), two spaces of indent per level below the folder above it.

    >>> layout_paths("```\\nsrc/j1/\\n  api.py   the API\\n  eval/    evaluation\\n    runner.py  j1 eval\\nbench/\\n```")
    ['src/j1/', 'src/j1/api.py', 'src/j1/eval/', 'src/j1/eval/runner.py', 'bench/']
    """
    block = text.split("```")[1]
    paths, parents = [], []
    for line in block.splitlines():
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        name = line.split()[0]
        parents = parents[:depth]
        path = "".join(parents) + name
        paths.append(path)
        if name.endswith("/"):
            parents.append(name)
    return paths


def test_layout_md_names_every_module_where_it_is():
    named = layout_paths(LAYOUT.read_text(encoding="utf-8"))
    missing_on_disk = [p for p in named if not (REPO / p).exists()]
    assert not missing_on_disk, f"docs/layout.md names paths that are not in the tree: {missing_on_disk}"
    named = set(named)
    unnamed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if "/assets/" in rel:
            continue
        # a package's line (folder/) names its __init__.py
        key = rel[: -len("__init__.py")] if path.name == "__init__.py" else rel
        if key not in named:
            unnamed.append(rel)
    assert not unnamed, f"modules docs/layout.md does not name at their path: {unnamed}"


def test_few_modules_sit_directly_in_j1():
    # Rooms by concept (issue 55): the top of the package holds the public face and a few shared leaves.
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top


def _stdlib_and_j1_imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_the_cli_only_parses():
    # The cli parses, reads the environment and prints; sockets, signals, threads and pair stores live in their
    # domains (j1.serve.process, j1.data.synth).
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        held = _stdlib_and_j1_imports(path) & {"socket", "signal", "threading", "uvicorn.Server", "j1.data.store"}
        assert not held, f"{path.relative_to(REPO)} imports {sorted(held)}"


def test_every_config_parameter_is_typed():
    # A spec passed on as an untyped ``cfg`` hides which settings a function reads.
    untyped = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                untyped += [f"{path.relative_to(REPO)}:{node.lineno} {node.name}({a.arg})" for a in args
                            if a.annotation is None and (a.arg == "cfg" or a.arg.endswith("_cfg") or a.arg == "ecfg")]
    assert not untyped, untyped


def test_every_package_says_what_it_holds_and_may_import():
    # Rooms by concept: a package's docstring is its sign (what it holds, what it may import, who imports it).
    silent = []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        if init.parent == PACKAGE:
            continue  # the package's public face
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        if "import" not in doc or len(doc.split()) < 20:
            silent.append(str(init.relative_to(REPO)))
    assert not silent, f"package docstrings that do not say what the package holds and may import: {silent}"
