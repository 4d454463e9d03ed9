"""`orkeon schema NAME` and schemas/*.schema.json hold the same text; a drift fails here."""

from __future__ import annotations

import json

import pytest
from kit import ROOT

from orkeon_run.__main__ import main
from orkeon_run.commands.schema import NAMES, text

SCHEMAS = ROOT / "schemas"


@pytest.mark.parametrize("name", NAMES)
def test_schema_file_matches_the_models(name):
    path = SCHEMAS / f"{name}.schema.json"
    assert path.is_file(), f"{path} is missing: run `make schemas`"
    assert path.read_text() == text(name), f"{path} is stale: run `make schemas`"


@pytest.mark.parametrize("name", NAMES)
def test_schema_command_prints_it(name, capsys):
    assert main(["schema", name]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["title"]
    assert out == text(name)


def test_unknown_schema_is_a_usage_error(capsys):
    assert main(["schema", "nope"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "orkeon: Invalid value for 'NAME': 'nope' is not one of 'inputs', 'plan', 'script', "
        "'result', 'event', 'crew'. (see orkeon --help)\n"
    )
