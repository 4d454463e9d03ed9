"""A local Chat Completions server that needs no key (docs/inputs.md, "`"provider":
"openai"`"): "a local server that needs no key takes `"api_key_env": null`: no variable
is read, none needs to be set, and requests go without an `Authorization` header". Run
through `orkeon run` against the loopback fake, with no key variable set."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from kit.fakes import openai_api
from kit.process import orkeon
from kit.steps import environ, make_workspace


def task(tmp: Path, model: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    ws = make_workspace(tmp, {"README.md": "# demo\n"})
    doc = {"request": "say hello", "model": model}
    env = {k: v for k, v in environ(tmp).items() if not k.endswith("_API_KEY")}
    return orkeon("run", "task", "--workspace", str(ws), "--output", "json",
                  "--inputs", json.dumps(doc), cwd=tmp, env=env)  # fmt: skip


def test_a_keyless_local_server_runs_with_no_key_set_and_gets_no_authorization(
    tmp_path: Path,
) -> None:
    with openai_api.OpenAIFake(api_key=None) as server:
        server.push(openai_api.completion("hello"))
        model = {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.base_url,
                 "api_key_env": None}  # fmt: skip
        proc = task(tmp_path, model)
        sent = [r.headers for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["output"] == "hello"
    assert len(sent) == 1 and "authorization" not in sent[0]


def test_without_null_the_key_variable_is_still_required(tmp_path: Path) -> None:
    """The default stays `OPENAI_API_KEY`: unset, it is exit 2 naming the field."""
    proc = task(tmp_path, {"provider": "openai", "model": "gpt-4o-mini",
                           "base_url": "http://127.0.0.1:9/v1"})  # fmt: skip
    assert proc.returncode == 2
    assert "model.api_key_env: the variable OPENAI_API_KEY is not set" in proc.stderr


def test_a_server_that_wants_a_key_after_all_says_none_was_sent(tmp_path: Path) -> None:
    with openai_api.OpenAIFake() as server:  # it wants "Bearer sk-test"
        model = {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.base_url,
                 "api_key_env": None}  # fmt: skip
        proc = task(tmp_path, model)
    assert proc.returncode == 4, proc.stderr
    message = json.loads(proc.stdout)["error"]["message"]
    assert "authentication failed (HTTP 401)" in message
    assert "(no key sent: model.api_key_env is null)" in message
