"""The Inspect AI side of `bench.e2e`: the task an Inspect user would write for these prompts.

A JSON-lines dataset (one `{"id", "input", "target"}` per rendered scenario prompt, written
by `bench.e2e`) and the plain `generate()` solver, with the generation settings of our run
(temperature 0, max_tokens 1000). No scorer by default: ours reads a decision code from each
answer, so leaving the scorer out only saves Inspect work. `-T judge=true` adds
`model_graded_qa()` (the judged configuration: a second model call per sample, as our judge
makes); its grader role is left unbound, so the grader is the model under evaluation — the
same fake server, as our judge is.

Run as Inspect users do, e.g.

    inspect eval bench/e2e_inspect_task.py -T prompts=prompts.jsonl \\
        --model openai/fake --model-base-url http://127.0.0.1:PORT/v1 --max-connections 64

`-T mock=true` uses `mockllm/model` (answers instantly). mockllm's default output carries
no token usage, so mockllm counts the prompt's tokens with tiktoken's o200k_base, which
tiktoken downloads on first use; this machine has no internet, so the task gives mockllm
the same default text with the usage already set (a quarter of the characters), which skips
the count: a little less work than mockllm's default, in Inspect's favour.
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.model import GenerateConfig, Model, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Scorer, model_graded_qa
from inspect_ai.solver import generate

MOCK_OUTPUT = "Default output from mockllm/model"


def _mock_output(messages: list[Any], *_: Any) -> ModelOutput:
    output = ModelOutput.from_content(model="mockllm", content=MOCK_OUTPUT)
    tokens = max(1, sum(len(m.text) for m in messages) // 4)
    output.usage = ModelUsage(
        input_tokens=tokens, output_tokens=len(MOCK_OUTPUT), total_tokens=tokens + len(MOCK_OUTPUT)
    )
    return output


@task
def valuerank_prompts(prompts: str, mock: bool = False, judge: bool = False) -> Task:
    model: Model | None = None
    scorer: Scorer | None = model_graded_qa() if judge else None
    if mock:
        model = get_model("mockllm/model", custom_outputs=_mock_output)
    return Task(
        dataset=json_dataset(prompts),
        solver=generate(),
        scorer=scorer,
        config=GenerateConfig(temperature=0.0, max_tokens=1000),
        model=model,
    )
