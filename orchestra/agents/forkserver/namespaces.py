"""Entering an agent tree's sandbox from the fork server: the namespaces bubblewrap made for
it, and the capabilities and privileges bubblewrap leaves its processes (`--cap-drop ALL`,
no_new_privs).

`enter(pid)` moves the calling (single-threaded, freshly forked) process into the mount, PID
and IPC namespaces of `pid` (and its user namespace where bwrap made one): the root and working
directory become the sandbox's, and the next fork is a process of the sandbox's PID namespace.
`drop_privileges()` then takes every capability (ambient, permitted, effective, inheritable)
and sets no_new_privs, as bwrap does before it execs a sandbox's first program (it keeps the
bounding set: with no_new_privs an exec gains nothing, root's programs included);
tests/agents/forkserver compares the result with a process bwrap started.
"""

from __future__ import annotations

import ctypes
import os

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
SYS_CAPSET = 126  # x86-64 and arm64 differ: looked up below
_CAPSET_NUMBERS = {"x86_64": 126, "aarch64": 91}


class SandboxError(OSError):
    """The sandbox cannot be entered (its first process is gone, or the kernel refused)."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise SandboxError(errno, f"{what}: {os.strerror(errno)}")


def same_namespaces(pid: int) -> bool:
    """Whether `pid` is in this process's PID namespace (an unsandboxed process)."""
    return os.readlink(f"/proc/{pid}/ns/pid") == os.readlink("/proc/self/ns/pid")


def enter(pid: int) -> None:
    """Join the namespaces of `pid`'s sandbox (see the module docstring)."""
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC
    if os.readlink(f"/proc/{pid}/ns/user") != os.readlink("/proc/self/ns/user"):
        flags |= CLONE_NEWUSER
    try:
        pidfd = os.pidfd_open(pid)
    except OSError as error:
        raise SandboxError(error.errno, f"the sandbox's first process {pid}: {error}") from None
    try:
        _check(_libc().setns(pidfd, flags), f"setns into the namespaces of {pid}")
    finally:
        os.close(pidfd)


def drop_privileges() -> None:
    """No capability, and none to gain by exec (bwrap's `--cap-drop ALL`)."""
    libc = _libc()
    _check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient")
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two empty sets of effective, permitted, inheritable
    number = _CAPSET_NUMBERS.get(os.uname().machine, SYS_CAPSET)
    _check(libc.syscall(number, header, data), "capset")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
