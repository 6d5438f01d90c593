"""Memory two processes map: the checker allocates every buffer a candidate touches, the host maps it.

On the CPU a buffer is a memfd, mapped by both and passed to the host as a descriptor (which the host
closes once mapped, so the candidate holds no descriptor of it). On a GPU it is a CUDA allocation
shared through an IPC handle (torch's own sharing, as torch.multiprocessing does it). Either way the
checker reads what the candidate wrote without the candidate's code ever running in the checker.
"""

from __future__ import annotations

import os
from typing import Any

import torch

# Free GPU memory a process keeps cached before giving it back to the card. The checker and the host are two
# allocators on one card, and what one caches the other cannot use; but a give-back is a cudaFree now and a
# cudaMalloc later for every buffer, which cost a full judgement tens of seconds when done after every
# scenario. So it waits until the cache holds this much: the large scenarios, where memory is short.
GIVE_BACK_ABOVE = 1 << 30


def give_back_cache(above: int = GIVE_BACK_ABOVE) -> None:
    """Return this process's cached, unused GPU memory to the card once it exceeds `above` bytes."""
    if torch.cuda.memory_reserved() - torch.cuda.memory_allocated() > above:
        torch.cuda.empty_cache()


class Arena:
    """The checker's side: allocates shareable buffers and says how to map them."""

    def __init__(self) -> None:
        self._fds: dict[int, int] = {}  # data_ptr of a CPU buffer -> its memfd (kept open until sent)

    def alloc(self, nbytes: int, device: torch.device | str) -> torch.Tensor:
        if torch.device(device).type == "cuda":
            return torch.empty(nbytes, dtype=torch.uint8, device=device)
        fd = os.memfd_create("kernelseek-buffer", os.MFD_CLOEXEC)
        os.ftruncate(fd, nbytes)
        buffer = _mapped(fd, nbytes)
        self._fds[buffer.data_ptr()] = fd
        return buffer

    def handles(self, buffers: list[torch.Tensor]) -> tuple[list[Any], list[int]]:
        """(a picklable handle per buffer, the descriptors to send with them). A CPU buffer's descriptor is
        closed here once handed over: the mapping stays, and the host maps its own copy of it."""
        handles, fds = [], []
        for buffer in buffers:
            if buffer.is_cuda:
                from torch.multiprocessing.reductions import reduce_tensor

                handles.append(("cuda", reduce_tensor(buffer)[1]))
            else:
                handles.append(("cpu", buffer.numel(), len(fds)))
                fds.append(self._fds.pop(buffer.data_ptr()))
        return handles, fds

    @staticmethod
    def close(fds: list[int]) -> None:
        for fd in fds:
            os.close(fd)


def map_buffers(handles: list[Any], fds: list[int]) -> list[torch.Tensor]:
    """The host's side: the buffers `handles` name, mapped here; the descriptors are closed."""
    buffers = []
    try:
        for handle in handles:
            if handle[0] == "cuda":
                from torch.multiprocessing.reductions import rebuild_cuda_tensor

                buffers.append(rebuild_cuda_tensor(*handle[1]))
            else:
                _, nbytes, index = handle
                buffers.append(_mapped(fds[index], nbytes))
    finally:
        for fd in fds:
            os.close(fd)
    return buffers


def _mapped(fd: int, nbytes: int) -> torch.Tensor:
    """A shared mapping of memfd `fd`. Not Python's mmap, which keeps a duplicate of the descriptor open for
    as long as the mapping lives: the candidate could write to that one with stdio, past the guard bands."""
    return torch.from_file(f"/proc/self/fd/{fd}", shared=True, size=nbytes, dtype=torch.uint8)
