"""The instruction files' loader (config/instructions.py; docs/inputs.md, "instructions";
docs/security.md, "Project instruction files"): where they are looked for, one per folder,
a symlink out of the workspace never read, the text cut at its limit, trust by digest,
`--bare` reading none, and a resumed run's digests."""

from __future__ import annotations

from pathlib import Path

from orkeon_run.config.instructions import (
    CHANGED,
    CHANGED_IN_RUN,
    DEFAULT_FILES,
    MAX_FILE_BYTES,
    NOT_READ,
    TRUSTED,
    UNTRUSTED,
    load_instructions,
    record_instructions_trust,
    role_folders,
    root_folders,
)
from orkeon_run.config.trust import TRUST_ENV


def files(root: Path, tree: dict[str, str]) -> Path:
    for rel, text in tree.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def load(ws: Path, cfg: Path, roots: tuple[str, ...] = (), **kw: object):  # type: ignore[no-untyped-def]
    env = kw.pop("environ", {})
    return load_instructions(
        ws, DEFAULT_FILES, roots, config_dir=cfg, environ=env, stdin_is_tty=False, **kw
    )


def test_a_roots_folders_are_its_parents_and_itself_when_it_names_a_folder() -> None:
    """ "each folder from the root down to each of a role's roots (`src/api/` looks in
    `src` and `src/api`)"; a file root's folder is its parent; a glob part ends it."""
    assert root_folders("src/api/") == ["src", "src/api"]
    assert root_folders("src/api/x.py") == ["src", "src/api"]
    assert root_folders("README.md") == []
    assert root_folders("pkg/*/tests/") == ["pkg"]
    assert role_folders(["src/api/", "src/web/", "README.md"]) == [
        "", "src", "src/api", "src/web",
    ]  # fmt: skip


def test_only_trusted_files_are_given_and_a_changed_one_is_said_to_be(tmp_path: Path) -> None:
    """ "A file is given only when trusted: its digest recorded by `orkeon hooks trust`";
    "one changed since it was trusted, is not given"."""
    ws = files(tmp_path / "ws", {"AGENTS.md": "root\n", "src/api/CLAUDE.md": "api\n"})
    cfg = tmp_path / "cfg"
    found = load(ws, cfg, ("src/api/",))
    assert [(f.rel, f.status, f.text) for f in found.files] == [
        ("AGENTS.md", UNTRUSTED, ""), ("src/api/CLAUDE.md", UNTRUSTED, ""),
    ]  # fmt: skip
    assert found.for_role(["src/api/"]) == []
    recorded = record_instructions_trust(ws, DEFAULT_FILES, config_dir=cfg)
    assert [p.relative_to(ws.resolve()).as_posix() for p, _ in recorded] == [
        "AGENTS.md", "src/api/CLAUDE.md",
    ]  # fmt: skip
    (ws / "AGENTS.md").write_text("root, changed\n")
    found = load(ws, cfg, ("src/api/",))
    assert [(f.rel, f.status) for f in found.files] == [
        ("AGENTS.md", CHANGED), ("src/api/CLAUDE.md", TRUSTED),
    ]  # fmt: skip
    assert [f.text for f in found.for_role(["src/api/"])] == ["api\n"]
    assert found.for_role(None) == []  # a role with no roots: the root's file only


def test_the_environment_trusts_them_only_when_stdin_is_not_a_terminal(tmp_path: Path) -> None:
    """`ORKEON_TRUST_PROJECT_HOOKS=1` trusts them as it trusts the settings: not on a TTY."""
    ws = files(tmp_path / "ws", {"AGENTS.md": "root\n"})
    env = {TRUST_ENV: "1"}
    assert load(ws, tmp_path / "cfg", environ=env).files[0].status == TRUSTED
    on_tty = load_instructions(
        ws, DEFAULT_FILES, config_dir=tmp_path / "cfg", environ=env, stdin_is_tty=True
    )
    assert on_tty.files[0].status == UNTRUSTED


def test_one_file_per_folder_the_first_name_present(tmp_path: Path) -> None:
    """ "In each folder the first name of `instructions.files` that is there is the
    folder's file; a later name next to it is not read"."""
    ws = files(tmp_path / "ws", {"AGENTS.md": "a\n", "CLAUDE.md": "c\n"})
    found = load(ws, tmp_path / "cfg", environ={TRUST_ENV: "1"})
    assert [(f.rel, f.status, f.why) for f in found.files] == [
        ("AGENTS.md", TRUSTED, ""), ("CLAUDE.md", NOT_READ, "AGENTS.md comes first"),
    ]  # fmt: skip
    assert [f.rel for f in found.for_role(None)] == ["AGENTS.md"]


