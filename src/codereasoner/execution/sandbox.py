"""How sandbox workers are launched: isolation planning, interpreter choice and staging.

Full isolation runs each worker inside bubblewrap (no network, new PID/IPC/UTS/user namespaces, no
capabilities, a cleared environment) as an unprivileged uid: when the caller is root, bubblewrap
is started through ``setpriv`` as uid 65534, because root starting bubblewrap stays
root-equivalent on the host's files.

The sandbox's filesystem is an **allow-list** on an empty read-only root: ``/usr`` (the system
interpreter, its stdlib and lib-dynload, Debian's dist-packages, the dynamic libraries and
libseccomp), ``/bin``, ``/sbin``, ``/lib*`` as the host has them (symlinks into ``usr`` on
merged-usr systems, read-only binds otherwise), the sandbox interpreter's own installation when
it lives outside ``/usr`` (its ``sys.prefix``/``exec_prefix``/``base_*``, probed by running that
interpreter), the few ``/etc`` files libc and Python read (``ld.so.cache``, ``localtime``, ...;
``passwd``, ``group`` and ``nsswitch.conf`` are synthesized: root, nobody and the sandbox user,
files only), a private ``/proc``, a minimal ``/dev``, an empty read-only ``/tmp`` and the staged
modules at ``/tmp/codereasoner-sandbox``. Everything else of the host (the project and its
``.git``/``.venv``, data directories, ``/root``, ``/home``, ``/var``, ``/opt``, ``/srv``,
``/mnt``, ``/run``, ``/sys``) does not exist inside. ``extra_hidden``/``hide_paths`` still cover
directories *inside* what is bound (e.g. a subtree of ``/usr``) with an empty tmpfs; the home and
project directories are hidden that way too should they live under a bound path.

Without bubblewrap the worker runs directly and each child still gets rlimits, the seccomp filter
and (when root) a drop to uid 65534; filesystem reads and the network namespace are then not
isolated, and that is reported.

Stage directories (``codereasoner-stage-*`` in the temp folder) record their owner (pid, process
start time, boot id) in ``owner.json``; staging removes those whose owner is gone, so runs that
were killed leave nothing behind for long.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from codereasoner.execution.sandboxed import TRACER_MODULES
from codereasoner.settings import SettingError

NOBODY_UID = 65534
SANDBOX_DIR = "/tmp/codereasoner-sandbox"
STAGE_PREFIX = "codereasoner-stage-"
STAGE_OWNER_FILE = "owner.json"
# Stage directories of an older layout (no owner file) are removed once this old.
_LEGACY_STAGE_AGE_S = 24 * 3600
# /etc files bound when present: the loader's cache, Debian's alternatives (libblas.so.3 for
# numpy), time zone, MIME types, OS identity.
ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "timezone",
    "mime.types",
    "os-release",
    "host.conf",
    "gai.conf",
)
# Top-level system directories: symlinks (merged /usr) are recreated, directories bound.
SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
ISOLATION_MODES = ("auto", "bubblewrap", "fallback")

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
_SANDBOXED_DIR = _PACKAGE_DIR / "execution" / "sandboxed"
# Files copied into the sandbox (one flat directory, which the worker puts first on sys.path),
# imported there as flat top-level modules.
STAGED_FILES: dict[str, Path] = {
    "worker.py": _SANDBOXED_DIR / "worker.py",
    "sandbox_child.py": _SANDBOXED_DIR / "sandbox_child.py",
    "sandbox_wire.py": _SANDBOXED_DIR / "sandbox_wire.py",
    "seccomp_filter.py": _SANDBOXED_DIR / "seccomp_filter.py",
    **{f"{name}.py": _SANDBOXED_DIR / f"{name}.py" for name in TRACER_MODULES},
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
    # Host directories bound read-only besides /usr and the system links (bubblewrap only).
    bound_paths: tuple[str, ...] = field(default=())

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
    for built in sorted(_SANDBOXED_DIR.glob("_tracecore.*")):
        if built.suffix in (".so", ".pyd"):
            files[built.name] = built
    return files


def stage_files() -> str:
    """Copy the sandbox-side modules into a fresh world-readable directory; return its path.

    The directory records its owner, and stale directories of dead owners are removed first."""
    remove_stale_stages()
    directory = tempfile.mkdtemp(prefix=STAGE_PREFIX)
    os.chmod(directory, 0o755)
    owner = {"pid": os.getpid(), "start": _start_time(os.getpid()), "boot": _boot_id()}
    _write_file(os.path.join(directory, STAGE_OWNER_FILE), json.dumps(owner))
    for name, source in _staged_files().items():
        target = os.path.join(directory, name)
        shutil.copyfile(source, target)
        os.chmod(target, 0o644)
    etc = os.path.join(directory, "etc")
    os.mkdir(etc)
    os.chmod(etc, 0o755)
    for name, text in _sandbox_etc().items():
        _write_file(os.path.join(etc, name), text)
    _write_file(os.path.join(directory, EMPTY_FILE), "")
    return directory


EMPTY_FILE = "empty"
# /proc's own entries a program may read: its process's (self, thread-self and their links),
# the views of its own namespaces (net, sysvipc), the CPU's features (what numeric libraries
# read to choose kernels) and the kernel settings under sys (less the boot id, below). Every
# other top-level entry tells about the host (its
# command line, boot, load, memory, uptime, pressure, interrupts, disks, devices, kernel
# configuration, ...) and is masked: a file shows as an empty file (a device node cannot be
# bound there: /dev is mounted nodev), a folder as an empty one.
PROC_KEPT = frozenset({"self", "thread-self", "mounts", "net", "sysvipc", "cpuinfo", "sys"})
MASKED_PROC_FILES = ("/proc/sys/kernel/random/boot_id",)


def masked_proc() -> tuple[list[str], list[str]]:
    """The host's /proc files and folders that the sandbox shows empty (see PROC_KEPT)."""
    files: list[str] = list(MASKED_PROC_FILES)
    folders: list[str] = []
    try:
        names = sorted(os.listdir("/proc"))
    except OSError:
        names = []
    for name in names:
        path = f"/proc/{name}"
        if name.isdigit() or name in PROC_KEPT or os.path.islink(path):
            continue
        (folders if os.path.isdir(path) else files).append(path)
    return files, folders


