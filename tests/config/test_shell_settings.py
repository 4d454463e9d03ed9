"""orkeon_run.config.shell_settings: the program rules of docs/inputs.md and where their settings
come from (real settings files in tmp_path, environment given as dicts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orkeon_run.config.inputs import ShellInputs
from orkeon_run.config.shell_settings import resolve_shell_rules, user_config_dir
from orkeon_run.errors import InputError
from orkeon_run.policy.programs import BASE_PROGRAMS, INTERPRETERS, ShellRules

BASE = "cat cp cut diff echo false git grep head ls mkdir mv pwd sleep sort tail test touch tr"
BASE += " true uniq wc"
INTERP = "node npm dotnet find python python3"


def test_lists_are_the_interfaces() -> None:
    """docs/inputs.md: "The program must be on the base list (`cat cp cut diff echo false git
    grep head ls mkdir mv pwd sleep sort tail test touch tr true uniq wc`), or an
    interpreter (`node npm dotnet find python python3`) with `allow_interpreters`" """
    assert frozenset(BASE.split()) == BASE_PROGRAMS
    assert frozenset(INTERP.split()) == INTERPRETERS


@pytest.mark.parametrize("prog", sorted(BASE_PROGRAMS))
def test_base_list_is_allowed(prog: str) -> None:
    assert ShellRules().refusal([prog, "--help"]) is None


@pytest.mark.parametrize("prog", sorted(INTERPRETERS))
def test_interpreters_need_allow_interpreters(prog: str) -> None:
    why = ShellRules().refusal([prog, "x"])
    assert why is not None and "allow_interpreters" in why and prog in why
    assert ShellRules(allow_interpreters=True).refusal([prog, "x"]) is None


def test_others_need_extra_allowed_commands() -> None:
    """docs/inputs.md: "or listed in `extra_allowed_commands` (`bash` for a shell script)" """
    why = ShellRules(allow_interpreters=True).refusal(["bash", "x.sh"])
    assert why == (
        "program 'bash' is not allowed (allowed: the base list; interpreters need "
        "allow_interpreters; others need extra_allowed_commands)"
    )
    assert ShellRules(extra_allowed_commands=("bash",)).refusal(["bash", "x.sh"]) is None
    assert ShellRules().refusal(["rm", "-rf", "/"]) is not None


def test_extra_list_may_name_an_interpreter() -> None:
    assert ShellRules(extra_allowed_commands=("node",)).refusal(["node", "x.mjs"]) is None


def test_program_given_by_path_must_be_listed_by_that_path() -> None:
    """docs/inputs.md: "A program given by path (`./x.sh`, `/usr/bin/env`) must be listed by
    that path." """
    rules = ShellRules(allow_interpreters=True, extra_allowed_commands=("./x.sh", "env"))
    assert rules.refusal(["./x.sh"]) is None
    for prog in ["/usr/bin/env", "./y.sh", "/bin/cat", "/usr/bin/python3", "./env"]:
        assert rules.refusal([prog]) == (
            f"program {prog!r} is given by path: it must be listed by exactly that path "
            "in extra_allowed_commands"
        )
    assert "not allowed" in (rules.refusal(["x.sh"]) or "")  # a bare name, not ./x.sh
    assert ShellRules(extra_allowed_commands=("/usr/bin/env",)).refusal(["/usr/bin/env"]) is None
    # A base-list name given by path is a path, not the name.
    assert ShellRules().refusal(["/bin/cat", "f"]) is not None
    assert ShellRules().refusal(["sub/cat"]) is not None


def test_bare_name_never_looks_at_path(tmp_path: Path) -> None:
    """A bare name is judged by the lists alone, whatever PATH holds."""
    assert ShellRules().refusal(["python3"]) is not None  # on PATH here, still refused
    assert ShellRules().refusal(["orkeon-no-such-program"]) is not None
    assert ShellRules().refusal(["uniq"]) is None


def test_empty_argv() -> None:
    assert ShellRules().refusal([]) == "the command is empty"


# --- settings -------------------------------------------------------------------------


def settings_doc(**shell: Any) -> str:
    return json.dumps({"Orkeon": {"Tools": {"Shell": shell}}, "hooks": {}})


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """(workspace, user config dir), both empty of settings."""
    ws = tmp_path / "ws"
    (ws / ".orkeon").mkdir(parents=True)
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    return ws, cfg


def resolve(
    places: tuple[Path, Path],
    shell: ShellInputs | None = None,
    *,
    trusted: bool = True,
    environ: dict[str, str] | None = None,
) -> ShellRules:
    ws, cfg = places
    return resolve_shell_rules(
        shell or ShellInputs(),
        workspace=ws,
        workspace_trusted=trusted,
        environ=environ or {},
        config_dir=cfg,
    )


def test_nothing_set_gives_the_defaults(places: tuple[Path, Path]) -> None:
    assert resolve(places) == ShellRules(False, ())


def test_user_file(places: tuple[Path, Path]) -> None:
    _, cfg = places
    (cfg / "settings.json").write_text(
        settings_doc(AllowInterpreters=True, ExtraAllowedCommands=["bash"])
    )
    assert resolve(places) == ShellRules(True, ("bash",))


def test_workspace_file_beats_user_file(places: tuple[Path, Path]) -> None:
    ws, cfg = places
    (cfg / "settings.json").write_text(
        settings_doc(AllowInterpreters=True, ExtraAllowedCommands=["user"])
    )
    (ws / ".orkeon" / "settings.json").write_text(settings_doc(ExtraAllowedCommands=["ws"]))
    # Keys merge: the workspace file sets one key, the user file's other key stays.
    assert resolve(places) == ShellRules(True, ("ws",))


def test_untrusted_workspace_file_is_ignored(places: tuple[Path, Path]) -> None:
    """ISSUE 3: "the workspace file only when trusted, like its hooks: a cloned repository
    must not widen what the model may run" """
    ws, _ = places
    (ws / ".orkeon" / "settings.json").write_text(
        settings_doc(AllowInterpreters=True, ExtraAllowedCommands=["bash"])
    )
    assert resolve(places, trusted=False) == ShellRules(False, ())
    assert resolve(places, trusted=True) == ShellRules(True, ("bash",))


def test_untrusted_workspace_file_is_not_even_checked(places: tuple[Path, Path]) -> None:
    ws, _ = places
    (ws / ".orkeon" / "settings.json").write_text("{not json")
    assert resolve(places, trusted=False) == ShellRules(False, ())


def test_environment_beats_files(places: tuple[Path, Path]) -> None:
    ws, cfg = places
    (cfg / "settings.json").write_text(settings_doc(AllowInterpreters=True))
    (ws / ".orkeon" / "settings.json").write_text(settings_doc(ExtraAllowedCommands=["ws"]))
    env = {
        "Orkeon__Tools__Shell__AllowInterpreters": "false",
        "Orkeon__Tools__Shell__ExtraAllowedCommands": '["bash", "./x.sh"]',
    }
    assert resolve(places, environ=env) == ShellRules(False, ("bash", "./x.sh"))


def test_environment_dotnet_indexed_list(places: tuple[Path, Path]) -> None:
    env = {
        "Orkeon__Tools__Shell__ExtraAllowedCommands__1": "make",
        "Orkeon__Tools__Shell__ExtraAllowedCommands__0": "bash",
        "ORKEON__TOOLS__SHELL__ALLOWINTERPRETERS": "true",
    }
    assert resolve(places, environ=env) == ShellRules(True, ("bash", "make"))


def test_inputs_beat_environment(places: tuple[Path, Path]) -> None:
    """ISSUE 3: "`--inputs` wins over the environment, which wins over the files" """
    env = {
        "Orkeon__Tools__Shell__AllowInterpreters": "true",
        "Orkeon__Tools__Shell__ExtraAllowedCommands": '["bash"]',
    }
    got = resolve(places, ShellInputs(allow_interpreters=False), environ=env)
    assert got == ShellRules(False, ("bash",))
    got = resolve(places, ShellInputs(extra_allowed_commands=[]), environ=env)
    assert got == ShellRules(True, ())


def test_full_precedence_chain(places: tuple[Path, Path]) -> None:
    ws, cfg = places
    (cfg / "settings.json").write_text(settings_doc(ExtraAllowedCommands=["user"]))
    assert resolve(places).extra_allowed_commands == ("user",)
    (ws / ".orkeon" / "settings.json").write_text(settings_doc(ExtraAllowedCommands=["ws"]))
    assert resolve(places).extra_allowed_commands == ("ws",)
    env = {"Orkeon__Tools__Shell__ExtraAllowedCommands": '["env"]'}
    assert resolve(places, environ=env).extra_allowed_commands == ("env",)
    shell = ShellInputs(extra_allowed_commands=["inputs"])
    assert resolve(places, shell, environ=env).extra_allowed_commands == ("inputs",)


def test_keys_match_case_insensitively(places: tuple[Path, Path]) -> None:
    _, cfg = places
    (cfg / "settings.json").write_text(
        json.dumps({"orkeon": {"tools": {"shell": {"allowInterpreters": True}}}})
    )
    assert resolve(places).allow_interpreters is True


def test_other_keys_are_ignored(places: tuple[Path, Path]) -> None:
    _, cfg = places
    doc = {"theme": "dark", "Orkeon": {"Model": {}, "Tools": {"Web": 1, "Shell": {"X": 1}}}}
    (cfg / "settings.json").write_text(json.dumps(doc))
    assert resolve(places) == ShellRules(False, ())


def test_config_dir_defaults_to_orkeon_config_dir(tmp_path: Path) -> None:
    cfg = tmp_path / "elsewhere"
    cfg.mkdir()
    (cfg / "settings.json").write_text(settings_doc(AllowInterpreters=True))
    rules = resolve_shell_rules(
        ShellInputs(),
        workspace=tmp_path,
        workspace_trusted=False,
        environ={"ORKEON_CONFIG_DIR": str(cfg)},
    )
    assert rules.allow_interpreters is True
    assert user_config_dir({}) == Path.home() / ".config" / "orkeon"


@pytest.mark.parametrize(
    ("shell", "key"),
    [
        ({"AllowInterpreters": "maybe"}, "Orkeon:Tools:Shell:AllowInterpreters"),
        ({"ExtraAllowedCommands": "bash"}, "Orkeon:Tools:Shell:ExtraAllowedCommands"),
        ({"ExtraAllowedCommands": [""]}, "Orkeon:Tools:Shell:ExtraAllowedCommands"),
        ({"ExtraAllowedCommands": [1]}, "Orkeon:Tools:Shell:ExtraAllowedCommands"),
    ],
)
def test_bad_value_in_a_file_names_file_and_key(
    places: tuple[Path, Path], shell: dict[str, Any], key: str
) -> None:
    ws, cfg = places
    for path in (cfg / "settings.json", ws / ".orkeon" / "settings.json"):
        path.write_text(settings_doc(**shell))
        with pytest.raises(InputError) as info:
            resolve(places)
        assert str(info.value).startswith(f"{path}: {key}: ")
        assert info.value.exit_code == 2
        path.unlink()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "not JSON"),
        ("[]", "must be a JSON object"),
        ('{"Orkeon": []}', "Orkeon: must be an object"),
        ('{"Orkeon": {"Tools": {"Shell": 3}}}', "Orkeon:Tools:Shell: must be an object"),
    ],
)
def test_bad_file_shape_names_the_file(places: tuple[Path, Path], text: str, says: str) -> None:
    _, cfg = places
    (cfg / "settings.json").write_text(text)
    with pytest.raises(InputError) as info:
        resolve(places)
    assert str(info.value).startswith(f"{cfg / 'settings.json'}: ")
    assert says in str(info.value)


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("Orkeon__Tools__Shell__AllowInterpreters", "perhaps"),
        ("Orkeon__Tools__Shell__ExtraAllowedCommands", "bash"),
        ("Orkeon__Tools__Shell__ExtraAllowedCommands", '{"a": 1}'),
    ],
)
def test_bad_environment_value_names_the_variable(
    places: tuple[Path, Path], var: str, value: str
) -> None:
    with pytest.raises(InputError) as info:
        resolve(places, environ={var: value})
    assert str(info.value).startswith(f"environment variable {var}: ")


def test_empty_environment_value_is_unset(places: tuple[Path, Path]) -> None:
    env = {"Orkeon__Tools__Shell__AllowInterpreters": ""}
    assert resolve(places, environ=env) == ShellRules(False, ())


def test_environ_defaults_to_the_process_environment(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("Orkeon__Tools__Shell__AllowInterpreters", "true")
    ws, cfg = places
    rules = resolve_shell_rules(
        ShellInputs(), workspace=ws, workspace_trusted=False, config_dir=cfg
    )
    assert rules.allow_interpreters is True


def test_importing_does_not_import_pydantic_settings() -> None:
    """Cheap to import: pydantic-settings loads only when settings are resolved."""
    code = (
        "import sys, orkeon_run.config.shell_settings; "
        "print('pydantic_settings' in sys.modules, 'pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
