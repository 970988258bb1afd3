"""The packages' import graph has no circle: every import counts, at module level, inside a function or under
TYPE_CHECKING, so a shared piece must live in one module below both sides, not be imported late to dodge a loop."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("trace_eval", "extractors", "fusion")
# Circles allowed for now (each a frozenset of modules); none.
KNOWN: set[frozenset[str]] = set()


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of these packages it imports (`from package import name` counts as the module
    `package.name` when there is one, else as `package`)."""
    modules = _modules()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        imported: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(known(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    imported.add(full if full in modules else known(base))
        graph[name] = {m for m in imported if m and m != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
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
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_the_finder_sees_a_circle_through_a_late_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [frozenset({"a", "b", "c"})]


def test_the_graph_reads_late_and_relative_imports():
    graph = import_graph()
    assert "trace_eval.items" in graph["trace_eval.rubrics.rubric"]  # under TYPE_CHECKING
    assert "trace_eval.rubrics" in graph["trace_eval.bench"]  # inside a function
    assert "trace_eval.evaluation.scores" in graph["trace_eval.evaluation.rubric_report"]  # from . import scores


def test_no_module_imports_itself_through_others():
    left = [sorted(c) for c in circles(import_graph()) if c not in KNOWN]
    assert not left, f"import circles: {left}"


# The folders of the pipeline's stages, and the entry points above them. What every stage reads and writes with
# (the modules directly under trace_eval/, extractors, fusion, the rubrics' definitions) sits below them all.
STAGES = ("stage1", "judge", "evaluation", "labels", "prepare", "audit", "view", "commands", "api", "export", "cli")


def test_what_every_stage_uses_imports_no_stage():
    stage_modules = tuple(f"trace_eval.{stage}" for stage in STAGES)
    below = [
        name
        for name in _modules()
        if name.startswith(("extractors", "fusion"))
        or (name.count(".") == 1 and not name.startswith((*stage_modules, "trace_eval.__main__")))
    ]
    graph = import_graph()
    upward = {name: sorted(m for m in graph[name] if m.startswith(stage_modules)) for name in below}
    assert not {name: m for name, m in upward.items() if m}, "imports from below into a stage's folder"