def test_a_symlink_out_of_the_workspace_is_never_read(tmp_path: Path) -> None:
    """The workspace is hostile: an AGENTS.md that points at a file outside it (a key,
    another repository's secrets) is not read, even with every file trusted; the next
    name in the folder is the folder's file then."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=abc\n")
    ws = files(tmp_path / "ws", {"CLAUDE.md": "c\n"})
    (ws / "AGENTS.md").symlink_to(secret)
    found = load(ws, tmp_path / "cfg", environ={TRUST_ENV: "1"})
    assert [(f.rel, f.status, f.why) for f in found.files] == [
        ("AGENTS.md", NOT_READ, "its real path is outside the workspace"),
        ("CLAUDE.md", TRUSTED, ""),
    ]
    assert "TOKEN" not in "".join(f.text for f in found.files)


def test_a_long_file_is_cut_and_its_digest_covers_all_of_it(tmp_path: Path) -> None:
    """ "A file's text is given up to 32 KiB ... the digest covers the whole file": a
    change past the cut still drops the trust."""
    ws = files(tmp_path / "ws", {"AGENTS.md": "x" * MAX_FILE_BYTES + "TAIL"})
    cfg = tmp_path / "cfg"
    record_instructions_trust(ws, DEFAULT_FILES, config_dir=cfg)
    (f,) = load(ws, cfg).files
    assert f.status == TRUSTED and "TAIL" not in f.text
    assert f.text.endswith(f"[… cut at {MAX_FILE_BYTES} bytes; read AGENTS.md for the rest]")
    (ws / "AGENTS.md").write_text("x" * MAX_FILE_BYTES + "TAIL2")
    assert load(ws, cfg).files[0].status == CHANGED


def test_bare_reads_none(tmp_path: Path) -> None:
    """`--bare` "reads nothing the inputs do not name": no instruction file, trusted or
    not (the flag's wiring is the run's; this is the loader's side)."""
    ws = files(tmp_path / "ws", {"AGENTS.md": "root\n", "src/AGENTS.md": "src\n"})
    assert load(ws, tmp_path / "cfg", ("src/",), environ={TRUST_ENV: "1"}).files
    assert load(ws, tmp_path / "cfg", ("src/",), environ={TRUST_ENV: "1"}, bare=True).files == ()


def test_a_resumed_run_does_not_give_a_file_changed_since_its_first_start(
    tmp_path: Path,
) -> None:
    """ "A resumed run (and a repair) compares with the digests its first start saved":
    with every file trusted by the environment, a file a role rewrote before the run
    stopped is not given on --resume."""
    ws = files(tmp_path / "ws", {"AGENTS.md": "root\n", "src/AGENTS.md": "src\n"})
    env = {TRUST_ENV: "1"}
    first = load(ws, tmp_path / "cfg", ("src/",), environ=env)
    saved = first.saved
    (ws / "AGENTS.md").write_text("rewritten by a role\n")
    resumed = load(ws, tmp_path / "cfg", ("src/",), environ=env).since(saved)
    assert [(f.rel, f.status) for f in resumed.files] == [
        ("AGENTS.md", CHANGED_IN_RUN), ("src/AGENTS.md", TRUSTED),
    ]  # fmt: skip
    assert [f.rel for f in resumed.for_role(["src/"])] == ["src/AGENTS.md"]


def test_a_file_not_there_at_the_first_start_is_not_given_either(tmp_path: Path) -> None:
    """ "Not there then" counts as changed: with every file trusted by the environment, an
    AGENTS.md a role created in a root's folder before the run stopped is not given on
    --resume; the earlier digest is kept for a pipeline's steps to compare with."""
    ws = files(tmp_path / "ws", {"AGENTS.md": "root\n"})
    env = {TRUST_ENV: "1"}
    saved = load(ws, tmp_path / "cfg", ("src/",), environ=env).saved
    assert list(saved) == ["AGENTS.md"]
    files(ws, {"src/AGENTS.md": "planted\n", "AGENTS.md": "rewritten\n"})
    resumed = load(ws, tmp_path / "cfg", ("src/",), environ=env).since(saved)
    assert [(f.rel, f.status) for f in resumed.files] == [
        ("AGENTS.md", CHANGED_IN_RUN), ("src/AGENTS.md", CHANGED_IN_RUN),
    ]  # fmt: skip
    assert resumed.for_role(["src/"]) == []
    assert resumed.saved == saved  # what the first start read, not what is there now


def test_everywhere_reads_every_folder_but_gits_and_orkeons(tmp_path: Path) -> None:
    """A pipeline's start: every folder's file, `.git/` and `.orkeon/` left out."""
    tree = {"AGENTS.md": "r\n", "a/b/CLAUDE.md": "ab\n", ".git/AGENTS.md": "g\n",
            ".orkeon/runs/x/AGENTS.md": "o\n", ".claude/AGENTS.md": "c\n"}  # fmt: skip
    ws = files(tmp_path / "ws", tree)
    found = load(ws, tmp_path / "cfg", everywhere=True)
    assert [f.rel for f in found.files] == [
        "AGENTS.md", ".claude/AGENTS.md", "a/b/CLAUDE.md",
    ]  # fmt: skip
