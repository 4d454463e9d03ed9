"""Tools act on the path that was checked (docs/security.md, "The workspace path checks"):
a symlink swapped in while a pre-tool hook runs (here the hook swaps it itself, standing
for another process racing the call) sends no read, edit or write outside the workspace.
Through a real run: the gate, roots and hooks see `src/…` inside; the tool then finds a
folder, or the file itself, turned into a symlink out."""

from __future__ import annotations

from pathlib import Path

import pytest
from kit.steps import calls, make_workspace, run_step, scripted, write

PLAN = {"batches": [{"name": "b1", "roles": [{"name": "a", "roots": ["src/"], "task": "t"}]}]}
SWAP = {
    # src/ becomes a symlink to the folder outside; put back after the call.
    "folder": ("[ -L src ] || { mv src src.real && ln -s {out} src; }",
               "[ -L src ] && rm src && mv src.real src; true"),
    # src/data.txt becomes a symlink to the secret outside.
    "file": ("[ -L src/data.txt ] || { mv src/data.txt src/data.real && "
             "ln -s {out}/data.txt src/data.txt; }",
             "[ -L src/data.txt ] && rm src/data.txt && mv src/data.real src/data.txt; true"),
}  # fmt: skip
MOVED = {
    "folder": "changed after the call was checked (a folder on its path is no folder any more)",
    "file": "changed after the call was checked (it is a symlink now)",
}


def script(path: Path, body: str) -> str:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("what", ["folder", "file"])
def test_a_symlink_swapped_in_during_a_hook_redirects_nothing(tmp_path: Path, what: str) -> None:
    ws = make_workspace(tmp_path, {"src/data.txt": "inside\n"})
    out = tmp_path / "outside"
    out.mkdir()
    (out / "data.txt").write_text("SECRET outside\n")
    swap, restore = (s.replace("{out}", str(out)) for s in SWAP[what])
    pre = script(tmp_path / "swap.sh", swap)
    post = script(tmp_path / "restore.sh", restore)
    edit = {
        "tool": "file_edit",
        "input": {"file_path": "src/data.txt", "old_string": "SECRET", "new_string": "owned"},
    }
    calls_made = [{"tool": "file_read", "input": {"file_path": "src/data.txt"}}, edit,
                  write("src/data.txt", "overwritten\n"), write("src/new.txt", "new\n")]  # fmt: skip
    doc = scripted(
        {"b1/a": [{"tool_calls": calls_made}, {"text": "done"}]},
        plan=PLAN,
        hooks=[{"event": "pre-tool", "command": pre}, {"event": "post-tool", "command": post}],
        shell={"extra_allowed_commands": [pre, post]},
    )
    rd = tmp_path / "run"
    run_step("dev-batches", doc, ws, run_dir=rd)
    read, edited, overwritten, created = (c["result"] for c in calls(rd, "b1/a"))
    assert read == f"error: src/data.txt {MOVED[what]}"
    assert edited == f"error: src/data.txt {MOVED[what]}"
    assert (out / "data.txt").read_text() == "SECRET outside\n"  # never written through
    assert sorted(p.name for p in out.iterdir()) == ["data.txt"]
    if what == "folder":
        assert overwritten == f"error: src/data.txt {MOVED[what]}"
        assert created == f"error: src/new.txt {MOVED[what]}"
        assert (ws / "src/data.txt").read_text() == "inside\n"
    else:
        # The write replaces the symlink with a file of its own, in the checked folder.
        assert overwritten == "updated src/data.txt (12 bytes)"
        assert created == "created src/new.txt (4 bytes)"


def test_a_folder_swapped_in_during_a_hook_is_not_listed_or_searched(tmp_path: Path) -> None:
    """list_files and search_files walk the checked folder through descriptors: a folder
    turned into a symlink out after the check is not followed."""
    ws = make_workspace(tmp_path, {"src/data.txt": "inside\n"})
    out = tmp_path / "outside"
    out.mkdir()
    (out / "data.txt").write_text("SECRET outside\n")
    swap, restore = (s.replace("{out}", str(out)) for s in SWAP["folder"])
    pre = script(tmp_path / "swap.sh", swap)
    post = script(tmp_path / "restore.sh", restore)
    calls_made = [
        {"tool": "list_files", "input": {"path": "src"}},
        {"tool": "search_files", "input": {"pattern": "SECRET", "path": "src"}},
        {"tool": "search_files", "input": {"pattern": "SECRET", "path": "src/data.txt"}},
    ]
    doc = scripted(
        {"b1/a": [{"tool_calls": calls_made}, {"text": "done"}]},
        plan=PLAN,
        hooks=[{"event": "pre-tool", "command": pre}, {"event": "post-tool", "command": post}],
        shell={"extra_allowed_commands": [pre, post]},
    )
    rd = tmp_path / "run"
    run_step("dev-batches", doc, ws, run_dir=rd)
    listed, searched, searched_file = (c["result"] for c in calls(rd, "b1/a"))
    assert listed == "error: src changed after the call was checked (it is a symlink now)"
    assert searched == "error: src changed after the call was checked (it is a symlink now)"
    assert searched_file == f"error: src/data.txt {MOVED['folder']}"
