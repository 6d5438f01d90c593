import gc
import os
import shutil
import signal
import sys

import pytest

# Compiled bytecode is kept even where PYTHONDONTWRITEBYTECODE is set (in the gitignored __pycache__ folders):
# without it every run rewrites the test modules' asserts again and every child process a test starts
# compiles kernelseek from source, some 5 s of the quick suite on 2 cores.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# torch's CPU work in the tests is on tensors of a few thousand elements: a second intra-op thread gains nothing
# and, when another process holds the other core, makes each op wait at its barrier (the rounding tests of
# test_add_rmsnorm_task took 2.3 s each so, 0.05 s on one thread). Set before torch is imported, here and in
# every child process a test starts.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# The suite loads torch, LangGraph and litellm (some 600,000 objects) into one process; at CPython's default
# thresholds the cyclic collector rescans all of them hundreds of times while they import: about a fifth of
# litellm's import time. Fewer, larger young collections; nothing the tests check depends on when they run.
gc.set_threshold(10_000, 10, 10)

# A shell without job control starts `cmd &` with SIGINT ignored, and an ignored signal stays ignored in every
# child: the Ctrl-C tests' processes would never see their Ctrl-C (Python installs its KeyboardInterrupt handler
# only where SIGINT is at its default). A handled signal is reset to the default at exec, so the children get it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        return False


HAS_GPU = _has_gpu()
HAS_NVCC = shutil.which("nvcc") is not None or shutil.os.path.exists("/usr/local/cuda/bin/nvcc")


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU:
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Builds go to a per-session cache unless KERNELSEEK_CACHE names one (builds carried to a GPU machine)."""
    import os

    if not os.environ.get("KERNELSEEK_CACHE"):
        monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path_factory.getbasetemp() / "ks-cache"))


@pytest.fixture(autouse=True)
def _user_data_in_tmp(tmp_path, monkeypatch):
    """Runs (and anything else kept in the user's data directory) go to the test's tmp folder, never the
    repository or the real ~/.local/share."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.delenv("KERNELSEEK_RUNS", raising=False)