def _write_file(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)
    os.chmod(path, 0o644)


def _sandbox_etc() -> dict[str, str]:
    """passwd, group and nsswitch.conf for the sandbox: root, nobody and the sandbox user only."""
    users = {0: "root", NOBODY_UID: "nobody"}
    if os.geteuid() != 0:
        import pwd

        try:
            users[os.geteuid()] = pwd.getpwuid(os.geteuid()).pw_name
        except KeyError:
            users[os.geteuid()] = "sandbox"
    passwd = "".join(
        f"{name}:x:{uid}:{uid}:{name}:/tmp:/usr/sbin/nologin\n" for uid, name in users.items()
    )
    group = "".join(
        f"{'nogroup' if uid == NOBODY_UID else name}:x:{uid}:\n" for uid, name in users.items()
    )
    return {
        "passwd": passwd,
        "group": group,
        "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\n",
    }


def _start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _owner_alive(owner: dict) -> bool:
    pid = owner.get("pid")
    if type(pid) is not int or pid <= 0:
        return False
    if owner.get("boot") != _boot_id():
        return False
    start = _start_time(pid)
    return start is not None and start == owner.get("start")


def remove_stale_stages(base: str | None = None) -> list[str]:
    """Remove this user's stage directories whose owner process is gone; return their paths.

    Only real directories owned by the effective uid and named like a stage are considered
    (never a symlink); a directory without an owner file (older layout) goes once it is a day
    old. Failures are ignored: another process may be removing the same directory."""
    base = base or tempfile.gettempdir()
    removed: list[str] = []
    try:
        entries = os.listdir(base)
    except OSError:
        return removed
    for name in entries:
        if not name.startswith(STAGE_PREFIX):
            continue
        path = os.path.join(base, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not os.path.isdir(path) or os.path.islink(path) or info.st_uid != os.geteuid():
            continue
        try:
            with open(os.path.join(path, STAGE_OWNER_FILE)) as handle:
                owner = json.load(handle)
            stale = type(owner) is not dict or not _owner_alive(owner)
        except FileNotFoundError:
            stale = time.time() - info.st_mtime > _LEGACY_STAGE_AGE_S
        except (OSError, ValueError):
            stale = False
        if stale:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


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


_PREFIX_PROBE = (
    "import json, os, sys; print(json.dumps(sorted({os.path.realpath(p) for p in (sys.prefix, "
    "sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, os.path.dirname(sys.executable))"
    " if p})))"
)


@functools.lru_cache(maxsize=8)
def interpreter_paths(python: str) -> tuple[str, ...]:
    """Directories of ``python``'s installation outside /usr, as that interpreter reports them
    (its prefixes and its executable's directory), for binding into the sandbox."""
    real = os.path.realpath(python)
    try:
        done = subprocess.run(
            [real, *PYTHON_FLAGS, "-c", _PREFIX_PROBE],
            capture_output=True,
            text=True,
            timeout=20,
            cwd="/",
            env=sandbox_environment(0),
        )
        reported = json.loads(done.stdout) if done.returncode == 0 else []
    except (OSError, ValueError, subprocess.TimeoutExpired):
        reported = []
    paths = [path for path in reported if isinstance(path, str)]
    paths.append(os.path.dirname(os.path.dirname(real)))  # <prefix>/bin/python -> <prefix>
    wanted: list[str] = []
    for path in sorted(set(paths), key=len):
        if path in ("", "/") or not os.path.isdir(path) or _under(path, "/usr"):
            continue
        if not any(_under(path, other) for other in wanted):
            wanted.append(path)
    return tuple(wanted)


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _hidden_paths(python: str, extra: tuple[str, ...]) -> tuple[str, ...]:
    """Directories covered by an empty tmpfs inside the sandbox: those asked for, plus the home
    and project directories, wherever they lie inside what is bound (usually nowhere)."""
    bound = ("/usr", *interpreter_paths(python))
    wanted = [
        os.path.expanduser("~"),
        os.getcwd(),
        str(_PACKAGE_DIR.parent),
        str(_PACKAGE_DIR.parent.parent),
        *extra,
    ]
    keep = os.path.realpath(python)
    hidden: list[str] = []
    for path in wanted:
        real = os.path.realpath(path)
        if real in bound or real in hidden or not os.path.isdir(real):
            continue
        if not any(_under(real, root) for root in bound):
            continue  # not visible in the sandbox anyway
        if _under(keep, real):
            continue  # never hide the interpreter
        hidden.append(real)
    return tuple(path for path in hidden if not any(_under(path, o) and path != o for o in hidden))


# Not -I: it implies -E, which would ignore PYTHONHASHSEED. The environment is cleared instead.
PYTHON_FLAGS = ("-s", "-S", "-P")


def sandbox_environment(hash_seed: int) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "PYTHONHASHSEED": str(hash_seed),
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "LC_ALL": "C.UTF-8",
    }


