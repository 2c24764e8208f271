"""The stylesheet of report.html, inlined so the file works offline and alone (no CDN, no fetch)."""

from __future__ import annotations

from html import escape

from orchestra.report.html.filter import SCRIPT_SOURCE

# Defence in depth: everything is escaped, and the page also forbids every remote load and every
# script but its own filter script (allowed by its hash), so a message that slipped through
# escaping still could not run or phone home.
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src {SCRIPT_SOURCE}"
)

STYLE = """
:root { --ok: #1a7f37; --bad: #cf222e; --err: #9a6700; --muted: #656d76; --line: #d0d7de;
        --user: #0969da; --orchestrator: #8250df; --worker: #bc4c00; --bot: #1b7c83; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #1f2328; background: #f6f8fa; }
header.page { background: #24292f; color: #fff; padding: 14px 24px; }
header.page h1 { margin: 0 0 4px; font-size: 20px; }
header.page .sub { color: #c9d1d9; font-size: 13px; }
main { padding: 16px 24px 48px; }
section.block { background: #fff; border: 1px solid var(--line); border-radius: 8px;
                padding: 12px 16px; margin: 0 0 18px; }
h2 { font-size: 17px; margin: 4px 0 10px; }
h3 { font-size: 15px; margin: 14px 0 8px; }
table.summary th { white-space: normal; }
td { overflow-wrap: break-word; }
table.summary td.num, table.summary td:first-child { white-space: nowrap; }
table.summary td.pass-k { min-width: 9em; }
table.summary { font-size: 13px; }
table.summary th, table.summary td { padding: 4px 5px; }
table.summary td.task { min-width: 9em; }
table.summary td.failing { min-width: 11em; }
table.summary td.num.tokens { white-space: normal; }
table.inputs code, p.digest code { overflow-wrap: anywhere; }
table.agents { font-size: 12px; }
table.agents th { white-space: normal; }
table.agents th, table.agents td { padding: 3px 4px; }
.note { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 6px 10px;
        margin: 6px 0 10px; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left;
         vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.group td { font-weight: 600; background: #f6f8fa; }
.heat .chips { display: flex; flex-wrap: wrap; gap: 4px; }
.chip { border-radius: 4px; padding: 0 6px; font-size: 12px; overflow-wrap: anywhere; }
.chip b { font-variant-numeric: tabular-nums; }
section.filters { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center;
                  position: sticky; top: 0; z-index: 1; }
section.filters[hidden], [hidden] { display: none; }
section.filters select, section.filters input { font: inherit; max-width: 22em; }
#f-count { color: var(--muted); }
.status-scored.pass, .pass { color: var(--ok); font-weight: 600; }
.fail { color: var(--bad); font-weight: 600; }
.status-error, .status-cancelled, .status-running { color: var(--err); font-weight: 600; }
details.trial { background: #fff; border: 1px solid var(--line); border-radius: 8px;
                margin: 0 0 12px; }
details.trial > summary { padding: 10px 16px; cursor: pointer; display: flex; flex-wrap: wrap;
                          gap: 6px 16px; align-items: baseline; overflow-wrap: anywhere; }
details.trial[open] > summary { border-bottom: 1px solid var(--line); }
details.trial > summary::before { content: "▸"; color: var(--muted); }
details.trial[open] > summary::before { content: "▾"; }
details.trial > summary::-webkit-details-marker { display: none; }
details.trial > summary h2 { margin: 0; }
.trial-body { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 16px;
              padding: 12px 16px; }
@media (max-width: 900px) { .trial-body { grid-template-columns: minmax(0, 1fr); } }
.chat { display: flex; flex-direction: column; gap: 6px; }
.msg { border: 1px solid var(--line); border-left: 4px solid var(--muted); border-radius: 6px;
       padding: 6px 10px; background: #fff; }
.msg.depth-1 { margin-left: 28px; } .msg.depth-2 { margin-left: 56px; }
.msg.depth-3 { margin-left: 84px; } .msg.depth-4 { margin-left: 112px; }
.msg.role-user { border-left-color: var(--user); }
.msg.role-orchestrator { border-left-color: var(--orchestrator); }
.msg.role-worker { border-left-color: var(--worker); }
.msg.role-bot { border-left-color: var(--bot); }
.msg.scripted { background: #f6f0ff; }
.msg.graded { outline: 3px solid #2da44e; outline-offset: 1px; }
.msg .meta { font-size: 12px; color: var(--muted); display: flex; flex-wrap: wrap; gap: 4px 10px;
             align-items: baseline; }
.msg .author { font-weight: 600; color: #1f2328; text-decoration: none; }
.msg .content { white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0 2px; }
.badge { display: inline-block; border-radius: 10px; padding: 0 8px; font-size: 11px;
         font-weight: 600; border: 1px solid transparent; }
.badge.task { background: #ddf4ff; color: #0550ae; }
.badge.scripted { background: #fbefff; color: #6639ba; }
.badge.graded { background: #dafbe1; color: #116329; border-color: #2da44e; }
.badge.completion { background: #fff1e5; color: #953800; }
a.mention { border-radius: 4px; padding: 0 3px; text-decoration: none; font-weight: 600; }
a.mention.notified { background: #ddf4ff; color: #0550ae; }
a.mention.text-only { background: #ffebe9; color: #a40e26; text-decoration: underline wavy; }
.notifies { font-size: 12px; color: var(--muted); }
.identities { font-size: 12px; margin: 0 0 10px; }
.identities li:target { background: #fff8c5; }
.panel h3 { margin-top: 10px; }
.panel pre, .error pre { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px;
                        padding: 6px 8px; white-space: pre-wrap; overflow-wrap: anywhere;
                        font-size: 12px; margin: 2px 0; max-height: 320px; overflow: auto; }
.links { display: flex; flex-wrap: wrap; gap: 2px 10px; }
.links a { white-space: nowrap; }
.empty { color: var(--muted); font-style: italic; }
code { font-size: 12px; }
"""


def page_head(title: str, style: str, policy: str = CONTENT_SECURITY_POLICY) -> str:
    """A page's opening up to `<body>`: its content security policy, and `style` inlined (the
    title escaped)."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{style}</style>
</head>
<body>
"""
