"""A seccomp deny-list for sandboxed children, built through libseccomp with ctypes (stdlib only).

The filter is built and exported as a BPF program once in the warm worker; each forked child
loads it with two ``prctl`` calls while it waits for its job, after which the child cannot
execute programs, create processes, use sockets, change the filesystem, signal other processes,
trace or read other processes' memory, or change anyone's limits but its own (which it then
lowers to the job's: the kernel lets no unprivileged process raise a hard limit).

Nothing a job does may outlive it or reach another process, so the filter also denies (EPERM):

* System V IPC and POSIX message queues (``shm*``, ``msg*``, ``sem*``, ``mq_*``, ``ipc``): a
  segment would stay in the worker's IPC namespace (the host's, in the fallback) after the job;
* every way of making the kernel signal someone else on I/O: ``fcntl`` ``F_SETOWN``,
  ``F_SETOWN_EX``, ``F_SETSIG``, ``F_SETLEASE``, ``F_NOTIFY``, ``F_SETFL`` with ``O_ASYNC`` (other
  ``F_SETFL`` changes, such as ``os.set_blocking``, stay allowed), and ``ioctl`` ``FIOASYNC``,
  ``FIOSETOWN``, ``SIOCSPGRP``, ``TIOCSPGRP``, ``TIOCSCTTY``, ``TIOCSTI``;
* advisory locks, which read-only mounts do not stop: ``flock`` and ``fcntl`` ``F_SETLK``,
  ``F_SETLKW``, ``F_OFD_SETLK``, ``F_OFD_SETLKW`` (so ``fcntl.lockf`` too); ``F_GETLK`` stays;
* scheduling, priority and memory placement of anything but the caller named as ``0``:
  ``sched_setscheduler``, ``sched_setparam``, ``sched_setaffinity``, ``sched_setattr``,
  ``migrate_pages``, ``move_pages`` with a pid other than 0, ``setpriority`` unless
  ``(PRIO_PROCESS, 0)``, ``ioprio_set`` unless ``(IOPRIO_WHO_PROCESS, 0)``. A program that names
  itself by its own pid is refused too (a pre-built filter cannot know the pid; the kernel treats
  0 as "the calling thread", which is what ``os.nice`` and ``os.sched_setaffinity(0, ...)`` use).

``fcntl`` and ``ioctl`` commands are compared on their low 32 bits, as the kernel reads them.
"""

from __future__ import annotations

import ctypes
import errno
import os

_ACT_ALLOW = 0x7FFF0000
_CMP_NE = 1
_CMP_MASKED_EQ = 7
_CLONE_THREAD = 0x00010000
_LOW32 = 0xFFFFFFFF


def _act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class _SockFprog(ctypes.Structure):  # struct sock_fprog
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


class _ArgCmp(ctypes.Structure):
    _fields_ = (
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    )


DENIED_SYSCALLS: tuple[str, ...] = (
    # new programs and processes (threads stay allowed: see the clone rule below)
    "execve", "execveat", "fork", "vfork",
    # network and local sockets
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "sendto", "sendmsg", "sendmmsg",
    # filesystem changes
    "unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir", "mkdirat", "rmdir",
    "link", "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "chown", "fchown",
    "lchown", "fchownat", "truncate", "ftruncate", "creat", "mknod", "mknodat", "utime",
    "utimes", "utimensat", "futimesat", "name_to_handle_at", "open_by_handle_at",
    # advisory locks (also on read-only files of the host)
    "flock",
    # other processes
    "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open",
    "pidfd_send_signal", "pidfd_getfd", "ptrace", "process_vm_readv", "process_vm_writev",
    "kcmp", "setpgid", "setsid",
    # state that would outlive the job: System V IPC and POSIX message queues
    "shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl", "semget",
    "semop", "semtimedop", "semtimedop_time64", "semctl", "ipc", "mq_open", "mq_unlink",
    "mq_timedsend", "mq_timedsend_time64", "mq_timedreceive", "mq_timedreceive_time64",
    "mq_notify", "mq_getsetattr",
    # identity (limits: see the prlimit64 rule below)
    "setuid", "setgid", "setreuid", "setregid", "setresuid",
    "setresgid", "setfsuid", "setfsgid", "setgroups", "capset",
    # system administration and kernel attack surface
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "bpf", "perf_event_open",
    "keyctl", "add_key", "request_key", "init_module", "finit_module", "delete_module",
    "reboot", "kexec_load", "kexec_file_load", "swapon", "swapoff", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "userfaultfd", "acct", "quotactl", "syslog",
    "sethostname", "setdomainname", "settimeofday", "clock_settime", "adjtimex",
    "clock_adjtime", "iopl", "ioperm", "personality", "fanotify_init",
    # inotify instances and watches are counted per uid, across every job and the host's own
    # processes of that uid: one job could use them all up
    "inotify_init", "inotify_init1", "inotify_add_watch",
)  # fmt: skip

