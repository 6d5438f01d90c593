"""Guard bands: every tensor a candidate sees lies inside a larger allocation whose margins hold a
known byte pattern, so a write just before or past a tensor is seen and named.

Tensors that share storage (q, k and v as views of one packed qkv) keep sharing it: each storage is
copied once into a buffer `MARGIN` bytes larger on both sides, and every view is rebuilt on it with
its own sizes, strides and offset. A write farther than `MARGIN` bytes out lands in someone else's
memory; on a GPU that is usually an illegal address, on the CPU a crash or nothing seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

MARGIN = 256  # bytes each side; keeps every rebuilt tensor 256-byte aligned, as cudaMalloc's are


class Guarded:
    """`values` (a dict of tensors and plain values) rebuilt inside guarded buffers; see the module."""

    def __init__(self, values: dict[str, Any], pattern: int,
                 alloc: Callable[[int, torch.device], torch.Tensor] | None = None):
        """`alloc(nbytes, device)` makes each buffer (a uint8 tensor): torch's allocator by default, shared
        memory (shared.py) where another process maps the buffers too."""
        alloc = alloc or (lambda nbytes, device: torch.empty(nbytes, dtype=torch.uint8, device=device))
        self.pattern = pattern & 0xFF or 0xA5
        self.values: dict[str, Any] = dict(values)
        self._buffers: list[tuple[str, torch.Tensor, int]] = []  # (name, buffer, storage bytes)
        self._views: dict[str, tuple[int, torch.dtype, tuple, tuple, int]] = {}  # key -> (buffer, dtype, ...)
        by_storage: dict[tuple[str, int], list[str]] = {}
        for key, value in values.items():
            if isinstance(value, torch.Tensor):
                storage = value.untyped_storage()
                by_storage.setdefault((str(value.device), storage.data_ptr()), []).append(key)
        for keys in by_storage.values():
            first = values[keys[0]]
            nbytes = first.untyped_storage().nbytes()
            buffer = alloc(MARGIN + nbytes + MARGIN, first.device)
            buffer[:MARGIN].fill_(self.pattern)
            buffer[MARGIN + nbytes:].fill_(self.pattern)
            for key in keys:
                old = values[key]
                size = old.element_size()
                typed = buffer[MARGIN:MARGIN + nbytes - nbytes % size].view(old.dtype)
                new = torch.as_strided(typed, old.shape, old.stride(), MARGIN // size + old.storage_offset())
                new.copy_(old)
                self.values[key] = new
                self._views[key] = (len(self._buffers), old.dtype, tuple(old.shape), tuple(old.stride()),
                                    MARGIN // size + old.storage_offset())
            # the largest view names the buffer in messages ("qkv" rather than "q")
            name = max(keys, key=lambda k: values[k].numel())
            self._buffers.append((name, buffer, nbytes))

    @property
    def buffers(self) -> list[torch.Tensor]:
        return [buffer for _, buffer, _ in self._buffers]

    def layout(self) -> dict[str, Any]:
        """How to rebuild `values` on these buffers elsewhere (`attach`): each tensor's place, and the plain values."""
        return {"views": dict(self._views),
                "plain": {k: v for k, v in self.values.items() if not isinstance(v, torch.Tensor)}}

    def breach(self) -> str | None:
        """None when every margin still holds the pattern, else which tensor was overrun and how far."""
        for name, buffer, nbytes in self._buffers:
            before = buffer[:MARGIN] != self.pattern
            after = buffer[MARGIN + nbytes:] != self.pattern
            if bool(after.any()):
                last = int(after.nonzero().max()) + 1
                return f"wrote {last} bytes past the end of {name}"
            if bool(before.any()):
                first = int(before.nonzero().min())
                return f"wrote {MARGIN - first} bytes before the start of {name}"
        return None


def attach(layout: dict[str, Any], buffers: list[torch.Tensor]) -> dict[str, Any]:
    """The values a `Guarded.layout()` describes, as views of `buffers` (the same memory, mapped here)."""
    values: dict[str, Any] = dict(layout["plain"])
    for key, (index, dtype, shape, stride, offset) in layout["views"].items():
        buffer = buffers[index]
        size = torch.empty((), dtype=dtype).element_size()
        typed = buffer[:buffer.numel() - buffer.numel() % size].view(dtype)
        # `offset` counts from the buffer's start; a mapped buffer may begin inside a larger storage
        values[key] = torch.as_strided(typed, shape, stride, typed.storage_offset() + offset)
    return values
