"""The external worker: a coding CLI run as a subprocess in the workspace, one invocation per turn.

`worker_command` is a shell command template. `{prompt}` is replaced by the prompt (shell-quoted),
`{prompt_file}` by the path of a file holding it; with neither, the prompt goes to its stdin. Examples:

    --worker-command 'claude -p {prompt} --permission-mode acceptEdits'
    --worker-command 'codex exec --full-auto "$(cat {prompt_file})"'

The CLI keeps its own environment (it needs its own credentials). After a turn the harness judges the
candidate if the CLI changed it; a turn that changes nothing counts as the worker saying it is done.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from typing import Any

from kernelseek.agent import prompts
from kernelseek.agent.harness_node import sha256
from kernelseek.agent.run_store import Run
from kernelseek.agent.state import State
from kernelseek.agent.tools import cap
from kernelseek.agent.worker import WorkerError, first_messages


def cli_step(state: State, run: Run) -> dict[str, Any]:
    cfg, step = run.config, state["step"] + 1
    messages = list(state.get("messages") or [])
    if not messages:
        messages = first_messages(run, state, system=prompts.CLI_FIRST)
    # the prompt: everything since the CLI's last turn (the system text and start, or reports and questions)
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    prompt = "\n\n".join(m["content"] for m in messages[last + 1:] if m.get("content"))
    prompt_file = run.dir / "prompts" / f"{step}.txt"
    prompt_file.write_text(prompt)
    template = cfg.worker_command or ""
    command = template.replace("{prompt_file}", shlex.quote(str(prompt_file))).replace("{prompt}", shlex.quote(prompt))
    stdin = None if ("{prompt}" in template or "{prompt_file}" in template) else prompt

    before = sha256(run.candidate_file) if run.candidate_file.is_file() else None
    proc = subprocess.Popen(command, shell=True, cwd=run.workspace, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
    try:
        output, _ = proc.communicate(stdin, timeout=cfg.worker_timeout_s)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        output, status = output + f"\n[the worker command ran past {cfg.worker_timeout_s:g} s and was killed]", -9
    except BaseException:  # Ctrl-C: the CLI runs in its own session, so end it here
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    if status in (126, 127):
        raise WorkerError(f"the worker command could not be started (exit status {status}): {output.strip()[-200:]}; "
                          "fix --worker-command and resume the run.")
    output = cap(output, cfg.output_cap)
    after = sha256(run.candidate_file) if run.candidate_file.is_file() else None
    changed = after is not None and after != (state.get("last_sha") or before)
    run.trace.write("tool_call", step=step, key=f"{step}:worker:command", name="worker_command",
                    arguments={"command": template, "prompt_file": str(prompt_file.relative_to(run.dir))},
                    result=output[-4000:], ok=status == 0)
    words = output.strip()[-2000:]
    messages += [{"role": "user", "content": prompt}, {"role": "assistant", "content": output}]
    return {
        "step": step, "messages": messages, "pending_eval": "" if changed else None, "worker_stopped": not changed,
        "worker_words": words, "words_since_question": (state.get("words_since_question", "") + "\n" + words)[-6000:],
        "last_event": f"step {step}: worker command exited {status}" + (", candidate changed" if changed else ""),
    }
