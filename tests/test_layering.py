"""The layering of casrbd (docs/architecture.md, "Layers and imports"), read from the source with ``ast``:
nothing is imported.

An edge a -> b is an import of casrbd module b written in module a: ``from .x import y`` is an edge to
x, or to x.y where y is a module. Module-level imports (class bodies included) run when a is
imported; function-level ones when the function runs; both make a dependency, and cycles are looked
for in each set. Importing a submodule runs its package's ``__init__`` too, which is not counted as an
edge: a package's wiring table may import its own modules.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "casrbd"

# algorithms/ may import these casrbd modules and itself, nothing else of casrbd
FOUNDATION = {"spatial", "joints", "algorithm_frames", "model", "spec", "naming"}

MAX_LINES = 410  # "about 400": a module past it is split, as the algorithms are


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_package(name):
    return MODULES.get(name, Path()).name == "__init__.py"


def _targets(name, node):
    """The absolute module names (casrbd's and others) that the import ``node`` in module ``name`` reads."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = name.split(".") if _is_package(name) else name.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module
    return [f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source for a in node.names]


def _imports(name, tree):
    """[(target, lazy)] of every import in the module: lazy when inside a function."""
    out = []

    def walk(node, lazy):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.extend((t, lazy) for t in _targets(name, child))
            walk(child, lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    walk(tree, False)
    return out


IMPORTS = {name: _imports(name, ast.parse(path.read_text(), str(path))) for name, path in MODULES.items()}


def _edges(lazy):
    """{(a, b)}: casrbd module a imports casrbd module b, at module level (lazy False) or in a function."""
    return {(a, b) for a, imports in IMPORTS.items() for b, is_lazy in imports if is_lazy == lazy and b in MODULES}


def cycles(edges):
    """The strongly connected components with a cycle (Tarjan), each as its sorted modules."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _describe(components, edges):
    return "; ".join(
        " <-> ".join(c) + " via " + ", ".join(f"{a} -> {b}" for a, b in sorted(edges) if a in c and b in c)
        for c in components
    )


def test_no_import_cycle_at_module_level():
    edges = _edges(lazy=False)
    found = cycles(edges)
    assert not found, f"import cycles among module-level imports: {_describe(found, edges)}"


def test_no_import_cycle_through_function_level_imports():
    edges = _edges(lazy=False) | _edges(lazy=True)
    found = cycles(edges)
    assert not found, f"import cycles (function-level imports included): {_describe(found, edges)}"


def test_casrbd_imports_nothing_from_examples_or_benchmarks():
    bad = [
        (a, t)
        for a, imports in IMPORTS.items()
        for t, _ in imports
        if t.split(".")[0] in ("examples", "benchmarks", "tests", "conftest")
    ]
    assert not bad, f"casrbd imports from examples, benchmarks or tests: {bad}"


def test_algorithms_import_only_the_foundation_and_themselves():
    allowed = {f"casrbd.{m}" for m in FOUNDATION}
    bad = [
        (a, t)
        for a, imports in IMPORTS.items()
        if a.startswith("casrbd.algorithms")
        for t, _ in imports
        if t.split(".")[0] == "casrbd" and t not in allowed and not t.startswith("casrbd.algorithms")
    ]
    assert not bad, f"algorithms/ imports beyond {sorted(FOUNDATION)}: {bad}"


def test_module_length():
    lengths = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in MODULES.values()}
    long = {p: n for p, n in lengths.items() if n > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines, split them: {long}"


# ---- tests and benchmarks build on casrbd, never on the examples ----
EXAMPLE_RUNNER = ROOT / "tests" / "example_runner.py"  # the one way tests run an example
EXAMPLE_MODULES = {p.stem for p in (ROOT / "examples").glob("*.py")}


def _mentions_examples(node):
    text = ast.unparse(node)
    return "examples" in text or "EXAMPLES" in text


def _example_uses(path, benchmark):
    """(line, what) of each place the file builds on examples/: an import of an example module or of its
    helper ``common`` (by name, or through ``sys.modules``), examples/ put on ``sys.path``, an example loaded
    by ``importlib``'s ``spec_from_file_location`` or, in benchmarks, ``runpy``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name.split(".")[0] in EXAMPLE_MODULES]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module.split(".")[0] in EXAMPLE_MODULES:
            found.append((node.lineno, f"from {node.module} import"))
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "sys.modules":
            if isinstance(node.slice, ast.Constant) and node.slice.value in EXAMPLE_MODULES:
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
            name = ast.unparse(node.func)
            loaders = ("spec_from_file_location", "run_path") if benchmark else ("spec_from_file_location",)
            if (name.startswith("sys.path.") or name.split(".")[-1] in loaders) and _mentions_examples(node):
                found.append((node.lineno, name))
    return sorted(found)


def test_no_test_or_benchmark_imports_from_examples():
    """What a test or a benchmark needs of an example lives in casrbd (robots in ``casrbd.models``, problems in
    ``casrbd.ocp``, scenarios in ``casrbd.sim``); the tests run examples through tests/example_runner.py only,
    and benchmarks time the library, not example files."""
    files = [p for d in ("tests", "benchmarks") for p in sorted((ROOT / d).rglob("*.py")) if p != EXAMPLE_RUNNER]
    uses = {p: _example_uses(p, p.is_relative_to(ROOT / "benchmarks")) for p in files}
    bad = [f"{p.relative_to(ROOT)}:{line} {what}" for p, found in uses.items() for line, what in found]
    assert not bad, f"tests or benchmarks building on examples/ (move what they need into casrbd): {bad}"


def test_the_example_check_finds_each_way_of_importing_an_example(tmp_path):
    """The check above on a file written to fail it in every way it looks for (so that it can fail)."""
    path = tmp_path / "probe.py"
    lines = [
        "import common",
        "from arm_p2p import Q_GOAL",
        "sys.modules['common'].interpolate",
        "sys.path.insert(0, str(ROOT / 'examples'))",
        "importlib.util.spec_from_file_location('x', ROOT / 'examples' / 'x.py')",
        "runpy.run_path(str(EXAMPLES / 'swingup.py'))",
        "import casrbd.models",
    ]
    path.write_text("\n".join(lines) + "\n")
    assert [line for line, _ in _example_uses(path, benchmark=True)] == [1, 2, 3, 4, 5, 6]
    assert [line for line, _ in _example_uses(path, benchmark=False)] == [1, 2, 3, 4, 5]
