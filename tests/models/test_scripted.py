"""The scripted provider (docs/inputs.md "Script"), replay from transcripts, and the
lazy loading of the SDKs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from kit.agent import Rig

from orkeon_run.agent.compaction import Removal, Removed, Scanned, remove
from orkeon_run.config.inputs import AnthropicModel, OpenAIModel, ScriptedModel
from orkeon_run.errors import InputError
from orkeon_run.models import build_provider, check_model, missing_key_env
from orkeon_run.models.base import Message, ToolCall
from orkeon_run.models.scripted import FINAL_TEXT, ScriptedProvider

WRITE_A = {"tool": "file_write", "input": {"file_path": "src/a.py", "content": "a = 1\n"}}
READ_A = {"tool": "file_read", "input": {"file_path": "src/a.py"}}


def scripted(script: object, **extra: object) -> ScriptedProvider:
    return ScriptedProvider(ScriptedModel(provider="scripted", script=script, **extra))  # type: ignore[arg-type]


def answers(provider: ScriptedProvider, role: str, n: int) -> list[tuple[str, list[ToolCall]]]:
    """The first n answers of `role`, each sent the conversation so far."""
    model = provider.for_role(role)
    convo = [Message("system", "s"), Message("user", "task")]
    out = []

    async def go() -> None:
        for _ in range(n):
            turn = await model.complete(convo, [])
            out.append((turn.text, turn.tool_calls))
            convo.append(Message("assistant", turn.text, turn.tool_calls))
            convo.extend(Message("tool", "ok", tool_call_id=c.id) for c in turn.tool_calls)

    anyio.run(go)
    return out


def test_entries_are_turns_and_calls_run_in_order(tmp_path: Path) -> None:
    """ "Each entry is one model turn; the calls of a turn run in order." """
    script = {"b1/api": [{"tool_calls": [WRITE_A, READ_A]}, {"text": "done writing"}]}
    rig = Rig(tmp_path, scripted(script))
    [result] = rig.run("build")
    assert (result.status, result.turns, result.calls) == ("succeeded", 2, 2)
    assert result.final_text == "done writing"
    calls = rig.read_events("tool.call")
    assert [c["tool"] for c in calls] == ["file_write", "file_read"]
    assert calls[1]["result"] == "a = 1\n"


def test_used_up_entries_end_the_role_with_a_final_text_that_counts(tmp_path: Path) -> None:
    """ "When a role's entries are used up, that role's model answers with a final text and
    the role ends. Every model answer, the final text included, counts as one turn." """
    rig = Rig(tmp_path, scripted({"b1/api": [{"tool_calls": [WRITE_A]}]}))
    [result] = rig.run("build")
    assert (result.turns, result.calls, result.final_text) == (2, 1, FINAL_TEXT)
    assert rig.ledger.turns == 2


def test_an_empty_script_is_valid(tmp_path: Path) -> None:
    """ "An empty script `{}` is valid." """
    rig = Rig(tmp_path, scripted({}))
    [result] = rig.run("build")
    assert (result.status, result.turns, result.calls, result.final_text) == (
        "succeeded", 1, 0, FINAL_TEXT,
    )  # fmt: skip


def test_keys_are_role_full_names() -> None:
    provider = scripted({"b1/api": [{"text": "api"}], "writer": [{"text": "writer"}]})
    assert answers(provider, "b1/api", 1)[0][0] == "api"
    assert answers(provider, "writer", 1)[0][0] == "writer"
    assert answers(provider, "b1/tests", 1)[0][0] == FINAL_TEXT


def test_the_answer_follows_the_conversation_it_is_sent() -> None:
    """'A role's n-th answer is its n-th entry, where n is the number of answers already in
    the conversation it is sent' (scripted.py): the same list grown turn by turn (counted
    from where the last count stopped), a list changed before its end, and a new list."""
    script = {"r": [{"text": f"answer {i}"} for i in range(6)]}
    model = scripted(script).for_role("r")

    def ask(convo: list[Message]) -> str:
        return anyio.run(model.complete, convo, []).text

    convo = [Message("system", "s"), Message("user", "task")]
    for i in range(3):
        assert ask(convo) == f"answer {i}"
        convo.append(Message("assistant", f"answer {i}"))
        convo.append(Message("user", "more"))
    convo[1:1] = [Message("user", "x"), Message("user", "y")]  # not only grown at its end
    assert ask(convo) == "answer 3"
    assert ask(convo[:5]) == "answer 1"  # another list
    assert ask([Message("user", "task")]) == "answer 0"


