"""The `--inputs` document (docs/inputs.md) as frozen pydantic models.

`load_document` (documents.py) reads SRC (inline JSON, `@PATH`, or `-`) within its limits;
`parse_inputs` validates it and turns every problem into one line that names the field
path (`hooks[1].command: ...`).
Checks that need the file system (settings files, script files, the plan file, key
variables) live in `prepare.py`, which `orkeon validate` and `orkeon run` both call.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import InputError
from ..limits import BudgetLimits
from ..policy.words import CommandRefused, split_command
from .defaults import empty_list
from .documents import MAX_DOCUMENT_BYTES as MAX_DOCUMENT_BYTES  # re-exported
from .documents import load_document as load_document  # re-exported
from .errorlines import UNION_TAGS, error_lines
from .mcp import McpServers
from .network import Network
from .review import ReviewInputs
from .settings_hooks import HANDLER_TAGS
from .settings_hooks import SETTINGS_EVENTS as SETTINGS_EVENTS  # re-exported
from .settings_hooks import MatcherGroup as MatcherGroup  # re-exported
from .settings_hooks import PluginRef as PluginRef  # re-exported
from .settings_hooks import SettingsCommand as SettingsCommand  # re-exported
from .settings_hooks import SettingsHandler as SettingsHandler  # re-exported
from .settings_hooks import SettingsHooks as SettingsHooks  # re-exported
from .settings_hooks import SettingsHttp as SettingsHttp  # re-exported
from .settings_hooks import SettingsPrompt as SettingsPrompt  # re-exported

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- model providers ---------------------------------------------------------------


class Price(Frozen):
    """USD per million tokens. A cache price left out is the input price."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(default=None, ge=0)
    cache_write_per_mtok: float | None = Field(default=None, ge=0)


class _ModelCommon(Frozen):
    context_tokens: int | None = Field(default=None, gt=0)
    timeout_seconds: float = Field(default=120, gt=0)
    max_retries: int = Field(default=4, ge=0)
    price: Price | None = None
    # Anthropic: prompt-cache breakpoints (models/anthropic.py). OpenAI-compatible servers
    # cache on their own; the scripted model ignores it.
    cache: bool = True
    # Output tokens per answer; None: 16384, or half the context window when smaller.
    max_output_tokens: int | None = Field(default=None, gt=0)


class ScriptCall(Frozen):
    tool: str
    input: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ScriptEntry(Frozen):
    """One model turn of the scripted provider."""

    text: str | None = None
    tool_calls: list[ScriptCall] = Field(default_factory=empty_list)
    # {"input_tokens": N, "output_tokens": N, "cache_read_input_tokens"?: N,
    #  "cache_creation_input_tokens"?: N}, optional
    usage: dict[str, int] | None = None


Script = dict[str, list[ScriptEntry]]


class ScriptedModel(_ModelCommon):
    provider: Literal["scripted"]
    # An object, or a path: "PATH" (a JSON file) or "@transcript:PATH" (replay a role).
    script: Script | str = Field(default_factory=dict)


def _env_name(name: str) -> str:
    # An empty name passed validation and ended `orkeon run` with an internal error.
    if not name or "=" in name or "\x00" in name:
        raise ValueError("must name an environment variable (not empty, no '=')")
    return name


EnvName = Annotated[str, AfterValidator(_env_name)]


class OpenAIModel(_ModelCommon):
    provider: Literal["openai"]
    model: str
    base_url: str | None = None
    # null: no key, no Authorization header: a local server (Ollama, vLLM, llama.cpp on
    # 127.0.0.1) that asks for none (docs/models.md).
    api_key_env: EnvName | None = "OPENAI_API_KEY"


class AnthropicModel(_ModelCommon):
    provider: Literal["anthropic"]
    model: str
    base_url: str | None = None
    api_key_env: EnvName = "ANTHROPIC_API_KEY"


# The providers' configuration models, one per `model.provider` value (its `provider`
# Literal), each served by the class `models.PROVIDERS` names for that value. This union is
# the one list: the models registry, the prices, the field paths and the knobs read it.
ModelConfig = ScriptedModel | OpenAIModel | AnthropicModel
PROVIDER_MODELS: tuple[type[_ModelCommon], ...] = get_args(ModelConfig)


