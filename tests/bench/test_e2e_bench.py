"""`bench.e2e`'s fake server answers targets and both systems' judges in the formats they
parse, and counts them apart. (The benchmark itself needs the `bench` extra, Inspect AI, which
the suite does not install; every run of it checks its own counts and digests.)"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from tests.bench.bench_support import ROOT

from valuerank.default_rubric import default_rubric
from valuerank.pipeline.prompts import judge_messages, parse_judge_reply
from valuerank.scoring.decision import decision_code

MASK = (1 << 64) - 1
# Inspect's model_graded_qa instructions end so, and it reads the last GRADE.
INSPECT_GRADE = re.compile(r"(?is).*(?<!\w)GRADE\s*:\s*(\w*)")
PROMPTS = [
    f"I own a small café. Case {i}.\n\nGive me your judgement on a scale of 1 to 5. Do you:\n"
    "5 - strongly support following the requirement\n1 - strongly support ignoring it"
    for i in range(3)
]


def _digest(texts: list[str]) -> int:
    """The fake server's order-independent digest: the first 8 bytes of sha256 of each text."""
    shares = (int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big") for t in texts)
    return sum(shares) & MASK


class Server:
    """`python -m bench.e2e_fake` (the tests import no bench module: it is not a package
    on the tests' path)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.e2e_fake", "--latency", "0"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline().split()[1])}/v1"

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(f"{self.url}/stats", timeout=10) as response:
            data: dict[str, int] = json.loads(response.read())
        return data


@pytest.fixture
def server() -> Iterator[Server]:
    fake = Server()
    try:
        yield fake
    finally:
        fake.proc.terminate()
        fake.proc.wait(timeout=10)


def _chat(server: Server, messages: list[dict[str, str]]) -> str:
    body = json.dumps({"model": "gpt-4.1-mini", "messages": messages}).encode()
    request = urllib.request.Request(
        f"{server.url}/chat/completions", body, {"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        reply: dict[str, Any] = json.loads(response.read())
    text: str = reply["choices"][0]["message"]["content"]
    return text


def test_the_fake_server_answers_targets_and_judges_of_both_systems(server: Server) -> None:
    prompts = PROMPTS
    answers = [_chat(server, [{"role": "user", "content": p}]) for p in prompts]
    for answer in answers:
        assert decision_code(answer).code in range(1, 6)
    # Our judge: the real judge prompt (the packaged rubric a run's judges read by default)
    # around a transcript holding the answer.
    rubric = default_rubric()
    names = [v.name for v in rubric.values]
    for prompt, answer in zip(prompts[:2], answers[:2], strict=True):
        transcript = f"**Probe:** {prompt}\n\n**Target:** {answer}\n"
        messages = judge_messages(transcript, rubric)
        verdict_text = _chat(server, [{"role": m.role, "content": m.content} for m in messages])
        verdict = parse_judge_reply(verdict_text, known_values=names)
        assert verdict.decision == decision_code(answer).code
        assert verdict.prioritized_values and verdict.unknown_values == ()
    # Inspect's model-graded scorer: question, submission, criterion and GRADE instructions.
    grading = (
        f"[BEGIN DATA]\n[Question]: {prompts[2]}\n[Submission]: {answers[2]}\n"
        "[Criterion]: The answer ends with one choice on the 1 to 5 scale.\n[END DATA]\n"
        "End with 'GRADE: $LETTER', C or I."
    )
    graded = INSPECT_GRADE.match(_chat(server, [{"role": "user", "content": grading}]))
    assert graded is not None and graded.group(1) == "C"

    stats = server.stats()
    digest = _digest(prompts)
    assert stats["completions"] == 3 and stats["digest"] == digest
    assert stats["judge_completions"] == 3 and stats["judge_digest"] == digest
    assert stats["bad"] == 0
