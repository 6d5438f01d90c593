"""`kernelseek/` knows no operator: what is operator-specific (names, shapes, baselines, the libraries a
kernel may not use) lives in the task folders under evals/tasks. Three places are left out of the scan, on
purpose: `kernelseek/bank/classify.py`, whose vocabulary of operator and library names is how it tells a
question that only informs, `kernelseek/commands/`, whose help examples name the shipped tasks, and
`kernelseek/scaffold.py`, whose `kernelseek init` copies the shipped example task by its name."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GENERIC = {"cpu", "fwd", "add", "sm90", "sm100"}  # parts of task names that name no operator
KNOWN = {"attention", "flashattention", "softmax", "thunderkittens", "layernorm", "fa3", "fa4"}
LEFT_OUT = (ROOT / "kernelseek" / "bank" / "classify.py", ROOT / "kernelseek" / "commands",
            ROOT / "kernelseek" / "scaffold.py")


def operator_words() -> set[str]:
    tasks = [p.name for p in (ROOT / "evals" / "tasks").iterdir() if (p / "task.py").is_file()]
    assert len(tasks) >= 2, tasks
    return {part for name in tasks for part in name.lower().split("_")} - GENERIC | KNOWN | set(tasks)


def scan(paths) -> list[str]:
    words = operator_words()
    pattern = re.compile(r"(?<![a-z0-9])(" + "|".join(sorted(map(re.escape, words), key=len, reverse=True)) +
                         r")(?![a-z0-9])", re.IGNORECASE)
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if match := pattern.search(line):
                found.append(f"{path}:{number}: {match.group(0)}")
    return found


def test_no_module_of_kernelseek_names_an_operator():
    modules = [path for path in sorted((ROOT / "kernelseek").rglob("*.py"))
               if not any(path == left or left in path.parents for left in LEFT_OUT)]
    assert len(modules) > 50
    found = scan(modules)
    assert not found, "operator words in kernelseek/ (they belong in a task folder):\n" + "\n".join(found)


def test_the_scan_finds_what_it_looks_for(tmp_path):
    """The check can fail: each task's name and its operator's words are caught, generic words are not."""
    tasks = [p.name for p in (ROOT / "evals" / "tasks").iterdir() if (p / "task.py").is_file()]
    module = tmp_path / "m.py"
    module.write_text("\n".join([f"TASK = '{tasks[0]}'", "def attn_scale(): pass", "# an RMSNorm kernel",
                                 "x = cpu_count()  # generic", "y = torch.backends.cuda.matmul"]))
    assert [line.rsplit(": ", 1)[1].lower() for line in scan([module])] == [tasks[0], "attn", "rmsnorm"]
