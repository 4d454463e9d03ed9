"""docs/architecture.md, "Tests": "every relative link of README.md and docs/*.md names a
file and a heading that exist" (a heading's anchor as GitHub spells it), and the package's
docstrings are held "to the sections they cite". The pages and docstrings cite docs/*.md
only, never a file outside the checkout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kit import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def prose(page: Path) -> list[str]:
    """The page's lines, those inside fenced code blocks blanked (their `#` is a comment,
    their `](` is code); inline code removed too."""
    lines, fenced = [], False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            lines.append("")
            continue
        lines.append("" if fenced else re.sub(r"`[^`]*`", "", line))
    return lines


def headings(page: Path) -> list[str]:
    """The page's headings' text (backticks dropped), in order."""
    found, fenced = [], False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            found.append(m.group(1).replace("`", ""))
    return found


def anchors(page: Path) -> set[str]:
    """GitHub's anchors: lower case, punctuation dropped but `-` and `_`, each space a `-`;
    a repeated one gets `-1`, `-2`, ..."""
    seen: dict[str, int] = {}
    out = set()
    for text in headings(page):
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """One line per link of `page` that does not resolve inside `root`."""
    problems = []
    for number, line in enumerate(prose(page), 1):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path, _, fragment = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(root)}:{number}: {target}"
            if not dest.exists():
                problems.append(f"{where}: no such file")
            elif root.resolve() not in dest.parents:
                problems.append(f"{where}: outside the checkout")
            elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
                problems.append(f"{where}: no heading with that anchor")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_and_anchor_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_checker_sees_a_broken_anchor_and_file(tmp_path: Path) -> None:
    """The check itself, on a copy of a page beside a probe: good links pass, a bad anchor,
    a missing file and a file outside the folder do not; code blocks are not read."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "inputs.md").write_text((ROOT / "docs" / "inputs.md").read_text())
    (tmp_path.parent / "outside.md").touch()
    probe = docs / "probe.md"
    probe.write_text(
        "# Probe\n\n## `budget`\n\n## `budget`\n\n"
        "[a](inputs.md#hermetic-runs---bare) [b](#budget) [c](#budget-1) [d](`x`)\n"
        "[e](inputs.md#no-such-heading) [f](missing.md) [g](../../outside.md)\n"
        "```\n[h](nowhere.md)\n```\n"
    )
    assert [p.rsplit(": ", 1)[1] for p in broken_links(probe, tmp_path)] == [
        "no heading with that anchor",
        "no such file",
        "outside the checkout",
    ]


# A docstring's `docs/PAGE.md, "Section"`: the section's title, or the start of it.
CITE = re.compile(r'docs/([\w-]+\.md),?\s*(?:#\s*)?"([^"\n]{1,40})"')


def test_the_package_cites_sections_that_exist() -> None:
    titles = {p.name: [h.lower() for h in headings(p)] for p in PAGES if p.parent.name == "docs"}
    stale = []
    for module in sorted((ROOT / "orkeon_run").rglob("*.py")):
        text = module.read_text()
        for m in CITE.finditer(re.sub(r"\n\s*#?\s*", " ", text)):
            page, section = m.group(1), m.group(2).replace("`", "").lower()
            if page in titles and not any(t.startswith(section) for t in titles[page]):
                stale.append(f"{module.relative_to(ROOT)}: docs/{page}, {m.group(2)!r}")
    assert stale == []


def test_no_page_or_docstring_cites_the_shared_folder() -> None:
    """Users cannot open ../shared or the seeds: the pages and docstrings cite docs/*.md."""
    files = [*PAGES, *sorted((ROOT / "orkeon_run").rglob("*.py"))]
    cited = [str(f.relative_to(ROOT)) for f in files
             if re.search(r"\.\./shared|shared/seeds|/seeds/", f.read_text())]  # fmt: skip
    assert cited == []


# A module path a page names in backticks: `run/runner.py`, `orkeon_run/catalog.py`,
# `tools/sandbox/veil.py`, `sandbox/session.py` (in the row of its folder); `x.py` is the
# architecture page's placeholder for a module to add.
MODULE = re.compile(r"`((?:orkeon_run/)?(?:[a-z_]+/)+[a-z_]+\.py)`")
PACKAGE = ROOT / "orkeon_run"
FOLDERS = {p.name for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__"}


def test_the_modules_the_pages_name_exist() -> None:
    """docs/architecture.md, "Tests": "every module a page names exists" (a path below
    `orkeon_run/`, or below one of its folders)."""
    missing = []
    for page in PAGES:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for path in MODULE.findall(line):
                path = path.removeprefix("orkeon_run/")
                if path.endswith("/x.py") or path.split("/")[0] not in FOLDERS:
                    continue  # a placeholder, or a file of the user's (`src/a.py`)
                if not ((PACKAGE / path).exists() or any(PACKAGE.rglob(path))):
                    missing.append(f"{page.relative_to(ROOT)}:{number}: {path}")
    assert missing == []
