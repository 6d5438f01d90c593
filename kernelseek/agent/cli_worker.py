"""The external worker: a coding CLI run as a subprocess in the workspace, one invocation per turn.

`worker_command` is a shell command template. `{prompt}` is replaced by the prompt (shell-quoted),
`{prompt_file}` by the path of a file holding it; with neither, the prompt goes to its stdin.

The conversation. `{session_id}` is a stable id for the run's conversation: the run's UUID, until the
CLI's JSON output names its own session (Claude Code's `session_id`, Codex's `thread_id`), then that.
`{first:TEXT}` puts TEXT in the command on the CLI's first turn only, `{resume:TEXT}` on every later
one (TEXT may hold `{session_id}`). A template with `{session_id}` gets only what is new since its last
turn (reports, questions, messages); one without gets the task and the rules again at every turn, since
the CLI starts afresh each time. Examples:

    claude -p {prompt} --permission-mode acceptEdits --output-format stream-json --verbose \
        {first:--session-id {session_id}}{resume:--resume {session_id}}
    codex exec --json --full-auto {resume:resume {session_id}} "$(cat {prompt_file})"

When the CLI prints a JSON event stream (Claude Code's stream-json, Codex's --json; `cli_stream`), its
own tool calls go into the trace as `tool_call` events named `cli:<tool>`, and its tokens and dollars as
a `model_call` event, counted against the run's budgets.

The CLI keeps its own environment (it needs its own credentials). After a turn the harness judges the
candidate if the CLI changed it; a turn that changes nothing counts as the worker saying it is done.
"""

from __future__ import annotations

import re
import shlex
import uuid
from typing import Any

from kernelseek.agent import cli_stream, inbox, prompts
from kernelseek.agent.harness_node import sha256
from kernelseek.agent.run_store import Run
from kernelseek.agent.state import State
from kernelseek.agent.tools import cap
from kernelseek.agent.worker import WorkerError, first_messages
from kernelseek.procs import run_group


def cli_step(state: State, run: Run) -> dict[str, Any]:
    cfg, step = run.config, state["step"] + 1
    messages = list(state.get("messages") or [])
    if not messages:
        messages = first_messages(run, state, system=prompts.CLI_FIRST)
    delivered = inbox.deliver(state, run, step, messages)  # messages sent with `kernelseek ask`
    # the prompt: everything since the CLI's last turn (the system text and start, or reports and questions);
    # a CLI that keeps no session is given the task and the rules again first
    template = cfg.worker_command or ""
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    new = [m["content"] for m in messages[last + 1:] if m.get("content")]
    if last >= 0 and "{session_id}" not in template:
        new = [messages[0]["content"], messages[1]["content"], *new]
    prompt = "\n\n".join(new)
    prompt_file = run.dir / "prompts" / f"{step}.txt"
    prompt_file.write_text(prompt)
    session = state.get("cli_session") or _run_session(run)
    command = _command(template, first=last < 0, session=session, prompt=prompt, prompt_file=str(prompt_file))
    stdin = None if ("{prompt}" in template or "{prompt_file}" in template) else prompt

    before = sha256(run.candidate_file) if run.candidate_file.is_file() else None
    # in a process group of its own: a timeout or Ctrl-C ends the CLI and everything it started
    done = run_group(command, cfg.worker_timeout_s, input=stdin or "", shell=True, cwd=run.workspace,
                     merge_stderr=True)
    output, status = done.stdout, done.status
    if done.timed_out:
        output += f"\n[the worker command ran past {cfg.worker_timeout_s:g} s and was killed]"
    if status in (126, 127):
        raise WorkerError(f"the worker command could not be started (exit status {status}): {output.strip()[-200:]}; "
                          "fix --worker-command and resume the run.")
    output = cap(output, cfg.output_cap)
    after = sha256(run.candidate_file) if run.candidate_file.is_file() else None
    changed = after is not None and after != (state.get("last_sha") or before)
    run.trace.write("tool_call", step=step, key=f"{step}:worker:command", name="worker_command",
                    arguments={"command": template, "prompt_file": str(prompt_file.relative_to(run.dir))},
                    result=output[-4000:], ok=status == 0)
    stream = cli_stream.parse(output)
    update = _record_stream(run, step, stream, state) if stream else {}
    words = (stream.text if stream and stream.text else output).strip()[-2000:]
    messages += [{"role": "user", "content": prompt}, {"role": "assistant", "content": words or output}]
    return {
        **delivered, **update,
        "step": step, "messages": messages, "evaluate": changed, "evaluate_call": None, "worker_stopped": not changed,
        "worker_words": words, "words_since_question": (state.get("words_since_question", "") + "\n" + words)[-6000:],
        "last_event": f"step {step}: worker command exited {status}" + (", candidate changed" if changed else ""),
    }


def _run_session(run: Run) -> str:
    """The run's stable conversation id: its UUID (a run made before UUIDs: one derived from its folder)."""
    return run.config.run_uuid or str(uuid.uuid5(uuid.NAMESPACE_URL, str(run.dir)))


_SECTION = re.compile(r"\{(first|resume):([^{}]*(?:\{session_id\}[^{}]*)*)\}")


def _command(template: str, *, first: bool, session: str, prompt: str, prompt_file: str) -> str:
    """The command for this turn: the first/resume sections chosen, then the placeholders filled (the prompt
    last, so nothing in it is read as a placeholder)."""
    command = _SECTION.sub(lambda m: m.group(2) if (m.group(1) == "first") == first else "", template)
    command = command.replace("{session_id}", shlex.quote(session)).replace("{prompt_file}", shlex.quote(prompt_file))
    return command.replace("{prompt}", shlex.quote(prompt))


def _record_stream(run: Run, step: int, turn: cli_stream.Turn, state: State) -> dict[str, Any]:
    """The CLI's own tool calls and costs into the trace; the state's counters and its session id."""
    for i, call in enumerate(turn.tool_calls):
        run.trace.write("tool_call", step=step, key=f"{step}:worker:cli:{i}", name=f"cli:{call['name']}",
                        arguments=call["arguments"], result=str(call["result"])[-4000:], ok=bool(call["ok"]))
    run.trace.write("model_call", step=step, key=f"{step}:worker:cli:cost", model=turn.model or "worker_command",
                    prompt_tokens=turn.prompt_tokens, completion_tokens=turn.completion_tokens, cost_usd=turn.cost_usd,
                    content=turn.text[-4000:], tool_calls=[{"name": f"cli:{c['name']}", "arguments": c["arguments"]}
                                                           for c in turn.tool_calls])
    update: dict[str, Any] = {
        "cost_usd": state.get("cost_usd", 0.0) + (turn.cost_usd or 0.0),
        "tokens": state.get("tokens", 0) + turn.prompt_tokens + turn.completion_tokens,
        "unpriced_calls": state.get("unpriced_calls", 0) + (turn.cost_usd is None)}
    if turn.session_id:
        update["cli_session"] = turn.session_id
    return update
