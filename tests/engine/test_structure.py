"""The code's shape, checked: no import cycle among the project's modules, hayakoe's
repository layout spelled only in `engine/layout.py`, every long or branchy function
named in docs/internals.md with the reason it stays, and no `Any` in the parameters or
returns of the engine's public functions and methods.

The import graph is read with `ast` from every module of `engine/` and `wyoming_hayakoe/`:
every import statement counts, also those inside functions (deferred imports), except those
under ``if TYPE_CHECKING:`` (never run), and calls of ``import_module("...")`` /
``__import__("...")`` with a literal name, so a lazy import cannot hide an edge. Importing
``a.b.c`` also runs the packages ``a.b`` and ``a`` unless the importer is inside them already,
so those count as edges too. Beside module cycles, the packages' parts (``engine.synth``,
``engine.neural``, ``wyoming_hayakoe.web``, ...) must not import each other in a circle.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.paths import REPO_ROOT

PACKAGES = ("engine", "wyoming_hayakoe")
LAYOUT_MODULE = REPO_ROOT / "engine" / "layout.py"
# Code (not docs) that may not spell a layout path: the engine, the server, the tools.
LAYOUT_CHECKED = ("engine", "wyoming_hayakoe", "benchmarks", "docker")


def _modules(packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
            if any(part.startswith(".") for part in parts):
                continue  # benchmarks/.cache/ holds venvs
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


_DYNAMIC_IMPORTS = {"import_module", "__import__"}


def _dynamic_import(node: ast.AST) -> str | None:
    """The module a call ``import_module("x.y")`` / ``__import__("x.y")`` imports, if literal."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    first = node.args[0]
    if name in _DYNAMIC_IMPORTS and isinstance(first, ast.Constant):
        return first.value if isinstance(first.value, str) else None
    return None


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements that can run (everything but `if TYPE_CHECKING:` bodies); a literal
    ``import_module``/``__import__`` call is given as an ``ast.Import`` of its module."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for s in node.orelse for n in _runtime_imports_in(s))
            continue
        yield from _runtime_imports_in(node)