def test_answers_a_compaction_removed_still_count() -> None:
    """A compaction that removes answers leaves a note carrying how many
    (`removed_answers`): the model's n counts them, whether the conversation got shorter
    (counted again) or kept its length and last message (the count kept holds)."""
    script = {"r": [{"text": f"answer {i}"} for i in range(8)]}
    model = scripted(script).for_role("r")

    def ask(convo: list[Message]) -> str:
        return anyio.run(model.complete, convo, []).text

    convo = [Message("system", "s"), Message("user", "task")]
    for i in range(4):
        assert ask(convo) == f"answer {i}"
        convo.append(Message("assistant", f"answer {i}"))
        convo.append(Message("user", "more"))
    removed = Removed()
    remove(convo, Removal(2, 6, calls=0, answers=2, chars=0), removed, Scanned())
    assert [m.content for m in convo if m.role == "assistant"] == ["answer 2", "answer 3"]
    assert ask(convo) == "answer 4"  # shorter: counted again
    convo += [Message("assistant", "answer 4"), Message("user", "more")]
    assert ask(convo) == "answer 5"  # grown at its end: only the new messages counted
    remove(convo, Removal(3, 5, calls=0, answers=1, chars=0), removed, Scanned())
    assert convo[2].removed_answers == 3 and ask(convo) == "answer 5"

    # A removal of as many messages as the note adds: same length, same last message.
    model = scripted(script).for_role("r")
    row = [Message("system", "s"), Message("user", "task")]
    row += [Message("assistant", f"answer {i}") for i in range(3)]
    assert ask(row) == "answer 3"
    remove(row, Removal(2, 3, calls=0, answers=1, chars=0), Removed(), Scanned())
    assert len(row) == 5 and row[2].removed_answers == 1
    assert ask(row) == "answer 3"
    model = scripted(script).for_role("r")
    assert ask(row) == "answer 3"  # counted whole


def test_ids_are_deterministic() -> None:
    script = {"r": [{"tool_calls": [READ_A, READ_A]}, {"tool_calls": [dict(READ_A, id="mine")]}]}
    first = answers(scripted(script), "r", 3)
    again = answers(scripted(script), "r", 3)
    assert first == again
    assert [c.id for c in first[0][1]] == ["call_1_1", "call_1_2"]
    assert [c.id for c in first[1][1]] == ["mine"]
    assert first[2] == (FINAL_TEXT, [])


def test_usage_of_an_entry_is_the_turns_tokens(tmp_path: Path) -> None:
    script = {"b1/api": [{"text": "x", "usage": {"input_tokens": 120, "output_tokens": 30}}]}
    rig = Rig(tmp_path, scripted(script, price={"input_per_mtok": 1, "output_per_mtok": 10}))
    rig.run("go")
    snap = rig.ledger.snapshot()
    assert (snap["tokens_in"], snap["tokens_out"]) == (120, 30)
    assert snap["usd"] == pytest.approx((120 * 1 + 30 * 10) / 1e6)


def test_scripted_runs_cost_zero_not_null(tmp_path: Path) -> None:
    rig = Rig(tmp_path, scripted({}))
    rig.run("go")
    assert rig.ledger.snapshot()["usd"] == 0.0


# --- script files ------------------------------------------------------------------------


def test_script_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"b1/api": [{"text": "from file"}]}))
    provider = ScriptedProvider(
        ScriptedModel(provider="scripted", script="script.json"), base_dir=tmp_path
    )
    assert answers(provider, "b1/api", 1)[0][0] == "from file"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "model.script: no such file: "),
        ("{oops", "is not JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ('{"b1/api": [{"tool_calls": [{"input": {}}]}]}', "model.script.b1/api[0].tool_calls[0].tool: Field required"),
        ('{"b1/api": [{"txt": "typo"}]}', "model.script.b1/api[0].txt: unknown key"),
    ],
)  # fmt: skip
def test_a_bad_script_file_is_an_input_error(
    tmp_path: Path, content: str | None, message: str
) -> None:
    if content is not None:
        (tmp_path / "s.json").write_text(content)
    config = ScriptedModel(provider="scripted", script="s.json")
    with pytest.raises(InputError) as err:
        check_model(config, {}, base_dir=tmp_path)
    assert message in str(err.value)


