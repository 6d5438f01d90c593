"""The loop's parts without the harness: decision points, budgets, tools, the scripted model, the graph
builder, and the CLI's one-sentence errors."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest
from loop_support import ROOT, events, invoke, script, shell

from kernelseek.agent import budgets, tools
from kernelseek.agent.decision_points import claimed_limit, detect
from kernelseek.agent.state import initial_state
from kernelseek.settings import ConfigError, Configuration

SEED = str(ROOT / "kernels" / "seeds" / "rmsnorm_cpu.cpp")


def config(**kw) -> Configuration:
    return Configuration(task="rmsnorm_cpu", kernel=SEED, model="scripted/x.json", **kw)


@pytest.mark.parametrize("text", [
    "The kernel is memory-bound now.", "We are at peak bandwidth.", "This is limited by DRAM bandwidth.",
    "It cannot be made faster.", "Going further is impossible.", "There is no headroom left.",
    "We have reached the theoretical maximum.", "I think this is already optimal."])
def test_claimed_limits_are_detected(text):
    assert claimed_limit("I changed the loop. " + text) == text


@pytest.mark.parametrize("text", ["I wrote a faster loop and evaluated it.", "The bound check was wrong; fixed.",
                                  "Next I will unroll the inner loop."])
def test_ordinary_words_are_not_a_claimed_limit(text):
    assert claimed_limit(text) is None


def test_decision_points_in_order():
    cfg = config(plateau_evals=2, failing_evals=2)
    state = initial_state("/x")
    assert detect({**state, "worker_stopped": True}, cfg, after_eval=False)[0] == "done"
    assert detect({**state, "worker_stopped": True, "words_since_question": "It is compute-bound."}, cfg,
                  after_eval=False)[0] == "claimed_limit"
    assert detect(state, cfg, after_eval=True) is None
    assert detect({**state, "incorrect_streak": 2}, cfg, after_eval=True)[0] == "failing"
    assert detect({**state, "evals_since_gain": 2}, cfg, after_eval=True)[0] == "plateau"
    assert detect({**state, "words_since_question": "we hit the roofline"}, cfg, after_eval=True)[0] == "claimed_limit"


def test_budgets_each_end_the_run():
    state = initial_state("/x")
    assert budgets.exhausted(state, config()) is None
    assert "target 1.2x" in budgets.exhausted({**state, "best": {"speedup": 1.3}}, config(target=1.2))
    assert budgets.exhausted({**state, "best": {"speedup": 1.3}, "start_speedup": 1.0}, config(target_gain=1.5)) is None
    assert "gain" in budgets.exhausted({**state, "best": {"speedup": 1.6}, "start_speedup": 1.0}, config(target_gain=1.5))
    assert "step" in budgets.exhausted({**state, "step": 5}, config(max_steps=5))
    assert "dollar" in budgets.exhausted({**state, "cost_usd": 2.0}, config(max_dollars=1.0))
    assert "token" in budgets.exhausted({**state, "tokens": 10}, config(max_tokens=10))
    assert "wall" in budgets.exhausted({**state, "elapsed_s": 9.0}, config(max_wall_s=5))
    assert "evaluation" in budgets.exhausted({**state, "evals": 3}, config(max_evals=3))


def test_configuration_errors_are_one_sentence():
    with pytest.raises(ConfigError, match="exactly one worker"):
        Configuration(task="t", kernel=SEED).validate()
    with pytest.raises(ConfigError, match="--mode 'robot' is unknown"):
        config(mode="robot").validate()
    with pytest.raises(ConfigError, match="no such kernel file"):
        Configuration(task="t", kernel="/nope.cpp", model="m").validate()


def test_shell_tool_strips_secrets_caps_output_and_times_out(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "t0k")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:pw@db/x")  # not secret-looking by name: the allowlist drops it
    monkeypatch.setenv("CUDA_KS_TEST", "visible")
    ctx = tools.ToolContext(tmp_path, timeout_s=1, output_cap=200)
    text, ok = tools.SHELL.call({"command": "env"}, ctx)
    assert ok and "sk-secret" not in text and "t0k" not in text and "pw@db" not in text
    assert "CUDA_KS_TEST=visible" in tools.SHELL.call({"command": "echo CUDA_KS_TEST=$CUDA_KS_TEST"}, ctx)[0]
    text, _ = tools.SHELL.call({"command": "seq 1 100000"}, ctx)
    assert "bytes cut" in text and len(text) <= 200
    began = time.monotonic()
    text, _ = tools.SHELL.call({"command": "sleep 30 & sleep 30"}, dataclasses.replace(ctx, timeout_s=0.3))
    assert "killed" in text and time.monotonic() - began < 10
    assert tools.SHELL.call({"command": "pwd"}, ctx)[0].strip() == str(tmp_path)
    assert "exit status 3" in tools.SHELL.call({"command": "exit 3"}, ctx)[0]


def test_file_tools(tmp_path):
    ctx = tools.ToolContext(tmp_path)
    assert tools.WRITE.call({"path": "a.cpp", "content": "int x = 1; int y = 1;"}, ctx)[1]
    assert tools.READ.call({"path": "a.cpp"}, ctx)[0] == "int x = 1; int y = 1;"
    text, ok = tools.EDIT.call({"path": "a.cpp", "old": "= 1", "new": "= 2"}, ctx)
    assert not ok and "occurs 2 times" in text
    assert tools.EDIT.call({"path": "a.cpp", "old": "x = 1", "new": "x = 2"}, ctx)[1]
    assert (tmp_path / "a.cpp").read_text() == "int x = 2; int y = 1;"
    text, ok = tools.WRITE.call({"path": "../escape.txt", "content": "no"}, ctx)
    assert not ok and "outside the workspace" in text and not (tmp_path.parent / "escape.txt").exists()
    text, ok = tools.READ.call({"path": "missing.txt"}, ctx)
    assert not ok and "FileNotFoundError" in text


def test_scripted_model_replays_by_position(tmp_path):
    from kernelseek.models import completion, cost_of
    from kernelseek.models.scripted import ScriptError, load_script

    model = script(tmp_path / "s.json", [{"content": "one", "tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]},
                                         {"content": "two"}])
    first = completion(model=model, messages=[{"role": "user", "content": "go"}])
    assert first.choices[0].message.tool_calls[0].function.name == "shell"
    assert json.loads(first.choices[0].message.tool_calls[0].function.arguments) == {"command": "ls"}
    again = completion(model=model, messages=[{"role": "user", "content": "go"}])  # a replay: the same reply
    assert again.choices[0].message.content == "one"
    second = completion(model=model, messages=[{"role": "user", "content": "go"}, {"role": "assistant", "content": "one"}])
    assert second.choices[0].message.content == "two" and second.usage.prompt_tokens > 0
    assert cost_of(second) is None  # no price: counted by tokens, never a crash
    (tmp_path / "bad.yaml").write_text("- content: [unclosed")
    with pytest.raises(ScriptError, match="cannot be parsed"):
        load_script(tmp_path / "bad.yaml")
    (tmp_path / "bad.json").write_text('[{"tool_calls": [{"arguments": {}}]}]')
    with pytest.raises(ScriptError, match="without a name"):
        load_script(tmp_path / "bad.json")


def test_dollar_budget_with_a_priced_model(tmp_path):
    from kernelseek.models import litellm

    path = tmp_path / "priced.json"
    model = script(path, [{"content": "look", "tool_calls": [shell("ls")]}, {"content": "never"}])
    litellm().register_model({f"scripted/{path.name}": {"input_cost_per_token": 1e-3, "output_cost_per_token": 1e-3,
                                                         "litellm_provider": "scripted", "mode": "chat"}})
    result = invoke(["run", "rmsnorm_cpu", "--model", model, "--mode", "none", "--no-judge-start",
                     "--max-dollars", "0.01", "--runs-dir", str(tmp_path / "runs"), "--run-id", "priced"])
    assert result.exit_code == 0, result.output
    assert "dollar budget spent" in result.output
    call, = events(tmp_path / "runs" / "priced", "model_call")
    assert call["cost_usd"] > 0.01
    end, = events(tmp_path / "runs" / "priced", "run_end")
    assert end["cost_usd"] == pytest.approx(call["cost_usd"])


def test_graph_builder_variants():
    from graphs import build_graph, load_graph
    from kernelseek.agent.tools import Tool

    extra = Tool("ping", "Say pong.", {"type": "object", "properties": {}}, lambda args, ctx: "pong")
    assert {"start", "worker", "harness", "questioner", "finish"} <= set(load_graph("kernelseek").get_graph().nodes)
    quiet = build_graph("x", asks=False, extra_tools=[extra])
    assert {"start", "worker", "harness", "nudge", "finish"} <= set(quiet.get_graph().nodes)
    assert "questioner" not in quiet.get_graph().nodes
    with pytest.raises(ValueError, match="no graphs/nope.py"):
        load_graph("nope")
    spec = json.loads((ROOT / "langgraph.json").read_text())
    assert spec["graphs"]["kernelseek"] == "./graphs/kernelseek.py:graph"
    for name, target in spec["graphs"].items():  # every exported graph loads
        path, attribute = target.split(":")
        module = path.removeprefix("./").removesuffix(".py").replace("/", ".")
        assert hasattr(__import__(module, fromlist=[attribute]), attribute), name


@pytest.mark.parametrize("args, message", [
    (["run", "no_such_task", "--model", "m"], "no such task folder"),
    (["run", "rmsnorm_cpu", "--model", "m", "--arch", "sm90"], "has no sm90 suite"),
    (["run", "rmsnorm_cpu"], "give exactly one worker"),
    (["run", "rmsnorm_cpu", "--model", "m", "--worker-command", "c"], "give exactly one worker"),
    (["run", "rmsnorm_cpu", "--model", "scripted//no/such/script.yaml"], "no such model script"),
    (["run", "rmsnorm_cpu", "--model", "m", "--mode", "robot"], "--mode 'robot' is unknown"),
    (["run", "rmsnorm_cpu", "--model", "m", "--kernel", "/no/such.cpp"], "no such kernel file"),
    (["run", "rmsnorm_cpu", "--model", "m", "--target", "-1"], "must be a positive speedup"),
    (["resume", "no-such-run"], "no such run"),
    (["trace", "show", "no-such-run"], "no such trace file"),
    (["trace", "show", "x", "--types", "bogus"], "unknown event type bogus"),
])
def test_bad_input_gets_one_sentence(tmp_path, args, message):
    result = invoke([*args, "--runs-dir", str(tmp_path)])
    output = " ".join(result.output.split())  # rich wraps long lines
    assert result.exit_code == 2, result.output
    assert message in output and "Traceback" not in output
    assert output.startswith("error:") and output.count("error:") == 1
    assert not any(tmp_path.iterdir())  # nothing was created for a bad command


def test_corrupted_trace_is_one_sentence(tmp_path):
    (tmp_path / "trace.jsonl").write_text('{"not": "an event"}\n{}\n')
    result = invoke(["trace", "show", str(tmp_path / "trace.jsonl")])
    assert result.exit_code == 2 and "line 1" in " ".join(result.output.split()) and "Traceback" not in result.output


def test_help_teaches():
    for command, words in ((["run", "--help"], ["--target", "--mode", "resume", "scripted/"]),
                           (["resume", "--help"], ["kill"]), (["trace", "show", "--help"], ["timeline"])):
        result = invoke(command)
        assert result.exit_code == 0 and all(w in result.output for w in words), result.output



def test_human_can_stop_the_run_at_the_prompt(tmp_path):
    model = script(tmp_path / "s.json", [{"content": "I am finished: acc[8] [/] [bold] is fine."}, {"content": "never"}])
    result = invoke(["run", "rmsnorm_cpu", "--model", model, "--mode", "human", "--no-judge-start",
                     "--runs-dir", str(tmp_path / "runs"), "--run-id", "stop"], input="/stop\n")
    assert result.exit_code == 0, result.output
    assert "stopped by the person" in result.output
    assert "acc[8] [/] [bold] is fine." in result.output  # the worker's words are shown as text, not markup
    shown = invoke(["trace", "show", "stop", "--runs-dir", str(tmp_path / "runs")])
    assert shown.exit_code == 0 and "[/]" in shown.output
    message, = events(tmp_path / "runs" / "stop", "human_message")
    assert message["text"] == "/stop" and message["decision_point"] == "done"
    assert not events(tmp_path / "runs" / "stop", "question")


def test_model_based_limit_detector(tmp_path):
    model = script(tmp_path / "judge.json", [{"content": "YES\nThe hardware will not let it go any quicker."}])
    assert claimed_limit("The hardware will not let it go any quicker.", model) == \
        "The hardware will not let it go any quicker."
    model = script(tmp_path / "no.json", [{"content": "NO"}])
    assert claimed_limit("I will try another tiling.", model) is None


def test_an_unchanged_candidate_is_not_judged_again(tmp_path):
    from kernelseek.agent.harness_node import evaluate, sha256
    from kernelseek.agent.run_store import Run

    run = Run.create(config().validate(), tmp_path / "runs", "same")
    state = {**initial_state(str(run.dir)), "last_sha": sha256(run.candidate_file), "last_report": "correct, 2x",
             "evaluate": True, "evaluate_call": "call_1", "messages": [{"role": "assistant", "content": "", "tool_calls": []}]}
    update = evaluate(state, run)
    assert "unchanged since candidate 0" in update["messages"][-1]["content"]
    assert update["messages"][-1]["tool_call_id"] == "call_1" and update["last_report"] == "correct, 2x"
    assert not (run.dir / "trace.jsonl").exists() or not events(run.dir, "evaluation")
    assert not run.candidate_path(1).exists()


def test_the_exported_graph_makes_its_own_run_from_its_context(tmp_path, monkeypatch):
    """What LangGraph Studio does: invoke the exported graph with the run's settings as its context."""
    from graphs.kernelseek import graph

    monkeypatch.setenv("KERNELSEEK_RUNS", str(tmp_path / "runs"))
    model = script(tmp_path / "s.json", [{"content": "look", "tool_calls": [shell("ls")]}])
    final = graph.invoke({}, context={"task": "rmsnorm_cpu", "kernel": SEED, "model": model, "mode": "none",
                                      "judge_start": False, "max_steps": 1})
    assert final["end_reason"].startswith("step budget") and final["step"] == 1
    run_dir, = (tmp_path / "runs").iterdir()
    assert final["run_dir"] == str(run_dir) and [e["type"] for e in events(run_dir)] == \
        ["run_start", "model_call", "tool_start", "tool_call", "run_end"]


