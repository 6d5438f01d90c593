"""Seal a process's channels: once candidate code may run here, no call it can make writes to them.

The candidate's host code may call stdio (guard.py allows it for error messages), and stdio writes to
whatever descriptor a `FILE` names: `stderr->_fileno = 5; fputs(...)` writes to descriptor 5. So the
channel the harness talks on is sealed in the kernel, not by obscurity: a seccomp filter, installed
before the candidate's library is loaded and on every thread of the process (CUDA runs host callbacks
on threads of its own), refuses every system call that writes to a channel descriptor (write, writev,
pwrite*, sendfile, splice and friends) and every call that would copy one to a new number (dup*,
fcntl's F_DUPFD). The harness itself sends with `sendmsg`, which no function the guard allows ends in.
A filter can never be removed, only added to, so nothing later in the process undoes it.

The filter goes through libseccomp (its ctypes binding, pyseccomp), not hand-assembled BPF.
"""

from __future__ import annotations

import errno
import fcntl

# system calls that write to, or splice into, the descriptor in argument `index`
_WRITES_TO = {"write": 0, "writev": 0, "pwrite64": 0, "pwritev": 0, "pwritev2": 0, "sendfile": 0,
              "vmsplice": 0, "splice": 2, "tee": 1, "copy_file_range": 2}
_DUPLICATES = ("dup", "dup2", "dup3")


class SealUnavailable(RuntimeError):
    """The system cannot install the filter (no libseccomp, or a kernel without seccomp)."""


def seal(channels: list[int]) -> None:
    """Refuse (EPERM) every write to `channels` from now on, on every thread of this process."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError, RuntimeError) as error:  # the binding raises RuntimeError without libseccomp
        raise SealUnavailable(f"the judge needs libseccomp to seal its channels ({error}); install the "
                              "system's libseccomp2 package (apt install libseccomp2)") from None
    refuse = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    rules.set_attr(seccomp.Attr.CTL_TSYNC, 1)
    for fd in channels:
        for call, index in _WRITES_TO.items():
            rules.add_rule(refuse, call, seccomp.Arg(index, seccomp.EQ, fd))
        for call in _DUPLICATES:
            rules.add_rule(refuse, call, seccomp.Arg(0, seccomp.EQ, fd))
        for command in (fcntl.F_DUPFD, fcntl.F_DUPFD_CLOEXEC):
            rules.add_rule(refuse, "fcntl", seccomp.Arg(0, seccomp.EQ, fd), seccomp.Arg(1, seccomp.EQ, command))
    # io_uring writes without a write call; nothing the judge runs needs it
    for call in ("io_uring_setup", "io_uring_enter", "io_uring_register"):
        rules.add_rule(refuse, call)
    try:
        rules.load()
    except OSError as error:
        raise SealUnavailable(f"the seccomp filter could not be installed ({error}); the judge needs a "
                              "Linux kernel with seccomp") from None
