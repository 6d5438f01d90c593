"""`kernelseek eval` and `kernelseek scenarios`: judge a kernel file, list a task's suite."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kernelseek import project
from kernelseek.commands.errors import fail
from kernelseek.commands.output import print_json, print_rows
from kernelseek.harness.build import TARGETS, BuildError, build_kernel
from kernelseek.harness.judge import Judgement, check_out_path, judge
from kernelseek.harness.task import TaskError, load_task

console = Console()
errors = Console(stderr=True, highlight=False, soft_wrap=True)


def infer_task(kernel: Path) -> str:
    """The task whose entry point the kernel defines."""
    text = kernel.read_text(errors="replace")
    matches = []
    for folder in project.task_folders():
        task = load_task(folder)
        if task.entry_point and task.entry_point in text:
            matches.append(folder.name)
    if len(matches) != 1:
        found = "none" if not matches else ", ".join(matches)
        fail(f"{kernel}: cannot tell which task this kernel is for (tasks whose entry point it names: {found}); "
             "pass --task NAME.")
    return matches[0]


def _fmt(value: float | None, spec: str = ".3f", suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def print_judgement(verdict: Judgement) -> None:
    table = Table(title=f"{verdict.task} · {verdict.kernel} · {verdict.arch} · {verdict.judgement} judgement")
    floor = verdict.floor is not None
    columns = ("group", "scenarios", "correct", f"speedup vs {verdict.baseline}") + (("of memory floor",) if floor else ())
    for column in columns:
        table.add_column(column, overflow="fold", justify="right" if column != "group" else "left")

    def row(name: str, group: dict, speedup: float | None, fraction: float | None) -> None:
        cells = [name, str(group["n"]), str(group["correct"]), _fmt(speedup, suffix="x")]
        table.add_row(*cells, *([_fmt(fraction, ".2f")] if floor else []))

    for name, group in verdict.groups.items():
        row(name, group, group["speedup"], group.get("floor_fraction"))
    suite = verdict.suite_results()
    row("[bold]all", {"n": len(suite), "correct": sum(bool(s.get("correct")) for s in suite)}, verdict.speedup,
        (verdict.floor or {}).get("fraction"))
    if verdict.holdout:
        for name, group in verdict.holdout.get("groups", {}).items():
            row(f"[dim]{name}", group, group["speedup"], group.get("floor_fraction"))
        h = verdict.holdout
        row(f"[bold]hold-out (seed {h['seed']})", h, h["speedup"], (verdict.floor or {}).get("holdout_fraction"))
    console.print(table)
    print_slowest(verdict, verdict.slowest(5), "slowest scenarios")
    for s in verdict.failures()[:10]:
        console.print(f"[red]✗[/] {s['scenario']}: {s.get('reason')}")
    held = verdict.holdout_line()
    if held:
        print_slowest(verdict, verdict.slowest(5, holdout=True), "slowest hold-out scenarios")
        for s in verdict.failures(holdout=True)[:10]:
            console.print(f"[red]✗[/] {s['scenario']} (hold-out): {s.get('reason')}")
        console.print(held + " · not part of the suite's speedup")
    if verdict.floor_line():
        console.print(verdict.floor_line())
    verdict_text = "[green]CORRECT[/]" if verdict.correct else f"[red]INCORRECT[/]: {verdict.reason}"
    console.print(f"{verdict_text} · geomean speedup {_fmt(verdict.speedup, suffix='x')} · {verdict.wall_s:.1f} s")


def print_slowest(verdict: Judgement, rows: list[dict], title: str) -> None:
    if not rows:
        return
    slow = Table(title=title)
    floor = verdict.floor is not None
    rate = "of memory floor" if floor else "TFLOP/s"
    for column in ("scenario", "candidate µs", "baseline µs", "eager µs (cand/base)", rate, "speedup"):
        slow.add_column(column, overflow="fold")  # a value wraps, never cut
    base = verdict.baseline
    for s in rows:
        t, e = s["time_s"], s.get("eager_s", {})
        reached = _fmt(s.get("floor_fraction", {}).get("candidate"), ".2f") if floor else f"{s['tflops']['candidate']:.3g}"
        slow.add_row(s["scenario"], f"{t['candidate'] * 1e6:.1f}", f"{t[base] * 1e6:.1f}",
                     f"{e.get('candidate', 0) * 1e6:.0f}/{e.get(base, 0) * 1e6:.0f}", reached, f"{s['speedup']:.3f}x")
    console.print(slow)


def report_paths(kernels: list[Path], out: Path | None) -> dict[Path, Path | None]:
    """Where each kernel's JSON goes: --out itself for one kernel; <--out>/<kernel name>.json for several."""
    if out is None:
        return {k: None for k in kernels}
    if len(kernels) == 1:
        return {kernels[0]: out}
    if out.suffix == ".json" or out.is_file():
        fail(f"--out {out}: with {len(kernels)} kernels --out names a folder (each gets <kernel name>.json); "
             "pass a folder.")
    names = [k.stem for k in kernels]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        fail(f"--out {out}: two kernels are both named {twice[0]}, so their reports would overwrite each "
             "other; rename one, or judge them apart.")
    return {k: out / f"{k.stem}.json" for k in kernels}


