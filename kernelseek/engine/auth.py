"""Ray's token authentication, as Ray's own tools handle it, for joining a cluster that was started elsewhere.

Since Ray 2.52 a cluster may require a token on every call (`RAY_AUTH_MODE=token`); Ray turns it on by default
for a local `ray.init()` cluster, and `ray start --head` turns it on when a token is already on the machine.
Ray finds the token, in this order (https://docs.ray.io/en/latest/ray-security/token-auth.html):
`$RAY_AUTH_TOKEN`, the file `$RAY_AUTH_TOKEN_PATH`, then `~/.ray/auth_token` (`ray get-auth-token` prints it).

A driver given an explicit address sends no token unless `RAY_AUTH_MODE=token` is in its environment, and a
head that wants one then refuses it for about 20 seconds of warnings before `ray.init` says only that it
could not connect. So before joining, `prepare(address)` asks the head once (its GCS cluster-id call, which
the head authenticates like every other): if it refuses us and a token is here, token mode is turned on for
this process exactly as Ray's CLI does for `ray start --head` (the environment variable, then Ray's cached
configuration reloaded); if it still refuses, or no token is here, the error says which and what to do.
"""

from __future__ import annotations

import os
from pathlib import Path

MODE_VARIABLE = "RAY_AUTH_MODE"
PROBE_TIMEOUT_S = 5.0


class AuthRefused(RuntimeError):
    """The head refused us; the message is one sentence saying why and what to do."""


def token() -> str | None:
    """The token Ray would send, from the places Ray reads, in Ray's order; None when there is none."""
    value = os.environ.get("RAY_AUTH_TOKEN", "").strip()
    if value:
        return value
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    candidate = Path(path).expanduser() if path else Path.home() / ".ray" / "auth_token"
    try:
        return candidate.read_text().strip() or None
    except OSError:
        return None


def token_mode() -> bool:
    return os.environ.get(MODE_VARIABLE, "").lower() == "token"


def enable_token_mode() -> None:
    """Token mode for this process (and what it starts), as Ray's CLI turns it on: Ray reads its configuration
    once, when it is first loaded, so the cached copy is reloaded after the variable is set."""
    os.environ[MODE_VARIABLE] = "token"
    try:
        from ray._raylet import Config

        Config.initialize("")
    except (ImportError, AttributeError):  # a Ray without token authentication (before 2.52) has nothing to reload
        pass


def probe(address: str, bearer: str | None) -> str:
    """Ask the head at HOST:PORT for its cluster id: "ok", "refused" (it wants a token, or another one), or
    "unknown" (it could not be asked: not a GCS, an old Ray, a network error; ray.init says more)."""
    try:
        import grpc
        from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc
    except ImportError:
        return "unknown"
    metadata = [("authorization", f"Bearer {bearer}")] if bearer else []
    channel = grpc.insecure_channel(address)
    try:
        stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
        stub.GetClusterId(gcs_service_pb2.GetClusterIdRequest(), timeout=PROBE_TIMEOUT_S, metadata=metadata)
        return "ok"
    except grpc.RpcError as error:
        return "refused" if error.code() == grpc.StatusCode.UNAUTHENTICATED else "unknown"
    except Exception:  # noqa: BLE001 - a probe that cannot be made leaves the answer to ray.init
        return "unknown"
    finally:
        channel.close()


def prepare(address: str) -> None:
    """Make this process present what the head at `address` (HOST:PORT) wants, or raise AuthRefused."""
    if token_mode():
        found = token()
        if probe(address, found) != "refused":
            return
        where = "no token is set here" if found is None else "the token here is not the cluster's"
        raise AuthRefused(f"the Ray cluster at {address} refused us: RAY_AUTH_MODE=token, but {where}; {_fix()}")
    if probe(address, None) != "refused":
        return
    found = token()
    explicit = os.environ.get(MODE_VARIABLE)
    if found is None or explicit:  # RAY_AUTH_MODE=disabled (or another mode) was chosen here: respect it
        why = (f"{MODE_VARIABLE}={explicit} here" if explicit else "no Ray token is on this machine")
        raise AuthRefused(f"the Ray cluster at {address} refused us: it uses token authentication and {why}; "
                          f"{_fix()}")
    if probe(address, found) == "refused":
        raise AuthRefused(f"the Ray cluster at {address} refused us: it uses token authentication and the token "
                          f"here is not the cluster's; {_fix()}")
    enable_token_mode()


def _fix() -> str:
    return ("put the cluster's token (`ray get-auth-token` on its head prints it) in ~/.ray/auth_token, a file "
            "named by $RAY_AUTH_TOKEN_PATH, or $RAY_AUTH_TOKEN (kernelseek then sets RAY_AUTH_MODE=token itself, "
            "as Ray's CLI does); see https://docs.ray.io/en/latest/ray-security/token-auth.html.")
