"""The package layout holds: imports point one way, and no consumer tests a benchmark's name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from codereasoner import benchmarks

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "codereasoner"
# Lowest first: a package may import the ones before it, never one after it (docs/architecture.md).
LAYERS = (
    "registry",
    "extras",
    "settings",
    "files",
    "values",
    "execution",
    "trace",
    "tasks",
    "models",
    "synth",
    "programs",
    "benchmarks",
    "evaluation",
    "families",
    "training",
    "cli",
    "__main__",
)
# every layer but the folders that declare the benchmarks
CONSUMERS = tuple(layer for layer in LAYERS if layer != "families")
FAMILY_PREFIX = "codereasoner.families."


def imported_names(tree: ast.AST) -> list[str]:
    """The dotted names a module's import statements bring in (lazy ones included): the module,
    and for ``from M import x`` also ``M.x`` (``x`` may be a submodule)."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def imported_packages(path: Path, *, named: bool = True) -> set[str]:
    """The top-level ``codereasoner`` packages a module imports: import statements (lazy ones
    included) and, with ``named``, registry targets named as text
    (``"codereasoner.models.hf:HFBackend"``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = imported_names(tree)
    if named:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                target = re.fullmatch(r"(codereasoner(?:\.\w+)+)(?::\w+)?", node.value)
                names += [target.group(1)] if target else []
    return {name.split(".")[1] for name in names if name.startswith("codereasoner.")}


# A benchmark folder's command group (``families/<name>/command.py``, declared in its
# family.json) is the command line's: it sits in the top layer, beside ``cli``.
FOLDER_COMMAND = "command.py"


def package_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def layer_of(path: Path) -> str:
    where = path.relative_to(PACKAGE).parts
    if where[0] == "families" and len(where) == 3 and where[2] == FOLDER_COMMAND:
        return "cli"
    return package_of(path)


def modules() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if package_of(path) != "__init__")


def test_every_package_has_a_layer() -> None:
    unknown = {package_of(path) for path in modules()} - set(LAYERS)
    assert not unknown, f"add {sorted(unknown)} to LAYERS and docs/architecture.md"


@pytest.mark.parametrize("path", modules(), ids=lambda path: str(path.relative_to(PACKAGE)))
def test_imports_point_down_the_layers(path: Path) -> None:
    mine = LAYERS.index(layer_of(path))
    upward = sorted(
        name
        for name in imported_packages(path) - imported_named_families(path)
        if name in LAYERS and LAYERS.index(name) > mine
    )
    assert not upward, f"{path.relative_to(PACKAGE)} imports {upward}, a layer above it"


# The one module that names the family folders: the scan of their manifests, whose targets the
# registries take as lazy entries (as they load a plugin).
REGISTRY_MODULES = ("registry.py",)


def is_registry(path: Path) -> bool:
    return str(path.relative_to(PACKAGE)) in REGISTRY_MODULES


def imported_named_families(path: Path) -> set[str]:
    """``{"families"}`` when a registry only names a family module as a target (how the
    registries below the folders load them); nothing for any other module."""
    if not is_registry(path):
        return set()
    named_only = imported_packages(path) - imported_packages(path, named=False)
    return named_only & {"families"}


def named_families(path: Path) -> set[str]:
    """The family folders a module names in text, whole (``"codereasoner.families.core.x:Y"``)
    or as the start of an f-string (``f"codereasoner.families.{name}"``: ``"*"``, any)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = re.match(r"codereasoner\.families\.(\w+)", node.value)
            found |= {match.group(1)} if match else set()
        elif isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            text = first.value if isinstance(first, ast.Constant) else ""
            if isinstance(text, str) and text.startswith("codereasoner.families"):
                match = re.match(r"codereasoner\.families\.(\w+)\.", text)
                found.add(match.group(1) if match else "*")
    return found


