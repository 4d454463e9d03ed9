"""What a step runner receives and returns.

`runner.py` builds a `StepRun` from the run's configuration (prepare.py) and its run
directory, ledger, events, provider and hooks, and calls the step's
`async run(sr: StepRun) -> StepOutcome`. The runner turns the outcome into the result
document and the exit code; a step runner never writes result.json itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..calls import BUILTINS, Catalog
from ..catalog import TOOLS
from ..config.inputs import Inputs
from ..environ import scrubbed
from ..errors import RecordsError
from ..events import EventLog
from ..hooks import NO_HOOKS, chain
from ..jsonio import atomic_write_json
from ..ledger import Ledger
from ..pipeline import Pipeline
from ..policy.guards import guard
from ..policy.paths import PathOutside, contains, relative, resolve_in_workspace
from ..tools import ToolEnv
from ..vocabulary import ErrorKind, StepStatus
from .prepare import RunConfig
from .secrets import consumed_names

if TYPE_CHECKING:
    from ..agent.loop import RoleResult
    from ..hooks import Hooks
    from ..models.base import Provider
    from ..pipeline import Pipeline
    from ..policy.rules import RuleSet
    from ..tools.sandbox import SandboxPolicy
    from ..tools.sandbox.proxy import EgressProxy
    from .audit import AuditGit, Commands
    from .records import RunRecords


@dataclass
class StepRun:
    config: RunConfig
    run_dir: Path
    run_id: str
    ledger: Ledger
    events: EventLog
    provider: Provider
    hooks: Hooks
    resume: bool = False
    # Saved state of an earlier attempt of this run (--resume): see rundir.RunDir.state.
    state: dict[str, Any] = field(default_factory=dict)
    # Every agent the step started, by role: when the step is interrupted the runner still
    # reports each role's status and counts from here.
    agents: dict[str, Any] = field(default_factory=dict)
    # The run's MCP servers (tools/mcp/hub.McpHub), None when no role names one; and the
    # run's catalog, its tools added once they started (runner.py).
    mcp: Any = None
    catalog: Catalog = BUILTINS
    # The environment the run reads (keys, ORKEON_* knobs); None: orkeon's own.
    environ: Mapping[str, str] | None = None
    # A step that runs other steps (pipeline) says here what it has when it is cut short;
    # the runner asks it instead of reading `agents`.
    partial: Callable[[StepStatus, str], StepOutcome] | None = None
    # The run directory's sealed records (records.py); None: written unsealed (tests).
    records: RunRecords | None = None
    # The run directory the rule set `orkeon` guards (a pipeline's, for its steps); None:
    # `run_dir`.
    guarded_dir: Path | None = None
    # The roles' shell sandbox, made on the first `pipeline()` (run/confine.py).
    _shell_policy: SandboxPolicy | None = field(default=None, init=False, repr=False)
    # The network allow-lists' proxies (one per list), made when a sandbox first needs
    # one; stopped with the run (run/mcp.py `run_servers`).
    _egress: dict[tuple[str, ...], EgressProxy] = field(
        default_factory=dict, init=False, repr=False
    )

    def __post_init__(self) -> None:
        self.config.confinement.announce()  # stderr, as the run starts: unconfined, or none

    @property
    def step(self) -> str:
        assert self.config.step is not None
        return self.config.step

    @property
    def inputs(self) -> Inputs:
        return self.config.inputs

    @property
    def workspace(self) -> Path:
        return self.config.workspace

    def transcript_path(self, role: str) -> Path:
        """`b1/api` -> RUN_DIR/transcripts/b1/api.jsonl."""
        return self.run_dir / "transcripts" / f"{role}.jsonl"

    def role_tools(self, entries: Sequence[str]) -> tuple[tuple[str, ...], Catalog]:
        """A role's tools from its crew entries: the names offered to its model and the
        catalog of what it may call (the built-ins, and the MCP tools its entries select),
        with the run's own check first: the shell where no sandbox can be made here."""
        if self.mcp is None:
            names, catalog = tuple(e for e in entries if e in TOOLS), BUILTINS
        else:
            from ..tools.mcp.tool import role_tools  # only a run with MCP servers loads them

            names, catalog = role_tools(entries, self.catalog, self.mcp)
        check = self.config.confinement.unavailable_check()
        return names, catalog if check is None else catalog.with_check(check)

    def claude_transcript_path(self, role: str) -> Path:
        """`b1/api` -> RUN_DIR/claude-transcripts/b1/api.jsonl: the role's conversation in
        Claude Code's shape, the `transcript_path` settings-shape hooks read (written only
        when the step has such hooks)."""
        return self.run_dir / "claude-transcripts" / f"{role}.jsonl"

    def pipeline(self, rule_sets: Sequence[RuleSet], own_output: str | None = None) -> Pipeline:
        """The step's pipeline with `rule_sets` (the crew's) after the built-in `orkeon`
        set (policy/guards.py), which keeps every role off orkeon's own files; `own_output`
        (workspace-relative) is the one file under `.orkeon/` the role may write: the
        writer's spec, the planner's plan. The shell tool runs in the step's sandbox (each
        call narrowed to the calling role's roots); where no sandbox can be made, the
        roles' catalogs refuse it in stage 2 (`role_tools`)."""
        return Pipeline(
            workspace=self.workspace,
            step=self.step,
            ledger=self.ledger,
            events=self.events,
            tool_env=ToolEnv(
                workspace=self.workspace,
                shell_rules=self.config.shell_rules,
                environ=child_environ(self.config, credentials=True),
                sandbox=self.role_sandbox(),
                mcp=self.mcp,
            ),
            gate=self.config.gate,
            rule_sets=[self.guard(own_output), *rule_sets, *self.git_mcp_rules(rule_sets)],
            hooks=self.hooks,
        )

    def git_mcp_rules(self, rule_sets: Sequence[RuleSet]) -> list[RuleSet]:
        """Where the step's rule sets read git as read-only (the batch), the rule set that
        refuses the tools of git-shaped MCP servers the gate does not allow
        (policy/mcpgit.py)."""
        from ..policy import mcpgit

        if self.mcp is None or not any(c.name == mcpgit.CHECK for r in rule_sets for c in r.checks):
            return []
        servers = {n: (s.argv, s.git) for n, s in self.config.mcp_servers.items()}
        allow = self.config.gate.rules.allow
        found = mcpgit.git_tool_rules(
            servers,
            (t.name for t in self.catalog.added),
            lambda tool: any(r.matches(tool, ()) for r in allow),
        )
        return [found] if found is not None else []

    @property
    def sandbox(self) -> str:
        """The run's shell sandbox, for its result: "on", "off" or "unavailable"."""
        return self.config.confinement.state

    @property
    def mcp_sandbox(self) -> dict[str, str] | None:
        """How the step's stdio MCP servers ran, for its result (run/confine.py)."""
        return self.config.confinement.mcp_states(self.config.mcp_needed)

    def role_sandbox(self) -> SandboxPolicy | None:
        """The roles' sandbox (no roots: each call narrows it to the calling role's), made
        on first use, for the shell tool and the confined MCP servers; None when off."""
        if self._shell_policy is None and self.config.confinement.state != "off":
            self._shell_policy = self.config.confinement.role_policy(
                self.workspace, self.hidden_run_dir, self.egress()
            )
        return self._shell_policy

    @property
    def unpinned(self) -> list[str]:
        """The files pinned at run start whose content changed since (config/pins.py)."""
        return self.config.pins.changed_all()

    @property
    def hidden_run_dir(self) -> Path:
        """The run directory the sandboxed commands may not see (a pipeline's own, for one
        of its steps)."""
        return (self.guarded_dir or self.run_dir).resolve()

    def audit_git(self) -> AuditGit:
        """The audit's git: the program found before any role ran, its switches, and the
        sandbox it runs in when the sandbox is on."""
        return self.config.confinement.audit_git(self.hidden_run_dir)

    def audit_commands(self) -> Commands:
        """How the audit's build and test run (run/confine.py): with orkeon's environment
        less the model's key (a build may need a registry token)."""
        env = child_environ(self.config, credentials=False)
        return self.config.confinement.audit_commands(
            self.workspace, env, self.hidden_run_dir, self.egress()
        )

    def egress(self, network: bool | Sequence[str] | None = None) -> EgressProxy | None:
        """The run's proxy for an allow-list: `network` (a stdio MCP server's
        `mcp_servers.NAME.network`; None: `shell.network`). None when the setting is true
        or false, or without a sandbox. Made on first use, started by the first command
        that needs it; each host it refuses is a `network.refused` event (docs/output.md)."""
        given = self.config.confinement.network if network is None else network
        if isinstance(given, bool) or self.config.confinement.state != "on":
            return None
        key = tuple(given)
        if key not in self._egress:
            # Loaded only by a run whose network is an allow-list.
            from ..policy.hosts import AllowList
            from ..tools.sandbox.proxy import EgressProxy, mapped_hosts

            self._egress[key] = EgressProxy(
                AllowList.parse(key), on_refused=self._refused, hosts=mapped_hosts(self.environ)
            )
        return self._egress[key]

    def _refused(self, fields: dict[str, Any]) -> None:
        self.events.emit("network.refused", step=self.step, **fields)

    def close_network(self) -> None:
        """Stop the run's proxies, those that started."""
        for proxy in self._egress.values():
            proxy.close()

    @property
    def network(self) -> dict[str, int]:
        """The result's `network`: how many hosts the allow-lists refused (docs/output.md)."""
        return {"refused": sum(p.refused for p in self._egress.values())}

    def guard(self, own_output: str | None = None) -> RuleSet:
        ws = self.workspace
        run_dir = (self.guarded_dir or self.run_dir).resolve()
        rel_run = relative(ws, run_dir) if contains(str(ws), str(run_dir)) else None
        own = None
        if own_output is not None:
            try:
                own = relative(ws, resolve_in_workspace(ws, own_output))
            except PathOutside:
                own = None
        return guard(rel_run, own, pinned=self.config.pins.paths)

    def save_state(self, **changes: Any) -> None:
        """Record progress (e.g. batches that passed) so --resume can continue. Raises
        RecordsError when the disk refuses."""
        self.state.update(changes)
        self.write_record("state.json", self.state)

    def write_record(self, name: str, obj: Any) -> None:
        """RUN_DIR/NAME (state.json, result.json), whole, redacted and sealed."""
        if self.records is not None:
            self.records.write(name, obj)
            return

        try:
            atomic_write_json(self.run_dir / name, obj)
        except OSError as exc:
            raise RecordsError.writing(self.run_dir / name, exc) from None


