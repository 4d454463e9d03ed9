"""MCP without servers running: configuration, names, role selection, results, and the
SDK staying unimported until a server is configured."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from orkeon_run.catalog import READ_RESULT_CHARS
from orkeon_run.config.mcp import shown_url
from orkeon_run.errors import InputError
from orkeon_run.tools.mcp import (
    expand,
    normalize,
    parse_servers,
    pattern_problem,
    select_tools,
    servers_from_settings,
    split_pattern,
    tool_name,
    unmatched,
)
from orkeon_run.tools.mcp.hub import McpTool
from orkeon_run.tools.mcp.results import RESULT_CHARS, to_result

# --- configuration ---------------------------------------------------------------------


def test_claude_codes_shapes_are_read_into_one_model() -> None:
    servers = parse_servers(
        {
            "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}},
            "argv": {"command": ["python3", "-m", "srv"], "args": ["--x"]},
            "typed": {"type": "stdio", "command": "srv"},
            "web": {"type": "http", "url": "https://h.example/mcp", "headers": {"X": "y"}},
            "web2": {"url": "http://127.0.0.1:8080/mcp"},
        }
    )
    assert servers["git"].transport == "stdio"
    assert servers["git"].argv == ["uvx", "mcp-server-git"]
    assert servers["argv"].argv == ["python3", "-m", "srv", "--x"]
    assert servers["typed"].argv == ["srv"]
    assert servers["web"].transport == servers["web2"].transport == "http"
    assert servers["web"].headers == {"X": "y"}
    assert servers["web"].argv == []


@pytest.mark.parametrize(
    ("server", "line"),
    [
        ({"command": ""}, "mcp_servers.s.command: is empty"),
        ({"command": []}, "mcp_servers.s.command: an argv list needs a program"),
        (
            {"command": 3},
            "mcp_servers.s.command: must be a program (a string) or an argv list of strings",
        ),
        ({"command": "x", "args": "a b"}, "mcp_servers.s.args: Input should be a valid list"),
        ({"command": "x", "env": {"A": 1}}, "mcp_servers.s.env.A: Input should be a valid string"),
        ({"command": "x", "env": {"A=B": "1"}}, "mcp_servers.s.env: 'A=B' is not a variable name"),
        ({"command": "x", "timeout": 5}, "mcp_servers.s.timeout: unknown key"),
        ({}, 'mcp_servers.s: needs "command" (a stdio server) or "url" (an http server)'),
        (
            {"command": "x", "url": "http://h/mcp"},
            'mcp_servers.s: give "command" (a stdio server) or "url" (an http server), not both',
        ),
        (
            {"type": "http", "command": "x"},
            'mcp_servers.s: "type": "http" needs "url", not "command"',
        ),
        (
            {"type": "stdio", "url": "http://h/"},
            'mcp_servers.s: "type": "stdio" needs "command", not "url"',
        ),
        (
            {"url": "http://h/", "args": ["a"]},
            'mcp_servers.s: "args" is for a stdio server ("command"), not "url"',
        ),
        (
            {"command": "x", "headers": {}},
            'mcp_servers.s: "headers" is for an http server ("url"), not "command"',
        ),
        (
            {"type": "sse", "url": "http://h/"},
            'mcp_servers.s.type: "sse" (the old HTTP+SSE transport) is not supported; use "http" (streamable HTTP)',
        ),
        ({"type": "ws", "url": "ws://h/"}, 'mcp_servers.s.type: must be "stdio" or "http"'),
        (
            {"url": "ftp://h/x"},
            "mcp_servers.s: url: 'ftp://h/x' must start with http:// or https:// and name a host",
        ),
        (
            {"command": "x", "args": ["a\x00b"]},
            "mcp_servers.s.args: a NUL character cannot be passed to a program",
        ),
    ],
)
def test_a_bad_server_is_one_line_naming_the_field(server: dict, line: str) -> None:
    with pytest.raises(InputError) as err:
        parse_servers({"s": server})
    assert err.value.problems == [line]


def test_server_names_that_would_break_tool_names_are_refused() -> None:
    with pytest.raises(InputError) as err:
        parse_servers({"a__b": {"command": "x"}, "c..d": {"command": "x"}, "": {"command": "x"}})
    (line,) = err.value.problems
    assert "server name 'a__b' contains '__'" in line
    assert "server name 'c..d' (it gives 'c__d' in tool names) contains '__'" in line
    assert "a server name cannot be empty" in line
    with pytest.raises(InputError) as err:
        parse_servers({"my.git": {"command": "x"}, "my_git": {"command": "y"}})
    assert err.value.problems == [
        "mcp_servers: servers 'my.git' and 'my_git' both give tool names mcp__my_git__…; rename one"
    ]


def test_the_mcpservers_object_of_a_claude_code_file_is_read_the_same_way() -> None:
    doc = json.loads(
        '{"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}},'
        ' "permissions": {"allow": ["mcp__git"]}}'
    )
    servers = servers_from_settings(doc, "/repo/.mcp.json")
    assert servers["git"].argv == ["uvx", "mcp-server-git"]
    assert servers_from_settings({"hooks": {}}, "/x/settings.json") == {}
    with pytest.raises(InputError) as err:
        servers_from_settings({"mcpServers": {"git": {"cmd": "x"}}}, "/repo/.mcp.json")
    assert err.value.problems == [
        "/repo/.mcp.json: mcpServers.git.cmd: unknown key; did you mean 'command'?"
    ]
    with pytest.raises(InputError) as err:
        servers_from_settings({"mcpServers": ["git"]}, "/repo/.mcp.json")
    assert err.value.problems == ["/repo/.mcp.json: mcpServers: must be an object of server names"]


def test_variables_are_expanded_as_claude_code_expands_them_and_only_at_start() -> None:
    (server,) = parse_servers(
        {
            "s": {
                "command": "${BIN:-/usr/bin/srv}",
                "args": ["--token=${TOKEN}", "${EMPTY:-dflt}", "$NOT_A_REF"],
                "env": {"KEY": "${TOKEN}", "GONE": "${MISSING}"},
            }
        }
    ).values()
    assert server.env["KEY"] == "${TOKEN}"  # the model keeps the text as written
    out, problems = expand(server, {"TOKEN": "t0k", "EMPTY": ""})
    assert out.argv == ["/usr/bin/srv", "--token=t0k", "", "$NOT_A_REF"]
    assert out.env == {"KEY": "t0k", "GONE": "${MISSING}"}
    assert problems == ["env.GONE: ${MISSING} is not set"]

    (web,) = parse_servers(
        {"w": {"url": "${BASE}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}
    ).values()
    out, problems = expand(web, {"BASE": "https://h.example", "TOKEN": "t"})
    assert (out.url, out.headers, problems) == (
        "https://h.example/mcp",
        {"Authorization": "Bearer t"},
        [],
    )
    _, problems = expand(web, {"BASE": "nothing", "TOKEN": "t"})
    assert problems == ["url: 'nothing/mcp' must start with http:// or https:// and name a host"]


def test_what_is_shown_of_a_server_leaves_credentials_out() -> None:
    servers = parse_servers(
        {
            "w": {"url": "https://user:pw@h.example:8443/mcp?key=secret", "headers": {"A": "s"}},
            "s": {"command": ["srv", "a b"], "env": {"TOKEN": "secret"}},
        }
    )
    assert servers["w"].describe() == "http: https://h.example:8443/mcp?…"
    assert servers["s"].describe() == "stdio: srv 'a b'"
    assert shown_url("http://[::1]:9/x") == "http://[::1]:9/x"


# --- names -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server", "tool", "name"),
    [
        ("git", "git_status", "mcp__git__git_status"),
        ("my-server", "get-thing", "mcp__my-server__get-thing"),
        ("my.server", "a tool/x", "mcp__my_server__a_tool_x"),
        ("café", "naïve", "mcp__caf___na_ve"),
        # JavaScript replaces UTF-16 code units: an emoji is two of them.
        ("s", "go🚀", "mcp__s__go__"),
    ],
)
def test_names_are_spelled_as_claude_code_spells_them(server: str, tool: str, name: str) -> None:
    assert tool_name(server, tool) == name
    assert normalize("A-z_0") == "A-z_0"


# --- role selection --------------------------------------------------------------------


def _tool(server: str, tool: str) -> McpTool:
    return McpTool(tool_name(server, tool), server, tool, "", {"type": "object"})


TOOLS = [_tool("git", "git_status"), _tool("git", "git_log"), _tool("my.db", "query")]


def test_a_role_gets_only_the_mcp_tools_it_lists() -> None:
    def names(patterns: list[str]) -> list[str]:
        return [t.name for t in select_tools(patterns, TOOLS)]

    assert names(["file_read", "shell"]) == []
    assert names(["mcp__git__git_log"]) == ["mcp__git__git_log"]
    assert names(["mcp__git__*"]) == ["mcp__git__git_status", "mcp__git__git_log"]
    assert names(["mcp__git"]) == ["mcp__git__git_status", "mcp__git__git_log"]
    assert names(["mcp__my_db__*", "mcp__git__git_log", "mcp__git__*"]) == [
        "mcp__my_db__query",
        "mcp__git__git_log",
        "mcp__git__git_status",
    ]
    # No wildcard beyond a whole server: a server added later reaches no role unasked.
    assert names(["mcp__*", "mcp__git__git_*", "mcp__.*"]) == []
    assert unmatched(["mcp__git__git_push", "mcp__git__*", "shell"], TOOLS) == [
        "mcp__git__git_push"
    ]


def test_entries_are_checked_against_the_configured_servers() -> None:
    servers = ["git", "my.db"]
    assert pattern_problem("mcp__git__git_log", servers) is None
    assert pattern_problem("mcp__my_db__*", servers) is None
    assert pattern_problem("mcp__git", servers) is None
    assert pattern_problem("mcp__jira__*", servers) == (
        "'mcp__jira__*': there is no MCP server 'jira' (git, my_db)"
    )
    assert "is not an MCP tool entry" in (pattern_problem("mcp__git__git_*", servers) or "")
    assert "is not an MCP tool entry" in (pattern_problem("mcp__*", servers) or "")
    assert (
        pattern_problem("mcp__x__y", [])
        == "'mcp__x__y': there is no MCP server 'x' (none is configured)"
    )
    assert split_pattern("file_read") is None


# --- results ---------------------------------------------------------------------------


def _reply(*blocks: object, structured: object = None, error: bool = False) -> object:
    import mcp_types as t

    return t.CallToolResult(content=list(blocks), structured_content=structured, is_error=error)


def _text(s: str) -> object:
    import mcp_types as t

    return t.TextContent(type="text", text=s)


def test_results_keep_the_servers_form_and_the_built_in_size_cap() -> None:
    import mcp_types as t

    assert RESULT_CHARS == READ_RESULT_CHARS
    assert to_result(_reply(_text("a"), _text("b")), "mcp__s__x") == "a\nb"
    assert to_result(_reply(_text("{}"), structured={"k": [1]}), "mcp__s__x") == {"k": [1]}
    assert to_result(_reply(_text("2 rows"), structured=[1, 2]), "mcp__s__x") == [1, 2]
    assert to_result(_reply(structured="plain"), "mcp__s__x") == "plain"
    assert to_result(_reply(structured=3), "mcp__s__x") == "3"
    assert to_result(_reply(_text("nan"), structured={"x": float("nan")}), "mcp__s__x") == "nan"
    assert to_result(_reply(_text("no such row"), error=True), "mcp__s__x") == "error: no such row"
    assert to_result(_reply(error=True), "mcp__s__x") == (
        "error: the tool reported an error and gave no text"
    )
    image = t.ImageContent(type="image", data="AAAA", mime_type="image/png")
    link = t.ResourceLink(type="resource_link", uri="file:///a.txt", name="a.txt")
    blob = t.EmbeddedResource(
        type="resource",
        resource=t.BlobResourceContents(
            uri="file:///b.bin", blob="AAAA", mime_type="application/x"
        ),
    )
    doc = t.EmbeddedResource(
        type="resource", resource=t.TextResourceContents(uri="file:///c.md", text="# c")
    )
    assert to_result(_reply(image, link, blob, doc), "mcp__s__x").splitlines() == [
        "[image (image/png) left out: orkeon passes only text to the model]",
        "[resource link: file:///a.txt (a.txt)]",
        "[resource file:///b.bin (application/x) left out: orkeon passes only text to the model]",
        "# c",
    ]


def test_a_result_over_the_cap_is_cut_with_a_note_and_a_big_structured_one_becomes_text() -> None:
    long = "x" * (RESULT_CHARS + 10)
    out = to_result(_reply(_text(long)), "mcp__s__x")
    assert isinstance(out, str)
    assert out == "x" * RESULT_CHARS + (
        f"\n[mcp__s__x: the result was cut at {RESULT_CHARS} characters; 10 more were dropped]"
    )
    big = {"data": "y" * RESULT_CHARS}
    assert to_result(_reply(_text("a big object"), structured=big), "mcp__s__x") == "a big object"
    cut = to_result(_reply(structured=big), "mcp__s__x")
    assert isinstance(cut, str) and cut.startswith('{"data":"yyy')
    assert cut.endswith("characters; 11 more were dropped]")
    exact = "z" * RESULT_CHARS
    assert to_result(_reply(_text(exact)), "mcp__s__x") == exact


# --- the SDK is imported only when a server runs -----------------------------------------


def test_orkeon_and_its_mcp_configuration_do_not_import_the_sdk() -> None:
    code = (
        "import sys\n"
        "import orkeon_run.cli, orkeon_run.pipeline, orkeon_run.tools.mcp\n"
        "from orkeon_run.tools.mcp import parse_servers, select_tools, sdk_problem\n"
        "import orkeon_run.tools.mcp.results, orkeon_run.tools.mcp.check\n"
        "parse_servers({'git': {'command': 'x'}, 'w': {'url': 'http://h/'}})\n"
        "assert sdk_problem() is None\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types'))\n"
        "print(loaded)\n"
        "import orkeon_run.tools.mcp.hub\n"
        "print('mcp' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "False"  # the hub module itself imports the SDK only to start a server


def test_a_command_without_servers_does_not_import_the_sdk(tmp_path) -> None:
    code = (
        "import sys\n"
        "from orkeon_run.__main__ import main\n"
        "code = main(['validate', '--inputs', '{}', '--workspace', '.'])\n"
        "print(code, any(m.split('.')[0] in ('mcp', 'mcp_types') for m in sys.modules))\n"
    )
    out = (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
        .stdout.strip()
        .splitlines()
    )
    assert out[-1] == "0 False"
