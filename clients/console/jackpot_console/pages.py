"""The console's pages as HTML, rendered on the server from the floor's records (pure: no I/O).

One layout with a nav; each page's live part (`<section id="live" data-part=...>`) is also served alone, for
console.js to refresh every few seconds. Every value is escaped; every POST form carries the session's CSRF
token and a request id of its own (a form sent twice is the same act, done once).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from html import escape

from jackpot_floor.calls import AuditEntry, Hit, Pool, Table

from . import words

PAGES = {"pending": "Pending hits", "tables": "Tables", "audit": "Audit trail", "pools": "Pools"}


def e(value: object) -> str:
    """Any value escaped for HTML text and attributes."""
    return escape(str(value), quote=True)


def hidden(name: str, value: str) -> str:
    """A hidden form field."""
    return f'<input type="hidden" name="{e(name)}" value="{e(value)}">'


def form(action: str, csrf: str, fields: str, button: str, kind: str = "") -> str:
    """A POST form with the session's CSRF token and a fresh request id."""
    return (f'<form method="post" action="{e(action)}" class="act {e(kind)}">{hidden("csrf", csrf)}'
            f'{hidden("request_id", str(uuid.uuid4()))}{fields}<button type="submit">{e(button)}</button></form>')


def text_field(name: str, label: str, required: bool = True) -> str:
    """A labelled text field of a form."""
    return (f'<label>{e(label)} <input type="text" name="{e(name)}" maxlength="200" autocomplete="off"'
            f'{" required" if required else ""}></label>')


def layout(title: str, body: str, *, link: str, user: str | None = None, csrf: str = "",
           flash: Sequence[tuple[str, str]] = (), active: str = "") -> str:
    """The page around a body: the nav and who is logged in (when someone is), and the flash messages."""
    nav = ""
    if user:
        items = "".join(f'<a href="/{p}"{" class=active" if p == active else ""}>{e(t)}</a>' for p, t in PAGES.items())
        logout = form("/logout", csrf, "", "Log out", "logout")
        nav = (f'<nav>{items}</nav><div class="who">Logged in as <b>{e(user)}</b> '
               f'(acting as supervisor:{e(user)}){logout}</div>')
    messages = "".join(f'<p class="flash {e(kind)}" role="status">{e(text)}</p>' for kind, text in flash)
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{e(title)} · jackpot console'
            f'</title><meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="icon" href="/static/favicon.svg"><link rel="stylesheet" href="/static/console.css">'
            f'<script src="/static/console.js" defer></script></head><body><header><h1>Jackpot console '
            f'<span class="link">link {e(link)}</span></h1>{nav}</header><main><h2>{e(title)}</h2>{messages}{body}'
            f'</main></body></html>')


def login_page(link: str, csrf: str, message: str = "", error: str = "", name: str = "",
               certificate: str = "") -> str:
    """The login form (a person's name and password), and a button for the person a client certificate names
    (`certificate`); `message` says why they are here (an expired session)."""
    notes = (f'<p class="flash info" role="status">{e(message)}</p>' if message else "") + (
        f'<p class="flash error" role="alert">{e(error)}</p>' if error else "")
    if certificate:
        notes += (f'<form method="post" action="/login/certificate" class="login certificate">{hidden("csrf", csrf)}'
                  f'<button type="submit">Log in as {e(certificate)} with your certificate</button></form>'
                  '<p class="hint">or with a name and password:</p>')
    body = (f'{notes}<form method="post" action="/login" class="login">{hidden("csrf", csrf)}'
            f'<label>Name <input type="text" name="name" value="{e(name)}" autocomplete="username" required '
            f'autofocus></label><label>Password <input type="password" name="password" '
            f'autocomplete="current-password" required></label><button type="submit">Log in</button></form>'
            f'<p class="hint">Each supervisor logs in as themselves: every act is recorded as theirs '
            f'(<code>jackpot-console users add NAME</code> makes an account).</p>')
    return layout("Log in", body, link=link)


def live(part: str, inner: str) -> str:
    """A page's live part, which console.js refreshes."""
    return f'<section id="live" data-part="{e(part)}">{inner}</section>'


def unavailable(text: str) -> str:
    """What stands in the way of a page's content, in words."""
    return f'<p class="flash error" role="alert">{e(text)}</p>'