def provider_of(model: type[_ModelCommon]) -> str:
    """The `model.provider` value a configuration model takes (its `provider` Literal)."""
    value: str = get_args(model.model_fields["provider"].annotation)[0]
    return value


PROVIDER_NAMES: tuple[str, ...] = tuple(provider_of(m) for m in PROVIDER_MODELS)


# --- hooks ---------------------------------------------------------------------------


class NativeHook(Frozen):
    """`{"event": "pre-tool" | "post-tool" | "stop", "command": "PROGRAM ARG…"}`."""

    event: Literal["pre-tool", "post-tool", "stop"]
    command: str

    @field_validator("command")
    @classmethod
    def _one_program(cls, v: str) -> str:
        if "\n" in v or "\r" in v:
            # The command is shown in one line (`hooks list`, the texts the model reads).
            raise ValueError("a line break is refused: a hook command is one line")
        try:
            split_command(v)
        except CommandRefused as exc:
            raise ValueError(str(exc)) from None
        return v


# --- gate, shell, steps --------------------------------------------------------------


class GateRules(Frozen):
    allow: list[str] = Field(default_factory=empty_list)
    deny: list[str] = Field(default_factory=empty_list)


class ShellInputs(Frozen):
    # None = not given here; the settings files and environment may then set it.
    allow_interpreters: bool | None = None
    extra_allowed_commands: list[str] | None = None
    # The OS sandbox of the model's commands and the audit's build and test (docs/security.md):
    # "auto" confines them where the machine allows it and refuses them where it does not;
    # "off" runs them unconfined. Only the inputs set these, never a settings file.
    sandbox: Literal["auto", "off"] = "auto"
    # true: every host; false: none; a list: only those hosts, through orkeon's proxy
    # (policy/hosts.py has the entries' grammar; docs/inputs.md, "`sandbox` and `network`").
    network: Network = False


def _ignore_pattern(pattern: str) -> str:
    from ..policy.pathglob import PathGlob

    if pattern.startswith("!"):
        raise ValueError("a negated pattern ('!…') is not supported: list only what to leave out")
    PathGlob(pattern)  # ValueError names the problem
    return pattern


class Audit(Frozen):
    build: list[str] | None = None
    test: list[str] | None = None
    # Gitignore-style patterns of paths the audit does not count (hook logs, caches).
    ignore: list[Annotated[str, AfterValidator(_ignore_pattern)]] = Field(
        default_factory=empty_list
    )
    # A batch whose roles changed no file fails its audit (else: a warning).
    require_changes: bool = Field(default=False, strict=True)

    @field_validator("build", "test")
    @classmethod
    def _argv(cls, v: list[str] | None) -> list[str] | None:
        if v is not None and (not v or not v[0]):
            raise ValueError("an argv list needs a program")
        return v


class Repair(Frozen):
    """tasks-repair: `run` and `role` (both required there); pipeline: `attempts`, how many
    rounds of repairs a failed batch may get (docs/inputs.md, "repair")."""

    run: str | None = None
    role: str | None = Field(default=None, pattern=r"^[^/]+/[^/]+$")
    attempts: int = Field(default=1, ge=0, le=20)


def _check_relative(path: str) -> str:
    p = PurePosixPath(path)
    if not path or p.is_absolute() or ".." in p.parts or "\x00" in path:
        raise ValueError(f"{path!r} must be a relative path inside the workspace")
    return path


RelPath = Annotated[str, AfterValidator(_check_relative)]


def _check_file_name(path: str) -> str:
    if not PurePosixPath(path).parts or path.endswith("/"):
        raise ValueError(f"{path!r} must name a file, not a folder")
    return path


FileName = Annotated[RelPath, AfterValidator(_check_file_name)]


class PlanRole(Frozen):
    name: str = Field(pattern=NAME_RE.pattern)
    roots: list[RelPath] = Field(min_length=1)
    task: str = Field(min_length=1)


class Batch(Frozen):
    name: str = Field(pattern=NAME_RE.pattern)
    roles: list[PlanRole] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_roles(self) -> Batch:
        names = [r.name for r in self.roles]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"role names repeat: {', '.join(sorted(dup))}")
        return self


