"""The sandbox-side modules reach the sandbox: staged, importable as flat modules, in both modes."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codereasoner.execution import Pool, Program, TraceOptions, parse_call
from codereasoner.execution.sandbox import PYTHON_FLAGS, STAGED_FILES, stage_files
from codereasoner.execution.sandboxed import TRACER_MODULES
from codereasoner.trace import trace_call


def _flat_imports(path: Path) -> set[str]:
    """Top-level module names a sandbox-side file imports (the type checker's twins aside)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names - {"__future__", "codereasoner"}


def test_every_flat_import_of_a_staged_module_is_staged_or_standard_library() -> None:
    staged = {name.removesuffix(".py") for name in STAGED_FILES}
    assert set(TRACER_MODULES) <= staged
    for name, path in STAGED_FILES.items():
        missing = _flat_imports(path) - staged - sys.stdlib_module_names
        assert not missing, f"{name} imports {missing}, which the sandbox would not find"


def test_the_tracer_modules_import_only_those_before_them() -> None:
    for position, name in enumerate(TRACER_MODULES):
        tracer_imports = {
            imported
            for imported in _flat_imports(STAGED_FILES[f"{name}.py"])
            if imported in TRACER_MODULES
        }
        assert tracer_imports <= set(TRACER_MODULES[:position]), name


def test_a_staged_directory_alone_gives_the_tracer_and_its_c_fast_path() -> None:
    """What the fallback runs (and bubblewrap binds at /tmp/codereasoner-sandbox): the staged
    directory on its own, first on sys.path as worker.py puts it."""
    stage = stage_files()
    try:
        assert {f"{name}.py" for name in TRACER_MODULES} <= {p.name for p in Path(stage).iterdir()}
        probe = (
            "import json, sys; sys.path.insert(0, sys.argv[1]); import tracer; print(json.dumps(["
            "sorted(n for n in sys.modules if n.startswith('tracer')), "
            "tracer.ACCELERATOR is not None, tracer.__file__.startswith(sys.argv[1])]))"
        )
        done = subprocess.run(
            [sys.executable, *PYTHON_FLAGS, "-c", probe, stage],
            capture_output=True,
            text=True,
            cwd="/",
            check=True,
        )
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    assert json.loads(done.stdout) == [sorted(TRACER_MODULES), True, True]


@pytest.mark.parametrize("mode", ["pool", "fallback_pool"])
def test_workers_preload_the_tracer_and_trace_in_both_isolation_modes(
    mode: str, request: pytest.FixtureRequest
) -> None:
    pool: Pool = request.getfixturevalue(mode)
    assert pool.worker_info["tracer_engine"] == "c"
    source = (
        "def f(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n"
    )
    for engine in ("c", "python"):
        traced = trace_call(pool, Program(source), parse_call("f(3)"), TraceOptions(engine=engine))
        assert traced.result.matches(3)
        assert traced.trace is not None and not traced.trace.partial
        assert [step.line for step in traced.trace.steps] == [2, 3, 4, 3, 4, 3, 4, 3, 5]
