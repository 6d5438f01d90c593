"""The words a run's end is told in (`kernelseek run`, `resume` and `fork` print them): the reason it ended,
its best kernel, its counts, and the SCRIPTED label when its worker replayed fixed replies, not a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelseek.provenance import scripted_label


def label(config: Any) -> str | None:
    """The run's SCRIPTED label, or None for a model's or an external command's run."""
    return scripted_label(getattr(config, "model", None), getattr(config, "worker_command", None))


def ended(run_id: str, values: dict[str, Any], best_dir: Path, config: Any) -> tuple[str, str]:
    """The end line's head and body, e.g. ('run first ended (SCRIPTED worker: fixed replies, not a model)',
    'target gain 1.5x over the starting kernel met · best 3.067x (candidate 2, runs/first/best) · 3 steps ·
    2 evaluations · $0.0000')."""
    best = values.get("best") or {}
    speed = f"{best['speedup']:.3f}x (candidate {best['candidate']}, {best_dir})" if best.get("speedup") else "none"
    scripted = label(config)
    head = f"run {run_id} ended" + (f" ({scripted})" if scripted else "")
    return head, (f"{values.get('end_reason')} · best {speed} · {values.get('step', 0)} steps · "
                  f"{values.get('evals', 0)} evaluations · ${values.get('cost_usd', 0):.4f}")


def ended_line(run_id: str, values: dict[str, Any], best_dir: Path, config: Any) -> str:
    return ": ".join(ended(run_id, values, best_dir, config))
