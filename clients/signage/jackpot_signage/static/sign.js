// A floor sign. It shows only what the server sent (amounts the ledger holds): counting up toward a new
// amount over about a second, never past it, and dropping at once to a lower one (a hit). No build step.
"use strict";

(function () {
  const config = JSON.parse(document.getElementById("config").textContent);
  const CELEBRATE_MS = Math.max(0, Number(config.celebrateSeconds) || 8) * 1000;
  const SILENCE_MS = 6000;  // the server speaks every 2 s: this long without a word and the link is offline
  const PACE_MS = 1000;     // how long the odometer takes to reach a new amount
  const ORDER = ["JACKPOT", "MAJOR", "MINOR"];

  const poolsEl = document.getElementById("pools");
  const tablesEl = document.getElementById("tables");
  const offlineEl = document.getElementById("offline");
  const statusEl = document.getElementById("status");
  const celEl = document.getElementById("celebration");
  const pools = new Map();  // pool -> {el, amountEl, shown, target, anim}
  let lastWord = Date.now();
  let online = false;
  const queue = [];         // hits waiting for the celebration
  let celebrating = false;
  const held = new Set();  // hits announced PENDING: their decision says so

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

  function setOffline(reason) {
    online = false;
    document.body.classList.add("offline");
    offlineEl.hidden = false;
    document.getElementById("offline-reason").textContent = reason || "";
    statusEl.dataset.online = "false";
    statusEl.textContent = "OFFLINE";
  }

  function setOnline() {
    online = true;
    document.body.classList.remove("offline");
    offlineEl.hidden = true;
    statusEl.dataset.online = "true";
    statusEl.textContent = "LIVE";
  }

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
    return {el: el, amountEl: amount, shown: null, target: 0, anim: null};
  }

  function render(p) {
    const text = money(p.shown);
    if (p.amountEl.textContent !== text) {
      p.amountEl.textContent = text;
      p.amountEl.style.setProperty("--chars", String(text.length));
      p.el.dataset.cents = String(p.shown);
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
      if (state) {
        const s = document.createElement("span");
        s.className = "state";
        s.textContent = state;
        li.append(s);
      }
      return li;
    }));
  }

  function applyState(state) {
    if (!state.online) {
      setOffline(state.reason || "jackpotd unreachable");
      return;
    }
    applyPools(state.pools || []);
    if (state.tables) applyTables(state.tables);
    document.body.dataset.sequence = String(state.sequence);
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

  // Celebrations, one hit at a time.
  function celebrate(hit) {
    celebrating = true;
    const status = hit.status || "PAID";
    celEl.dataset.hitId = hit.hit_id;
    celEl.dataset.table = hit.table_id;
    celEl.dataset.seat = String(hit.seat);
    celEl.dataset.hand = hit.hand;
    celEl.dataset.amountCents = String(hit.amount_cents);
    celEl.dataset.pool = hit.pool;
    celEl.dataset.status = status;
    document.getElementById("cel-title").textContent =
      status === "REJECTED" ? "HIT NOT CONFIRMED" : words(hit.pool) + " JACKPOT!";
    document.getElementById("cel-hand").textContent = words(hit.hand);
    document.getElementById("cel-amount").textContent = money(hit.amount_cents);
    document.getElementById("cel-table").textContent = hit.table_id;
    document.getElementById("cel-seat").textContent = String(hit.seat);
    document.getElementById("cel-status").textContent =
      status === "PENDING" ? "PENDING VERIFICATION"
        : status === "REJECTED" ? "REJECTED BY THE SUPERVISOR"
          : held.has(hit.hit_id) ? "VERIFIED AND PAID" : "";
    if (status === "PENDING") held.add(hit.hit_id);
    else held.delete(hit.hit_id);
    celEl.hidden = false;
    setTimeout(() => {
      celEl.hidden = true;
      celebrating = false;
      if (queue.length) celebrate(queue.shift());
    }, queue.length > 2 ? Math.min(CELEBRATE_MS, 3000) : CELEBRATE_MS);
  }

  function onHit(hit) {
    if (hit.pools) applyState({online: true, pools: hit.pools, sequence: hit.sequence});
    if (celebrating) queue.push(hit);
    else celebrate(hit);
  }

  function listen() {
    const source = new EventSource("/links/" + encodeURIComponent(config.link) + "/events");
    const heard = (handler) => (event) => {
      lastWord = Date.now();
      handler(JSON.parse(event.data));
    };
    source.addEventListener("state", heard(applyState));
    source.addEventListener("hit", heard(onHit));
    source.addEventListener("offline", heard((data) => setOffline(data.reason)));
    source.onerror = () => setOffline("sign server unreachable; reconnecting");  // EventSource retries itself
    setInterval(() => {
      if (Date.now() - lastWord > SILENCE_MS) {
        setOffline("no word from the sign server for " + SILENCE_MS / 1000 + " s");
        if (source.readyState === EventSource.CLOSED) location.reload();
      }
    }, 500);
  }

  setOffline("connecting");
  listen();
})();