def bubblewrap_command(
    python: str,
    stage_dir: str,
    hidden: tuple[str, ...],
    hash_seed: int = 0,
    bound: tuple[str, ...] | None = None,
) -> list[str]:
    """The bubblewrap command line for a worker: an allow-list of read-only binds on an empty
    root (see the module docstring); ``bound`` defaults to the interpreter's own directories."""
    command: list[str] = []
    if os.geteuid() == 0:
        command += ["setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups"]
    command += ["bwrap", "--ro-bind", "/usr", "/usr"]
    for name in SYSTEM_DIRS:
        path = f"/{name}"
        if os.path.islink(path):
            command += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            command += ["--ro-bind", path, path]
    for path in interpreter_paths(python) if bound is None else bound:
        command += ["--ro-bind", path, path]
    for name in ETC_FILES:
        path = f"/etc/{name}"
        target = os.path.realpath(path)
        if os.path.islink(path) and _under(target, "/usr"):
            command += ["--symlink", target, path]
        elif os.path.exists(target):
            command += ["--ro-bind", target, path]
    for name in _sandbox_etc():
        command += ["--ro-bind", os.path.join(stage_dir, "etc", name), f"/etc/{name}"]
    command += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    files, folders = masked_proc()
    for path in files:
        command += ["--ro-bind", os.path.join(stage_dir, EMPTY_FILE), path]
    for path in folders:
        command += ["--tmpfs", path]
    command += ["--ro-bind", stage_dir, SANDBOX_DIR]
    ordered = sorted(set(hidden) - {"/tmp"}, key=lambda p: p.count("/"))
    for path in ordered:
        command += ["--tmpfs", path]
    # Writes are denied by seccomp too; read-only mounts also stop O_CREAT|O_RDONLY (empty files).
    for path in ("/dev", "/tmp", *ordered, *folders, "/"):
        command += ["--remount-ro", path]
    command += ["--unshare-all", "--as-pid-1", "--die-with-parent", "--new-session"]
    command += ["--cap-drop", "ALL", "--hostname", "sandbox", "--clearenv", "--chdir", "/tmp"]
    for name, value in sandbox_environment(hash_seed).items():
        command += ["--setenv", name, value]
    return [*command, "--", python, *PYTHON_FLAGS]


