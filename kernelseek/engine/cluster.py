"""Ray, if installed: start a private local cluster or join the one named, and describe what it holds.

Without an address (no --ray-address, no $RAY_ADDRESS) the command always starts a cluster of its own
(`ray.init(address="local")`): Ray's default, `address=None`, would join whatever cluster `ray start` last left
running on the machine (`/tmp/ray/ray_current_cluster`), someone else's experiment included. An address is
joined with what its head's token authentication wants (`kernelseek/engine/auth.py`)."""

from __future__ import annotations

import importlib.util
import logging
import os
from dataclasses import dataclass


class EngineError(RuntimeError):
    """The cluster cannot be used; the message is one sentence saying why and what to do."""


def ray_available() -> bool:
    try:
        return importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):  # ValueError: sys.modules["ray"] is None (import blocked)
        return False


def no_ray_line(what: str, parallel: int) -> str:
    """The one line said when --parallel asks for more than one at once and Ray is not installed."""
    return (f"Ray is not installed, so the {what} run one after another; `pip install 'kernelseek[ray]'` runs "
            f"{parallel} at once (on this machine, or on a cluster with --ray-address).")


@dataclass
class Cluster:
    address: str  # the GCS address of the cluster
    started_here: bool  # ray.init() started a local cluster for this command (it ends with it)
    dashboard: str | None  # Ray's dashboard URL, when the cluster runs one

    def resources(self) -> dict[str, float]:
        import ray

        return dict(ray.cluster_resources())

    def nodes_alive(self) -> int:
        import ray

        return sum(1 for n in ray.nodes() if n.get("Alive"))

    def describe(self) -> str:
        res = self.resources()
        where = "local Ray cluster" if self.started_here else "Ray cluster"
        gpus = f", {res.get('GPU', 0):g} GPU" if res.get("GPU") else ", no GPU"
        text = f"{where} {self.address}: {self.nodes_alive()} node(s), {res.get('CPU', 0):g} CPU{gpus}"
        return text + (f" · dashboard {self.dashboard}" if self.dashboard else "")

    def shutdown(self) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()

    def stop(self, refs: list) -> None:
        """Stop the tasks still running when the command is interrupted (shutdown() follows). A cluster
        started here ends with the command and takes its workers down, so nothing is cancelled there:
        a cancel racing the workers that the same Ctrl-C has already stopped can abort Ray's core worker
        in this process ("Tried to complete task that was not pending", ray-project/ray#54846). On a
        cluster joined, whose workers the Ctrl-C does not reach, each task is cancelled."""
        if self.started_here:
            return
        import ray

        for ref in refs:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001, S110 - the cluster may be going down with the same Ctrl-C
                pass


def _check_reachable(address: str) -> None:
    """Ray waits minutes for a cluster that is not there; a host:port nobody listens on is said at once."""
    import socket

    hostport = address.removeprefix("ray://")
    if hostport in ("auto", "local") or ":" not in hostport:
        return
    host, _, port = hostport.rpartition(":")
    if not port.isdigit():
        raise EngineError(f"--ray-address {address}: give HOST:PORT (e.g. 10.0.0.1:6379), ray://HOST:10001, or auto.")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as error:
        raise EngineError(f"no Ray cluster answers at {address} ({error.strerror or error}); start one with `ray "
                          "start --head` on its head node, or leave --ray-address and RAY_ADDRESS unset to start "
                          "a local one.") from None


def _join(address: str) -> None:
    """Check that the cluster at `address` answers and will take us, before ray.init waits minutes for it."""
    from kernelseek.engine.auth import AuthRefused, prepare

    _check_reachable(address)
    hostport = address.removeprefix("ray://")
    if address.startswith("ray://") or hostport in ("auto", "local") or ":" not in hostport:
        return  # Ray Client's port speaks another protocol; "auto" is found by Ray itself
    try:
        prepare(hostport)
    except AuthRefused as error:
        raise EngineError(str(error)) from None


def connect(address: str | None = None) -> Cluster:
    """Join the cluster at `address` (or $RAY_ADDRESS), or start a local cluster of this command's own.
    Ray's own log lines stay in its session logs (under /tmp/ray) so the live view stays readable."""
    if not ray_available():
        raise EngineError("Ray is not installed; `pip install 'kernelseek[ray]'` installs it.")
    import ray

    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        _join(address)
    if ray.is_initialized():
        ray.shutdown()
    try:
        context = ray.init(address=address or "local", log_to_driver=False, logging_level=logging.ERROR,
                           configure_logging=True)
    except ConnectionError as error:
        raise EngineError(f"no Ray cluster answers at {address} ({error}), or it refused us (a cluster with "
                          "token authentication wants its token in ~/.ray/auth_token or $RAY_AUTH_TOKEN); start "
                          "one with `ray start --head` on its head node, or leave --ray-address and RAY_ADDRESS "
                          "unset to start a local one.") from None
    except (RuntimeError, ValueError) as error:
        raise EngineError(f"Ray could not start or join a cluster{f' at {address}' if address else ''}: "
                          f"{str(error).splitlines()[0]}") from None
    gcs = context.address_info.get("gcs_address") or context.address_info.get("address") or (address or "")
    dashboard = context.dashboard_url or None
    if dashboard and not dashboard.startswith("http"):
        dashboard = "http://" + dashboard
    return Cluster(address=gcs, started_here=address is None, dashboard=dashboard)