def compile_report(kernel: Path, arch: str, task_name: str, out: Path | None) -> None:
    try:
        loaded = load_task(task_name)
    except TaskError as error:
        fail(str(error))
    if arch not in loaded.archs:
        fail(f"{loaded.folder}: the task has no {arch} suite, so there is nothing to build for; "
             f"use --arch {' or '.join(loaded.archs)}.")
    try:
        built = build_kernel(kernel, arch, entry_point=loaded.entry_point or None,
                             forbidden_libraries=loaded.forbidden_libraries)
    except BuildError as error:
        fail(str(error))
    table = Table(title=f"{kernel} for {arch}: {'cached' if built.cached else 'built'} → {built.library}")
    for column in ("kernel", "registers", "smem bytes", "stack", "spill st/ld"):
        table.add_column(column, overflow="fold")
    for r in built.resources:
        table.add_row(r["kernel"][:70], str(r["registers"]), str(r["smem_bytes"]), str(r["stack_frame"]),
                      f"{r['spill_stores']}/{r['spill_loads']}")
    console.print(table)
    console.print(f"guard passed · {len(built.resources)} kernels · spills: {built.spills} bytes")
    for note in built.advisories:
        console.print(f"[yellow]ptxas: potential performance loss[/] in {escape(note)}")
    if out:
        import json
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(built.to_dict(), indent=1))


def print_sanitizer(report: dict) -> None:
    """Each tool's verdict, its time and its first findings (file:line)."""
    table = Table(title=f"compute-sanitizer · {len(report.get('scenarios') or [])} scenarios · {report.get('sanitizer')}")
    for column in ("tool", "verdict", "errors", "seconds", "first findings"):
        table.add_column(column, overflow="fold")
    for tool, v in (report.get("tools") or {}).items():
        mark = "[green]clean[/]" if v["status"] == "clean" else f"[red]{v['status'].upper()}[/]"
        firsts = [f"{f['what']}" + (f" at {f['where']}" if f.get("where") else "") + "".join(
            f" and {o}" for o in (f.get("others") or [])[:2]) for f in v.get("findings", [])[:3]]
        if not firsts and v["status"] != "clean":
            firsts = [v.get("reason") or ""]
        elif v.get("outside"):
            firsts.append(f"({v['outside']} reports in other code, not counted)")
        table.add_row(tool, mark, "-" if v.get("errors") is None else str(v["errors"]), f"{v.get('wall_s', 0):.0f}",
                      escape("\n".join(firsts)))
    console.print(table)
    verdict = "[green]passed[/]" if report.get("passed") else f"[red]FAILED[/]: {escape(str(report.get('reason')))}"
    console.print(f"sanitizer gate {verdict} · {report.get('wall_s', 0):.0f} s")