_PROBE = "import ctypes, json, resource, select, sys; print(sys.version.split()[0])"


def _probe(command: list[str]) -> str | None:
    try:
        done = subprocess.run(
            [*command, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=20,
            cwd="/",
            env=sandbox_environment(0),
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.lru_cache(maxsize=8)
def plan_isolation(
    mode: str = "auto", python: str | None = None, extra_hidden: tuple[str, ...] = ()
) -> IsolationPlan:
    """Pick the strongest isolation that works here; raise SandboxUnavailable if none does."""
    if mode not in ISOLATION_MODES:
        raise SettingError("isolation", mode, f"one of {', '.join(ISOLATION_MODES)}")
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
                        return IsolationPlan(
                            "bubblewrap",
                            candidate,
                            version,
                            True,
                            _version_warnings(version),
                            hidden,
                            interpreter_paths(candidate),
                        )
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
    return IsolationPlan(
        "fallback", candidate, version, root, (*warnings, *_version_warnings(version))
    )


def check_grading_isolation(plan: IsolationPlan, requested: str) -> None:
    """Refuse to grade under fallback isolation unless it was asked for by name: without
    bubblewrap a model's answer can read any readable file, the benchmark's truths included."""
    if plan.mode == "fallback" and requested != "fallback":
        raise SandboxUnavailable(
            "bubblewrap is unavailable, and without it an answer being graded can read files "
            "such as the benchmark's truths; install bubblewrap (apt-get install bubblewrap), "
            "or ask for the weaker isolation by name (--isolation fallback) to grade anyway"
        )


def _version_warnings(version: str) -> tuple[str, ...]:
    ours = ".".join(map(str, sys.version_info[:2]))
    if not version.startswith(ours + "."):
        return (
            f"sandbox Python {version} differs from this Python {ours}: results and traces "
            "follow the sandbox interpreter",
        )
    return ()


def worker_command(plan: IsolationPlan, stage_dir: str, hash_seed: int, config: dict) -> list[str]:
    if plan.mode == "bubblewrap":
        base = bubblewrap_command(
            plan.python, stage_dir, plan.hidden_paths, hash_seed, plan.bound_paths
        )
        script = f"{SANDBOX_DIR}/worker.py"
    else:
        base = [plan.python, *PYTHON_FLAGS]
        script = os.path.join(stage_dir, "worker.py")
    return [*base, script, json.dumps(config)]
