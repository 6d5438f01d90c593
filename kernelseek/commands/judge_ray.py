"""`kernelseek eval --parallel N`: the kernels judged as Ray tasks (kernelseek/engine/judge.py), with a live
view of the cluster: which kernel waits, which judges on which node and GPU, which is done."""

from __future__ import annotations

from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kernelseek.commands.judgement_view import progress_console as console  # progress: stderr
from kernelseek.harness.judge import Judgement


def judge_parallel(kernels: list[Path], arguments, parallel: int, arch: str,  # noqa: ANN001
                   address: str | None) -> dict[Path, Judgement | str]:
    """The kernels judged as Ray tasks (kernelseek/engine/judge.py), with a live view of the cluster."""
    from kernelseek.engine.judge import judge_on_ray

    labels = {f"{i}:{k}": k for i, k in enumerate(kernels)}
    items = [(label, {**arguments(k), "kernel": str(k.resolve())}) for label, k in labels.items()]
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=console, transient=False) as progress:
        overall = progress.add_task("connecting to Ray", total=len(kernels), last="")
        bars = {label: progress.add_task(f"{k.name:<28} waiting", total=None, last="") for label, k in labels.items()}
        counts = {"placed": 0, "running": 0, "done": 0}
        cluster_line = [""]

        def show() -> None:
            progress.update(overall, description=f"{cluster_line[0]} · placed {counts['placed']} · running "
                            f"{counts['running']} · done {counts['done']} of {len(kernels)}")

        def cluster(line: str) -> None:
            cluster_line[0] = line
            show()
            if not console.is_terminal:
                console.print(line)

        def update(label: str, message: dict) -> None:
            bar, name, kind = bars[label], labels[label].name, message["ks"]
            if kind == "placed":
                counts["placed"] += 1
                progress.update(bar, description=f"{name:<28} placed (waiting for a GPU)" if arch != "cpu" else
                                f"{name:<28} placed (waiting for a core)")
            elif kind == "started":
                counts["placed"] -= 1
                counts["running"] += 1
                gpus = f" GPU {','.join(message['gpus'])}" if message.get("gpus") else ""
                progress.update(bar, description=f"{name:<28} judging on {message['node']}{gpus}")
                if not console.is_terminal:
                    console.print(f"{labels[label]}: judging on {message['node']}{gpus}")
            elif kind == "total":
                progress.update(bar, total=message["total"])
            elif kind == "scenario":
                mark = "[green]✓" if message.get("correct") else "[red]✗"
                speed = f" {message['speedup']:.2f}x" if message.get("speedup") else ""
                progress.update(bar, advance=1, last=f"{mark}[/] {message['scenario']}{speed}")
            elif kind == "done":
                counts["running"] = max(0, counts["running"] - 1)
                counts["done"] += 1
                progress.update(bar, description=f"{name:<28} done")
                progress.advance(overall)
            show()

        results = judge_on_ray(items, parallel=parallel, arch=arch, address=address, on_update=update,
                               on_cluster=cluster)
    for label, verdict in results.items():  # the report names the kernel as the command line did
        if isinstance(verdict, Judgement):
            verdict.kernel = str(labels[label])
    return {labels[label]: verdict for label, verdict in results.items()}
