"""How sandbox workers are launched: isolation planning, interpreter choice and staging.

Full isolation runs each worker inside bubblewrap (read-only system, private /tmp, no network,
new PID/IPC/UTS/user namespaces, no capabilities, a cleared environment) as an unprivileged uid:
when the caller is root, bubblewrap is started through ``setpriv`` as uid 65534, because root
starting bubblewrap stays root-equivalent on the host's files. Without bubblewrap the worker runs
directly and each child still gets rlimits, the seccomp filter and (when root) a drop to uid
65534; filesystem reads and the network namespace are then not isolated, and that is reported.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

NOBODY_UID = 65534
SANDBOX_DIR = "/tmp/codereasoner-sandbox"
ISOLATION_MODES = ("auto", "bubblewrap", "fallback")

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
# Files copied into the sandbox, imported there as flat top-level modules.
STAGED_FILES: dict[str, Path] = {
    "worker.py": _PACKAGE_DIR / "execution" / "sandboxed" / "worker.py",
    "seccomp_filter.py": _PACKAGE_DIR / "execution" / "sandboxed" / "seccomp_filter.py",
    "tracer.py": _PACKAGE_DIR / "execution" / "sandboxed" / "tracer.py",
    "values.py": _PACKAGE_DIR / "values.py",
}


class SandboxUnavailable(RuntimeError):
    """No acceptable isolation could be set up."""


@dataclass(frozen=True)
class IsolationPlan:
    mode: str  # "bubblewrap" or "fallback"
    python: str
    python_version: str
    unprivileged: bool
    warnings: tuple[str, ...] = ()
    hidden_paths: tuple[str, ...] = field(default=())

    @property
    def description(self) -> str:
        if self.mode == "bubblewrap":
            return "bubblewrap namespaces + seccomp + rlimits, unprivileged uid"
        return (
            "seccomp + rlimits"
            + (" + uid drop" if self.unprivileged else "")
            + (" (fallback: filesystem reads and network namespace not isolated)")
        )


def _staged_files() -> dict[str, Path]:
    """STAGED_FILES plus the tracer's C fast path where it was built (any interpreter tag: the
    sandbox's interpreter loads the one its own suffix names, or none)."""
    files = dict(STAGED_FILES)
    for built in sorted(STAGED_FILES["tracer.py"].parent.glob("_tracecore.*")):
        if built.suffix in (".so", ".pyd"):
            files[built.name] = built
    return files


def stage_files() -> str:
    """Copy the sandbox-side modules into a fresh world-readable directory; return its path."""
    directory = tempfile.mkdtemp(prefix="codereasoner-stage-")
    os.chmod(directory, 0o755)
    for name, source in _staged_files().items():
        target = os.path.join(directory, name)
        shutil.copyfile(source, target)
        os.chmod(target, 0o644)
    return directory


def _python_candidates(explicit: str | None) -> list[str]:
    if explicit:
        return [explicit]
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [os.path.realpath(sys.executable), f"/usr/bin/{minor}", f"/usr/local/bin/{minor}"]
    unique: list[str] = []
    for candidate in candidates:
        if candidate not in unique and os.path.exists(candidate):
            unique.append(candidate)
    return unique


def _hidden_paths(python: str, extra: tuple[str, ...]) -> tuple[str, ...]:
    """Directories covered by an empty tmpfs inside the sandbox."""
    wanted = ["/tmp", "/var/tmp", "/run", "/home", "/root", "/mnt", "/media", "/srv"]
    wanted += [os.path.expanduser("~"), os.getcwd(), str(_PACKAGE_DIR.parent), *extra]
    keep = os.path.realpath(python)
    essential = ("/", "/usr", "/bin", "/lib", "/lib64", "/etc", "/proc", "/dev", "/sys")
    hidden: list[str] = []
    for path in wanted:
        real = os.path.realpath(path)
        if real in essential or real in hidden or not os.path.isdir(real):
            continue
        if keep.startswith(real.rstrip("/") + "/"):
            continue  # never hide the interpreter
        hidden.append(real)
    return tuple(
        path for path in hidden if not any(path.startswith(f"{other}/") for other in hidden)
    )


# Not -I: it implies -E, which would ignore PYTHONHASHSEED. The environment is cleared instead.
PYTHON_FLAGS = ("-s", "-S", "-P")


