"""The console's pure guards: sessions in memory, per-session CSRF tokens, and the failed-login rate limit.

No I/O and no clock of their own: every call is given `now` (seconds, monotonic), so tests drive time and the
web layer (app.py) alone reads the clock and the cookies.
"""

from __future__ import annotations

import hmac
import secrets
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from .live import CachedPart

LOGIN_FORM_SECONDS = 15 * 60  # how long a login form shown stays good to post (an anonymous session)
MAX_SESSIONS = 10_000  # sessions kept at most, anonymous ones (a login form shown) included: the oldest go first
FAILURES_ALLOWED = 5  # failed logins per window, per user name and per client address (the next is refused)
FAILURE_WINDOW = 60.0  # seconds
MAX_FAILURE_KEYS = 100_000  # names and addresses remembered at most (the oldest forgotten first)


def new_token() -> str:
    """A random, unguessable token (session ids and CSRF tokens): 256 bits, URL-safe."""
    return secrets.token_urlsafe(32)


def csrf_ok(expected: str, sent: str | None) -> bool:
    """Whether a form's CSRF token is the session's (constant time; a missing or empty token never is)."""
    return bool(sent) and bool(expected) and hmac.compare_digest(expected.encode(), (sent or "").encode())


@dataclass
class Session:
    """One browser's session: anonymous (`user` None) while it shows the login form, then the person's."""

    sid: str
    csrf: str
    last_seen: float
    user: str | None = None
    flash: list[tuple[str, str]] = field(default_factory=list)  # (kind "ok"/"error", text) shown once
    pending: CachedPart | None = None  # the pending page's live part as last read for this session (live.py)

    def say(self, kind: str, text: str) -> None:
        """Queue a message for the next page this session sees (after the POST's redirect)."""
        self.flash.append((kind, text))

    def take_flash(self) -> list[tuple[str, str]]:
        """The queued messages, now shown and forgotten."""
        taken, self.flash = self.flash, []
        return taken


class Sessions:
    """Sessions in server memory, a person's expiring after `idle_seconds` without a request, a login form's
    after `form_seconds` (a restart logs everyone out, which is the safe direction)."""

    def __init__(self, idle_seconds: float, limit: int = MAX_SESSIONS, form_seconds: float = LOGIN_FORM_SECONDS
                 ) -> None:
        """Empty, with these limits."""
        self.idle_seconds = idle_seconds
        self.form_seconds = form_seconds
        self.limit = limit
        self._by_id: OrderedDict[str, Session] = OrderedDict()  # least recently seen first

    def __len__(self) -> int:
        """How many sessions are held (anonymous ones included)."""
        return len(self._by_id)

    def open(self, now: float, user: str | None = None) -> Session:
        """A new session with fresh id and CSRF token (a login gets a new one: no fixation)."""
        while len(self._by_id) >= self.limit:
            self._by_id.popitem(last=False)
        s = Session(new_token(), new_token(), now, user)
        self._by_id[s.sid] = s
        return s

    def find(self, sid: str | None, now: float, *, touch: bool = True) -> tuple[Session | None, bool]:
        """The live session of this id, touched unless told not to (its idle time starts again: a person's
        request, not the page refreshing itself), and whether a logged-in session of this id had just expired
        (the login page then says so). An unknown id is neither."""
        if not sid:
            return None, False
        s = self._by_id.get(sid)
        if s is None:
            return None, False
        if self._expired(s, now):
            del self._by_id[sid]
            return None, s.user is not None
        if touch:
            s.last_seen = now
            self._by_id.move_to_end(sid)
        return s, False

    def close(self, sid: str) -> None:
        """Forget a session (logout; a login replaces the login form's)."""
        self._by_id.pop(sid, None)

    def _expired(self, s: Session, now: float) -> bool:
        """Whether a session has been idle longer than its kind may be."""
        return now - s.last_seen > (self.idle_seconds if s.user is not None else self.form_seconds)

    def sweep(self, now: float) -> int:
        """Forget the expired sessions; returns how many."""
        gone = [sid for sid, s in self._by_id.items() if self._expired(s, now)]
        for sid in gone:
            del self._by_id[sid]
        return len(gone)


class LoginLimiter:
    """At most `allowed` failed logins per `window` seconds for each key (a user name, a client address):
    while a key is at its limit, a login under it is refused before its password is even checked."""

    def __init__(self, allowed: int = FAILURES_ALLOWED, window: float = FAILURE_WINDOW,
                 max_keys: int = MAX_FAILURE_KEYS) -> None:
        """Empty, with these limits."""
        self.allowed = allowed
        self.window = window
        self.max_keys = max_keys
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, key: str, now: float) -> deque[float]:
        """A key's failures still in the window (older ones dropped, an empty key forgotten)."""
        times = self._failures.get(key)
        if times is None:
            return deque()
        while times and now - times[0] >= self.window:
            times.popleft()
        if not times:
            del self._failures[key]
        return times

    def wait(self, keys: list[str], now: float) -> float:
        """Seconds until a login under all these keys may be tried again (0: now)."""
        longest = 0.0
        for key in keys:
            times = self._recent(key, now)
            if len(times) >= self.allowed:
                longest = max(longest, times[len(times) - self.allowed] + self.window - now)
        return longest

    def failed(self, keys: list[str], now: float) -> None:
        """Count a failed login under each key."""
        for key in keys:
            times = self._failures.setdefault(key, deque())
            times.append(now)
            self._failures.move_to_end(key)
        while len(self._failures) > self.max_keys:
            self._failures.popitem(last=False)


def limit_keys(user: str, address: str) -> list[str]:
    """The keys a login counts under: its user name and its client address."""
    return [f"user:{user.lower()}", f"addr:{address}"]
