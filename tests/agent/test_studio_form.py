"""LangGraph Studio's settings form (the graph's context schema, `RunContext`): it has no field for what each
run makes anew (its UUID), and its errors name the form's fields, not `kernelseek run`'s options."""

from __future__ import annotations

import pytest

from kernelseek.agent.context import RunContext, in_form_words
from kernelseek.settings import ConfigError, RunRequest


def test_the_form_has_no_run_uuid_and_each_run_gets_a_new_one():
    form = RunContext.model_json_schema()["properties"]
    assert "run_uuid" not in form and {"task", "model", "max_steps", "judge_start"} <= set(form)
    assert set(form) == set(RunRequest.model_fields) - {"run_uuid"} | {"run_dir"}
    first, second = (RunContext(task="rmsnorm_cpu", model="m") for _ in range(2))
    assert first.run_uuid and second.run_uuid and first.run_uuid != second.run_uuid


@pytest.mark.parametrize(("settings", "said"), [
    ({"target": -1.0}, "target -1.0 must be a positive speedup"),
    ({"target_gain": 1.5, "judge_start": False}, "target_gain needs the starting kernel judged; drop judge_start=false"),
    ({"plateau_evals": 0}, "plateau_evals 0 must be a whole number, at least 1"),
    ({"max_wall_s": "soon"}, "max_wall_s 'soon' must be a finite number above 0"),
    ({"model": None}, "give exactly one worker: model NAME (built-in worker) or worker_command CMD"),
])
def test_a_bad_setting_in_the_form_is_named_as_the_form_names_it(settings, said):
    with pytest.raises(ConfigError) as error:
        RunContext(**{"task": "rmsnorm_cpu", "model": "m", **settings})
    assert said in str(error.value) and "--" not in str(error.value)


def test_options_that_are_not_settings_are_left_as_written():
    assert in_form_words("use --arch cpu, or --model-arg api_key=...") == "use arch cpu, or model_kwargs api_key=..."
    assert in_form_words("see `kernelseek fork RUN --list`") == "see `kernelseek fork RUN --list`"
