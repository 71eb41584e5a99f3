"""The C fast path on the other CPython versions present on this machine (3.12, 3.13).

For each interpreter found, the extension is compiled against that interpreter's headers into a
scratch folder beside copies of the tracer's modules and values.py, and a script run by that
interpreter traces a corpus of programs with both engines: the traces must be identical and the
return values right. Skipped where no other version is installed (CI machines have pyenv's 3.12
and 3.13).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.trace import _FLAT_MODULES
from tests.trace.test_engines import CALLS, FLIP, HOLDERS, REINSTALL
from tests.trace.test_tracer import _ProgramGenerator
from tests.trace.test_tracer_adversarial import PROGRAMS

SOURCE = _FLAT_MODULES["tracer"].parent / "_tracecore.c"
CANDIDATES = {
    "3.12": ["/root/.pyenv/versions/3.12.1/bin/python3.12", "/usr/bin/python3.12"],
    "3.13": ["/root/.pyenv/versions/3.13.0/bin/python3.13", "/usr/bin/python3.13"],
}

# Runs under the other interpreter: trace every (source, args) with both engines.
SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import tracer

assert tracer.ACCELERATOR is not None, "the extension did not load"
corpus = json.load(open(sys.argv[2]))
differ, results = [], []
for source, args in corpus:
    traces = []
    for engine in ("c", "python"):
        namespace = {"__name__": "__main__"}
        exec(compile(source, "<program>", "exec"), namespace)
        traced = tracer.Tracer(source=source, engine=engine)
        try:
            traced.call(namespace["f"], json.loads(json.dumps(args)), {})
        except Exception:
            pass  # the trace records the exception
        traces.append(json.loads(json.dumps(traced.last)))
    if traces[0] != traces[1]:
        differ.append(source[:300])
    results.append(traces[0]["return"])
print(json.dumps({"differ": differ, "returns": results}))
"""


def _interpreter(version: str) -> str | None:
    for path in CANDIDATES[version]:
        if Path(path).exists():
            return path
    return None


def _corpus() -> list[tuple[str, list]]:
    corpus = [
        (_ProgramGenerator(seed).program(), [seed % 5, seed % 3 - 1, [seed % 7, 2]])
        for seed in range(150)
    ]
    corpus += [(source, [1]) for source in PROGRAMS.values()]
    corpus += [(FLIP, [[1, 2], list(range(20))]), (REINSTALL, [5]), (HOLDERS, [5]), (CALLS, [5])]
    return corpus


@pytest.mark.parametrize("version", sorted(CANDIDATES))
def test_the_c_fast_path_builds_and_matches_pure_python_on(version: str, tmp_path: Path) -> None:
    python = _interpreter(version)
    if python is None or shutil.which("gcc") is None:
        pytest.skip(f"no Python {version} or no gcc here")
    probe = subprocess.run(
        [
            python,
            "-c",
            "import sysconfig, importlib.machinery as m; "
            "print(sysconfig.get_paths()['include']); print(m.EXTENSION_SUFFIXES[0])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    include, suffix = probe.stdout.split()
    if not (Path(include) / "Python.h").exists():
        pytest.skip(f"no headers for Python {version}")
    build = subprocess.run(
        [
            "gcc",
            "-O2",
            "-shared",
            "-fPIC",
            "-Wall",
            "-Werror",
            "-Wno-unused-parameter",
            "-Wno-missing-field-initializers",
            "-Wno-cast-function-type",
            f"-I{include}",
            str(SOURCE),
            "-o",
            str(tmp_path / f"_tracecore{suffix}"),
        ],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    for name, path in _FLAT_MODULES.items():  # values and the tracer's modules
        shutil.copyfile(path, tmp_path / f"{name}.py")
    corpus = _corpus()
    (tmp_path / "corpus.json").write_text(json.dumps(corpus))
    (tmp_path / "run.py").write_text(SCRIPT)
    done = subprocess.run(
        [python, "-I", str(tmp_path / "run.py"), str(tmp_path), str(tmp_path / "corpus.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["differ"] == []
    assert len(report["returns"]) == len(corpus)
    assert sum(value is not None for value in report["returns"]) >= len(corpus) - 2