def sanitize_options(tools: str | None, timeout: float, logs: Path | None, arch: str) -> dict:
    """The sanitize= argument of judge() from the options; refuses (one sentence) where the gate cannot run."""
    from kernelseek.harness.sanitize import sanitize_problem, tools_for

    wanted = [t.strip() for t in tools.split(",") if t.strip()] if tools else None
    try:
        tools_for(arch, wanted)
    except ValueError as error:
        fail(str(error))
    if timeout <= 0:
        fail(f"--sanitize-timeout {timeout:g} must be above 0 (seconds each tool may run).")
    problem = sanitize_problem(arch)
    if problem:
        fail(problem + ".")
    return {"tools": wanted, "timeout_s": timeout, "log_dir": str(logs) if logs else None}


def sanitize_only(task_name: str, kernel: Path, arch: str, scenarios: str | None, options: dict,
                  out: Path | None, logs_per_kernel: bool) -> bool:
    """The sanitizer gate alone on one kernel; prints its table, writes --out; returns whether it passed."""
    import json

    from kernelseek.harness.sanitize import sanitize as run_sanitizer

    if out:
        try:
            check_out_path(out)
        except TaskError as error:
            fail(str(error))
    if logs_per_kernel and options.get("log_dir"):
        options = {**options, "log_dir": str(Path(options["log_dir"]) / kernel.stem)}
    with console.status(f"compute-sanitizer on {kernel}"):
        try:
            report = run_sanitizer(task_name, kernel, arch, scenarios=scenarios, **options)
        except (TaskError, BuildError, ValueError) as error:
            fail(str(error))
        except KeyboardInterrupt:
            console.print("[red]interrupted:[/] the sanitizer was stopped and its process killed.")
            raise typer.Exit(130) from None
    data = report.to_dict()
    print_sanitizer(data)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1))
        console.print(f"report: {out}")
    return report.passed


def judge_here(arguments: dict, out: Path | None) -> Judgement | str:
    """One judgement in this process, with a progress bar; a bad task or argument is returned as its sentence."""
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=console, transient=True) as progress:
        bar = progress.add_task("building", total=None, last="")

        def started(total: int) -> None:
            progress.update(bar, total=total, description="judging")

        def done(result: dict) -> None:
            mark = "[green]✓" if result.get("correct") else "[red]✗"
            speed = f" {result['speedup']:.2f}x" if result.get("speedup") else ""
            progress.update(bar, advance=1, last=f"{mark}[/] {result['scenario']}{speed}")

        try:
            return judge(**arguments, out=out, progress=done, on_start=started)
        except (TaskError, ValueError) as error:
            return str(error)
        except KeyboardInterrupt:
            console.print("[red]interrupted:[/] the judgement was stopped and its process killed; nothing was recorded.")
            raise typer.Exit(130) from None


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


def print_verdicts(results: list[tuple[Path, Judgement | None]]) -> None:
    table = Table(title="verdicts")
    for column in ("kernel", "verdict", "speedup", "judged in"):
        table.add_column(column, overflow="fold")
    for kernel, verdict in results:
        if verdict is None:
            table.add_row(str(kernel), "[red]not judged", "-", "-")
            continue
        text = "[green]CORRECT" if verdict.correct else f"[red]INCORRECT[/]: {(verdict.reason or '')[:80]}"
        table.add_row(str(kernel), text, _fmt(verdict.speedup, suffix="x"), f"{verdict.wall_s:.1f} s")
    console.print(table)


def first_arch(task: str | Path) -> str:
    """The arch a command defaults to: the task's first (sm90 for the GPU tasks, cpu for rmsnorm_cpu)."""
    try:
        return load_task(task).archs[0]
    except (TaskError, IndexError) as error:
        fail(str(error) if isinstance(error, TaskError) else f"{task}: the task names no arch in its archs.")