_WRITE_FLAGS = (os.O_WRONLY, os.O_RDWR, os.O_TRUNC)

# fcntl commands denied whatever their argument: signal owners and delivery, leases, directory
# notification, and record locks (classic and open-file-description).
F_SETFL, F_SETLK, F_SETLKW, F_SETOWN, F_SETSIG, F_SETOWN_EX = 4, 6, 7, 8, 10, 15
F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE, F_NOTIFY = 37, 38, 1024, 1026
DENIED_FCNTL = (
    F_SETOWN,
    F_SETSIG,
    F_SETOWN_EX,
    F_SETLEASE,
    F_NOTIFY,
    F_SETLK,
    F_SETLKW,
    F_OFD_SETLK,
    F_OFD_SETLKW,
)
O_ASYNC = 0o20000
# ioctl requests: async I/O on, owner of SIGIO/SIGURG (file and socket forms), a terminal's
# foreground group, taking a controlling terminal, faking terminal input.
DENIED_IOCTL = (0x5452, 0x8901, 0x8902, 0x5410, 0x540E, 0x5412)
# Syscalls whose first argument is a pid; only 0 (the caller) is allowed.
SELF_ONLY = (
    "sched_setscheduler",
    "sched_setparam",
    "sched_setaffinity",
    "sched_setattr",
    "migrate_pages",
    "move_pages",
)
_PRIO_PROCESS = 0
_IOPRIO_WHO_PROCESS = 1

# (arg, op, datum_a, datum_b), as libseccomp's struct scmp_arg_cmp.
Comparison = tuple[int, int, int, int]


class SeccompUnavailable(RuntimeError):
    """libseccomp could not be loaded or the filter could not be built."""