def test_every_problem_of_a_script_file_is_named_in_one_error(tmp_path: Path) -> None:
    """Entries are validated one at a time when a file is loaded; a bad script still names
    every problem, in every role, as one validation of the whole script does."""
    doc = {
        "b1/api": [{"text": "ok"}, {"txt": "typo"}, {"tool_calls": [{"input": {}}, {"tool": 3}]}],
        "b1/tests": "not a list",
        "writer": [{"usage": {"input_tokens": "x"}}, 5],
    }
    (tmp_path / "s.json").write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        check_model(ScriptedModel(provider="scripted", script="s.json"), {}, base_dir=tmp_path)
    assert err.value.problems == [
        "model.script.b1/api[1].txt: unknown key",
        "model.script.b1/api[2].tool_calls[0].tool: Field required",
        "model.script.b1/api[2].tool_calls[1].tool: Input should be a valid string",
        "model.script.b1/tests: Input should be a valid list",
        "model.script.writer[0].usage.input_tokens: Input should be a valid integer, "
        "unable to parse string as an integer",
        "model.script.writer[1]: Input should be a valid dictionary or instance of ScriptEntry",
    ]


def test_a_script_files_values_are_answered_exactly(tmp_path: Path) -> None:
    """An entry is kept packed and decoded on its turn: what the model answers is still
    exactly what the file holds (odd strings, big and float numbers, nesting, usage)."""
    numbers = {"n": [10**30, -0.0, 0.1, 1e300, 2**63, True, None], "deep": {"k": [{"x": ""}]}}
    strings = {"s": '\ud800 lone, é, \u2028, "quoted", a\\b, \x00'}
    usage = {"input_tokens": 7, "output_tokens": 2.0}
    script = {"b1/api": [
        {"text": "numbers", "usage": usage, "tool_calls": [{"tool": "shell", "input": numbers}]},
        {"text": "t\udbff", "tool_calls": [{"tool": "shell", "input": strings, "id": "x1"}]},
    ]}  # fmt: skip
    (tmp_path / "s.json").write_text(json.dumps(script))
    provider = ScriptedProvider(
        ScriptedModel(provider="scripted", script="s.json"), base_dir=tmp_path
    )
    got = answers(provider, "b1/api", 2)
    assert [text for text, _ in got] == ["numbers", "t\udbff"]
    [[first], [second]] = [calls for _, calls in got]
    assert (first.id, first.name, second.id) == ("call_1_1", "shell", "x1")
    assert json.dumps(first.input) == json.dumps(numbers)  # -0.0 and 1e+300 too
    assert first.input["n"][0] == 10**30 and second.input == strings
    turn = anyio.run(provider.for_role("b1/api").complete, [Message("user", "go")], [])
    assert (turn.tokens_in, turn.tokens_out) == (7, 2)


# --- replay ------------------------------------------------------------------------------


def test_replay_a_recorded_role_against_new_rules(tmp_path: Path) -> None:
    """A transcript replays the role's tool calls (same ids, same inputs, in order); the
    new run's gate refuses what the old one let through."""
    script = {"b1/api": [
        {"text": "writing", "tool_calls": [WRITE_A, {"tool": "list_files", "input": {}}]},
        {"tool_calls": [READ_A]},
        {"text": "finished"},
    ]}  # fmt: skip
    first = Rig(tmp_path / "first", scripted(script))
    first.run("build")
    recorded = first.transcript_path
    replay = scripted(f"@transcript:{recorded}")
    assert list(replay.script) == ["b1/api"]
    second = Rig(tmp_path / "second", replay, deny=("file_write(src/**)",))
    [result] = second.run("build")
    one, two = first.read_events("tool.call"), second.read_events("tool.call")
    assert [(c["tool"], c["input"]) for c in one] == [(c["tool"], c["input"]) for c in two]
    assert (result.turns, result.calls, result.refused, result.final_text) == (3, 3, 1, "finished")
    assert two[0]["result"] == "[refused by the gate: file_write(src/**)]"
    ids = [
        line["tool_calls"]
        for line in second.transcript()
        if line["direction"] == "received" and "tool_calls" in line
    ]
    assert [c["id"] for c in ids[0]] == ["call_1_1", "call_1_2"]