def pending(hits: Sequence[Hit], csrf: str, now_ms: int) -> str:
    """The hits awaiting verification, oldest first, each with its Approve and Reject forms."""
    if not hits:
        return '<p class="empty">No hit awaits verification.</p>'
    rows = []
    for h in sorted(hits, key=lambda h: (h.at_ms, h.sequence)):
        approve = form("/approve", csrf, hidden("hit_id", h.hit_id) + text_field("approval_ref", "Approval ref")
                       + text_field("reason", "Note", required=False), "Approve", "approve")
        reject = form("/reject", csrf, hidden("hit_id", h.hit_id) + text_field("reason", "Reason")
                      + text_field("approval_ref", "Approval ref"), "Reject", "reject")
        rows.append(
            f'<tr data-hit-id="{e(h.hit_id)}"><td>{e(h.table_id)}</td><td>{h.seat}</td><td>{e(words.hand(h.hand))}'
            f'</td><td class="cards">{e(words.cards(h.cards))}</td><td class="money">{e(words.dollars(h.amount_cents))}'
            f'<small>{e(h.pool)}</small></td><td>{e(words.age(h.at_ms, now_ms))}</td>'
            f'<td class="approvals">{e(words.approvals(h.approved_by, h.approvals_needed))}</td>'
            f'<td class="acts">{approve}{reject}</td></tr>')
    return ('<table class="grid"><thead><tr><th>Table</th><th>Seat</th><th>Hand</th><th>Cards</th><th>Amount</th>'
            '<th>Age</th><th>Approvals</th><th></th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>")


def tables(rows: Sequence[Table], csrf: str, now_ms: int) -> str:
    """The link's tables: online, suspended, last round; Suspend or Resume forms."""
    if not rows:
        return '<p class="empty">The link has no table.</p>'
    out = []
    for t in sorted(rows, key=lambda t: t.table_id):
        if t.suspended:
            act = form("/resume", csrf, hidden("table_id", t.table_id) + text_field("reason", "Reason")
                       + text_field("approval_ref", "Approval ref"), "Resume", "resume")
        else:
            act = form("/suspend", csrf, hidden("table_id", t.table_id) + text_field("reason", "Reason"), "Suspend",
                       "suspend")
        last = words.age(t.last_round_at_ms, now_ms)
        out.append(f'<tr data-table-id="{e(t.table_id)}"><td>{e(t.table_id)}</td>'
                   f'<td class="{"on" if t.online else "off"}">{"online" if t.online else "offline"}</td>'
                   f'<td class="{"suspended" if t.suspended else ""}">{"SUSPENDED" if t.suspended else "in play"}</td>'
                   f'<td>{e(last + " ago") if last else "none yet"}</td><td class="acts">{act}</td></tr>')
    return ('<table class="grid"><thead><tr><th>Table</th><th>Controller</th><th>Jackpot wagers</th>'
            '<th>Last round</th><th></th></tr></thead><tbody>' + "".join(out) + "</tbody></table>")


def audit(entries: Sequence[AuditEntry]) -> str:
    """The recent administrative acts, newest first, refused ones included; who acted through the console too."""
    if not entries:
        return '<p class="empty">Nothing on the audit trail yet.</p>'
    out = []
    for a in entries:
        outcome = a.outcome if a.outcome == "OK" else f"{a.outcome}: {a.detail}"
        out.append(f'<tr><td>{e(words.when(a.at_ms))}</td><td class="who">{e(a.who)}</td><td>{e(a.method)}</td>'
                   f'<td>{e(a.table_id)}</td><td>{e(a.reason)}</td><td>{e(a.approval_ref)}</td>'
                   f'<td class="{"ok" if a.outcome == "OK" else "refused"}">{e(outcome)}</td></tr>')
    return ('<table class="grid"><thead><tr><th>When</th><th>Who</th><th>Act</th><th>Table</th><th>Reason</th>'
            '<th>Approval ref</th><th>Outcome</th></tr></thead><tbody>' + "".join(out) + "</tbody></table>")


def pools(rows: Sequence[Pool]) -> str:
    """The link's pools as signs show them (whole cents), with the reset each goes back to after a hit."""
    if not rows:
        return '<p class="empty">The link has no pool.</p>'
    out = [f'<tr data-pool="{e(p.pool)}"><td>{e(p.pool)}</td><td class="money">{e(words.dollars(p.amount_cents))}'
           f'</td><td class="money">{e(words.dollars(p.reset_cents))}</td></tr>' for p in rows]
    return ('<table class="grid"><thead><tr><th>Pool</th><th>Now</th><th>Reset</th></tr></thead><tbody>'
            + "".join(out) + "</tbody></table>")
