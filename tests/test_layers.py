"""The package's layers (issue 12, docs/architecture.md): no import cycle among flexmbd's
modules, imports inside functions included, and every import going down the layer stack
of pyproject.toml's ``[tool.importlinter]`` contracts.

Two independent checks of the same contracts:

* an AST import graph of ``flexmbd/`` built here (every ``import`` statement, at module
  level or inside a function; ``if TYPE_CHECKING:`` blocks left out, they never run),
  checked for cycles and for imports that go up the layers;
* import-linter (``lint-imports``, the ``test`` extra) on the same configuration.

Both are shown to fail on a deliberately wrong import (a synthetic graph here, a copy of
the package with one bad import for import-linter).

Run as a script for a report: ``python tests/test_layers.py`` prints the cycles, the
number of imports of flexmbd's own modules inside functions, and the upward imports.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "flexmbd"


# -- the import graph ----------------------------------------------------------------------
def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """``{dotted module name: file}`` of every module below ``package``."""
    root = package.parent
    mods = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _targets(mods, mod, is_pkg, node):
    """The package's modules named by one import statement (the deepest existing one)."""
    top = next(iter(mods)).split(".")[0]
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = mod.split(".")
            if not is_pkg:
                base = base[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = []
        for a in node.names:
            sub = f"{prefix}.{a.name}"
            names.append(sub if sub in mods else prefix)
    out = []
    for name in names:
        if name.split(".")[0] != top:
            continue
        while name and name not in mods:
            name = name.rpartition(".")[0]
        if name and name != mod:
            out.append(name)
    return out


def _is_type_checking(node):
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def import_graph(package: Path = PACKAGE):
    """``(edges, inner)``: ``edges[a]`` the modules ``a`` imports anywhere (module level or
    inside functions), ``inner`` the list of ``(a, b, line)`` imports inside functions."""
    mods = modules(package)
    edges = {m: set() for m in mods}
    inner = []
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        stack = [(ast.parse(path.read_text(encoding="utf-8")), False)]
        while stack:
            node, in_function = stack.pop()
            for child in ast.iter_child_nodes(node):
                if _is_type_checking(child):
                    continue
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target in _targets(mods, mod, is_pkg, child):
                        edges[mod].add(target)
                        if in_function:
                            inner.append((mod, target, child.lineno))
                fn = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                stack.append((child, in_function or fn))
    return edges, inner


def cycles(edges):
    """Strongly connected components with more than one module (Tarjan), sorted."""
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(out)


# -- the layers (read from pyproject.toml: one source for both checks) ---------------------
def contracts(pyproject: Path = ROOT / "pyproject.toml"):
    with open(pyproject, "rb") as f:
        return {c["id"]: c for c in tomllib.load(f)["tool"]["importlinter"]["contracts"]}


def _owner(mod, names):
    """The longest name in ``names`` that is ``mod`` or a package containing it."""
    best = None
    for n in names:
        if (mod == n or mod.startswith(n + ".")) and (best is None or len(n) > len(best)):
            best = n
    return best


def _ignored(edge, ignore):
    a, b = edge
    for rule in ignore:
        src, _, dst = (s.strip() for s in rule.partition("->"))
        if (a == src or a.startswith(src + ".")) and (b == dst or b.startswith(dst + ".")):
            return True
    return False


def layer_violations(edges, layers, ignore=()):
    """Imports ``(a, b)`` from a lower layer to a higher one (``layers`` top first, in
    import-linter's syntax: ``"x | y"`` independent siblings, ``"x : y"`` siblings that may
    import each other), and imports between independent siblings; minus ``ignore``."""
    rank, group = {}, {}
    for i, layer in enumerate(layers):
        sep = "|" if "|" in layer else ":"
        for name in (s.strip() for s in layer.split(sep)):
            rank[name] = len(layers) - i
            group[name] = (i, sep)
    bad = []
    for a, targets in edges.items():
        oa = _owner(a, rank)
        for b in sorted(targets):
            ob = _owner(b, rank)
            if oa is None or ob is None or oa == ob:
                continue
            up = rank[ob] > rank[oa]
            sibling = group[oa] == group[ob] and group[oa][1] == "|"
            if (up or sibling) and not _ignored((a, b), ignore):
                bad.append((a, b))
    return bad


def forbidden_violations(edges, contract):
    """Imports from ``source_modules`` into ``forbidden_modules`` (minus ``ignore_imports``)."""
    src, dst = contract["source_modules"], contract["forbidden_modules"]
    return [
        (a, b)
        for a, targets in edges.items()
        if _owner(a, src)
        for b in sorted(targets)
        if _owner(b, dst) and not _ignored((a, b), contract.get("ignore_imports", ()))
    ]


# -- synthetic graphs: the checks catch a wrong import -------------------------------------
LAYERS = ["p.viz", "p.integrators", "p.recursive | p.absolute", "p.model", "p.errors"]


def test_cycles_finds_a_planted_cycle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_layer_check_flags_a_wrong_import():
    good = {
        "p.viz": {"p.model"},
        "p.integrators.x": {"p.recursive.s", "p.errors"},
        "p.recursive.s": {"p.model.m"},
        "p.model.m": {"p.errors"},
        "p.errors": set(),
    }
    assert layer_violations(good, LAYERS) == []
    wrong = {**good, "p.model.m": {"p.errors", "p.viz"}}  # model imports viz
    assert layer_violations(wrong, LAYERS) == [("p.model.m", "p.viz")]
    sibling = {**good, "p.absolute": {"p.recursive.s"}}  # independent siblings
    assert layer_violations(sibling, LAYERS) == [("p.absolute", "p.recursive.s")]
    assert layer_violations(wrong, LAYERS, ignore=["p.model.m -> p.viz"]) == []
    forbidden = {"source_modules": ["p.model"], "forbidden_modules": ["p.viz"]}
    assert forbidden_violations(wrong, forbidden) == [("p.model.m", "p.viz")]


# -- the package ---------------------------------------------------------------------------
def test_no_import_cycle():
    edges, _ = import_graph()
    assert cycles(edges) == [], "import cycle among flexmbd's modules (function-level included)"


@pytest.mark.parametrize("cid", ["layers", "viz", "fem"])
def test_contract_kept_by_the_ast_graph(cid):
    edges, _ = import_graph()
    c = contracts()[cid]
    if c["type"] == "layers":
        bad = layer_violations(edges, c["layers"], c.get("ignore_imports", ()))
    else:
        bad = forbidden_violations(edges, c)
    assert bad == [], f"contract {c['name']!r} broken by {bad}"


def test_every_module_has_a_layer():
    """A new top-level module or package gets a place in the layers (and so is checked)."""
    names = [
        n.strip()
        for layer in contracts()["layers"]["layers"]
        for n in layer.replace(":", "|").split("|")
    ]
    loose = sorted(
        {
            m
            for m in modules()
            if m != "flexmbd"
            and _owner(m, names) is None
            and not any(n.startswith(m + ".") for n in names)
        }
    )
    assert loose == [], f"modules in no layer of pyproject.toml [tool.importlinter]: {loose}"


def test_ignored_imports_are_calls_inside_functions():
    """Each exception of the layers contract is an upward call made inside a function
    (a documented convenience method such as ``Model.compile``), never a module-level
    dependency, and each is still used (no stale exception)."""
    edges, inner = import_graph()
    in_function = {(a, b) for a, b, _ in inner}
    top_level = {(a, b) for a, ts in edges.items() for b in ts} - in_function
    for c in contracts().values():
        for rule in c.get("ignore_imports", ()):
            used = [
                e for e in edges.items() for e in [(e[0], b) for b in e[1]] if _ignored(e, [rule])
            ]
            assert used, f"contract {c['id']!r}: ignore_imports {rule!r} matches no import"
            assert not [e for e in used if e in top_level], (
                f"contract {c['id']!r}: {rule!r} is a module-level import"
            )


def _lint(cwd, env=None):
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename='pyproject.toml', "
            "no_cache=True))",
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_import_linter_contracts_are_kept():
    pytest.importorskip("importlinter")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = _lint(ROOT, env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


def test_import_linter_fails_on_a_wrong_import(tmp_path):
    """A copy of the package with ``flexmbd.fem.mesh`` importing the viewer inside a
    function: import-linter reports the layers, viz and fem contracts broken."""
    pytest.importorskip("importlinter")
    shutil.copytree(
        PACKAGE, tmp_path / "flexmbd", ignore=shutil.ignore_patterns("__pycache__", "data")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    mesh = tmp_path / "flexmbd" / "fem" / "mesh.py"
    mesh.write_text(
        mesh.read_text(encoding="utf-8")
        + "\n\ndef _show(fe):\n    from ..viz import render\n    return render\n",
        encoding="utf-8",
    )
    (tmp_path / "flexmbd" / "data").mkdir()
    (tmp_path / "flexmbd" / "data" / "__init__.py").write_text("", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = _lint(tmp_path, env)
    assert r.returncode != 0
    assert "3 broken" in r.stdout, r.stdout + r.stderr
    edges, _ = import_graph(tmp_path / "flexmbd")
    c = contracts(tmp_path / "pyproject.toml")
    assert ("flexmbd.fem.mesh", "flexmbd.viz.render") in layer_violations(
        edges, c["layers"]["layers"], c["layers"].get("ignore_imports", ())
    )


if __name__ == "__main__":
    edges, inner = import_graph()
    stmts = {(a, line) for a, _, line in inner}
    print(f"import statements of flexmbd modules inside functions: {len(stmts)}")
    print("cycles (imports inside functions included):", cycles(edges) or "none")
    for cid, c in contracts().items():
        bad = (
            layer_violations(edges, c["layers"])
            if c["type"] == "layers"
            else forbidden_violations(edges, {**c, "ignore_imports": ()})
        )
        print(f"contract {cid}: {len(bad)} imports against it before ignore_imports")
        for a, b in bad:
            print(f"    {a} -> {b}")