def test_replay_a_run_directory_replays_every_role(tmp_path: Path) -> None:
    for role, text in (("b1/api", "api done"), ("b1/tests", "tests done")):
        Rig(
            tmp_path / role.replace("/", "_"),
            scripted({role: [{"tool_calls": [READ_A]}, {"text": text}]}),
            role=role,
        ).run("go")
    runs = tmp_path / "transcripts"
    for role in ("b1/api", "b1/tests"):
        src = tmp_path / role.replace("/", "_") / "run" / "transcripts" / f"{role}.jsonl"
        dst = runs / f"{role}.jsonl"
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(src.read_text())
    replay = scripted(f"@transcript:{runs}")
    assert sorted(replay.script) == ["b1/api", "b1/tests"]
    assert answers(replay, "b1/tests", 2)[1][0] == "tests done"


def test_replay_of_a_missing_transcript_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"model\.script: no such transcript"):
        check_model(
            ScriptedModel(provider="scripted", script="@transcript:nope.jsonl"), {}, tmp_path
        )


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    rig = Rig(tmp_path, scripted({"b1/api": [{"tool_calls": [READ_A]}, {"text": "end"}]}))
    rig.run("go")
    with rig.transcript_path.open("a") as f:
        f.write('{"direction": "received", "role": "assistant", "cont')
    assert len(scripted(f"@transcript:{rig.transcript_path}").script["b1/api"]) == 2


# --- keys and lazy SDKs ------------------------------------------------------------------


def test_missing_key_env() -> None:
    openai = OpenAIModel(provider="openai", model="gpt-4o")
    anthropic = AnthropicModel(provider="anthropic", model="claude-haiku-4-5", api_key_env="MY_KEY")
    assert missing_key_env(openai, {}) == "OPENAI_API_KEY"
    assert missing_key_env(openai, {"OPENAI_API_KEY": ""}) == "OPENAI_API_KEY"
    assert missing_key_env(openai, {"OPENAI_API_KEY": "sk"}) is None
    assert missing_key_env(anthropic, {"ANTHROPIC_API_KEY": "sk"}) == "MY_KEY"
    assert missing_key_env(ScriptedModel(provider="scripted"), {}) is None
    with pytest.raises(InputError, match=r"^model.api_key_env: the variable MY_KEY is not set$"):
        check_model(anthropic, {})
    with pytest.raises(InputError, match="MY_KEY"):
        build_provider(anthropic, environ={})


def test_build_provider_reads_the_key_from_the_named_variable() -> None:
    config = AnthropicModel(provider="anthropic", model="claude-haiku-4-5", api_key_env="MY_KEY")
    provider = build_provider(config, environ={"MY_KEY": "sk-from-env"})
    assert provider.name == "anthropic"
    assert provider.api_key == "sk-from-env"  # type: ignore[attr-defined]
    price = provider.price()
    assert price is not None and price.usd(1_000_000, 1_000_000, 0, 0) == pytest.approx(6.0)
    assert provider.context_tokens() == 200_000


LAZY = """
import sys, anyio
import orkeon_run, orkeon_run.agent.loop, orkeon_run.models, orkeon_run.config.inputs
from orkeon_run.models import build_provider, check_model
from orkeon_run.config.inputs import ScriptedModel, OpenAIModel
config = ScriptedModel(provider="scripted", script={"r": [{"text": "hi"}]})
check_model(config, {})
check_model(OpenAIModel(provider="openai", model="gpt-4o"), {"OPENAI_API_KEY": "x"})
provider = build_provider(config)
from orkeon_run.models.base import Message
turn = anyio.run(provider.for_role("r").complete, [Message("user", "x")], [])
assert turn.text == "hi"
print(sorted(m for m in ("openai", "anthropic", "httpx2", "httpx", "genai_prices") if m in sys.modules))
"""


def test_sdks_are_not_imported_for_validation_or_scripted_runs() -> None:
    out = subprocess.run([sys.executable, "-c", LAZY], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
