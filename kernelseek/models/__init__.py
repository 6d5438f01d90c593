"""Model access: every call goes through litellm; the scripted provider is registered on first use.

litellm is imported lazily (it takes seconds) and told to use its bundled price list rather than
fetching one from the network at import time."""

from __future__ import annotations

import os
from typing import Any


def litellm():  # noqa: ANN201 - the module
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm as _litellm

    _litellm.suppress_debug_info = True
    from kernelseek.models.scripted import register

    register(_litellm)
    return _litellm


def completion(**kwargs: Any):  # noqa: ANN201 - a litellm ModelResponse
    return litellm().completion(**kwargs)


def cost_of(response: Any) -> float | None:
    """Dollars for one response, or None when litellm has no price for the model (never raises)."""
    try:
        cost = litellm().completion_cost(completion_response=response)
    except Exception:  # noqa: BLE001 - an unpriced or unknown model: counted by tokens instead
        return None
    return float(cost) if cost else None
