"""orkeon_run.policy.paths: model-written paths resolved inside the workspace and roots, on real
files and symlinks in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from orkeon_run.policy.paths import (
    PathOutside,
    join_resolved,
    relative,
    resolve_in_workspace,
    within_roots,
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with src/a, src/ab, a file, and a folder outside it."""
    root = (tmp_path / "ws").resolve()
    (root / "src" / "a").mkdir(parents=True)
    (root / "src" / "ab").mkdir()
    (root / "src" / "a" / "x.py").write_text("x\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret\n")
    return root


def test_relative_path_resolves_inside(ws: Path) -> None:
    assert resolve_in_workspace(ws, "src/a/x.py") == ws / "src" / "a" / "x.py"


def test_not_yet_existing_tail_is_allowed(ws: Path) -> None:
    assert resolve_in_workspace(ws, "new/dir/f.txt") == ws / "new" / "dir" / "f.txt"


def test_dot_is_the_workspace(ws: Path) -> None:
    assert resolve_in_workspace(ws, ".") == ws
    assert resolve_in_workspace(ws, "./") == ws


@pytest.mark.parametrize("raw", ["..", "../outside/secret.txt", "src/../../outside", "a/../../x"])
def test_dotdot_leaving_is_refused(ws: Path, raw: str) -> None:
    """DESIGN.md: "`..`, absolute paths, and symlinks that leave the tree are refused." """
    with pytest.raises(PathOutside) as info:
        resolve_in_workspace(ws, raw)
    assert info.value.path == raw


def test_dotdot_staying_inside_is_fine(ws: Path) -> None:
    assert resolve_in_workspace(ws, "src/../src/a/x.py") == ws / "src" / "a" / "x.py"


def test_absolute_outside_is_refused(ws: Path) -> None:
    for raw in ["/etc/passwd", str(ws.parent / "outside" / "secret.txt"), "/"]:
        with pytest.raises(PathOutside):
            resolve_in_workspace(ws, raw)


def test_absolute_inside_is_accepted(ws: Path) -> None:
    raw = str(ws / "src" / "a" / "x.py")
    assert resolve_in_workspace(ws, raw) == ws / "src" / "a" / "x.py"
    assert resolve_in_workspace(ws, str(ws)) == ws


def test_sibling_with_the_workspace_as_prefix_is_outside(ws: Path) -> None:
    sibling = ws.parent / (ws.name + "2")
    sibling.mkdir()
    with pytest.raises(PathOutside):
        resolve_in_workspace(ws, str(sibling / "f"))


def test_symlink_out_is_refused(ws: Path) -> None:
    (ws / "link").symlink_to(ws.parent / "outside")
    (ws / "filelink").symlink_to(ws.parent / "outside" / "secret.txt")
    for raw in ["link", "link/secret.txt", "link/new.txt", "filelink"]:
        with pytest.raises(PathOutside):
            resolve_in_workspace(ws, raw)


def test_dangling_symlink_out_is_refused(ws: Path) -> None:
    """Writing through it would create a file outside."""
    (ws / "dangling").symlink_to(ws.parent / "outside" / "not-yet")
    with pytest.raises(PathOutside):
        resolve_in_workspace(ws, "dangling")


def test_symlink_inside_resolves_to_its_target(ws: Path) -> None:
    (ws / "alias").symlink_to(ws / "src" / "a")
    assert resolve_in_workspace(ws, "alias/x.py") == ws / "src" / "a" / "x.py"


def test_symlink_then_dotdot_follows_the_link_like_the_kernel(ws: Path) -> None:
    (ws / "deep").symlink_to(ws.parent / "outside")
    with pytest.raises(PathOutside):
        resolve_in_workspace(ws, "deep/../outside/secret.txt")


@pytest.mark.parametrize("raw", ["", "src/\x00x", "\x00"])
def test_empty_and_nul_are_refused(ws: Path, raw: str) -> None:
    with pytest.raises(PathOutside):
        resolve_in_workspace(ws, raw)


def test_unencodable_text_is_refused(ws: Path) -> None:
    with pytest.raises(PathOutside):
        resolve_in_workspace(ws, "bad\ud800name")


def test_relative(ws: Path) -> None:
    assert relative(ws, ws) == "."
    assert relative(ws, ws / "src" / "a" / "x.py") == "src/a/x.py"


def _rp(ws: Path, raw: str) -> Path:
    return resolve_in_workspace(ws, raw)


def test_roots_contain_by_whole_components(ws: Path) -> None:
    target = _rp(ws, "src/ab/x.py")
    assert not within_roots(ws, target, ["src/a"])
    assert not within_roots(ws, target, ["src/a/"])
    assert within_roots(ws, target, ["src/ab"])
    assert within_roots(ws, _rp(ws, "src/a/x.py"), ["src/a"])
    assert not within_roots(ws, _rp(ws, "src/a/x.py"), ["src/ab/"])


def test_roots_trailing_slash_and_the_root_itself(ws: Path) -> None:
    for root in ["src/api", "src/api/", "./src/api/", "src//api"]:
        assert within_roots(ws, _rp(ws, "src/api/new.py"), [root]), root
        assert within_roots(ws, _rp(ws, "src/api"), [root]), root


def test_any_root_may_hold_the_path(ws: Path) -> None:
    target = _rp(ws, "tests/t.py")
    assert within_roots(ws, target, ["src/", "tests/"])
    assert not within_roots(ws, target, ["src/"])
    assert not within_roots(ws, target, [])