class Plan(Frozen):
    title: str = ""
    batches: list[Batch] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_batches(self) -> Plan:
        names = [b.name for b in self.batches]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"batch names repeat: {', '.join(sorted(dup))}")
        return self


class InstructionFiles(Frozen):
    """`instructions`: the names of the project's instruction files, looked for in each
    folder in this order (config/instructions.py; docs/inputs.md, "instructions")."""

    files: list[FileName] = Field(default_factory=lambda: ["AGENTS.md", "CLAUDE.md"])


class Inputs(Frozen):
    # An editor's pointer to the schema (`orkeon schema inputs` saved as a file, or a URL):
    # allowed so a document can name it, and otherwise ignored.
    schema_: str | None = Field(default=None, alias="$schema")
    workspace: str | None = None
    model: ModelConfig = Field(
        default_factory=lambda: ScriptedModel(provider="scripted"), discriminator="provider"
    )
    budget: BudgetLimits = Field(default_factory=BudgetLimits)
    hooks: list[NativeHook] | SettingsHooks = Field(default_factory=empty_list)
    settings: list[str] = Field(default_factory=empty_list)
    # Claude Code plugin folders whose hooks/hooks.json the run adds (hooks/claude/plugins.py).
    plugins: list[str] = Field(default_factory=empty_list)
    gate: GateRules = Field(default_factory=GateRules)
    shell: ShellInputs = Field(default_factory=ShellInputs)
    request: str | None = None
    spec: str = ".orkeon/spec.md"
    plan: str | Plan = ".orkeon/plan.json"
    audit: Audit = Field(default_factory=Audit)
    repair: Repair | None = None
    concurrency: int = Field(default=4, ge=1, le=64)
    # MCP servers by name (config/mcp.py); settings files may add more (config/mcp_sources.py).
    mcp_servers: McpServers = Field(default_factory=dict)
    # task: a JSON Schema (inline, or "@PATH" in the workspace) the answer must match
    # (config/answers.py), and how often an invalid answer is sent back.
    output_schema: Any = None  # checked by config/answers.py: one message for each mistake
    output_retries: int = Field(default=2, ge=0, le=10)
    review: ReviewInputs | None = None
    instructions: InstructionFiles = Field(default_factory=InstructionFiles)
    # dev-batches, tasks-repair, pipeline: write the run's change as a patch file here
    # (relative: the workspace's; checked by run/patch_out.py; docs/inputs.md, "patch").
    patch: str | None = None

    @field_validator("spec")
    @classmethod
    def _spec_relative(cls, v: str) -> str:
        return _check_relative(v)

    @field_validator("plan")
    @classmethod
    def _plan_relative(cls, v: str | Plan) -> str | Plan:
        return _check_relative(v) if isinstance(v, str) else v

    @property
    def native_hooks(self) -> list[NativeHook]:
        return self.hooks if isinstance(self.hooks, list) else []

    @property
    def settings_hooks(self) -> SettingsHooks:
        return self.hooks if isinstance(self.hooks, dict) else {}


# --- reading and error lines ---------------------------------------------------------


# The tags pydantic puts in a location for the member of a union a value was tried as: the
# providers' (`model.openai.model` is `model.model`) and their models', added to the ones
# the leaf knows (config/errorlines.py) where the providers are defined.
UNION_TAGS.update({*PROVIDER_NAMES, *(m.__name__ for m in PROVIDER_MODELS)})
UNION_TAGS.update(HANDLER_TAGS.values())  # a settings-shape handler's type


def parse_inputs(doc: Any) -> Inputs:
    if not isinstance(doc, dict):
        raise InputError("inputs: must be a JSON object")
    try:
        # Strict, as JSON: a value of the wrong JSON type ("4" for an integer) is refused,
        # as the schema says, never coerced; arrays still fill tuples.
        return Inputs.model_validate_json(json.dumps(doc), strict=True)
    except ValidationError as exc:
        raise InputError(error_lines(exc, schema=Inputs.model_json_schema)) from None


def parse_plan(doc: Any, origin: str = "plan") -> Plan:
    try:
        return Plan.model_validate(doc)
    except ValidationError as exc:
        raise InputError(error_lines(exc, prefix=origin, schema=Plan.model_json_schema)) from None
