"""Checks made before a run or an experiment judges anything: a GPU target needs a usable GPU here, and a
model needs its credentials (litellm says which environment variables a provider reads). A scripted model
and an external worker command need none. Each problem is one sentence naming the fix."""

from __future__ import annotations

from typing import Any

from kernelseek.harness import device


def gpu_problem(arch: str) -> str | None:
    """Why `arch` kernels cannot run here (as `kernelseek eval` says it), or None (the CPU target always can)."""
    if arch == "cpu":
        return None
    found = device.gpu_problem(arch)
    if found is None:
        return None
    return (f"{found}; a run on {arch} would judge every candidate incorrect — run it on a machine with that "
            "GPU, or pick a task with a cpu suite (--arch cpu)")


def credentials_problem(model: str | None, model_kwargs: dict[str, Any] | None = None) -> str | None:
    """Which environment variables the model's provider needs and lacks, or None. An `api_key` (or
    `api_base`) given in the model's arguments counts as set."""
    if not model or model.startswith("scripted/"):
        return None
    kwargs = model_kwargs or {}
    from kernelseek.models import litellm as load_litellm

    litellm = load_litellm()  # with the bundled price list, not a fetch from the network at import

    try:
        found = litellm.validate_environment(model=model, api_key=kwargs.get("api_key"),
                                             api_base=kwargs.get("api_base"))
    except Exception:  # noqa: BLE001 - a model litellm cannot place is reported by the first call, as before
        return None
    missing = [key for key in found.get("missing_keys") or [] if key]
    if found.get("keys_in_environment") or not missing:
        return None
    names = " and ".join(f"${key}" for key in missing)
    return (f"the model {model} needs {names}, which {'is' if len(missing) == 1 else 'are'} not set; export "
            f"{'it' if len(missing) == 1 else 'them'} (or pass --model-arg api_key=... / api_base=...) and start again")


def check(arch: str, models: list[tuple[str | None, dict[str, Any] | None]]) -> str | None:
    """The first problem of a GPU target without a GPU, or of a model without its credentials."""
    problem = gpu_problem(arch)
    if problem:
        return problem
    for model, kwargs in models:
        problem = credentials_problem(model, kwargs)
        if problem:
            return problem
    return None
