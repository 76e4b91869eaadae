// A floor sign. It shows only what the server sent (amounts the ledger holds): counting up toward a new
// amount over about a second, never past it, and dropping at once to a lower one (a hit). No build step.
//
// Hits never hide the pools for long. A MAJOR or JACKPOT hit fills the screen, alone for up to
// celebrateSeconds (at most 8), but for BUSY_MS only once another waits (SUMMARY_MS once any other hit came,
// and for any card in busy times); between two such cards the pools show
// for REST_MS; hits that queued meanwhile share one summary card. So a hit is on screen within
// BUSY_MS + REST_MS (7 s) of its arrival, and in a burst the pools show most of the time. Other hits (MINOR)
// are banners under the pools (which make room), newest first, a few at once and "+N more".
// A decision said on its card (VERIFIED AND PAID) keeps the card up DECIDED_MS more when no hit waits, so a
// decision that lands in the card's last moment is read, not flashed.
// window.__signLog keeps a short timeline of what was shown when (hits, cards, banners, offline), for tests.
"use strict";

(function () {
  const config = JSON.parse(document.getElementById("config").textContent);
  const FULL_MS = Math.min(8, Math.max(0, Number(config.celebrateSeconds) || 8)) * 1000;  // a lone card
  const BUSY_MS = Math.min(FULL_MS, 2000);     // a card's length once another hit waits
  const SUMMARY_MS = Math.min(FULL_MS, 3000);  // a card of several hits, or any card in busy times
  const DECIDED_MS = SUMMARY_MS;               // a decision said on its card stays at least this long
  const REST_MS = 5000;                        // pools between two cards
  const QUIET_MS = 10000;                      // this long after a card, the next one is a lone one again
  const BANNER_MS = 6000;                      // how long a MINOR hit's banner stays
  const BANNERS_SHOWN = 3;                     // banners at once; the rest are "+N more"
  const LIST_SHOWN = 5;                        // hits listed on a summary card; the rest are "+N more"
  const SILENCE_MS = 6000;  // the server speaks every 2 s: this long without a word and the link is offline
  const PACE_MS = 1000;     // how long the odometer takes to reach a new amount
  const ORDER = ["JACKPOT", "MAJOR", "MINOR"];
  const TOP = new Set(["JACKPOT", "MAJOR"]);  // top-level pools: their hits are celebrated full screen
  const RECONNECTING = "Reconnecting…";

  const $ = (id) => document.getElementById(id);
  const poolsEl = $("pools");
  const tablesEl = $("tables");
  const offlineEl = $("offline");
  const statusEl = $("status");
  const celEl = $("celebration");
  const bannersEl = $("banners");
  const pools = new Map();  // pool -> {el, amountEl, nowEl, shown, target, anim}
  let lastWord = Date.now();
  let offlineShown = null;  // the code and text the page shows while offline: rewritten only when they change
  const held = new Set();   // hits announced PENDING: their decision says "VERIFIED AND PAID"

  const signLog = window.__signLog = [];
  function note(what, data) {
    signLog.push(Object.assign({t: Date.now(), what: what}, data || {}));
    if (signLog.length > 5000) signLog.splice(0, 1000);
  }
  const brief = (hit) => ({id: hit.hit_id, seq: hit.sequence, pool: hit.pool, status: hit.status});

  function money(cents) {
    const negative = cents < 0;
    const abs = Math.abs(Math.trunc(cents));
    const dollars = Math.floor(abs / 100).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    const rest = String(abs % 100).padStart(2, "0");
    return (negative ? "-$" : "$") + dollars + "." + rest;
  }

  function words(text) {
    return String(text || "").replace(/_/g, " ").toUpperCase();
  }

  function span(className, text) {
    const s = document.createElement("span");
    s.className = className;
    s.textContent = text;
    return s;
  }

  // ---- online, offline -------------------------------------------------------------------------------------

  function setOffline(code, text) {
    document.body.classList.add("offline");
    offlineEl.hidden = false;
    statusEl.dataset.online = "false";
    statusEl.textContent = "OFFLINE";
    const shown = code + "\n" + text;
    if (shown !== offlineShown) {  // one cause, one text: never rewritten while the cause stays the same
      offlineShown = shown;
      $("offline-reason").textContent = text;
      $("offline-code").textContent = code;
      offlineEl.dataset.code = code;
      note("offline", {code: code, text: text});
    }
  }

  function setOnline() {
    if (offlineShown !== null) note("online");
    offlineShown = null;
    document.body.classList.remove("offline");
    offlineEl.hidden = true;
    statusEl.dataset.online = "true";
    statusEl.textContent = "LIVE";
  }

  // ---- pools and tables ------------------------------------------------------------------------------------

  function poolElement(name, index) {
    const el = document.createElement("div");
    el.className = "pool " + name.toLowerCase() + (index > 0 ? " secondary" : "");
    el.dataset.pool = name;
    const label = document.createElement("div");
    label.className = "label";
    label.textContent = name === "JACKPOT" ? "JACKPOT" : name + " JACKPOT";
    const amount = document.createElement("div");
    amount.className = "amount";
    el.append(label, amount);
    return {el: el, amountEl: amount, nowEl: span("pool-now", ""), shown: null, target: 0, anim: null};
  }

  function render(p) {
    const text = money(p.shown);
    if (p.amountEl.textContent !== text) {
      p.amountEl.textContent = text;
      p.amountEl.style.setProperty("--chars", String(text.length));
      p.el.dataset.cents = String(p.shown);
      p.nowEl.textContent = (p.el.dataset.pool === "JACKPOT" ? "JACKPOT " : p.el.dataset.pool + " ") + text;
    }
  }

  function applyPools(list) {
    const shown = list.filter((p) => p.pool !== "RESERVE")
      .sort((a, b) => (ORDER.indexOf(a.pool) + 99) % 99 - (ORDER.indexOf(b.pool) + 99) % 99);
    const names = shown.map((p) => p.pool).join(",");
    if (names !== Array.from(pools.keys()).join(",")) {  // the link's pools changed (or the first state)
      const old = new Map(pools);
      pools.clear();
      poolsEl.replaceChildren();
      shown.forEach((p, i) => {
        const entry = poolElement(p.pool, i);
        const before = old.get(p.pool);
        if (before) entry.shown = before.shown;
        pools.set(p.pool, entry);
        poolsEl.append(entry.el);
      });
      $("cel-pools").replaceChildren(...Array.from(pools.values(), (p) => p.nowEl));
    }
    for (const p of shown) {
      const entry = pools.get(p.pool);
      entry.target = p.amount_cents;
      entry.el.dataset.target = String(p.amount_cents);
      entry.el.dataset.reset = String(p.reset_cents);
      if (entry.shown === null || entry.target < entry.shown) {  // first sight, or a hit: at once, never above
        entry.shown = entry.target;
        entry.anim = null;
        render(entry);
      }
    }
  }

  function applyTables(tables) {
    if (!Array.isArray(tables) || tables.length === 0) {
      tablesEl.hidden = true;
      return;
    }
    tablesEl.hidden = false;
    tablesEl.replaceChildren(...tables.map((t) => {
      const li = document.createElement("li");
      li.dataset.table = t.table_id;
      li.dataset.online = String(Boolean(t.online));
      li.dataset.suspended = String(Boolean(t.suspended));
      li.append(t.table_id);
      const state = t.suspended ? "SUSPENDED" : t.online ? "" : "OFFLINE";
      if (state) li.append(span("state", state));
      return li;
    }));
  }

  function applyState(state) {
    if (!state.online) {
      setOffline(state.code || "OFFLINE", state.reason || RECONNECTING);
      return;
    }
    applyPools(state.pools || []);
    if (state.tables) applyTables(state.tables);
    document.body.dataset.sequence = String(Math.max(Number(document.body.dataset.sequence || 0), state.sequence));
    setOnline();
  }

  // The odometer: each pool moves toward its amount, up over PACE_MS, never beyond it.
  function step(now) {
    for (const p of pools.values()) {
      if (p.shown === null || p.shown === p.target) continue;
      if (p.target < p.shown) {
        p.shown = p.target;
        p.anim = null;
      } else {
        if (!p.anim || p.anim.to !== p.target) p.anim = {from: p.shown, to: p.target, t0: now};
        // Two clocks drive this (rAF's frame time, and performance.now() from the interval), and a frame's
        // time can be earlier than the last tick's: the odometer only ever moves up, toward the target.
        const k = Math.max(0, Math.min(1, (now - p.anim.t0) / PACE_MS));
        const eased = 1 - Math.pow(1 - k, 3);
        const paced = Math.floor(p.anim.from + (p.anim.to - p.anim.from) * eased);
        p.shown = k >= 1 ? p.target : Math.min(p.target, Math.max(p.shown, paced));
        if (k >= 1) p.anim = null;
      }
      render(p);
    }
  }
  function frame(now) {
    step(now);
    requestAnimationFrame(frame);
  }
  requestAnimationFrame(frame);
  setInterval(() => step(performance.now()), 250);  // keeps pace where animation frames are throttled

  // ---- what a hit says -------------------------------------------------------------------------------------

  function statusText(hit) {
    const status = hit.status || "PAID";
    if (status === "PENDING") return "PENDING VERIFICATION";
    if (status === "REJECTED") return "REJECTED BY THE SUPERVISOR";
    return held.has(hit.hit_id) ? "VERIFIED AND PAID" : "";
  }

  function approvalsText(hit) {
    const needed = Number(hit.approvals_needed) || 0;
    return hit.status === "PENDING" && needed > 1 ? (Number(hit.approvals) || 0) + " of " + needed + " approvals"
      : "";
  }

  function remember(hit) {  // a PENDING hit's decision is "VERIFIED AND PAID"
    if (hit.status === "PENDING") held.add(hit.hit_id);
  }

  // ---- full-screen cards: MAJOR and JACKPOT hits -----------------------------------------------------------

  let waiting = [];    // top-level hits not yet on a card
  let card = null;     // {hits, start, end, timer}
  let lastEnd = -Infinity;
  let restTimer = null;

  function fillCard(hits) {
    const one = hits.length === 1 ? hits[0] : null;
    const status = one ? one.status || "PAID" : "";
    celEl.dataset.status = status;
    celEl.dataset.hits = hits.map((h) => h.hit_id).join(",");
    for (const key of ["hitId", "table", "seat", "hand", "amountCents", "pool"]) delete celEl.dataset[key];
    $("cel-one").hidden = !one;
    $("cel-list").hidden = Boolean(one);
    if (one) {
      Object.assign(celEl.dataset, {hitId: one.hit_id, table: one.table_id, seat: String(one.seat), hand: one.hand,
                                    amountCents: String(one.amount_cents), pool: one.pool});
      $("cel-title").textContent = status === "REJECTED" ? "HIT NOT CONFIRMED" : words(one.pool) + " JACKPOT!";
      $("cel-hand").textContent = words(one.hand);
      $("cel-amount").textContent = money(one.amount_cents);
      $("cel-table").textContent = one.table_id;
      $("cel-seat").textContent = String(one.seat);
      $("cel-status").textContent = statusText(one);
      $("cel-approvals").textContent = approvalsText(one);
    } else {
      $("cel-title").textContent = hits.length + " JACKPOTS!";
      const lines = hits.slice(0, LIST_SHOWN).map((h) => {
        const li = document.createElement("li");
        li.dataset.hitId = h.hit_id;
        const said = [statusText(h), approvalsText(h)].filter(Boolean).join(", ");
        li.append(words(h.pool) + " · " + words(h.hand) + " · ", span("cash", money(h.amount_cents)),
                  " · TABLE " + h.table_id + " · SEAT " + h.seat + (said ? " · " + said : ""));
        return li;
      });
      if (hits.length > LIST_SHOWN) lines.push(Object.assign(document.createElement("li"),
        {className: "more", textContent: "+" + (hits.length - LIST_SHOWN) + " more"}));
      $("cel-list").replaceChildren(...lines);
      $("cel-status").textContent = "";
      $("cel-approvals").textContent = "";
    }
  }

  function endCardAt(when) {
    clearTimeout(card.timer);
    card.end = when;
    card.timer = setTimeout(endCard, Math.max(0, when - Date.now()));
  }

  function showCard() {
    restTimer = null;
    if (card || waiting.length === 0) return;
    const now = Date.now();
    const hits = waiting;
    waiting = [];
    const busy = hits.length > 1 || now - lastEnd < QUIET_MS;
    card = {hits: hits, start: now, end: now, timer: null};
    fillCard(hits);
    celEl.hidden = false;
    endCardAt(now + (busy ? SUMMARY_MS : FULL_MS));
    note("full", {on: true, hits: hits.map(brief), until: card.end});
  }

  function endCard() {
    celEl.hidden = true;
    note("full", {on: false, hits: card.hits.map((h) => h.hit_id)});
    card = null;
    lastEnd = Date.now();
    schedule();
  }

  function schedule() {  // the next card after the pools have shown for REST_MS
    if (card || restTimer !== null || waiting.length === 0) return;
    restTimer = setTimeout(showCard, Math.max(0, lastEnd + REST_MS - Date.now()));
  }

  function onTopHit(hit) {
    if (card) {
      const i = card.hits.findIndex((h) => h.hit_id === hit.hit_id);
      if (i >= 0) {  // a decision (or an approval) of a hit on screen: said in place
        const decided = hit.status !== card.hits[i].status && hit.status !== "PENDING";
        card.hits[i] = hit;
        fillCard(card.hits);
        // a decision in the card's last moment would flash by unread: it stays DECIDED_MS, unless a hit waits
        if (decided && waiting.length === 0) endCardAt(Math.max(card.end, Date.now() + DECIDED_MS));
        note("update", {hits: [brief(hit)], until: card.end});
        return;
      }
    }
    const i = waiting.findIndex((h) => h.hit_id === hit.hit_id);
    if (i >= 0) {  // still waiting: its card shows the latest word
      waiting[i] = hit;
      return;
    }
    waiting.push(hit);
    if (card) endCardAt(Math.min(card.end, Math.max(card.start + BUSY_MS, Date.now())));
    schedule();
  }

  // ---- banners: other hits, over the pools -----------------------------------------------------------------

  let banners = [];  // newest first: {hit, until}

  function drawBanners() {
    const now = Date.now();
    banners = banners.filter((b) => b.until > now);
    const items = banners.slice(0, BANNERS_SHOWN).map((b) => {
      const h = b.hit;
      const li = document.createElement("li");
      li.dataset.hitId = h.hit_id;
      li.dataset.status = h.status || "PAID";
      li.dataset.pool = h.pool;
      const said = [h.status === "REJECTED" ? "HIT NOT CONFIRMED" : statusText(h), approvalsText(h)]
        .filter(Boolean).join(" · ");
      li.append(span("what", words(h.pool) + " JACKPOT · " + words(h.hand)), span("amount", money(h.amount_cents)),
                span("where", "TABLE " + h.table_id + " · SEAT " + h.seat));
      if (said) li.append(span("status", said));
      return li;
    });
    if (banners.length > BANNERS_SHOWN) items.push(Object.assign(document.createElement("li"),
      {className: "more", textContent: "+" + (banners.length - BANNERS_SHOWN) + " more"}));
    bannersEl.replaceChildren(...items);
  }
  setInterval(() => { if (banners.length) drawBanners(); }, 250);

  function onBannerHit(hit) {
    // busy play: a lone card is cut to SUMMARY_MS (its banner shows under the pools when the card ends)
    if (card) endCardAt(Math.min(card.end, Math.max(card.start + SUMMARY_MS, Date.now())));
    banners = [{hit: hit, until: Date.now() + BANNER_MS}, ...banners.filter((b) => b.hit.hit_id !== hit.hit_id)];
    drawBanners();
    note("banner", {hits: [brief(hit)]});
  }

  function onHit(hit) {
    if (hit.pools) applyState({online: true, pools: hit.pools, sequence: hit.sequence});
    note("hit", {hits: [brief(hit)]});
    remember(hit);
    if (TOP.has(hit.pool)) onTopHit(hit);
    else onBannerHit(hit);
  }

  // ---- the feed --------------------------------------------------------------------------------------------

  function listen() {
    const source = new EventSource("/links/" + encodeURIComponent(config.link) + "/events");
    const heard = (handler) => (event) => {
      lastWord = Date.now();
      handler(JSON.parse(event.data));
    };
    source.addEventListener("state", heard(applyState));
    source.addEventListener("hit", heard(onHit));
    source.addEventListener("offline", heard((data) => setOffline(data.code || "OFFLINE", data.reason)));
    // The sign server is out of reach: one cause, one text, whichever of these two notices it (EventSource's
    // error at each of its retries, or the silence check); the two once wrote different texts, in turn.
    const unreachable = () => setOffline("SIGN_SERVER", RECONNECTING);
    source.onerror = unreachable;
    setInterval(() => {
      if (Date.now() - lastWord > SILENCE_MS) {
        unreachable();
        if (source.readyState === EventSource.CLOSED) location.reload();
      }
    }, 500);
  }

  setOffline("CONNECTING", "Connecting…");
  listen();
})();
