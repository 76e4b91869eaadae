// The console's live part: every 2 s the page's section is fetched again (GET /part/<page>) and replaced, unless
// the person is typing in one of its forms. A session that ended sends the page back to the login form (where
// the server says, X-Login: expired, or the person removed from the users file).
// Plain JS, no build step, nothing from another host.
"use strict";
(() => {
  const live = document.getElementById("live");
  if (!live) return;
  const part = live.dataset.part;
  const REFRESH_MS = 2000;  // the server reads jackpotd's pending hits again only when a hit was announced

  function busy() {  // a form being filled in must not be wiped under the person's fingers
    for (const input of live.querySelectorAll("input:not([type=hidden])")) {
      if (input.value || input === document.activeElement) return true;
    }
    return false;
  }

  async function refresh() {
    if (busy()) return;
    let response;
    try {
      response = await fetch(`/part/${part}`, {credentials: "same-origin", cache: "no-store"});
    } catch (e) {
      return;  // the console itself is unreachable: keep what is shown, try again
    }
    if (response.status === 401) {
      window.location.assign(response.headers.get("X-Login") || "/login?expired=1");
      return;
    }
    if (!response.ok) return;
    const html = await response.text();
    if (!busy()) {
      live.innerHTML = html;
      live.dataset.refreshed = String(Date.now());
    }
  }

  setInterval(refresh, REFRESH_MS);
})();