def test_imports_are_absolute() -> None:
    """The layer checks read absolute imports; a relative one would slip past them."""
    relative = [
        str(path.relative_to(PACKAGE))
        for path in modules()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    assert not relative, f"relative imports in {relative}"


# The one family folder a module outside ``families`` imports: distillation and training are
# built on the synthesized cases (they make their items, grade them and train on them).
BUILT_ON = {"training": {"cases"}}


def imported_families(path: Path) -> set[str]:
    """The family folders a module imports (``codereasoner.families.<folder>``), lazy imports
    included; registry targets named as text do not count."""
    names = imported_names(ast.parse(path.read_text(encoding="utf-8")))
    return {name.split(".")[2] for name in names if name.startswith(FAMILY_PREFIX)}


@pytest.mark.parametrize("path", modules(), ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_module_outside_a_family_imports_it(path: Path) -> None:
    where = path.relative_to(PACKAGE)
    if package_of(path) == "families":
        folder = where.parts[1] if len(where.parts) > 2 else None
        others = imported_families(path) - {folder}
        assert not others, f"{where} imports another family's folder: {sorted(others)}"
        return
    imported = imported_families(path) | (set() if is_registry(path) else named_families(path))
    allowed = BUILT_ON.get(package_of(path), set())
    assert imported <= allowed, f"{where} imports or names family {sorted(imported)}"
    if not imported:  # "from codereasoner import families" names none: refused too
        assert "families" not in imported_packages(path, named=False), path


def consumer_files() -> list[Path]:
    return [path for path in modules() if package_of(path) in CONSUMERS]


def test_the_checks_see_the_consumers() -> None:
    assert {package_of(path) for path in consumer_files()} == set(LAYERS) - {"families"}


def shipped() -> list[benchmarks.Benchmark]:
    """The benchmarks the package declares (not those a run declares for itself, such as
    distillation's cases, or a test's toy)."""
    declared_here = ("codereasoner.benchmarks.", "codereasoner.families.")
    return [
        bench
        for bench in benchmarks.REGISTRY.values()
        if bench.parse.__module__.startswith(declared_here)
    ]


def names_a(word: str) -> bool:
    """Whether a quoted word picks out benchmarks: a name, a dataset, a shared first part
    (``core``, ``lcb``), or a name's beginning or end cut at a dash (``core-``, ``-probe``)."""
    declared = shipped()
    names = {bench.name for bench in declared}
    words = names | {bench.dataset for bench in declared} | {n.split("-")[0] for n in names}
    if word in words:
        return True
    if len(word) < 4:  # "-o", "-i": command-line flags first
        return False
    starts = word.endswith("-") and any(name.startswith(word) for name in names)
    ends = word.startswith("-") and any(name.endswith(word) for name in names)
    return starts or ends


def test_the_name_check_catches_name_tests() -> None:
    for word in ("reval", "core", "core-", "-probe", "lcb", "cruxeval-o", "livecodebench"):
        assert names_a(word), word
    for word in ("pass@k", "output", "direct", "humaneval", "scores", "reval-log", "-o"):
        assert not names_a(word), word


def test_the_docs_state_the_layers() -> None:
    """README's arrow line and docs/architecture.md's layer block list LAYERS in order."""
    root = PACKAGE.parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    line = next(text for text in readme.split("\n\n") if "`values` → `execution`" in text)
    assert re.findall(r"`(\w+)`", line.split(". ")[0].split("):")[-1]) == list(LAYERS[:-1])
    architecture = (root / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = architecture.split("```")[1]
    listed = [
        line.split()[0].rstrip(",")
        for line in block.strip().splitlines()
        if line and not line.startswith(" ")
    ]
    assert listed == list(LAYERS[:-1])


# Calls that look a benchmark up by name: a name passed to one is a name test.
LOOKUPS = {"get", "family_named", "get_entry"}


def name_tests(tree: ast.AST) -> list[str]:
    """The strings a module branches on or looks up: the operands of comparisons (``==``,
    ``in (...)``), dict keys, subscripts, ``match`` values, parameter defaults, lookups (``.get("x")``) and names
    bound at module level (a constant compared later). Docstrings, labels and other call
    arguments say words, not names."""
    found: list[str] = []

    def strings(node: ast.AST | None) -> list[str]:
        if node is None:
            return []
        return [
            inner.value
            for inner in ast.walk(node)
            if isinstance(inner, ast.Constant) and isinstance(inner.value, str)
        ]

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            found += strings(node)
        elif isinstance(node, ast.Dict):
            found += [text for key in node.keys for text in strings(key)]
        elif isinstance(node, ast.Subscript):
            found += strings(node.slice)
        elif isinstance(node, ast.MatchValue):
            found += strings(node.value)
        elif isinstance(node, ast.arguments):
            found += [
                text for default in node.defaults + node.kw_defaults for text in strings(default)
            ]
        elif isinstance(node, ast.Call):
            callee = node.func
            called = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
            if called in LOOKUPS:
                found += [text for argument in node.args[:1] for text in strings(argument)]
    module = tree.body if isinstance(tree, ast.Module) else []
    for statement in module:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            found += strings(statement.value)
    return found


def test_the_name_check_sees_every_way_to_branch_on_a_name() -> None:
    hits = [
        'if bench.name == "reval": pass',
        'x = kind in ("core-probe", "other")',
        'y = {"cruxeval-o": 1}',
        'z = table["lcb"]',
        'match kind:\n    case "core":\n        pass',
        'w = benchmarks.get("livecodebench")',
        'FAMILY = "reval"',
        'def f(bench="cruxeval-i"): pass',
    ]
    for source in hits:
        assert [word for word in name_tests(ast.parse(source)) if names_a(word)], source
    words = [
        '"""Example: benchmarks.get("cruxeval-o")."""',
        'def f():\n    label("cases")',
        'def g(stmt):\n    return getattr(stmt, "cases", ())',
    ]
    for source in words:
        assert not [word for word in name_tests(ast.parse(source)) if names_a(word)], source


@pytest.mark.parametrize("path", consumer_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_benchmark_name_outside_the_declarations(path: Path) -> None:
    """Per-benchmark behaviour lives in the benchmark folders (``families/``): a module of any
    other layer that branches on a quoted benchmark name, or a quoted prefix of several, makes
    a name test."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = sorted({word for word in name_tests(tree) if names_a(word)})
    assert not found, f"{path.relative_to(PACKAGE)} names benchmarks: {found}"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of import nodes under ``if TYPE_CHECKING:`` (never run)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(inner) for part in node.body for inner in ast.walk(part)}
    return skipped


def module_imports() -> dict[str, set[str]]:
    """Each module's imports of other ``codereasoner`` modules, lazy ones (inside functions) and
    registry targets named as text included, ``TYPE_CHECKING`` ones left out."""
    paths = {_module_name(path): path for path in PACKAGE.rglob("*.py")}

    def resolve(dotted: str) -> str | None:
        parts = dotted.split(".")
        return next(
            (".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in paths),
            None,
        )

    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_only(tree)
        found: set[str | None] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found |= {resolve(f"{node.module}.{alias.name}") for alias in node.names}
            elif isinstance(node, ast.Import):
                found |= {resolve(alias.name) for alias in node.names}
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                target = re.fullmatch(r"(codereasoner(?:\.\w+)+):\w+", node.value)
                # a benchmark family's folder is named as a plugin is: it imports its host,
                # the host only names it, and loads it on first use
                plugin = target is not None and target.group(1).startswith(FAMILY_PREFIX)
                found |= {resolve(target.group(1))} if target and not plugin else set()
        graph[name] = {other for other in found if other and other != name}
    return graph


def test_no_module_imports_itself_through_others() -> None:
    """No import cycle between modules, at import time or inside functions."""
    graph = module_imports()
    cycles = []
    for start in graph:
        stack, seen = [(start, [start])], {start}
        while stack:
            node, path = stack.pop()
            for other in graph[node]:
                if other == start:
                    cycles.append(path)
                elif other not in seen:
                    seen.add(other)
                    stack.append((other, [*path, other]))
    assert not cycles, f"import cycles: {sorted({' -> '.join(sorted(c)) for c in cycles})}"


def test_the_family_rule_sees_every_form_of_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import codereasoner.families.core.report\n"
        "from codereasoner.families.reval import benchmark\n"
        "from codereasoner.families import cases\n"
        "def lazy():\n    from codereasoner.families.cruxeval.input import KIND\n"
        "TARGET = 'codereasoner.families.livecodebench.benchmark:BENCHMARKS'\n"
        "LOADED = importlib.import_module('codereasoner.families.reval.report')\n"
        "ANY = f'codereasoner.families.{name}:KIND'\n"
    )
    assert imported_families(module) == {"core", "reval", "cases", "cruxeval"}
    assert named_families(module) == {"livecodebench", "reval", "*"}


def test_no_private_name_crosses_a_module() -> None:
    """A name another module imports is part of its module's interface: it has no leading
    underscore."""
    crossing = sorted(
        f"{path.relative_to(PACKAGE)}: {node.module}.{alias.name}"
        for path in modules()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("codereasoner")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    )
    assert not crossing, crossing
