"""The worker's shell sandbox: bubblewrap (`bwrap`) with the system read-only, the workspace writable, a
private /tmp, no network, its own PID namespace, and an allowlisted environment.

Visible inside: /usr (and the /bin, /lib* links into it), a few files of /etc the compilers and the dynamic
linker need, the CUDA toolkit, a fresh /dev with the NVIDIA device nodes (and a read-only /sys) where a GPU
is present, /proc of the sandbox's own processes, and the workspace at its own path. Not visible: the home
directory, the repository, the runs folder beyond this workspace, the network, the parent's processes.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

SYSTEM_ROOTS = ("/usr",)
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # links into /usr on merged-/usr systems
ETC_FILES = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "passwd", "group", "nsswitch.conf",
             "hosts", "localtime")
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")

ENV_NAMES = {"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "USER", "LOGNAME", "CC", "CXX", "CFLAGS", "CXXFLAGS",
             "CPPFLAGS", "LDFLAGS", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "OMP_NUM_THREADS",
             "TORCH_CUDA_ARCH_LIST", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "TMPDIR"}
ENV_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "NVCC_")
# a second check on the allowlist: an allowed prefix never lets a secret-looking name through (CUDA_TOKEN)
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|PWD|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|BEARER|DSN|URL",
                         re.IGNORECASE)

MISSING = ("bubblewrap (bwrap) is not installed, so the worker's shell cannot be confined to its workspace; install "
           "it (e.g. apt-get install bubblewrap) or pass --unconfined to let the worker run with your full rights.")
UNCONFINED = "none (--unconfined): the worker's shell runs with the user's full rights, its environment allowlisted"


def environment(workspace: Path, *, confined: bool) -> dict[str, str]:
    """The shell's environment: an allowlist, HOME the workspace; inside the sandbox a PATH it can see."""
    env = {k: v for k, v in os.environ.items()
           if (k in ENV_NAMES or k.startswith(ENV_PREFIXES)) and not SECRET_NAME.search(k)}
    env["HOME"] = str(workspace)
    env.setdefault("LANG", "C.UTF-8")
    if confined:
        toolkit = cuda_toolkit()
        env["PATH"] = ":".join(([str(toolkit / "bin")] if toolkit else []) + list(SYSTEM_PATH))
        env["TMPDIR"] = "/tmp"
    else:
        env.setdefault("PATH", os.defpath)
    return env


def find_bwrap() -> str | None:
    return shutil.which("bwrap")


@functools.cache
def _version(bwrap: str) -> tuple[int, ...]:
    try:
        text = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(x) for x in found.groups() if x) if found else ()


@functools.cache
def _probe(bwrap: str) -> str | None:
    """Why bwrap cannot make the sandbox here (no user namespaces, say), or None when it can."""
    with tempfile.TemporaryDirectory() as folder:
        try:
            proc = subprocess.run(argv(bwrap, Path(folder), "true"), capture_output=True, text=True, timeout=30,
                                  env=environment(Path(folder), confined=True))
        except (OSError, subprocess.TimeoutExpired) as error:
            return str(error)
    return None if proc.returncode == 0 else (proc.stderr.strip() or f"exit status {proc.returncode}")


def unavailable() -> str | None:
    """None when the sandbox works here, else one sentence saying why it does not."""
    bwrap = find_bwrap()
    if bwrap is None:
        return MISSING
    problem = _probe(bwrap)
    if problem:
        return (f"bubblewrap ({bwrap}) cannot make the worker's sandbox here ({problem.splitlines()[0]}); enable "
                "user namespaces, or pass --unconfined to let the worker run with your full rights.")
    return None


def describe(unconfined: bool) -> str:
    """What confines the worker's shell, in a few words (for the run's start and its trace)."""
    if unconfined:
        return UNCONFINED
    problem = unavailable()
    if problem:
        return f"none: {problem} The shell tool refuses every call."
    version = ".".join(map(str, _version(find_bwrap() or "bwrap")))
    return f"bubblewrap {version}: system read-only, workspace writable, no network, own PID namespace"


def cuda_toolkit() -> Path | None:
    """The CUDA toolkit's folder (the one holding bin/nvcc), resolved, or None."""
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).resolve().parent.parent))
    candidates.append("/usr/local/cuda")
    for candidate in candidates:
        if candidate and (Path(candidate) / "bin" / "nvcc").is_file():
            return Path(candidate).resolve()
    return None


def _visible(path: Path) -> bool:
    return any(path.is_relative_to(root) for root in SYSTEM_ROOTS)


def _hidden() -> list[Path]:
    """KernelSeek's own code and checkout, where they lie under a system folder the sandbox shows."""
    package = Path(__file__).resolve().parent.parent
    hidden = [package]
    checkout = package.parent
    if (checkout / "evals").is_dir() or (checkout / "kernels").is_dir():
        hidden.append(checkout)
    return [p for p in hidden if _visible(p)]


def argv(bwrap: str, workspace: Path, command: str) -> list[str]:
    """The bwrap command line that runs `command` with bash in the sandbox, in `workspace`."""
    workspace = workspace.resolve()
    args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--hostname", "kernelseek"]
    if _version(bwrap) >= (0, 8):  # and no nested user namespace to climb out of the sandbox's one
        args += ["--unshare-user", "--disable-userns"]
    for root in SYSTEM_ROOTS:
        args += ["--ro-bind", root, root]
    for link in SYSTEM_LINKS:
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    toolkit = cuda_toolkit()
    if toolkit and not _visible(toolkit):
        args += ["--ro-bind", str(toolkit), str(toolkit)]
    for hidden in _hidden():
        args += ["--tmpfs", str(hidden)]
    args += ["--dev", "/dev"]
    gpu_nodes = sorted(glob.glob("/dev/nvidia*"))
    for node in gpu_nodes:
        args += ["--dev-bind", node, node]
    if gpu_nodes:  # the CUDA driver reads the PCI topology there
        args += ["--ro-bind", "/sys", "/sys"]
    args += ["--proc", "/proc", "--tmpfs", "/tmp", "--bind", str(workspace), str(workspace), "--chdir", str(workspace)]
    shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
    return [*args, "--", shell, "-c", command]
