"""The package structure: no import cycles, and dependencies flow one way
(metadata <- expressions <- listers <- hive_sync, engine_bridge).

Imports are read from the source (function-level ones too, since a cycle
hidden inside a function is still a cycle); imports under
`if TYPE_CHECKING:` are left out, as they never run.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("metadata", "expressions", "listers", "hive_sync", "engine_bridge")
# What each package may import besides itself.
ALLOWED = {
    "metadata": set(),
    "expressions": {"metadata"},
    "listers": {"metadata", "expressions"},
    "hive_sync": {"metadata", "expressions", "listers"},
    "engine_bridge": {"metadata", "expressions", "listers", "hive_sync"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_modules(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """Project modules a module imports (a `from pkg import name` counts as
    importing `pkg.name` when that is a module, else `pkg`)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def resolve(target: str) -> None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                resolve(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                full = f"{source}.{alias.name}"
                resolve(full if full in modules else source)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imported_modules(path, name, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def connect(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_checker_finds_a_cycle_and_resolves_imports() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    graph = import_graph()
    assert "metadata.mdt.metadata_table" in graph["metadata.mdt.listing"]
    assert "metadata.table.hudi_table" in graph["metadata"]


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_dependencies_flow_one_way() -> None:
    wrong = []
    for module, targets in import_graph().items():
        package = module.split(".")[0]
        for target in targets:
            other = target.split(".")[0]
            if other != package and other not in ALLOWED[package]:
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def test_read_path_does_not_import_the_write_side_or_the_sample_tables() -> None:
    """The metadata table's writer lives in metadata.mdt.write and the sample-table
    builder in metadata.sample_tables: only the commands that write import them."""
    graph = import_graph()

    def users_of(prefix: str) -> list[str]:
        return sorted(module for module, targets in graph.items()
                      if not module.startswith(prefix) and any(t.startswith(prefix) for t in targets))

    assert users_of("metadata.sample_tables") == ["engine_bridge.cli.demo"]
    writers = [m for m in users_of("metadata.mdt.write") if not m.startswith("metadata.sample_tables")]
    assert writers == ["engine_bridge.cli.demo", "engine_bridge.cli.index"]


@pytest.mark.slow
def test_every_module_imports_alone() -> None:
    """Each module imported first, in a fresh interpreter state, succeeds (an
    import cycle that happens to work in one order fails in another)."""
    script = (
        "import importlib, sys\n"
        f"names = {sorted(m for m in project_modules() if not m.endswith('__main__'))!r}\n"
        f"packages = {PACKAGES!r}\n"
        "failed = []\n"
        "for name in names:\n"
        "    for loaded in [m for m in sys.modules if m.split('.')[0] in packages]:\n"
        "        del sys.modules[loaded]\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as exc:\n"
        "        failed.append(f'{name}: {type(exc).__name__}: {exc}')\n"
        "print('\\n'.join(failed))\n"
        "sys.exit(1 if failed else 0)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
