"""Guard bands: every tensor a candidate sees lies inside a larger allocation whose margins hold a
known byte pattern, so a write just before or past a tensor is seen and named.

Tensors that share storage (q, k and v as views of one packed qkv) keep sharing it: each storage is
copied once into a buffer `MARGIN` bytes larger on both sides, and every view is rebuilt on it with
its own sizes, strides and offset. A write farther than `MARGIN` bytes out lands in someone else's
memory; on a GPU that is usually an illegal address, on the CPU a crash or nothing seen.
"""

from __future__ import annotations

from typing import Any

import torch

MARGIN = 256  # bytes each side; keeps every rebuilt tensor 256-byte aligned, as cudaMalloc's are


class Guarded:
    """`values` (a dict of tensors and plain values) rebuilt inside guarded buffers; see the module."""

    def __init__(self, values: dict[str, Any], pattern: int):
        self.pattern = pattern & 0xFF or 0xA5
        self.values: dict[str, Any] = dict(values)
        self._buffers: list[tuple[str, torch.Tensor, int]] = []  # (name, buffer, storage bytes)
        by_storage: dict[tuple[str, int], list[str]] = {}
        for key, value in values.items():
            if isinstance(value, torch.Tensor):
                storage = value.untyped_storage()
                by_storage.setdefault((str(value.device), storage.data_ptr()), []).append(key)
        for keys in by_storage.values():
            first = values[keys[0]]
            nbytes = first.untyped_storage().nbytes()
            buffer = torch.empty(MARGIN + nbytes + MARGIN, dtype=torch.uint8, device=first.device)
            buffer[:MARGIN].fill_(self.pattern)
            buffer[MARGIN + nbytes:].fill_(self.pattern)
            for key in keys:
                old = values[key]
                size = old.element_size()
                typed = buffer[MARGIN:MARGIN + nbytes - nbytes % size].view(old.dtype)
                new = torch.as_strided(typed, old.shape, old.stride(), MARGIN // size + old.storage_offset())
                new.copy_(old)
                self.values[key] = new
            # the largest view names the buffer in messages ("qkv" rather than "q")
            name = max(keys, key=lambda k: values[k].numel())
            self._buffers.append((name, buffer, nbytes))

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