def sandbox_environment(hash_seed: int) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONHASHSEED": str(hash_seed),
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "LC_ALL": "C.UTF-8"}  # fmt: skip


def bubblewrap_command(
    python: str, stage_dir: str, hidden: tuple[str, ...], hash_seed: int = 0
) -> list[str]:
    command: list[str] = []
    if os.geteuid() == 0:
        command += ["setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups"]
    command += ["bwrap", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    for path in sorted(hidden, key=lambda p: p.count("/")):
        command += ["--tmpfs", path]
    if "/tmp" not in hidden:
        command += ["--tmpfs", "/tmp"]
    command += ["--ro-bind", stage_dir, SANDBOX_DIR]
    # Writes are denied by seccomp too; read-only mounts also stop O_CREAT|O_RDONLY (empty files).
    for path in ("/dev", *sorted(set(hidden) | {"/tmp"}, key=lambda p: p.count("/"))):
        command += ["--remount-ro", path]
    command += [
        "--unshare-all", "--as-pid-1", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--hostname", "sandbox", "--clearenv", "--chdir", "/tmp",
    ]  # fmt: skip
    for name, value in sandbox_environment(hash_seed).items():
        command += ["--setenv", name, value]
    return [*command, "--", python, *PYTHON_FLAGS]


_PROBE = "import ctypes, json, resource, select, sys; print(sys.version.split()[0])"


def _probe(command: list[str]) -> str | None:
    try:
        done = subprocess.run(
            [*command, "-c", _PROBE], capture_output=True, text=True, timeout=20, cwd="/",
            env=sandbox_environment(0),
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.lru_cache(maxsize=8)
def plan_isolation(
    mode: str = "auto", python: str | None = None, extra_hidden: tuple[str, ...] = ()
) -> IsolationPlan:
    """Pick the strongest isolation that works here; raise SandboxUnavailable if none does."""
    if mode not in ISOLATION_MODES:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATION_MODES)}, not {mode!r}")
    root = os.geteuid() == 0
    problems: list[str] = []
    if mode in ("auto", "bubblewrap"):
        missing = [
            tool for tool in ("bwrap", "setpriv" if root else "bwrap") if not shutil.which(tool)
        ]
        if missing:
            problems.append(f"{' and '.join(sorted(set(missing)))} not found on PATH")
        else:
            stage = stage_files()
            try:
                for candidate in _python_candidates(python):
                    hidden = _hidden_paths(candidate, extra_hidden)
                    version = _probe(bubblewrap_command(candidate, stage, hidden))
                    if version:
                        return IsolationPlan("bubblewrap", candidate, version, True,
                                             _version_warnings(version), hidden)  # fmt: skip
                problems.append("bubblewrap could not start a Python interpreter")
            finally:
                shutil.rmtree(stage, ignore_errors=True)
        if mode == "bubblewrap":
            raise SandboxUnavailable(f"bubblewrap isolation unavailable: {'; '.join(problems)}")
    candidate = python or sys.executable
    version = _probe([candidate, *PYTHON_FLAGS])
    if not version:
        raise SandboxUnavailable(f"cannot start the sandbox interpreter {candidate}")
    warnings = [
        "bubblewrap unavailable"
        + (f" ({'; '.join(problems)})" if problems else "")
        + ": filesystem reads and the network namespace are not isolated; seccomp and rlimits"
        " still apply. Install bubblewrap (apt-get install bubblewrap) for full isolation."
    ]
    return IsolationPlan("fallback", candidate, version, root,
                         (*warnings, *_version_warnings(version)))  # fmt: skip


def _version_warnings(version: str) -> tuple[str, ...]:
    ours = ".".join(map(str, sys.version_info[:2]))
    if not version.startswith(ours + "."):
        return (f"sandbox Python {version} differs from this Python {ours}: results and traces "
                "follow the sandbox interpreter",)  # fmt: skip
    return ()


def worker_command(plan: IsolationPlan, stage_dir: str, hash_seed: int, config: dict) -> list[str]:
    if plan.mode == "bubblewrap":
        base = bubblewrap_command(plan.python, stage_dir, plan.hidden_paths, hash_seed)
        script = f"{SANDBOX_DIR}/worker.py"
    else:
        base = [plan.python, *PYTHON_FLAGS]
        script = os.path.join(stage_dir, "worker.py")
    return [*base, script, json.dumps(config)]
