"""Model calls that survive a flaky provider: transient errors are retried with backoff, others are not.

Transient: a rate limit (429), a server error (500, 502, 503, 504, 529), a timeout (408) or a lost
connection — litellm maps every provider's to `RateLimitError`, `InternalServerError`,
`ServiceUnavailableError`, `BadGatewayError`, `Timeout` and `APIConnectionError`, and keeps the status
code. Everything else (a bad key, a bad request, an unknown model, a context window exceeded) is
permanent: retrying cannot help, so it is raised at once and ends the run with one sentence; the run
stays resumable.

The retries use tenacity (a dependency of litellm's) rather than litellm's completion-level
`num_retries`: in litellm 1.110 that retries any API error, bad keys included, unless a `RetryPolicy` is
also passed, caps its exponential wait at 10 s (too short for a provider's rate-limit window), and its
attempts are invisible to the trace. Here each retry is reported to `on_retry` (the worker writes a
`model_retry` trace event). The wait is exponential with jitter, BASE_WAIT_S * 2^(n-1) * [0.5, 1],
at most MAX_WAIT_S, or the provider's Retry-After when it says longer (at most MAX_WAIT_S too).
`$KERNELSEEK_RETRY_WAIT_S` sets the base (the tests use 0).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

BASE_WAIT_S = 2.0
MAX_WAIT_S = 120.0
TRANSIENT_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
TRANSIENT_NAMES = frozenset({"RateLimitError", "InternalServerError", "ServiceUnavailableError", "BadGatewayError",
                             "Timeout", "APITimeoutError", "APIConnectionError"})


def transient(error: BaseException) -> bool:
    """Whether a provider error is worth retrying."""
    if not isinstance(error, Exception):
        return False
    names = {cls.__name__ for cls in type(error).__mro__}
    if "ContextWindowExceededError" in names:
        return False
    if names & TRANSIENT_NAMES:
        return True
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and status in TRANSIENT_STATUS


def describe(error: BaseException) -> str:
    """The error in one line."""
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def _retry_after(error: BaseException) -> float | None:
    headers = getattr(getattr(error, "response", None), "headers", None)
    try:
        value = headers.get("retry-after") if headers is not None else None
        return float(value) if value is not None else None
    except (TypeError, ValueError, AttributeError):
        return None


def wait_s(attempt: int, error: BaseException | None = None) -> float:
    base = float(os.environ.get("KERNELSEEK_RETRY_WAIT_S", BASE_WAIT_S))
    wait = min(MAX_WAIT_S, base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not crypto
    asked = _retry_after(error) if error is not None else None
    return min(MAX_WAIT_S, max(wait, asked or 0.0))


def call_with_retries(call: Callable[[], Any], *, retries: int,
                      on_retry: Callable[[int, BaseException, float], None] | None = None) -> Any:
    """`call()`, retried up to `retries` times on transient errors; the last error is raised as it is."""
    import tenacity

    def before_sleep(state: tenacity.RetryCallState) -> None:
        if on_retry is not None and state.outcome is not None:
            on_retry(state.attempt_number, state.outcome.exception(), state.next_action.sleep if state.next_action else 0.0)

    retryer = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(retries + 1),
        wait=lambda state: wait_s(state.attempt_number, state.outcome.exception() if state.outcome else None),
        retry=tenacity.retry_if_exception(transient), before_sleep=before_sleep, reraise=True)
    return retryer(call)