def with_saved_pins(config: RunConfig, state: Mapping[str, Any]) -> RunConfig:
    """`config` pinned as of the run's first start: a resumed run keeps the digests its
    state saved, a tasks-repair those of the run it repairs (docs/security.md, "Guards"),
    so a file changed in an earlier attempt is still changed. So do the instruction files
    (config/instructions.py): one changed since the first start is not given."""
    pins = config.pins.since(state.get("pins"))  # the earliest start's digests win
    instructions = config.instructions.since(state.get("instructions"))
    if config.repair is not None:
        pins = pins.since(config.repair.state.get("pins"))
        instructions = instructions.since(config.repair.state.get("instructions"))
    config = replace(config, instructions=instructions)
    if pins.digests == config.pins.digests:
        return config
    confinement = replace(config.confinement, pinned=pins.paths)
    return replace(config, pins=pins, confinement=confinement)


def child_environ(config: RunConfig, *, credentials: bool) -> dict[str, str]:
    """The environment of a program the step starts: never the model's key nor any
    variable orkeon consumes (environ.scrubbed, run/secrets.py); with `credentials`, no
    credential-like variable either (the shell tool, hooks and MCP servers, which the
    model steers). The audit's build and tests keep the others."""
    return scrubbed(consumed_names(config), credentials=credentials)