def test_bad_settings_in_the_graphs_context_are_one_sentence(tmp_path, monkeypatch):
    from graphs.kernelseek import graph

    monkeypatch.setenv("KERNELSEEK_RUNS", str(tmp_path / "runs"))
    for context, sentence in [({"task": "rmsnorm_cpu", "model": "m", "colour": "red"},
                               "'colour' is not a run setting; the settings are task"),
                              ({"task": "rmsnorm_cpu", "model": "m", "max_dollars": "lots"},
                               "max_dollars 'lots' must be a finite number"),  # the form's field, not the option
                              ({"task": "rmsnorm_cpu"}, "give exactly one worker"),
                              ({"model": "m"}, "the setting 'task' is missing"),
                              ({"model": "m", "task": "nope"}, "no such task folder")]:
        with pytest.raises(ConfigError) as failed:
            graph.invoke({}, context=context)
        assert sentence in str(failed.value) and "\n" not in str(failed.value)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_replayed_step_acts_on_the_recorded_reply(tmp_path):
    """A step cut off after its model call is replayed from replies/<step>.json, not asked again."""
    from kernelseek.agent.run_store import Run
    from kernelseek.agent.tools import BASE_TOOLS
    from kernelseek.agent.worker import model_step

    model = script(tmp_path / "s.json", [{"content": "a different reply"}])
    run = Run.create(Configuration(task="rmsnorm_cpu", kernel=SEED, model=model).validate(), tmp_path / "runs", "r")
    (run.dir / "replies").mkdir(exist_ok=True)
    (run.dir / "replies" / "1.json").write_text(json.dumps({
        "content": "recorded", "tool_calls": [{"id": "c0", "name": "shell", "arguments": '{"command": "echo hi"}'}],
        "prompt_tokens": 5, "completion_tokens": 2, "cost_usd": None}))
    update = model_step(initial_state(str(run.dir)), run, BASE_TOOLS)
    call, tool = events(run.dir, "model_call", "tool_call")
    assert call["content"] == "recorded" and tool["result"].strip() == "hi"
    assert update["messages"][-1] == {"role": "tool", "tool_call_id": "c0", "content": "hi\n"}