class SeccompFilter:
    """A built (not yet loaded) filter context; ``load()`` applies it to the calling process."""

    def __init__(self) -> None:
        try:
            self._lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
        except OSError as exc:
            raise SeccompUnavailable(f"libseccomp.so.2 not found: {exc}") from exc
        lib = self._lib
        lib.seccomp_init.restype = ctypes.c_void_p
        lib.seccomp_init.argtypes = (ctypes.c_uint32,)
        lib.seccomp_rule_add_array.argtypes = (
            ctypes.c_void_p,
            ctypes.c_uint32,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.POINTER(_ArgCmp),
        )
        lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
        lib.seccomp_load.argtypes = (ctypes.c_void_p,)
        lib.seccomp_export_bpf.argtypes = (ctypes.c_void_p, ctypes.c_int)
        self._program: _SockFprog | None = None
        self._ctx = lib.seccomp_init(_ACT_ALLOW)
        if not self._ctx:
            raise SeccompUnavailable("seccomp_init failed")
        self.rules = 0
        eperm = _act_errno(errno.EPERM)
        for name in DENIED_SYSCALLS:
            self._deny(name, eperm)
        # clone3 must fail with ENOSYS so that glibc falls back to clone() for threads.
        self._deny("clone3", _act_errno(errno.ENOSYS))
        self._deny("clone", eperm, (0, _CMP_MASKED_EQ, _CLONE_THREAD, 0))
        for flag in _WRITE_FLAGS:
            self._deny("open", eperm, (1, _CMP_MASKED_EQ, flag, flag))
            self._deny("openat", eperm, (2, _CMP_MASKED_EQ, flag, flag))
        self._deny("openat2", _act_errno(errno.ENOSYS))
        for command in DENIED_FCNTL:
            self._deny("fcntl", eperm, (1, _CMP_MASKED_EQ, _LOW32, command))
        self._deny(
            "fcntl",
            eperm,
            (1, _CMP_MASKED_EQ, _LOW32, F_SETFL),
            (2, _CMP_MASKED_EQ, O_ASYNC, O_ASYNC),
        )
        for request in DENIED_IOCTL:
            self._deny("ioctl", eperm, (1, _CMP_MASKED_EQ, _LOW32, request))
        for name in SELF_ONLY:
            self._deny(name, eperm, (0, _CMP_NE, 0, 0))
        # A child sets its limits after the filter is loaded (its job arrives later), so the
        # calls that change the caller's own limits stay allowed: setrlimit, and prlimit64 naming
        # pid 0. The kernel refuses to raise a hard limit, and the child sets its hard limits.
        self._deny("prlimit64", eperm, (0, _CMP_NE, 0, 0))
        self._deny("setpriority", eperm, (0, _CMP_NE, _PRIO_PROCESS, 0))
        self._deny("setpriority", eperm, (1, _CMP_NE, 0, 0))
        self._deny("ioprio_set", eperm, (0, _CMP_NE, _IOPRIO_WHO_PROCESS, 0))
        self._deny("ioprio_set", eperm, (1, _CMP_NE, 0, 0))
        self._export_program()

    def _deny(self, name: str, action: int, *comparisons: Comparison) -> None:
        number = self._lib.seccomp_syscall_resolve_name(name.encode())
        if number < 0:  # not a syscall on this architecture (or a multiplexed pseudo-call)
            return
        cmps = (_ArgCmp * max(1, len(comparisons)))(*(_ArgCmp(*cmp) for cmp in comparisons))
        rc = self._lib.seccomp_rule_add_array(self._ctx, action, number, len(comparisons), cmps)
        if rc < 0:
            raise SeccompUnavailable(f"cannot add a seccomp rule for {name}: errno {-rc}")
        self.rules += 1

    def _export_program(self) -> None:
        """Export the BPF program once, so that each child loads it with two prctl calls instead
        of having libseccomp generate it again (which allocates, and costs a child copied pages).
        Without the export (an old libseccomp), :meth:`load` keeps using ``seccomp_load``."""
        read_end, write_end = os.pipe()
        try:
            rc = self._lib.seccomp_export_bpf(self._ctx, write_end)
            os.close(write_end)
            write_end = -1
            program = b""
            while chunk := os.read(read_end, 1 << 16):
                program += chunk
        finally:
            os.close(read_end)
            if write_end >= 0:
                os.close(write_end)
        if rc < 0 or not program or len(program) % 8:
            return
        self._buffer = ctypes.create_string_buffer(program, len(program))
        self._program = _SockFprog(len(program) // 8, ctypes.addressof(self._buffer))
        self._prctl = ctypes.CDLL(None, use_errno=True).prctl

    def load(self) -> None:
        if self._program is None:
            rc = self._lib.seccomp_load(self._ctx)
            if rc < 0:
                raise SeccompUnavailable(f"seccomp_load failed: errno {-rc}")
            return
        prctl = self._prctl
        if prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise SeccompUnavailable(f"PR_SET_NO_NEW_PRIVS failed: errno {ctypes.get_errno()}")
        if prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(self._program), 0, 0) != 0:
            raise SeccompUnavailable(f"PR_SET_SECCOMP failed: errno {ctypes.get_errno()}")
