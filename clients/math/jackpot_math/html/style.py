"""The certificate page's style sheet, inline in the page (its Content-Security-Policy allows inline style and
nothing else): the screen layout (the key-figures box in three columns, the what-if's two columns) and the A4
print layout (one column, the key figures kept on one page)."""

CSS = """
:root { color-scheme: light; --line: #c9ced6; --muted: #5a6270; --diff: #fff1c2; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #1c1f24;
       margin: 24px auto; max-width: 1400px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 8px; } h2 { font-size: 18px; margin: 32px 0 8px; border-bottom: 2px solid #1c1f24; }
h3 { font-size: 15px; margin: 18px 0 6px; } h4 { font-size: 13px; margin: 12px 0 4px; color: var(--muted); }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dt { color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 4px 0 12px; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
thead th { background: #f2f4f7; font-weight: 600; }
tbody th { font-weight: 500; }
td.num, th.num { text-align: right; white-space: nowrap; }
table.settings { width: 100%; } table.settings th { white-space: nowrap; width: 12em; }
table.settings td { overflow-wrap: anywhere; word-break: break-all; }
td.diff, th.diff { background: var(--diff); font-weight: 600; }
.cols { display: grid; grid-template-columns: 1fr 1fr; gap: 24px; }
.cols > div { min-width: 0; overflow-x: auto; }
.cols table { font-size: 12px; } .cols th, .cols td { padding: 2px 5px; }
.side { font-size: 12px; text-transform: uppercase; letter-spacing: .06em; color: var(--muted); margin: 0 0 4px; }
.side.proposed { color: #b8430f; } .side.same { text-transform: none; letter-spacing: 0; font-style: italic; }
tbody th { white-space: nowrap; }
.note { color: var(--muted); margin: 4px 0 8px; }
.empty { color: var(--muted); font-style: italic; }
.verdict { font-weight: 700; padding: 6px 10px; border-radius: 4px; display: inline-block; }
.verdict.ok { background: #e3f4e6; color: #1b7a2e; }
.verdict.none { background: #f1f2f4; color: #4a5160; } .verdict.fail { background: #fbe4e2; color: #b3261e; }
ul.findings { padding-left: 1.2em; } ul.findings li { margin: .25em 0; }
li.critical strong { color: #b3261e; text-transform: uppercase; } li.notice strong { color: #8a5a00; }
p.ok { color: #1b7a2e; }
code { font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; overflow-wrap: anywhere; }
svg.chart { width: 100%; height: auto; max-width: 960px; display: block; }
svg .plot { fill: #fafbfc; stroke: var(--line); } svg .grid { stroke: #e3e6ea; } svg .tickmark { stroke: var(--muted); }
svg text { font-size: 12px; fill: #1c1f24; } svg .tick { fill: var(--muted); } svg .axis { font-weight: 600; }
svg .hundred { stroke: #1c1f24; stroke-dasharray: 8 4; } svg .hundred-label { fill: var(--muted); }
svg .panel { font-weight: 600; }
section.methods p { max-width: 70em; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
section.glance { border: 2px solid #1c1f24; border-radius: 6px; padding: 8px 16px 4px; margin: 12px 0 0;
                 background: #fbfcfd; }
section.glance h2 { margin: 0 0 2px; border: 0; font-size: 19px; }
section.glance p.play { margin: 0 0 6px; color: var(--muted); }
.q3 { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 24px; }
.q3 > div { min-width: 0; } .q3 h3 { margin: 2px 0 4px; font-size: 16px; }
.q3 table { width: 100%; margin-bottom: 4px; } .q3 tbody th { white-space: normal; }
.q3 td.num { white-space: normal; } .q3 thead th { padding: 1px 8px; font-size: 12px; }
.q3 span.answer { display: block; font-size: 15px; font-weight: 700; }
.q3 span.detail { display: block; font-size: 12px; color: var(--muted); font-weight: 400; }
.q3 p.note { font-size: 12px; margin: 2px 0 6px; }
section#findings h2 { margin-top: 18px; }
header p.note { margin: 0; }
@media (max-width: 1100px) { .cols, .q3 { display: block; } .cols > div { margin-bottom: 12px; } }
@media print {
  @page { size: A4 portrait; margin: 12mm; }
  body { margin: 0; max-width: none; font-size: 9pt; padding: 0; }
  h2 { break-after: avoid; } h3, h4 { break-after: avoid; }
  tr, svg, dl.meta { break-inside: avoid; }
  thead { display: table-header-group; }
  .cols, .q3 { display: block; } .cols > div { overflow: visible; margin-bottom: 10px; }
  section.glance { break-inside: avoid; }
  td, th { overflow-wrap: anywhere; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""
