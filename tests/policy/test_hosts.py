"""The network allow-list's entries (docs/inputs.md, "sandbox and network"): host names,
`*.` for subdomains, an optional port; anything else refused with a reason."""

from __future__ import annotations

import pytest

from orkeon_run.policy.hosts import AllowList, HostRule


def test_a_name_matches_itself_in_any_case_on_every_port_unless_one_is_given() -> None:
    allow = AllowList.parse(["PyPI.org", "files.example:8443"])
    assert allow.allows("pypi.org", 443) and allow.allows("PYPI.ORG.", 80)
    assert allow.allows("files.example", 8443) and not allow.allows("files.example", 443)
    assert not allow.allows("evil-pypi.org", 443) and not allow.allows("pypi.org.evil", 443)


def test_a_wildcard_matches_subdomains_only() -> None:
    allow = AllowList.parse(["*.npmjs.org:443"])
    assert allow.allows("registry.npmjs.org", 443) and allow.allows("a.b.npmjs.org", 443)
    assert not allow.allows("npmjs.org", 443) and not allow.allows("evilnpmjs.org", 443)
    assert not allow.allows("registry.npmjs.org", 80)
    assert not AllowList().allows("anything.example", 80)


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("https://pypi.org", "no scheme, path, user or query"),
        ("pypi.org/simple", "no scheme, path, user or query"),
        ("user@pypi.org", "no scheme, path, user or query"),
        ("pypi.org:0", "a port from 1 to 65535"),
        ("pypi.org:https", "a port from 1 to 65535"),
        ("10.0.0.1", "not an IP address"),
        ("*", "a '*' only as '*.' in front"),
        ("a.*.org", "a '*' only as '*.' in front"),
        ("-bad.org", "letters, digits and hyphens"),
        ("", "a host name of 1 to 253 characters"),
    ],
)
def test_anything_else_is_refused_saying_what_an_entry_must_be(entry: str, why: str) -> None:
    with pytest.raises(ValueError, match="is not a host name or host:port") as info:
        HostRule.parse(entry)
    assert why in str(info.value)
