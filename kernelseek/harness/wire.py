"""Messages between the checker and the candidate host over a Unix socket.

A message is a frame: 4 bytes of length, then the payload; descriptors (shared memory) ride along
with SCM_RIGHTS. Frames are sent with `sendmsg` only, the one call a sealed host (seal.py) may still
write with. The checker's orders to the host are pickled (the host trusts the checker, which never
runs candidate code); the host's replies are JSON, so that nothing the host sends is ever executed
by the checker, and `expect_reply` checks their shape before anyone reads them.
"""

from __future__ import annotations

import array
import json
import math
import pickle
import select
import socket
import struct
import time
from typing import Any

_LENGTH = struct.Struct("<I")
MAX_REPLY = 1 << 20  # bytes of one reply from the host: a few numbers per trial fit many times over
MAX_FDS = 256


class WireError(RuntimeError):
    """The other side closed the socket, went silent past the limit, or sent something malformed."""


class Peer:
    """One end of the socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buffer = b""
        self.fds: list[int] = []

    def _send(self, payload: bytes, fds: list[int]) -> None:
        data = _LENGTH.pack(len(payload)) + payload
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        sent = self.sock.sendmsg([data], ancillary)
        while sent < len(data):
            data = data[sent:]
            sent = self.sock.sendmsg([data])

    def order(self, message: dict, fds: list[int] = ()) -> None:
        """The checker's side: send an order (pickled), with descriptors."""
        self._send(pickle.dumps(message), list(fds))

    def reply(self, message: dict) -> None:
        """The host's side: send a reply (JSON)."""
        self._send(json.dumps(message, allow_nan=False).encode(), [])

    def _frame(self, timeout_s: float | None, limit: int) -> bytes:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            if len(self.buffer) >= _LENGTH.size:
                (length,) = _LENGTH.unpack_from(self.buffer)
                if length > limit:
                    raise WireError(f"a message of {length} bytes (at most {limit})")
                if len(self.buffer) >= _LENGTH.size + length:
                    frame = self.buffer[_LENGTH.size:_LENGTH.size + length]
                    self.buffer = self.buffer[_LENGTH.size + length:]
                    return frame
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise WireError(f"no message for {timeout_s:.0f} s")
            if not select.select([self.sock], [], [], left)[0]:
                continue
            data, ancillary, _, _ = self.sock.recvmsg(1 << 16, socket.CMSG_SPACE(MAX_FDS * 4))
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds = array.array("i")
                    fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
                    self.fds.extend(fds)
            if not data:
                raise WireError("the other side closed the connection")
            self.buffer += data

    def take_order(self) -> tuple[dict, list[int]]:
        """The host's side: the next order and the descriptors that came with it (or before it)."""
        message = pickle.loads(self._frame(None, 1 << 40))
        fds, self.fds = self.fds, []
        return message, fds

    def take_reply(self, timeout_s: float | None = None) -> dict:
        """The checker's side: the next reply, parsed as JSON and never executed."""
        frame = self._frame(timeout_s, MAX_REPLY)
        try:
            message = json.loads(frame)
        except ValueError:
            raise WireError(f"a reply that is not JSON: {frame[:80]!r}") from None
        if not isinstance(message, dict):
            raise WireError(f"a reply that is not an object: {str(message)[:80]}")
        return message


def expect_reply(message: dict, kind: str, fields: dict[str, type | tuple[type, ...]]) -> dict:
    """`message` if it is a `kind` reply whose fields have these types, else WireError."""
    if message.get("reply") != kind:
        raise WireError(f"expected a {kind} reply, got {str(message)[:120]}")
    for name, types in fields.items():
        value = message.get(name)
        if not isinstance(value, types) or isinstance(value, bool) and bool not in _as_tuple(types):
            raise WireError(f"the {kind} reply's {name} is {str(value)[:60]!r}")
    return message


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


def number(value: Any, what: str, *, positive: bool = False) -> float:
    """A finite number from a reply (a bool or a string is not one)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise WireError(f"{what} is not a finite number: {str(value)[:40]}")
    if positive and value <= 0:
        raise WireError(f"{what} is not positive: {value}")
    return float(value)