def test_session_scripts(tmp_path):
    from kernelseek.models.scripted import session

    (tmp_path / "a.cpp").write_text("int a;")
    replies = session("k.cpp", [str(tmp_path / "a.cpp"), ":done"])
    assert replies[0]["tool_calls"][0]["arguments"] == {"path": "k.cpp", "content": "int a;"}
    assert replies[0]["tool_calls"][1]["name"] == "evaluate" and "tool_calls" not in replies[1]


def test_a_run_is_driven_by_one_process_at_a_time(tmp_path):
    from kernelseek.agent.run_store import Run

    run = Run.create(config().validate(), tmp_path / "runs", "locked")
    with run.lock():
        with pytest.raises(ConfigError, match="being driven by another process"):
            with run.lock():
                pass
    with run.lock():  # released
        pass


def test_model_args_are_parsed(tmp_path):
    from kernelseek.commands.run_options import model_args

    assert model_args(["temperature=0.2", "api_base=http://x:8000", "stop=[\"a\"]"]) == \
        {"temperature": 0.2, "api_base": "http://x:8000", "stop": ["a"]}
    result = invoke(["run", "rmsnorm_cpu", "--model", "m", "--model-arg", "oops", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 2 and "is not KEY=VALUE" in result.output


def test_auto_mode_without_a_fitting_question_only_nudges(tmp_path, monkeypatch):
    bank = tmp_path / "bank"
    bank.mkdir()
    monkeypatch.setenv("KERNELSEEK_BANK", str(bank))
    model = script(tmp_path / "s.json", [{"content": "Finished."}, {"content": "Still finished."}])
    result = invoke(["run", "rmsnorm_cpu", "--model", model, "--no-judge-start", "--max-steps", "2",
                     "--runs-dir", str(tmp_path / "runs"), "--run-id", "empty-bank"])
    assert result.exit_code == 0, result.output
    assert "the bank gave no question" in result.output
    assert [e["kind"] for e in events(tmp_path / "runs" / "empty-bank", "decision_point")] == ["done"]
    assert not events(tmp_path / "runs" / "empty-bank", "question")