def register(app: typer.Typer, **_: typer.Typer) -> None:
    @app.command("eval")
    def eval_command(
        kernels: list[Path] = typer.Argument(..., help="The kernel file(s): a .cu for sm90/sm100, a .cpp for cpu. "
                                             "Several are judged one after another, or N at once with --parallel."),
        arch: str = typer.Option(None, help="Target: sm90 (Hopper), sm100 (Blackwell) or cpu (default: the task's "
                                 "first: sm90 for flash_attn_fwd, cpu for rmsnorm_cpu); the speedup is against the "
                                 "task's headline baseline there (flash_attn_fwd: FA3, FA4)."),
        task: str = typer.Option(None, help="Task folder or name under evals/tasks (default: the task whose "
                                 "entry point the kernel defines)."),
        quick: bool = typer.Option(False, "--quick", help="Judge a fixed representative subset only."),
        compile_only: bool = typer.Option(False, "--compile-only", help="Build and guard only; print the "
                                          "resource report (works without a GPU)."),
        out: Path = typer.Option(None, help="Write the full JSON report here (e.g. benchmarks/results/NAME.json); with "
                                 "several kernels, a folder that gets one <kernel name>.json each."),
        scenarios: str = typer.Option(None, help="Only scenarios whose name or group matches this glob."),
        seed: int = typer.Option(None, help="Seed for the random inputs, and for the hold-out sample when "
                                 "--holdout-seed is not given (default: a fresh one each time)."),
        beside: bool = typer.Option(None, "--beside/--no-beside", help="Also time the other baselines "
                                    "(cuDNN, FA2) beside the headline one (default: on for full judgements)."),
        holdout: int = typer.Option(0, "--holdout", metavar="N", help="Also judge N hold-out scenarios drawn "
                                    "from the task's scenario distribution (shapes the suite does not have), "
                                    "reported apart from the suite's speedup; works with --quick too."),
        holdout_seed: int = typer.Option(None, "--holdout-seed", metavar="S", help="Seed of the hold-out sample "
                                         "(default: --seed when given, so `--holdout 24 --seed 1` draws the "
                                         "same 24 scenarios every time; else a fresh one, recorded in the JSON)."),
        parallel: int = typer.Option(None, "--parallel", metavar="N", help="Judge N kernels at once as Ray tasks "
                                     "(the kernelseek\\[ray] extra), one GPU each (one CPU core each for cpu), exactly as "
                                     "one kernel is judged alone; on Ray's local cluster or --ray-address's."),
        ray_address: str = typer.Option(None, "--ray-address", help="Join this Ray cluster (HEAD:6379, or auto "
                                        "on a node of it); default $RAY_ADDRESS, else a local cluster. Implies "
                                        "Ray."),
        sanitize: bool = typer.Option(False, "--sanitize", help="Also run compute-sanitizer (memcheck, racecheck, "
                                      "initcheck, synccheck) on the task's sanitizer suite; a finding makes the "
                                      "kernel incorrect. Refused where compute-sanitizer or the GPU is missing."),
        sanitize_only_: bool = typer.Option(False, "--sanitize-only", help="Only the sanitizer gate: no timing, "
                                            "no baseline (--scenarios then picks from the sanitizer suite)."),
        sanitize_tools: str = typer.Option(None, "--sanitize-tools", metavar="T,T", help="Only these tools "
                                           "(default: memcheck,racecheck,initcheck,synccheck)."),
        sanitize_timeout: float = typer.Option(300.0, "--sanitize-timeout", metavar="S", help="Seconds each tool "
                                               "may run over the sanitizer suite before it is killed (a timeout "
                                               "fails the gate)."),
        sanitize_logs: Path = typer.Option(None, "--sanitize-logs", metavar="DIR", help="Keep each tool's raw "
                                           "output in DIR (<tool>.log; the program's own output in <tool>.out)."),
    ) -> None:
        """Judge a kernel: build it, check it on every scenario, time it against the baseline.

        A kernel counts only if it is correct on every scenario; its score is the geometric mean of
        baseline time / kernel time, each call timed as a CUDA graph replay, interleaved with the
        baseline in one process. With --holdout N it is also judged on N scenarios drawn from the task's
        scenario distribution, reported apart (the suite is a yardstick, not the target); the JSON
        records the hold-out's seed, so `--holdout N --holdout-seed S` (or `--seed S`) judges the same
        sample again. Several kernels are judged one after another, or with --parallel N as Ray tasks,
        N at once, each on a GPU of its own (no two judgements share a GPU while timing). Exit status 0
        when every kernel is correct. Examples:

            kernelseek eval kernels/seeds/flash_attn_fwd.cu --arch sm90 --out benchmarks/results/seed-sm90.json
            kernelseek eval kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu --holdout 24 --seed 1
            kernelseek eval a.cu b.cu c.cu d.cu --arch sm90 --parallel 4 --out benchmarks/results/batch/
            kernelseek eval kernels/hopper/flash_attn_fwd/flash_attn_fwd.cu --quick --sanitize
            kernelseek eval kernels/seeds/flash_attn_fwd.cu --sanitize-only --sanitize-logs /tmp/san
        """
        for kernel in kernels:
            if not kernel.is_file():
                fail(f"{kernel}: no such kernel file; pass the path of a .cu or .cpp file.")
        if len({k.resolve() for k in kernels}) != len(kernels):
            fail("the same kernel file is named twice; name each kernel once.")
        if arch is not None and arch not in TARGETS:
            fail(f"--arch {arch} is not a target; use one of {', '.join(TARGETS)}.")
        if holdout < 0:
            fail(f"--holdout {holdout} must be 0 or more: the number of hold-out scenarios to judge (e.g. 24).")
        if holdout_seed is not None and holdout_seed < 0:
            fail(f"--holdout-seed {holdout_seed} must be 0 or more.")
        if parallel is not None and parallel < 1:
            fail(f"--parallel {parallel} must be at least 1: the number of kernels judged at once.")
        outs = report_paths(kernels, out)
        tasks = {kernel: task or infer_task(kernel) for kernel in kernels}
        arch = arch or first_arch(tasks[kernels[0]])
        sanitizing = None
        if sanitize or sanitize_only_:
            if compile_only:
                fail("--sanitize runs the kernel, --compile-only does not: choose one.")
            sanitizing = sanitize_options(sanitize_tools, sanitize_timeout, sanitize_logs, arch)
        if sanitize_only_:
            passed = [sanitize_only(tasks[k], k, arch, scenarios, sanitizing, outs[k], len(kernels) > 1)
                      for k in kernels]
            raise typer.Exit(0 if all(passed) else 1)
        if compile_only:
            for kernel in kernels:
                compile_report(kernel, arch, tasks[kernel], outs[kernel])
            return
        command = "kernelseek " + " ".join(shlex.quote(a) for a in sys.argv[1:])

        def arguments(kernel: Path) -> dict:
            return dict(task=tasks[kernel], kernel=kernel, arch=arch, quick=quick, scenarios=scenarios, seed=seed,
                        beside=beside, command=command, holdout=holdout,
                        holdout_seed=holdout_seed if holdout_seed is not None else seed,
                        sanitize=None if sanitizing is None else {**sanitizing, "log_dir": (
                            str(Path(sanitizing["log_dir"]) / kernel.stem)
                            if sanitizing.get("log_dir") and len(kernels) > 1 else sanitizing.get("log_dir"))})

        from kernelseek.engine import EngineError, no_ray_line, ray_available

        use_ray = (parallel is not None or ray_address is not None) and ray_available()
        if (parallel or 1) > 1 and len(kernels) > 1 and not ray_available():
            console.print(no_ray_line('judgements', parallel), style="yellow", markup=False)
        if use_ray:
            for path in filter(None, outs.values()):
                try:
                    check_out_path(path)
                except (TaskError, ValueError) as error:
                    fail(str(error))
            try:
                verdicts = judge_parallel(kernels, arguments, parallel or 1, arch, ray_address)
            except EngineError as error:
                fail(str(error))
            except KeyboardInterrupt:
                console.print("[red]interrupted:[/] every judgement was stopped and its process killed; nothing "
                              "was recorded.")
                raise typer.Exit(130) from None
        else:
            verdicts = {kernel: judge_here(arguments(kernel), outs[kernel]) for kernel in kernels}
        results = []
        for kernel in kernels:
            verdict = verdicts[kernel]
            which = f"{kernel}: " if len(kernels) > 1 else ""
            if len(kernels) > 1:
                console.rule(str(kernel))
            if isinstance(verdict, str):
                errors.print(f"[red]error:[/] {escape(which + verdict)}")
                results.append((kernel, None))
                continue
            if use_ray and outs[kernel]:
                try:
                    verdict.write(outs[kernel])
                except OSError as error:
                    verdict.write_error = f"the report could not be written to {outs[kernel]}: {error.strerror or error}"
            if not verdict.scenarios:
                errors.print(f"[red]error:[/] {escape(which + (verdict.reason or 'nothing was judged'))}")
                results.append((kernel, None))
                continue
            print_judgement(verdict)
            if verdict.sanitizer:
                print_sanitizer(verdict.sanitizer)
            if verdict.write_error:
                errors.print(f"[red]error:[/] {escape(verdict.write_error)}")
            elif outs[kernel]:
                console.print(f"report: {outs[kernel]}")
            results.append((kernel, verdict))
        if len(kernels) > 1:
            print_verdicts(results)
        if len(kernels) == 1 and results[0][1] is None:
            raise typer.Exit(2)
        if any(v is None or v.write_error for _, v in results):
            raise typer.Exit(2)
        raise typer.Exit(0 if all(v.correct for _, v in results) else 1)

    @app.command("scenarios")
    def scenarios_command(
        task: str = typer.Argument("flash_attn_fwd", help="Task folder or name under evals/tasks."),
        arch: str = typer.Option(None, help="Which suite (default: the task's first arch)."),
        quick: bool = typer.Option(False, "--quick", help="Only the quick subset."),
        holdout: int = typer.Option(0, "--holdout", metavar="N", help="List N hold-out scenarios instead: the "
                                    "sample `kernelseek eval --holdout N` judges with the same seed."),
        holdout_seed: int = typer.Option(0, "--holdout-seed", metavar="S", help="The hold-out's seed (a "
                                         "judgement's JSON records it as holdout.seed)."),
        as_json: bool = typer.Option(False, "--json", help="Print the scenarios as JSON (name, group, quick, params)."),
    ) -> None:
        """List a task's scenario suite for an arch (what `kernelseek eval` checks and times), or a hold-out sample.

        On a terminal a table; in a pipe one tab-separated line per scenario after a header line
        (`kernelseek scenarios flash_attn_fwd | cut -f1` gives the names); --json for scripts."""
        if holdout < 0 or holdout_seed < 0:
            fail(f"--holdout {holdout} and --holdout-seed {holdout_seed} must be 0 or more.")
        try:
            loaded = load_task(task)
            arch = arch or loaded.archs[0]
            if arch not in loaded.archs:
                fail(f"{loaded.folder}: the task has no {arch} suite; use one of {', '.join(loaded.archs)}.")
            suite = loaded.holdout(arch, holdout, holdout_seed) if holdout else \
                [s for s in loaded.scenarios(arch) if s.quick or not quick]
        except TaskError as error:
            fail(str(error))
        if as_json:
            print_json([{"name": s.name, "group": s.group, "quick": s.quick, "params": s.params} for s in suite])
            return
        what = f"hold-out, seed {holdout_seed}" if holdout else "suite"
        rows = [(s.name, s.group, "yes" if s.quick else "",
                 ", ".join(f"{k}={v}" for k, v in s.params.items() if not isinstance(v, list))) for s in suite]
        print_rows(console, f"{loaded.name} · {arch} · {what} · {len(suite)} scenarios",
                   ("scenario", "group", "quick", "params"), rows, wide=("params",))
