"""The network allow-list's cost (issue 21, item 11): one HTTP GET of a loopback server
from a sandboxed command, proxied (`"shell": {"network": ["allowed.test"]}`: the command's
own network namespace, the in-sandbox forwarder, orkeon's proxy) against direct (the same
sandbox with `"network": true`, the host's network). Both run the same program (`curl`
when the machine has it, else Python's urllib) through `sandbox.run`, alternating, so a
passing load weighs on both alike. The proxy maps `allowed.test` to 127.0.0.1 itself (its
test-only resolver): no DNS.

Rows: the median and 10th percentile of each, the added milliseconds (the forwarder's
start is most of it: a Python interpreter, C modules only), and, for information, a
command that opens no connection at all (`true`) behind the forwarder against without.
"""

from __future__ import annotations

import http.server
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from orkeon_run.policy.hosts import AllowList
from orkeon_run.tools import sandbox
from orkeon_run.tools.sandbox.proxy import EgressProxy

from .common import header, row

ROUNDS = 40
ENV = {"PATH": os.environ.get("PATH", os.defpath)}


class _Quiet(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def fetch_argv(url: str) -> list[str]:
    if shutil.which("curl"):
        return ["curl", "-fsS", "-o", "/dev/null", url]
    code = "import sys, urllib.request as u; u.urlopen(sys.argv[1], timeout=30).read()"
    return [os.path.realpath(sys.executable), "-I", "-c", code, url]


def timed(policy: sandbox.SandboxPolicy, argv: list[str], ws: Path) -> float:
    start = time.perf_counter()
    res = sandbox.run(policy, argv, cwd=ws, timeout=60, env=ENV)
    took = time.perf_counter() - start
    assert res.exit_code == 0, (argv, res.exit_code, res.stderr, res.error)
    return took


def p10(samples: list[float]) -> float:
    return sorted(samples)[len(samples) // 10]


def main() -> None:
    avail = sandbox.probe()
    if not avail.ok:
        raise RuntimeError(f"no sandbox here: {avail.reason} ({avail.fix})")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]
    proxy = EgressProxy(AllowList.parse(["allowed.test"]), hosts={"allowed.test": "127.0.0.1"})
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp).resolve()
            direct = sandbox.SandboxPolicy.for_role(ws, ["."], run_dir=None, network=True)
            proxied = sandbox.SandboxPolicy.for_role(ws, ["."], run_dir=None, egress=proxy)
            plain = sandbox.SandboxPolicy.for_role(ws, ["."], run_dir=None)
            pairs = {
                "GET of a loopback server": (
                    (proxied, fetch_argv(f"http://allowed.test:{port}/")),
                    (direct, fetch_argv(f"http://127.0.0.1:{port}/")),
                ),
                "`true`, no connection": ((proxied, ["true"]), (plain, ["true"])),
            }
            got: dict[str, tuple[list[float], list[float]]] = {}
            for name, ((p1, a1), (p2, a2)) in pairs.items():
                timed(p1, a1, ws), timed(p2, a2, ws)  # warm: the probe, the page cache
                one, two = [], []
                for _ in range(ROUNDS):
                    one.append(timed(p1, a1, ws))
                    two.append(timed(p2, a2, ws))
                got[name] = (one, two)
    finally:
        proxy.close()
        httpd.shutdown()
    header()
    for name, (one, two) in got.items():
        m1, m2 = statistics.median(one), statistics.median(two)
        row(f"{name} proxied, median", f"{m1 * 1000:.1f} ms", f"{m2 * 1000:.1f} ms", m1 / m2,
            "", None)  # fmt: skip
        l1, l2 = p10(one), p10(two)
        row(f"{name} proxied, p10", f"{l1 * 1000:.1f} ms", f"{l2 * 1000:.1f} ms", l1 / l2,
            "", None)  # fmt: skip
        row(f"{name} proxied, added (median)", f"{(m1 - m2) * 1000:+.1f} ms", "", None, "", None)
    print(f"(value: through the allow-list's proxy; baseline: the same sandbox with the host's "
          f"network (GET) or without the forwarder (`true`); {ROUNDS} rounds alternating; "
          f"{fetch_argv('URL')[0]}; load average {os.getloadavg()[0]:.1f})")  # fmt: skip


if __name__ == "__main__":
    main()