def test_whole_workspace_root(ws: Path) -> None:
    assert within_roots(ws, _rp(ws, "anything/at/all"), ["."])


def test_symlink_inside_a_root_pointing_out_of_it_is_outside(ws: Path) -> None:
    """ISSUE 3: "Roots are checked on the resolved path (a symlink inside the root pointing
    outside is outside)." """
    (ws / "src" / "a" / "to_ab").symlink_to(ws / "src" / "ab")
    target = _rp(ws, "src/a/to_ab/new.py")
    assert target == ws / "src" / "ab" / "new.py"
    assert not within_roots(ws, target, ["src/a"])


def test_root_that_is_a_symlink_is_resolved_too(ws: Path) -> None:
    (ws / "api").symlink_to(ws / "src" / "a")
    assert within_roots(ws, _rp(ws, "src/a/x.py"), ["api/"])


def test_root_outside_the_workspace_holds_nothing(ws: Path) -> None:
    assert not within_roots(ws, _rp(ws, "src/a/x.py"), ["../", "/"])


_ALPHABET = st.sampled_from(["..", ".", "/", "src", "a", "link", "out", "\x00", "~", " ", "é"])
_PATHS = st.one_of(
    st.text(),
    st.lists(_ALPHABET, max_size=8).map("".join),
    st.lists(_ALPHABET, max_size=8).map("/".join),
)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=_PATHS)
def test_property_inside_or_path_outside(ws: Path, raw: str) -> None:
    """For any text: a path inside the workspace, or PathOutside; nothing else."""
    if not (ws / "link").is_symlink():
        (ws / "link").symlink_to(ws.parent / "outside")
    try:
        resolved = resolve_in_workspace(ws, raw)
    except PathOutside as exc:
        assert exc.path == raw
        return
    real = os.path.realpath(resolved)
    assert real == str(resolved)
    assert resolved == ws or ws in resolved.parents


@pytest.fixture(scope="module")
def maze(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace full of symlinks: relative and absolute, chained, dangling, pointing
    out, looping, to a folder and through `..`."""
    top = tmp_path_factory.mktemp("maze").resolve()
    ws = top / "ws"
    for d in ("a/b/c", "d", "e"):
        (ws / d).mkdir(parents=True)
    (top / "out").mkdir()
    (ws / "a" / "f.txt").write_text("f")
    links = {
        "a/up": "..",
        "a/b/to_d": "../../d",
        "a/b/abs_e": str(ws / "e"),
        "d/chain": "../a/b/to_d",
        "d/out": "../../out",
        "e/dangling": "missing/x",
        "e/loop1": "loop2",
        "e/loop2": "loop1",
        "e/self": "self",
        "e/deep_loop": "deep_loop/x",
        "link_c": "a/b/c",
        "e/abs_out": str(top / "out"),
        "e/dotdot_after": "../a/up/d",
    }
    for name, target in links.items():
        (ws / name).symlink_to(target)
    return ws


_NAMES = ["a", "b", "c", "d", "e", "f.txt", "up", "to_d", "abs_e", "chain", "out", "dangling",
          "loop1", "loop2", "self", "deep_loop", "link_c", "abs_out", "dotdot_after", "..", ".", "",
          "new"]  # fmt: skip


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(st.sampled_from(_NAMES), min_size=1, max_size=7))
@example(parts=["e", "loop1", "new", ".."])
@example(parts=["e", "deep_loop", "y"])
@example(parts=["a", "up", "e", "self", "a"])
@example(parts=["d", "chain", "..", "a", "up", "d", "out", "x"])
@example(parts=["e", "dotdot_after", "chain", "..", "..", "e", "abs_out"])
def test_join_resolved_is_realpath_without_the_prefix(maze: Path, parts: list[str]) -> None:
    """join_resolved walks only below the (already resolved) workspace; its answers must
    be realpath's, links, loops, `..` and missing tails included."""
    raw = "/".join(parts)
    base = os.fspath(maze)
    got, _ = join_resolved(base, raw, {})
    assert os.path.normpath(got) == os.path.realpath(os.path.join(base, raw)), raw


def test_a_path_through_a_symlink_loop_is_refused(ws: Path) -> None:
    """Review finding: realpath stops at a loop and keeps the rest as text, so
    `loop/../out/secret.txt` normalised to `ws/out/secret.txt`, and `out` led outside."""
    (ws / "loop").symlink_to("loop")
    (ws / "out").symlink_to("../outside")
    for raw in ("loop/../out/secret.txt", "loop", "src/../loop/x", str(ws / "loop/../out")):
        with pytest.raises(PathOutside):
            resolve_in_workspace(ws, raw)
    assert resolve_in_workspace(ws, "src/a/x.py") == ws / "src/a/x.py"


def test_a_chain_of_symlinks_longer_than_the_kernels_limit_is_refused(ws: Path) -> None:
    """Adversarial review: 1,000 chained links (`c0 -> c1 -> ...`) made the walk recurse
    past Python's limit, and the step ended with a RecursionError before its audit."""
    for i in range(1000):
        (ws / f"c{i}").symlink_to(f"c{i + 1}")
    (ws / "c1000").write_text("end\n")
    with pytest.raises(PathOutside):
        resolve_in_workspace(ws, "c0")
    assert resolve_in_workspace(ws, "c980") == ws / "c1000"  # 20 links: as the kernel
