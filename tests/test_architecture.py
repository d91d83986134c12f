"""The layering of ../shared/ARCHITECTURE.md, checked on the source (issue 16).

Rules, each checked on every module of ``trinitylake_dbapi`` and ``trinitylake_sqlalchemy``
(imports inside functions count: a lazy import is still a dependency):

  A1. Layers depend only downward: a module imports modules of its own layer or of a
      lower one. ``errors`` is the one hierarchy every layer raises, so it sits at the bottom.
  A2. No layer skips the public surface of the one below where ARCHITECTURE.md says so:
      ``sql`` never touches the tree, storage or the version machinery; ``spark`` never
      touches the tree; the dialect and the shell use the driver's public package only.
  A3. The import graph has no cycle, imports under ``if TYPE_CHECKING:`` included (issue
      33 acceptance 1): a type a module only annotates with, from a module that imports
      it, is a cycle a reader and a type checker still follow; a Protocol of what the
      module uses breaks it. (For A1 and A2 such imports are for type checkers only and
      do not count.)
  A4. No module uses another module's underscore names: neither ``from m import _x`` nor
      ``obj._x`` where ``_x`` is defined in another of our modules and not in this one
      (``self._x`` and ``cls._x`` are the object's own, inherited ones included).
  A5. A rule id is stated once in the project (issue 33 item 7): the rules a module's
      docstring states (a line starting with the id, as ``  Q1. ...``, ``* B4. ...``,
      ``H1: ...``, or a heading naming ``(rule N2)``) have ids no other module states,
      so a test, a comment or a doc that cites a rule by its id cites one rule.

The violations that stood when these rules were written down (catalog importing
maintenance, an import cycle in the dialect) were removed by issue 16: there is no list
of tolerated ones any more, and any violation fails the test.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = {
    "trinitylake_dbapi": REPO / "trinitylake_dbapi",
    "trinitylake_sqlalchemy": REPO / "dialect" / "trinitylake_sqlalchemy",
}

# Layer of each module, by the longest matching dotted prefix; lower numbers sit lower.
LAYERS = {
    "trinitylake_dbapi.errors": 0,
    "trinitylake_dbapi.format": 1,
    "trinitylake_dbapi.storage": 2,
    "trinitylake_dbapi.tree": 3,
    "trinitylake_dbapi.lakehouse": 4,
    "trinitylake_dbapi.transaction": 4,
    "trinitylake_dbapi.reclaim": 4,  # the commit-expiration handshake (below both)
    "trinitylake_dbapi.catalog": 5,
    "trinitylake_dbapi.iceberg": 6,
    "trinitylake_dbapi.maintenance": 7,
    "trinitylake_dbapi.verify": 7,
    "trinitylake_dbapi.views": 7,  # the catalog views sql and spark present (issue 33)
    "trinitylake_dbapi.sql": 8,
    "trinitylake_dbapi.spark": 8,
    "trinitylake_dbapi": 9,  # the driver: __init__, connection, cursor, types_dbapi
    "trinitylake_dbapi.cli": 10,
    "trinitylake_dbapi.server": 10,  # servers sit beside the CLI (the REST catalog)
    "trinitylake_sqlalchemy": 11,
}

# A2: (importer prefix, imported prefixes it must not use).
SKIPS_FORBIDDEN = [
    ("trinitylake_dbapi.sql", ("trinitylake_dbapi.tree", "trinitylake_dbapi.storage",
                               "trinitylake_dbapi.transaction", "trinitylake_dbapi.lakehouse")),
    ("trinitylake_dbapi.spark", ("trinitylake_dbapi.tree",)),
]
# A2: what of trinitylake_dbapi the tools on top may use: the dialect only the driver's
# public package; the shell also the catalog (ARCHITECTURE.md: cli -> dbapi and catalog)
# and verify (its `trinitylake verify` subcommand), never the SQL layer's internals.
PUBLIC_ONLY = {
    "trinitylake_sqlalchemy": {"trinitylake_dbapi", "trinitylake_dbapi.errors"},
    "trinitylake_dbapi.cli": {"trinitylake_dbapi", "trinitylake_dbapi.errors",
                              "trinitylake_dbapi.catalog", "trinitylake_dbapi.verify",
                              "trinitylake_dbapi.server"},
}

def modules(packages: dict[str, Path]) -> dict[str, tuple[Path, ast.Module]]:
    """Every module of the packages, by dotted name, with its parsed source."""
    found = {}
    for package, base in packages.items():
        for path in sorted(base.rglob("*.py")):
            parts = [package, *path.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = (path, parse(path))
    return found


@functools.lru_cache(maxsize=None)
def parse(path: Path) -> ast.Module:
    """A module's source, parsed once per process (the checks below each walk them all;
    a checker's own test files are new paths, parsed afresh)."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node of a parsed module, walked once per process (the checks below went
    over each module four times with ast.walk, most of this module's CPU)."""
    return list(ast.walk(tree))


