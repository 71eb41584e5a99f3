"""A seccomp deny-list for sandboxed children, built through libseccomp with ctypes (stdlib only).

The filter is built once in the warm worker and loaded in each forked child (about 0.2 ms), after
which the child cannot execute programs, create processes, use sockets, change the filesystem,
signal other processes, trace or read other processes' memory, or raise its own limits.
"""

from __future__ import annotations

import ctypes
import errno
import os

_ACT_ALLOW = 0x7FFF0000
_CMP_MASKED_EQ = 7
_CLONE_THREAD = 0x00010000


def _act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


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
    # other processes
    "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open",
    "pidfd_send_signal", "pidfd_getfd", "ptrace", "process_vm_readv", "process_vm_writev",
    "kcmp", "setpgid", "setsid",
    # limits and identity
    "setrlimit", "prlimit64", "setuid", "setgid", "setreuid", "setregid", "setresuid",
    "setresgid", "setfsuid", "setfsgid", "setgroups", "capset",
    # system administration and kernel attack surface
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "bpf", "perf_event_open",
    "keyctl", "add_key", "request_key", "init_module", "finit_module", "delete_module",
    "reboot", "kexec_load", "kexec_file_load", "swapon", "swapoff", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "userfaultfd", "acct", "quotactl", "syslog",
    "sethostname", "setdomainname", "settimeofday", "clock_settime", "adjtimex",
    "clock_adjtime", "iopl", "ioperm", "personality", "fanotify_init",
)  # fmt: skip

_WRITE_FLAGS = (os.O_WRONLY, os.O_RDWR, os.O_TRUNC)


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
            ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
            ctypes.POINTER(_ArgCmp),
        )  # fmt: skip
        lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
        lib.seccomp_load.argtypes = (ctypes.c_void_p,)
        self._ctx = lib.seccomp_init(_ACT_ALLOW)
        if not self._ctx:
            raise SeccompUnavailable("seccomp_init failed")
        self.rules = 0
        for name in DENIED_SYSCALLS:
            self._deny(name, _act_errno(errno.EPERM))
        # clone3 must fail with ENOSYS so that glibc falls back to clone() for threads.
        self._deny("clone3", _act_errno(errno.ENOSYS))
        self._deny("clone", _act_errno(errno.EPERM), (0, _CLONE_THREAD, 0))
        for flag in _WRITE_FLAGS:
            self._deny("open", _act_errno(errno.EPERM), (1, flag, flag))
            self._deny("openat", _act_errno(errno.EPERM), (2, flag, flag))
        self._deny("openat2", _act_errno(errno.ENOSYS))

    def _deny(self, name: str, action: int, masked_eq: tuple[int, int, int] | None = None) -> None:
        number = self._lib.seccomp_syscall_resolve_name(name.encode())
        if number == -1:  # not a syscall on this architecture
            return
        if masked_eq is None:
            rc = self._lib.seccomp_rule_add_array(self._ctx, action, number, 0, None)
        else:
            arg, mask, value = masked_eq
            cmp = _ArgCmp(arg, _CMP_MASKED_EQ, mask, value)
            rc = self._lib.seccomp_rule_add_array(self._ctx, action, number, 1, ctypes.byref(cmp))
        if rc < 0:
            raise SeccompUnavailable(f"cannot add a seccomp rule for {name}: errno {-rc}")
        self.rules += 1

    def load(self) -> None:
        rc = self._lib.seccomp_load(self._ctx)
        if rc < 0:
            raise SeccompUnavailable(f"seccomp_load failed: errno {-rc}")