def _runtime_imports_in(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
        return
    dynamic = _dynamic_import(node)
    if dynamic is not None:
        yield ast.Import(names=[ast.alias(name=dynamic)])
    yield from _runtime_imports(node)


def _every_import(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, those under ``if TYPE_CHECKING:`` too."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def import_graph(
    packages: tuple[str, ...] = PACKAGES, *, type_only: bool = False
) -> dict[str, set[str]]:
    """module → project modules it imports (directly or by running their packages); with
    `type_only`, also the imports made for type annotations only."""
    modules = _modules(packages)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    read = _every_import if type_only else _runtime_imports
    for name, path in modules.items():
        package = name if _is_package(path) else name.rpartition(".")[0]
        targets: list[str] = []
        for node in read(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.append(full if full in modules else base)
        for target in targets:
            if target.split(".")[0] not in packages:
                continue
            parts = target.split(".")
            for i in range(1, len(parts) + 1):
                prefix = ".".join(parts[:i])
                # A package the importer lives in is being imported already: no new edge.
                if prefix in modules and not (name == prefix or name.startswith(prefix + ".")):
                    graph[name].add(prefix)
    return graph


def part_of(module: str) -> str:
    """The part a module belongs to: its package's first level (``engine.synth.onnx_backend`` →
    ``engine.synth``; a top-level module is its own part, ``engine`` the package's own)."""
    return ".".join(module.split(".")[:2])


def part_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """part → the other parts its modules import; the packages' ``__init__`` left out (they
    gather names for users and import their parts by design)."""
    parts: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if module in PACKAGES:
            continue
        edges = parts.setdefault(part_of(module), set())
        edges.update(part_of(t) for t in targets if t not in PACKAGES)
    for part, edges in parts.items():
        edges.discard(part)
    return parts


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_the_import_graph_is_read() -> None:
    graph = import_graph()
    # A few edges known to exist, so a broken reader cannot pass by finding nothing.
    assert "engine.layout" in graph["engine.neural.loader"]
    assert "engine.synth.export" in graph["engine.neural.exported"]  # deferred import
    assert (
        "engine.bert" in graph["engine.synth.ort_cache"]
        or "engine.sources" in graph["engine.synth.ort_cache"]
    )
    assert "engine" in graph["wyoming_hayakoe.server"]
    assert graph["engine.errors"] == set(), "engine/errors.py must stay a leaf"
    # a leaf but for the exception root, itself a leaf
    assert graph["engine.layout"] <= {"engine.errors"}, "engine/layout.py must stay a leaf"
    pacing = {m for m in graph if m == "engine.pacing" or m.startswith("engine.pacing.")}
    assert "engine.pacing.listener" in graph["engine.pacing.guard"]
    for module in sorted(pacing):
        assert graph[module] <= pacing, f"{module} must import only engine.pacing (a leaf)"


def test_a_literal_import_module_call_is_an_edge() -> None:
    tree = ast.parse(
        "from importlib import import_module\n"
        "def f():\n"
        "    return import_module('engine.synth.export'), __import__('engine.layout')\n"
    )
    names = {a.name for node in _runtime_imports(tree) for a in node.names}
    assert {"engine.synth.export", "engine.layout"} <= names


def test_a_planted_cycle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle or [])


def test_no_circle_of_files_even_through_type_only_imports() -> None:
    """Two modules that need each other, if only for a type, are one module in two files:
    no such circle in the engine, the server or the benchmarks' code."""
    graph = import_graph((*PACKAGES, "benchmarks"), type_only=True)
    assert "benchmarks.lib.fullsize" in graph and "engine.synth.common" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "modules import each other: " + " → ".join(cycle or [])


def test_a_type_only_import_is_an_edge_when_asked() -> None:
    graph = import_graph(type_only=True)
    # engine.bert.onnx_backend imports CacheDir for its annotations only
    assert "engine.sources.cache" in graph["engine.bert.onnx_backend"]
    assert "engine.sources.cache" not in import_graph()["engine.bert.onnx_backend"]


def test_no_cycle_among_the_parts() -> None:
    parts = part_graph(import_graph())
    # the reader sees the parts and their edges (a broken one would pass by finding nothing)
    assert "engine.voice_config" in parts["engine.synth"]
    assert "engine.synth" in parts["engine.neural"]
    cycle = find_cycle(parts)
    assert cycle is None, "parts import each other: " + " → ".join(cycle or [])


def test_the_server_uses_no_private_engine_name() -> None:
    """The server imports only the engine's public names (no ``_name`` from an engine module;
    dunder names such as ``__version__`` are public)."""
    private = []
    for path in sorted((REPO_ROOT / "wyoming_hayakoe").rglob("*.py")):
        for node in _runtime_imports(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine"):
                private += [
                    f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert private == [], "the server reaches into the engine:\n" + "\n".join(private)


SERVER_MAY_IMPORT = (
    "engine",
    "engine.options",
    "engine.option_info",
    "engine.voice_backend",
    "engine.speaker",
    "engine.output",
    "engine.text",
    "engine.text.pipeline",
    "engine.text.accents",
    "engine.text.from_phrases",
    "engine.text.userdict",
    "engine.text.userdict_watch",
    "engine.sources",
    "engine.sources.cache",
    "engine.sources.redact",
    "engine.aivm",
    "engine.layout",
    "engine.download",
    "engine.heap",
    "engine.priority",
    "engine.progress",
    "engine.synth.export",
    "engine.bert.export",
    "engine.neural.quantize",
)
"""The engine modules `wyoming_hayakoe/` may import (their public names only): the public
API and the modules its tools live in; the same list as docs/internals.md's table."""


def engine_modules_imported(source: str, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, engine module) of every import of an engine module in `source`: runtime,
    deferred and type-only imports, and literal ``import_module`` calls; ``from engine.x
    import y`` imports the module ``engine.x.y`` where that is one, else ``engine.x``."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        dynamic = _dynamic_import(node)
        if dynamic is not None:
            found.append((getattr(node, "lineno", 0), dynamic))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.append((node.lineno, full if full in modules else node.module))
    return [(line, m) for line, m in found if m == "engine" or m.startswith("engine.")]


def test_an_import_of_an_engine_module_is_found() -> None:
    modules = _modules(("engine",))
    source = (
        "from typing import TYPE_CHECKING\n"
        "from engine import TTS\n"
        "from engine.text import pipeline\n"
        "import engine.neural.voice\n"
        "if TYPE_CHECKING:\n"
        "    from engine.int8.plan import Int8Plan\n"
        "def f():\n"
        "    from engine.aivm.loader import voices_of_file\n"
        "    return import_module('engine.layout')\n"
    )
    assert [m for _, m in engine_modules_imported(source, modules)] == [
        "engine",
        "engine.text.pipeline",
        "engine.neural.voice",
        "engine.int8.plan",
        "engine.aivm.loader",
        "engine.layout",
    ]


def test_the_server_imports_only_the_listed_engine_modules() -> None:
    """What the server needs of the engine is public on purpose: `SERVER_MAY_IMPORT`, also
    listed in docs/internals.md; anything else stays the engine's own."""
    modules = _modules(("engine",))
    assert set(SERVER_MAY_IMPORT) <= set(modules), "a listed module does not exist"
    stray = [
        f"{path.relative_to(REPO_ROOT)}:{line}: {module}"
        for path in sorted((REPO_ROOT / "wyoming_hayakoe").rglob("*.py"))
        for line, module in engine_modules_imported(path.read_text("utf-8"), modules)
        if module not in SERVER_MAY_IMPORT
    ]
    assert stray == [], "the server imports engine modules outside the list:\n" + "\n".join(stray)
    text = INTERNALS.read_text(encoding="utf-8")
    section = text.split("engine modules the server may import", 1)[1].split("\n\n", 2)[1]
    listed = re.findall(r"^\| `(engine[\w.]*)` \|", section, re.MULTILINE)
    assert sorted(listed) == sorted(SERVER_MAY_IMPORT), "docs/internals.md lists other modules"


def test_the_engine_does_not_import_the_server() -> None:
    graph = import_graph()
    leaks = {m: sorted(t for t in ts if t.startswith("wyoming_hayakoe")) for m, ts in graph.items()}
    assert {m: t for m, t in leaks.items() if m.startswith("engine") and t} == {}


# -- the layout in one place ---------------------------------------------------------------

_LAYOUT_TEXT = re.compile(
    r"(^|[^\w])(onnx|pytorch)/(speakers|bert)\b|\bbert/tokenizer\b|lemondouble/hayakoe"
)
_LAYOUT_PARTS = {"onnx", "pytorch", "speakers"}


def layout_spellings(path: Path) -> list[str]:
    """String constants in code (docstrings and bare string statements excepted) that spell a
    layout path, and path joins with a layout folder name (``root / "onnx" / ...``)."""
    tree = ast.parse(path.read_text("utf-8"))
    docs = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if _LAYOUT_TEXT.search(node.value):
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {node.value!r}")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            for side in (node.left, node.right):
                if isinstance(side, ast.Constant) and side.value in _LAYOUT_PARTS:
                    found.append(f"{path.relative_to(REPO_ROOT)}:{side.lineno}: / {side.value!r}")
    return found


def test_layout_spellings_are_found() -> None:
    # The checker itself: layout.py spells the layout, so it must be found there.
    found = layout_spellings(LAYOUT_MODULE)
    assert any("onnx/bert/q8" in f for f in found) and any("lemondouble" in f for f in found)


def test_no_layout_path_outside_engine_layout() -> None:
    found = [
        hit
        for folder in LAYOUT_CHECKED
        for path in sorted((REPO_ROOT / folder).rglob("*.py"))
        # not hidden folders: benchmarks/.cache holds third-party venvs (hayakoe's own)
        if path != LAYOUT_MODULE
        and not any(p.startswith(".") for p in path.relative_to(REPO_ROOT).parts)
        for hit in layout_spellings(path)
    ]
    assert found == [], "layout spelled outside engine/layout.py:\n" + "\n".join(found)


# -- tuning flows one way ------------------------------------------------------------------

_TUNING_VARIABLE = re.compile(r"^(WYOMING_HAYAKOE_(?!VERSION)\w+|HAYAKOE_OFFLINE)$")


def tuning_variables_read(path: Path) -> list[str]:
    """Engine tuning variables (`WYOMING_HAYAKOE_*`, `HAYAKOE_OFFLINE`) named in code."""
    tree = ast.parse(path.read_text("utf-8"))
    return [
        f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {node.value}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and _TUNING_VARIABLE.match(node.value)
    ]


def test_tuning_variables_are_found() -> None:
    found = tuning_variables_read(REPO_ROOT / "engine" / "options.py")
    assert any("WYOMING_HAYAKOE_THREADS" in f for f in found)
    assert any("HAYAKOE_OFFLINE" in f for f in found)


def test_only_engine_options_reads_tuning_variables() -> None:
    """The engine takes its tuning from `EngineOptions`; the environment variables are read
    in one place only, `EngineOptions.from_env` (the server's flag defaults)."""
    found = [
        hit
        for path in sorted((REPO_ROOT / "engine").rglob("*.py"))
        if path.name != "options.py" or path.parent.name != "engine"
        for hit in tuning_variables_read(path)
    ]
    assert found == [], "tuning variables read outside engine/options.py:\n" + "\n".join(found)


# -- the public API ------------------------------------------------------------------------


def test_the_engine_exports_twelve_names() -> None:
    """`engine`'s whole public API (piper's is two calls): what a user needs to load a voice,
    speak and shape the audio; every other tool is imported from its module."""
    import engine

    assert sorted(engine.__all__) == sorted(
        [
            "TTS",
            "Speaker",
            "AudioResult",
            "AudioPiece",
            "Voice",
            "SynthesisOptions",
            "EngineOptions",
            "OutputOptions",
            "Chime",
            "EMBEDDED_VOICE_NAME",
            "OFFICIAL_SOURCE",
            "__version__",
        ]
    )
    assert all(getattr(engine, name) is not None for name in engine.__all__)
    # the tools left out of it stay importable from their modules
    from engine.neural.quantize import quantize_voice
    from engine.synth.export import export_voice

    assert callable(quantize_voice) and callable(export_voice)
    assert not hasattr(engine, "quantize_voice")


# -- long or branchy functions ---------------------------------------------------------------

LONG_LINES = 60
BRANCHY = 20
INTERNALS = REPO_ROOT / "docs" / "internals.md"


def _complexity(function: ast.AST) -> int:
    """Cyclomatic complexity, counted as docs/internals.md ("Long or branchy functions") says."""
    count = 1
    for node in ast.walk(function):
        if isinstance(
            node,
            (ast.If, ast.For, ast.AsyncFor, ast.While, ast.IfExp, ast.ExceptHandler, ast.Assert),
        ):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            count += 1 + len(node.ifs)
        elif isinstance(node, ast.match_case):
            count += 1
    return count


def _long_or_branchy() -> dict[str, tuple[int, int]]:
    """`path:function` -> (lines, complexity) of every function over the limits."""
    found: dict[str, tuple[int, int]] = {}
    for path in _modules().values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                complexity = _complexity(node)
                if lines > LONG_LINES or complexity >= BRANCHY:
                    key = f"{path.relative_to(REPO_ROOT).as_posix()}:{node.name}"
                    found[key] = (lines, complexity)
    return found


def _listed() -> set[str]:
    text = INTERNALS.read_text(encoding="utf-8")
    section = text.split("## Long or branchy functions", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([^`]+:[^`]+)` \|", section, re.MULTILINE))


def test_complexity_counts_branches_as_documented() -> None:
    source = """
def f(a, b):
    if a and b or a:
        return [x for x in b if x if x > 1]
    try:
        pass
    except ValueError:
        pass
    return 1 if a else 2
"""
    function = ast.parse(source).body[0]
    # 1 + if + (and/or: 2) + comprehension (1 + 2 ifs) + except + conditional expression
    assert _complexity(function) == 1 + 1 + 2 + 3 + 1 + 1


def test_every_long_or_branchy_function_is_named_with_its_reason() -> None:
    found = _long_or_branchy()
    listed = _listed()
    unlisted = {k: v for k, v in found.items() if k not in listed}
    assert not unlisted, (
        f"over {LONG_LINES} lines or complexity {BRANCHY} (lines, complexity): {unlisted}; "
        "split them, or name them with the reason in docs/internals.md"
    )
    stale = sorted(listed - set(found))
    assert not stale, f"listed in docs/internals.md but no longer long or branchy: {stale}"


# -- no Any at the engine's seams --------------------------------------------------------------


def _names_any(annotation: ast.expr | None) -> bool:
    """Whether an annotation names `typing.Any` (``Any``, ``typing.Any``, or inside a string)."""
    if annotation is None:
        return False
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id == "Any":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "Any":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if re.search(r"\bAny\b", node.value):
                return True
    return False


def _public_functions(body: list[ast.stmt], prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    """Functions and methods a caller may use: not ``_private`` (dunders are public), at module
    level or in a public class (nested functions are not part of a signature anyone sees)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not node.name.startswith("_") or node.name.endswith("__"):
                yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            yield from _public_functions(node.body, f"{prefix}{node.name}.")


def any_in_signatures(source: str) -> list[str]:
    """The public functions of a module whose parameters or return name `Any`."""
    found = []
    for name, node in _public_functions(ast.parse(source).body):
        assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        a = node.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p)]
        if any(_names_any(p.annotation) for p in params) or _names_any(node.returns):
            found.append(name)
    return found


def test_any_in_a_signature_is_found() -> None:
    source = """
from typing import Any
import typing
def a(x: Any) -> int: ...
def b(x: int) -> "dict[str, Any]": ...
def c(*args: typing.Any) -> None: ...
def _private(x: Any) -> None: ...
def fine(x: "Anything") -> object:
    def nested(y: Any) -> Any: ...
class Pub:
    def m(self) -> list[Any]: ...
    def __init__(self, **kw: Any) -> None: ...
class _Hidden:
    def m(self, x: Any) -> None: ...
"""
    assert any_in_signatures(source) == ["a", "b", "c", "Pub.m", "Pub.__init__"]


def test_no_any_in_the_engines_public_signatures() -> None:
    found = []
    for module, path in _modules(("engine",)).items():
        if any(part.startswith("_") and part != "__init__" for part in module.split(".")):
            continue
        found += [f"{module}.{name}" for name in any_in_signatures(path.read_text("utf-8"))]
    assert not found, f"Any in public engine signatures (type them): {found}"


# -- one exception root each ---------------------------------------------------------------

EXCEPTION_ROOTS = {
    "engine": "engine.errors.EngineError",
    "wyoming_hayakoe": "wyoming_hayakoe.errors.HayakoeError",
}
"""Every exception class defined in a package derives from its root (a builtin second base
kept where callers catch it: ``class ConfigError(EngineError, ValueError)``)."""


def _bindings(module: str, path: Path, modules: dict[str, Path]) -> dict[str, str]:
    """Name → dotted target of what a module binds by its imports and class statements
    (``from .x import Y as Z``: ``Z`` → ``<package>.x.Y``; ``import a.b``: ``a`` → ``a``)."""
    package = module if _is_package(path) else module.rpartition(".")[0]
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = alias.name
                else:
                    found.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                found[alias.asname or alias.name] = f"{base}.{alias.name}"
    return found


def exception_classes(packages: tuple[str, ...] = PACKAGES) -> dict[str, list[str]]:
    """Every exception class defined at the top level of the packages' modules
    (``module.Class``) → the dotted names of all the classes it derives from, read with
    `ast`: bases are followed through imports and re-exports within the packages, and
    outside them (builtins, other libraries) by importing what they name."""
    import builtins
    import importlib

    modules = _modules(packages)
    classes: dict[str, list[ast.expr]] = {}
    bindings: dict[str, dict[str, str]] = {}
    for module, path in modules.items():
        bindings[module] = _bindings(module, path, modules)
        for node in ast.parse(path.read_text("utf-8")).body:
            if isinstance(node, ast.ClassDef):
                classes[f"{module}.{node.name}"] = node.bases
                bindings[module][node.name] = f"{module}.{node.name}"

    def resolve(module: str, expr: ast.expr, seen: int = 0) -> str:
        dotted = ast.unparse(expr)
        head, _, rest = dotted.partition(".")
        target = bindings.get(module, {}).get(head)
        if target is None:
            return f"builtins.{dotted}" if hasattr(builtins, dotted) else dotted
        full = f"{target}.{rest}" if rest else target
        owner, _, name = full.rpartition(".")
        if full not in classes and owner in modules and seen < 20:  # a re-export: follow it
            return resolve(owner, ast.Name(name), seen + 1)
        return full

    def outside(dotted: str) -> type | None:
        owner, _, name = dotted.rpartition(".")
        try:
            found = getattr(importlib.import_module(owner), name)
        except (ImportError, AttributeError, ValueError):
            return None
        return found if isinstance(found, type) else None

    ancestry: dict[str, list[str]] = {}

    def ancestors(cls: str) -> list[str]:
        if cls not in ancestry:
            ancestry[cls] = []
            module = cls.rpartition(".")[0]
            out: list[str] = []
            for base in classes[cls]:
                dotted = resolve(module, base)
                out.append(dotted)
                if dotted in classes:
                    out += ancestors(dotted)
                else:
                    found = outside(dotted)
                    if found is not None:
                        out += [f"{k.__module__}.{k.__qualname__}" for k in found.__mro__]
            ancestry[cls] = out
        return ancestry[cls]

    return {
        cls: ancestors(cls) for cls in sorted(classes) if "builtins.BaseException" in ancestors(cls)
    }


def test_exception_classes_are_found_with_their_bases() -> None:
    found = exception_classes()
    # through a relative import, a re-export and a builtin second base
    assert "engine.errors.EngineError" in found["engine.voice_config.ConfigError"]
    assert "builtins.ValueError" in found["engine.voice_config.ConfigError"]
    assert (
        "engine.sources.base.SourceNotFoundError"
        in found["engine.sources.base.SourceUnavailableError"]
    )
    assert "wyoming_hayakoe.web.errors.ApiError" in found["wyoming_hayakoe.web.api.BadRequest"]
    assert "builtins.BaseException" in found["wyoming_hayakoe.errors.HayakoeError"]
    assert not any(cls.endswith(".Speaker") for cls in found)  # not an exception


def test_every_exception_derives_from_its_packages_root() -> None:
    """One root for the engine's errors (`EngineError`) and one for the server's
    (`HayakoeError`), so each can be caught whole; no two exception classes of a package
    share a name (one meaning per name: no second `Cancelled`, `UsageError`, ...)."""
    found = exception_classes()
    strays = [
        cls
        for cls, bases in found.items()
        if cls != EXCEPTION_ROOTS[cls.split(".")[0]]
        and EXCEPTION_ROOTS[cls.split(".")[0]] not in bases
    ]
    assert strays == [], "exception classes outside their package's root:\n" + "\n".join(strays)
    names: dict[str, list[str]] = {}
    for cls in found:
        if not cls.rpartition(".")[2].startswith("_"):
            names.setdefault(cls.rpartition(".")[2], []).append(cls)
    twice = {name: where for name, where in names.items() if len(where) > 1}
    assert twice == {}, f"one exception name, several classes: {twice}"