def step_hooks(
    config: RunConfig,
    events: EventLog,
    provider: Provider | None = None,
    environ: Mapping[str, str] | None = None,
) -> Hooks:
    """The step's hooks: native ones first, then settings-shape ones. `provider`: the
    run's, which a settings-shape `prompt` hook asks unless it names a `model`."""
    native: Hooks = NO_HOOKS
    if config.inputs.native_hooks:
        from ..hooks.native import NativeHooks  # only a run with native hooks

        native = NativeHooks(
            config.inputs.native_hooks,
            workspace=config.workspace,
            program_rules=config.shell_rules,
            env=child_environ(config, credentials=True),
            pins=config.pins,
        )
    settings: Hooks = NO_HOOKS
    if config.settings_hooks:
        # Loaded only for a run that has settings-shape hooks (tests/commands/test_imports.py).
        from ..hooks.claude.settings import SettingsHooks

        settings = SettingsHooks(
            config.settings_hooks,
            workspace=config.workspace,
            events=events,
            extra_env_remove=consumed_names(config),
            pins=config.pins,
            provider_for=_hook_models(config, provider, environ) if provider else None,
        )
    return chain([native, settings])


def _hook_models(
    config: RunConfig, provider: Provider, environ: Mapping[str, str] | None
) -> Callable[[str | None], Provider]:
    """A prompt hook's provider: the run's, or for a hook naming `model` the run's
    provider configuration with that model (made once per name; the scripted provider
    has no model names: the run's)."""
    made: dict[str, Provider] = {}

    def provider_for(model: str | None) -> Provider:
        if model is None or "model" not in type(config.inputs.model).model_fields:
            return provider
        if model not in made:
            from ..models import build_provider

            cfg = config.inputs.model.model_copy(update={"model": model})
            made[model] = build_provider(cfg, environ=environ)
        return made[model]

    return provider_for


# The kind of error a step that did not succeed has when its outcome names none.
STATUS_KIND: dict[str, ErrorKind] = {
    "failed": "role",
    "budget_exhausted": "budget",
    "interrupted": "interrupted",
    "error": "internal",
}


@dataclass
class StepOutcome:
    status: StepStatus
    roles: list[RoleResult] = field(default_factory=list)
    artifacts: dict[str, str] = field(default_factory=dict)
    audits: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    steps: list[dict[str, Any]] | None = None  # a pipeline's steps (docs/output.md)
    # Why the step did not succeed (the result's `error.kind`); None: its status's kind.
    kind: ErrorKind | None = None
    # The step's own fields of the result document: `output` (task, run/steps/answer.py),
    # `checks` (review); written whatever the status, so a failed check is read too.
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def error_kind(self) -> ErrorKind | None:
        if self.status == "succeeded":
            return None
        return self.kind or STATUS_KIND[self.status]
