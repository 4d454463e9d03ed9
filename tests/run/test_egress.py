"""Egress by allow-list (docs/security.md, "Network"; docs/inputs.md, "`sandbox` and `network`";
docs/output.md, `network.refused` and the result's `network`): with `"shell": {"network":
[...]}` a sandboxed command keeps its own network namespace and reaches only orkeon's
proxy, which lets the listed hosts through and refuses the rest; each refused host is an
event, a line of the plain progress view, a count in the result and a row in the reports.

The servers are on 127.0.0.1 only; the names are mapped to it by the proxy's test-only
resolver (`ORKEON_TEST_HOSTS`), never by real DNS."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kit.process import orkeon
from kit.sandbox import require_sandbox
from kit.steps import call, calls, environ, events, make_workspace, scripted, shell

PY = sys.executable
# GET URL [--may-fail]: prints the body, or the error and exits 1 (0 with --may-fail).
FETCH = """import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=30).read().decode())
except Exception as exc:
    print(f"fetch failed: {exc}")
    sys.exit(0 if "--may-fail" in sys.argv else 1)
"""
HOSTS = "allowed.test=127.0.0.1,api.wild.test=127.0.0.1,other.test=127.0.0.1"


class Server:
    """An HTTP server on the host's 127.0.0.1 that records each request's Host and path."""

    def __init__(self) -> None:
        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append((self.headers.get("Host", "").partition(":")[0], self.path))
                body = f"hello from {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.httpd.shutdown()


def run_cli(tmp: Path, ws: Path, doc: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    env = {**environ(tmp), "ORKEON_TEST_HOSTS": HOSTS}
    return subprocess.run(
        [
            PY,
            "-m",
            "orkeon_run",
            "run",
            "dev-batches",
            "--inputs",
            json.dumps(doc),
            "--workspace",
            str(ws),
            "--run-dir",
            str(tmp / "run"),
            "--output",
            "json",
            "--progress",
            "plain",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=300,
    )


def test_listed_hosts_go_through_the_proxy_and_the_rest_are_refused_and_recorded(
    tmp_path: Path, server: Server
) -> None:
    require_sandbox()
    port = server.port
    ws = make_workspace(tmp_path, {"README.md": "# app\n", "src/fetch.py": FETCH})
    fetch = f"{PY} src/fetch.py"
    script = [
        {
            "tool_calls": [
                shell(f"{fetch} http://allowed.test:{port}/plain"),
                shell(f"{fetch} http://api.wild.test:{port}/wildcard"),
                shell(f"{fetch} http://other.test:{port}/refused"),
                shell(f"{fetch} http://127.0.0.1:{port}/direct"),
            ]
        },
        {"text": "done"},
    ]
    doc = scripted(
        {"b1/api": script},
        plan={
            "batches": [
                {"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "fetch"}]}
            ]
        },
        shell={"network": ["allowed.test", "*.wild.test"], "extra_allowed_commands": [PY]},
        audit={
            "build": [PY, "src/fetch.py", f"http://allowed.test:{port}/audit-build"],
            "test": [PY, "src/fetch.py", f"http://other.test:{port}/audit-test", "--may-fail"],
        },
    )
    done = run_cli(tmp_path, ws, doc)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result["error"]
    assert result["audits"][0]["passed"] is True, result["audits"]

    plain, wild, refused, direct = (c["result"] for c in calls(tmp_path / "run", "b1/api"))
    assert plain["exit_code"] == 0 and plain["stdout"] == "hello from /plain\n", plain
    assert wild["exit_code"] == 0 and wild["stdout"] == "hello from /wildcard\n", wild
    assert refused["exit_code"] == 1 and "403" in refused["stdout"], refused
    # The sandbox's own loopback: nothing of the host's is there.
    assert direct["exit_code"] == 1 and "fetch failed" in direct["stdout"], direct
    assert sorted(server.seen) == [
        ("allowed.test", "/audit-build"),
        ("allowed.test", "/plain"),
        ("api.wild.test", "/wildcard"),
    ]

    seen = events(tmp_path / "run", "network.refused")
    assert [(e["host"], e["port"], e["command"]) for e in seen] == [
        ("other.test", port, f"{fetch} http://other.test:{port}/refused"),
        ("other.test", port, f"{fetch} http://other.test:{port}/audit-test --may-fail"),
    ]
    assert result["network"] == {"refused": 2}
    lines = [x for x in done.stderr.splitlines() if "network: refused" in x]
    assert lines == [
        f"dev-batches: network: refused other.test:{port} ({fetch} http://other.test:{port}/refused)",
        f"dev-batches: network: refused other.test:{port} "
        f"({fetch} http://other.test:{port}/audit-test --may-fail)",
    ]
    reports = {
        fmt: orkeon("report", str(tmp_path / "run"), "--format", fmt, cwd=tmp_path).stdout
        for fmt in ("md", "html")
    }
    assert "2 hosts refused by the network allow-list" in reports["md"]
    assert f"| `other.test:{port}` |" in reports["md"]
    assert '<section id="network"><h2>Network refused</h2>' in reports["html"]
    assert f"<code>other.test:{port}</code>" in reports["html"]


def test_a_connect_tunnel_is_refused_for_an_unlisted_host_and_opened_for_a_listed_one(
    tmp_path: Path, server: Server
) -> None:
    """HTTPS clients ask the proxy for `CONNECT host:port`; the same list decides."""
    from orkeon_run.policy.hosts import AllowList
    from orkeon_run.tools import sandbox as sb
    from orkeon_run.tools.sandbox.proxy import EgressProxy

    require_sandbox()
    tunnel = (
        "import socket, sys, os\n"
        "host, port = sys.argv[1], int(sys.argv[2])\n"
        "proxy = os.environ['HTTPS_PROXY'].rpartition(':')[2]\n"
        "s = socket.create_connection(('127.0.0.1', int(proxy)))\n"
        "s.sendall(f'CONNECT {host}:{port} HTTP/1.1\\r\\nHost: {host}\\r\\n\\r\\n'.encode())\n"
        "status = s.recv(4096).split(b'\\r\\n')[0].decode()\n"
        "print(status)\n"
        "if ' 200 ' in status:\n"
        "    s.sendall(f'GET /tunnelled HTTP/1.0\\r\\nHost: {host}\\r\\n\\r\\n'.encode())\n"
        "    print(s.makefile('rb').read().decode().rpartition('\\r\\n')[2])\n"
    )
    ws = make_workspace(tmp_path, {"tunnel.py": tunnel}, git=False)
    refusals: list[dict[str, Any]] = []
    proxy = EgressProxy(
        AllowList.parse([f"allowed.test:{server.port}"]),
        on_refused=refusals.append,
        hosts={"allowed.test": "127.0.0.1", "other.test": "127.0.0.1"},
    )
    policy = sb.SandboxPolicy.for_role(ws, ["."], run_dir=None, egress=proxy)
    env = {"PATH": "/usr/bin:/bin"}
    try:
        runs = {
            host: sb.run(
                policy, [PY, "tunnel.py", host, str(server.port)], cwd=ws, timeout=60, env=env
            )
            for host in ("allowed.test", "other.test")
        }
        wrong_port = sb.run(
            policy, [PY, "tunnel.py", "allowed.test", "1"], cwd=ws, timeout=60, env=env
        )
    finally:
        proxy.close()
    ok = runs["allowed.test"]
    assert ok.exit_code == 0 and ok.stdout.splitlines() == [
        "HTTP/1.1 200 Connection established",
        "hello from /tunnelled",
    ], (ok.stdout, ok.stderr)
    assert runs["other.test"].stdout.startswith("HTTP/1.1 403 "), runs["other.test"]
    assert wrong_port.stdout.startswith("HTTP/1.1 403 "), wrong_port
    assert [(r["host"], r["port"]) for r in refusals] == [
        ("other.test", server.port),
        ("allowed.test", 1),
    ]
    assert proxy.refused == 2


@pytest.mark.parametrize(
    ("inputs", "field"),
    [
        ({"shell": {"network": ["pypi.org", "https://evil.example/x"]}}, "shell.network[1]"),
        ({"shell": {"network": ["10.0.0.1"]}}, "shell.network[0]"),
        ({"shell": {"network": ["ok.example:0"]}}, "shell.network[0]"),
        ({"shell": {"network": "pypi.org"}}, "shell.network"),
        (
            {"mcp_servers": {"fs": {"command": "x", "network": ["a b"]}}},
            "mcp_servers.fs.network[0]",
        ),
    ],
)
def test_a_bad_allow_list_entry_is_exit_2_naming_it_and_nothing_runs(
    tmp_path: Path, inputs: dict[str, Any], field: str
) -> None:
    ws = make_workspace(tmp_path, {"README.md": "x\n"})
    doc = scripted(
        {"b1/api": [{"tool_calls": [shell("touch made")]}]},
        plan={"batches": [{"name": "b1", "roles": [{"name": "api", "roots": ["."], "task": "t"}]}]},
        **inputs,
    )
    done = run_cli(tmp_path, ws, doc)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"orkeon: {field}: "), line
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists() and not (ws / "made").exists()


def test_a_stdio_servers_allow_list_goes_through_the_proxy_and_refusals_name_the_server(
    tmp_path: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/security.md, "Network": `"mcp_servers": {NAME: {"network": [...]}}` holds for a
    stdio server as `shell.network` does for the shell: in the role's sandbox with a network
    namespace of its own, its only way out orkeon's proxy, which lets the listed host
    through and refuses the other; the refused host is a `network.refused` event whose
    command is the server, a line of the plain progress view, a count in the result."""
    from kit.mcp import FAKE, use_crew, worker_crew

    require_sandbox()
    monkeypatch.setenv("ORKEON_CONFIG_DIR", str(tmp_path / "config"))
    port = server.port
    ws = make_workspace(tmp_path, {"README.md": "# app\n", "src/x.py": ""})
    use_crew(ws, "dev-batches", worker_crew(["mcp__fake__*"]))
    urls = [
        f"http://allowed.test:{port}/listed",
        f"http://other.test:{port}/unlisted",
        f"http://127.0.0.1:{port}/direct",
    ]
    fetches = [call("mcp__fake__fetch", url=u) for u in urls]
    doc = scripted(
        {"b1/api": [{"tool_calls": fetches}, {"text": "done"}]},
        plan={
            "batches": [
                {"name": "b1", "roles": [{"name": "api", "roots": ["src/"], "task": "fetch"}]}
            ]
        },
        mcp_servers={"fake": {**FAKE, "network": ["allowed.test"]}},
    )
    done = run_cli(tmp_path, ws, doc)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "succeeded", result["error"]
    assert result["mcp_sandbox"] == {"fake": "on"}

    listed, unlisted, direct = (c["result"] for c in calls(tmp_path / "run", "b1/api"))
    assert listed == "hello from /listed", listed
    assert "fetch failed: HTTP 403" in unlisted and "not on the network allow-list" in unlisted
    # The server's own loopback: nothing of the host's is there, not even the test's server.
    assert "fetch failed" in direct and "403" not in direct, direct
    assert server.seen == [("allowed.test", "/listed")]

    seen = events(tmp_path / "run", "network.refused")
    assert [(e["host"], e["port"], e["command"]) for e in seen] == [
        ("other.test", port, "MCP server fake")
    ]
    assert result["network"] == {"refused": 1}
    lines = [x for x in done.stderr.splitlines() if "network: refused" in x]
    assert lines == [f"dev-batches: network: refused other.test:{port} (MCP server fake)"]
    report = orkeon("report", str(tmp_path / "run"), "--format", "md", cwd=tmp_path).stdout
    assert "1 host refused by the network allow-list" in report
    assert f"| `other.test:{port}` | `MCP server fake` |" in report
