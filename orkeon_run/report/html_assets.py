"""The HTML report's inline style and script, and the Content-Security-Policy that lets
only this script run (by its hash) and the page fetch nothing at all."""

from __future__ import annotations

import base64
import hashlib

STYLE = """
:root{--ok:#2e7d32;--bad:#c62828;--warn:#e65100;--muted:#666;--line:#ddd;--bg:#fff;--fg:#1b1b1b;--soft:#f5f5f5}
@media (prefers-color-scheme:dark){:root{--ok:#66bb6a;--bad:#ef5350;--warn:#ffa726;--muted:#aaa;--line:#444;--bg:#161616;--fg:#e8e8e8;--soft:#222}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{max-width:1280px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:20px;margin:0 0 6px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--soft);padding:8px 10px;margin:6px 0;white-space:pre-wrap;overflow-wrap:anywhere;max-height:24em;overflow:auto}
.facts{color:var(--muted);margin:4px 0}.why{margin:8px 0;overflow-wrap:anywhere}
.dot{display:inline-block;width:.7em;height:.7em;border-radius:50%;background:currentColor;vertical-align:baseline}
.ok{color:var(--ok)}.bad{color:var(--bad)}.warn{color:var(--warn)}.muted{color:var(--muted)}
table{border-collapse:collapse;width:100%;margin:6px 0}th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
td.n,th.n{text-align:right;white-space:nowrap}
.toolbar{position:sticky;top:0;background:var(--bg);padding:8px 0;border-bottom:1px solid var(--line);display:flex;gap:8px;flex-wrap:wrap;align-items:center;z-index:2}
button,select{font:inherit;padding:3px 10px;border:1px solid var(--line);background:var(--soft);color:var(--fg);border-radius:4px;cursor:pointer}
button[aria-pressed=true]{outline:2px solid var(--fg)}
.tl{display:grid;grid-template-columns:minmax(120px,220px) 1fr;gap:2px 10px;align-items:center}
.tl .label{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.tl .batch{font-weight:600;margin-top:6px}
.track{position:relative;height:20px;background:var(--soft);border-radius:3px}
.span{position:absolute;top:7px;height:6px;background:var(--line);border-radius:3px}
.mark{position:absolute;top:2px;height:16px;min-width:4px;border-radius:2px;background:var(--ok);opacity:.85}
.mark.refused{background:var(--bad)}.mark.hookfail{background:var(--warn)}
.mark.audit{width:10px;height:10px;top:5px;border-radius:50%;background:var(--ok)}.mark.audit.failed{background:var(--bad)}
.axis{display:flex;justify-content:space-between;color:var(--muted);font-size:12px}
details.call{border-bottom:1px solid var(--line);padding:3px 0}
details.call>summary{cursor:pointer;list-style-position:outside;overflow-wrap:anywhere}
details.call.refused>summary .what{color:var(--bad);font-weight:600}
details.call.hookfail>summary .what{color:var(--warn)}
.body{padding:4px 0 8px 18px}
.legend span{margin-right:14px}.legend i{display:inline-block;width:18px;height:3px;vertical-align:middle;margin-right:4px}
svg.chart{width:100%;height:auto;max-height:260px;background:var(--soft)}
svg.chart text{fill:var(--muted);font-size:12px}
h3{font-size:14px;margin:16px 0 4px}p.role{margin:8px 0 2px}
details.file{border-bottom:1px solid var(--line);padding:3px 0}details.file>summary{cursor:pointer;overflow-wrap:anywhere}
pre.diff{white-space:pre;overflow-wrap:normal;max-height:40em;padding:4px 0}
pre.diff>span{display:block;padding:0 10px;min-width:max-content}
.da{background:rgba(46,125,50,.14)}.dd{background:rgba(198,40,40,.14)}.dh{color:var(--muted);background:var(--line)}
.tk{color:#8e24aa}.ts{color:#2e7d32}.tc{color:var(--muted);font-style:italic}.tn{color:#1565c0}.tf{color:#00838f}.tb{color:#ef6c00}
@media (max-width:699px){main{padding:10px 10px 30px}.tl{grid-template-columns:minmax(80px,120px) 1fr}
table{display:block;overflow-x:auto;width:auto;max-width:100%}th,td{overflow-wrap:normal;white-space:nowrap}}
"""

# Filters (all / refused / hook failures / one role), expand and collapse, and opening
# the call a timeline mark or the address (#call-N, #refused) points at.
SCRIPT = """
(function () {
  var calls = Array.prototype.slice.call(document.querySelectorAll('details.call'));
  var shown = document.getElementById('shown');
  var roleSelect = document.getElementById('role');
  var current = 'all';
  function apply(filter) {
    current = filter;
    var role = roleSelect ? roleSelect.value : '';
    var n = 0;
    calls.forEach(function (d) {
      var ok = (filter === 'all' || d.classList.contains(filter)) &&
               (role === '' || d.getAttribute('data-role') === role);
      d.hidden = !ok;
      if (ok) { n += 1; }
    });
    shown.textContent = n + ' of ' + calls.length + (calls.length === 1 ? ' call' : ' calls') + ' shown';
    document.querySelectorAll('button[data-filter]').forEach(function (b) {
      b.setAttribute('aria-pressed', String(b.getAttribute('data-filter') === filter));
    });
  }
  document.querySelectorAll('button[data-filter]').forEach(function (b) {
    b.addEventListener('click', function () { apply(b.getAttribute('data-filter')); });
  });
  if (roleSelect) { roleSelect.addEventListener('change', function () { apply(current); }); }
  document.getElementById('expand').addEventListener('click', function () {
    calls.forEach(function (d) { if (!d.hidden) { d.open = true; } });
  });
  document.getElementById('collapse').addEventListener('click', function () {
    calls.forEach(function (d) { d.open = false; });
  });
  function fromAddress() {
    var name = decodeURIComponent(location.hash.slice(1));
    if (name === 'refused' || name === 'hookfail') { apply(name); return; }
    var target = document.getElementById(name);
    if (target && target.tagName === 'DETAILS') {
      if (target.hidden) { apply('all'); }
      target.open = true;
      target.scrollIntoView();
    }
  }
  window.addEventListener('hashchange', fromAddress);
  apply('all');
  fromAddress();
  document.body.setAttribute('data-ready', 'yes');
})();
"""


def script_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()


def csp(script: str = SCRIPT) -> str:
    """Nothing is fetched (no images, fonts, frames, connections); inline style is allowed
    (the timeline's positions); of scripts, only `script` runs."""
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src '{script_hash(script)}'; base-uri 'none'; form-action 'none'"
    )