def is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``, the test of a typing-only block."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(name: str, path: str | Path, tree: ast.Module, known: set[str]) -> set[tuple[str, str, bool]]:
    """(imported module, imported name or '', whether only under ``if TYPE_CHECKING:``)
    for every import of ours in one module."""
    out = set()
    own_package = name if Path(path).name == "__init__.py" else name.rpartition(".")[0]
    typing_only = {id(n) for block in nodes(tree) if isinstance(block, ast.If)
                   and is_type_checking(block.test) for n in ast.walk(block)}  # fmt: skip
    for node in nodes(tree):
        typing = id(node) in typing_only
        if isinstance(node, ast.Import):
            out.update((alias.name, "", typing) for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = own_package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in known:
                    out.add((submodule, "", typing))
                elif source in known:
                    out.add((source, alias.name, typing))
    # An import made at run time as well as under TYPE_CHECKING counts as a run-time one.
    run_time = {(module, item) for module, item, typing in out if not typing}
    return {(module, item, typing) for module, item, typing in out
            if module != name and not (typing and (module, item) in run_time)}  # fmt: skip


def layer(name: str) -> int:
    prefix = max((p for p in LAYERS if name == p or name.startswith(p + ".")), key=len)
    return LAYERS[prefix]


def under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def private_names_defined(tree: ast.Module) -> set[str]:
    names = set()
    for node in nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def violations(packages: dict[str, Path] = PACKAGES) -> set[str]:
    """Every violation of A1-A4, as the one-line entries KNOWN_DEBT uses."""
    mods = modules(packages)
    known = set(mods)
    graph: dict[str, set[str]] = {}
    found = set()
    defined = {name: private_names_defined(tree) for name, (_, tree) in mods.items()}
    for name, (path, tree) in mods.items():
        edges = imports(name, path, tree, known)
        graph[name] = {target for target, _, _ in edges}  # A3: typing-only imports too
        for target, item, typing_only in edges:
            if typing_only:
                continue  # for type checkers only: A1, A2, A4 do not count it
            if layer(target) > layer(name):
                found.add(f"A1 {name} -> {target}")
            for importer, forbidden in SKIPS_FORBIDDEN:
                if under(name, importer) and any(under(target, f) for f in forbidden):
                    found.add(f"A2 {name} -> {target}")
            for tool, allowed in PUBLIC_ONLY.items():
                if (under(name, tool) and under(target, "trinitylake_dbapi") and target not in allowed
                        and not under(target, tool)):  # its own modules (the cli package)
                    found.add(f"A2 {name} -> {target}")
            if item.startswith("_") and not item.startswith("__"):
                found.add(f"A4 {name} uses {item}")
        others = set().union(*(d for other, d in defined.items() if other != name))
        for node in nodes(tree):
            if (isinstance(node, ast.Attribute) and node.attr in others
                    and node.attr not in defined[name]
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                found.add(f"A4 {name} uses {node.attr}")
    reach = {start: reachable(graph, start) for start in graph}
    for start in graph:
        cycle = sorted(m for m in graph if m != start and m in reach[start] and start in reach[m])
        if cycle:
            found.add("A3 " + " <-> ".join(sorted([start, *cycle])))
    return found


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """The modules ``start`` reaches by one import or more (itself only through a
    cycle): one walk per module, where a walk per pair of modules took ~20,000."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_no_violation_of_the_layering() -> None:
    assert sorted(violations()) == []


def test_the_checker_finds_each_kind_of_violation(tmp_path: Path) -> None:
    package = tmp_path / "trinitylake_dbapi"
    files = {
        "__init__.py": "",
        "errors.py": "",
        "tree.py": "from .catalog import Catalog\nfrom . import errors\n",
        "catalog.py": "class Catalog: ...\n",
        "transaction.py": "def _write_hint(): ...\n",
        "maintenance.py": "from . import transaction\ntransaction._write_hint()\n",
        "connection.py": "from .cursor import Cursor\nclass Connection:\n    def _run(self): self._run()\n",
        "cursor.py": "class Cursor:\n    def go(self):\n        from .connection import Connection\n",
        # for type checkers only: not a dependency (no A1 storage -> catalog below)
        "storage.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .catalog import Catalog\n",
        # ... but a cycle all the same (A3, issue 33): reclaim annotates with lakehouse's type
        "lakehouse.py": "from . import reclaim\nclass Lakehouse: ...\n",
        "reclaim.py": "import typing\nif typing.TYPE_CHECKING:\n    from .lakehouse import Lakehouse\n",
        "sql/__init__.py": "",
        "sql/execute.py": "from trinitylake_dbapi.transaction import _write_hint\n",
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    assert violations({"trinitylake_dbapi": package}) == {
        "A1 trinitylake_dbapi.tree -> trinitylake_dbapi.catalog",
        "A2 trinitylake_dbapi.sql.execute -> trinitylake_dbapi.transaction",
        "A3 trinitylake_dbapi.connection <-> trinitylake_dbapi.cursor",
        "A3 trinitylake_dbapi.lakehouse <-> trinitylake_dbapi.reclaim",
        "A4 trinitylake_dbapi.maintenance uses _write_hint",
        "A4 trinitylake_dbapi.sql.execute uses _write_hint",
    }


#: A5: a rule stated in a module docstring: an item line starting with its id (indented,
#: or followed by "." or ":"), or a heading that names it ("Nesting (rule N1)").
RULE_ITEM = re.compile(r"^(?P<indent> {0,4})(?:[*-] +)?(?P<id>[A-Z]{1,3}\d+[a-z]?)(?P<punct>[.:])?\s")
RULE_HEADING = re.compile(r"^\S.*\(rule (?P<id>[A-Z]{1,3}\d+[a-z]?)[;)]")


def stated_rules(text: str) -> list[str]:
    """The ids of the rules a module's docstring states (A5), in order."""
    return rules_of(ast.parse(text))


def rules_of(tree: ast.Module) -> list[str]:
    """The ids of the rules a parsed module's docstring states (A5), in order."""
    doc = ast.get_docstring(tree, clean=False) or ""
    ids = []
    for line in doc.splitlines():
        item = RULE_ITEM.match(line)
        if item and (item.group("punct") or item.group("indent")):
            ids.append(item.group("id"))
        elif heading := RULE_HEADING.match(line):
            ids.append(heading.group("id"))
    return ids


def duplicate_rule_ids(packages: dict[str, Path] = PACKAGES) -> dict[str, list[str]]:
    """Every rule id stated more than once (A5), with the modules stating it."""
    where: dict[str, list[str]] = defaultdict(list)
    for name, (_, tree) in modules(packages).items():
        for rule in rules_of(tree):
            where[rule].append(name)
    return {rule: names for rule, names in where.items() if len(names) > 1}


def test_no_rule_id_is_stated_twice() -> None:
    assert duplicate_rule_ids() == {}
    assert len(stated_rules((PACKAGES["trinitylake_dbapi"] / "connection.py").read_text())) >= 7


def test_the_rule_checker_finds_ids_stated_twice(tmp_path: Path) -> None:
    package = tmp_path / "trinitylake_dbapi"
    files = {
        "__init__.py": "",
        "a.py": '"""A.\n\nRules:\n\n  L1. One.\n  L2 Two,\n      L1 cited where a line wraps.\n"""\n',
        "b.py": '"""B.\n\n* L1. Another one.\nH1: history.\nL2 cited in prose.\n"""\n',
        "c.py": '"""C.\n\nNames (rule N2; SPEC 3):\n"""\n',
        "d.py": '"""D.\n\nNames this library writes (rule N2).\n"""\n',
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    assert stated_rules(files["a.py"]) == ["L1", "L2"]
    assert stated_rules(files["b.py"]) == ["L1", "H1"]
    assert duplicate_rule_ids({"trinitylake_dbapi": package}) == {
        "L1": ["trinitylake_dbapi.a", "trinitylake_dbapi.b"],
        "N2": ["trinitylake_dbapi.c", "trinitylake_dbapi.d"],
    }


#: The most lines a module of ours may have (issue 33 item 2: a module past it is split
#: where it has seams, as sql.query, catalog, sql.parser and iceberg.catalog were).
MAX_MODULE_LINES = 900


def test_no_module_is_over_900_lines() -> None:
    long = {name: n for name, (path, _) in modules(PACKAGES).items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}
