// Vigil review page: plain DOM, no build step. Chat text is hostile input: it only ever enters the
// page as text nodes (never innerHTML), and the server sends a strict Content-Security-Policy.
"use strict";
(function () {
  const API = document.body.dataset.api;
  const TOKEN_KEY = "vigil.review.token";
  const state = { me: null, items: [], index: -1, item: null, verdicts: {}, revealed: false };
  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  function say(message, isError) {
    const box = $("status");
    box.textContent = message || "";
    box.className = isError ? "error" : "";
    if (message && !isError) setTimeout(() => { if (box.textContent === message) box.textContent = ""; }, 4000);
  }

  const token = () => sessionStorage.getItem(TOKEN_KEY);

  async function api(path, options) {
    const opts = options || {};
    const headers = { Authorization: "Bearer " + token() };
    if (opts.body !== undefined) headers["Content-Type"] = "application/json";
    const resp = await fetch(API + path, {
      method: opts.method || "GET",
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      cache: "no-store",
    });
    let data = null;
    try { data = await resp.json(); } catch (e) { data = null; }
    if (resp.status === 401) { signOut("The token was not accepted."); }
    return { ok: resp.ok, status: resp.status, data: data || {} };
  }

  function problem(r) {
    const d = r.data || {};
    const detail = Array.isArray(d.detail) ? d.detail.map((x) => x.loc + ": " + x.msg).join("; ") : d.detail;
    return (d.error || ("HTTP " + r.status)) + (detail ? " — " + detail : "");
  }

  // --- sign in ------------------------------------------------------------------------------
  function signOut(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    state.me = null;
    $("app").hidden = true;
    $("signout").hidden = true;
    $("who").textContent = "";
    $("login").hidden = false;
    $("token").value = "";
    $("token").focus();
    if (message) say(message, true);
  }

  async function signIn() {
    const r = await api("/me");
    if (!r.ok) { if (r.status !== 401) signOut(problem(r)); return; }
    state.me = r.data;
    $("who").textContent = r.data.name + " (" + r.data.roles.join(", ") + ")";
    $("login").hidden = true;
    $("signout").hidden = false;
    $("app").hidden = false;
    await loadQueue();
  }

  // --- queue --------------------------------------------------------------------------------
  function age(iso) {
    const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (s < 90) return Math.round(s) + "s";
    if (s < 5400) return Math.round(s / 60) + "m";
    if (s < 172800) return Math.round(s / 3600) + "h";
    return Math.round(s / 86400) + "d";
  }

  async function loadQueue(keepId) {
    const params = new URLSearchParams({ status: $("status-filter").value, limit: "200" });
    const tenant = $("tenant-filter").value.trim();
    if (tenant) params.set("tenant", tenant);
    const r = await api("/items?" + params.toString());
    if (!r.ok) { if (r.status !== 401) say(problem(r), true); return; }
    const previous = keepId || (state.items[state.index] || {}).conversation_id;
    state.items = r.data.items;
    $("queue-partial").hidden = !r.data.partial;
    renderQueue();
    let idx = state.items.findIndex((i) => i.conversation_id === previous);
    if (idx < 0) idx = state.items.length ? Math.min(Math.max(state.index, 0), state.items.length - 1) : -1;
    await select(idx);
  }

  function renderQueue() {
    const body = $("queue").querySelector("tbody");
    body.replaceChildren(...state.items.map((it, i) => el("tr", {
      "data-cid": it.conversation_id,
      "data-status": it.status,
      onclick: () => select(i),
    },
      el("td", {}, el("span", { class: "band band-" + it.band }, it.band + " " + it.priority)),
      el("td", { class: "status-" + it.status }, it.status),
      el("td", {}, it.tenant || "—"),
      el("td", {}, it.reasons.map((r) => el("span", { class: "reason" }, r))),
      el("td", { title: it.created_at }, age(it.created_at)),
      el("td", {}, it.claimed_by || ""),
    )));
    $("queue-empty").hidden = state.items.length > 0;
  }

  async function select(i) {
    state.index = i;
    const rows = $("queue").querySelectorAll("tbody tr");
    rows.forEach((row, j) => row.classList.toggle("selected", j === i));
    if (rows[i]) rows[i].scrollIntoView({ block: "nearest" });
    if (i < 0 || !state.items[i]) { showItem(null); return; }
    await openItem(state.items[i].conversation_id, false);
  }

  async function openItem(cid, reveal) {
    const r = await api("/items/" + encodeURIComponent(cid) + (reveal ? "?reveal=1" : ""));
    if (!r.ok) { if (r.status !== 401) say(problem(r), true); return; }
    if (!state.item || state.item.item_id !== r.data.item.item_id) state.verdicts = {};
    state.revealed = !!reveal;
    showItem(r.data.item);
  }

  // --- one item -----------------------------------------------------------------------------
  function highlighted(turn) {
    const out = [];
    let cursor = 0;
    const marks = [...turn.marks].sort((a, b) => a.start - b.start || b.end - a.end);
    for (const m of marks) {
      if (m.start < cursor) continue;
      out.push(turn.text.slice(cursor, m.start));
      out.push(el("mark", {
        class: "sev-" + m.severity,
        title: m.rule_id + " · " + m.entity + (m.masked ? " · masked" : ""),
        "data-finding": m.finding_id,
      }, turn.text.slice(m.start, m.end)));
      cursor = m.end;
    }
    out.push(turn.text.slice(cursor));
    if (turn.truncated) out.push(el("em", {}, " … (truncated)"));
    return out;
  }

  function verdictRadios(f) {
    const name = "v-" + f.finding_id;
    const radio = (value, text) => el("label", {},
      el("input", {
        type: "radio", name, value, checked: state.verdicts[f.finding_id] === value,
        onchange: () => { state.verdicts[f.finding_id] = value; },
      }), " " + text);
    return el("span", {}, radio("true_positive", "TP"), " ", radio("false_positive", "FP"));
  }

  const STATUSES = ["supported", "contradicted", "unknown", "conflict"];

  function claimsSection(item) {
    const parts = [];
    for (const v of item.verdicts) {
      parts.push(el("p", { class: "meta" },
        "Answer " + v.event_id + " · faithfulness " + v.faithfulness.toFixed(2) + " · " + v.stratum +
        (v.fabricated_citations.length ? " · fabricated citations: " + v.fabricated_citations.join(", ") : "")));
      if (v.fact_checks.length) {
        parts.push(el("table", { class: "facts" },
          el("thead", {}, el("tr", {}, ["Claim", "Status", "Sources", "Corrected"].map((h) => el("th", {}, h)))),
          el("tbody", {}, v.fact_checks.map((fc, index) => el("tr", {},
            el("td", {}, fc.claim.entity + " · " + fc.claim.attribute + " = " + fc.claim.value),
            el("td", {}, el("span", { class: "claim-status " + fc.status }, fc.status)),
            el("td", {}, fc.sources.join(", ") || "—"),
            el("td", {}, el("select", { class: "correction", "data-event": v.event_id, "data-index": index },
              STATUSES.map((s) => el("option", { value: s, selected: s === fc.status }, s)))),
          )))));
      }
      if (v.claims.length) {
        parts.push(el("ul", { class: "sentences" }, v.claims.map((c) => el("li", {},
          el("span", { class: "claim-status " + (c.grounded ? "supported" : "contradicted") }, c.grounded ? "grounded" : "not grounded"),
          " (" + c.kind + ", support " + c.support.toFixed(2) + (c.judge ? ", judge " + c.judge : "") + ") ",
          c.text,
          el("span", { class: "meta" }, " — best: " + (c.best_doc || "none") + (c.cited_docs.length ? "; cites " + c.cited_docs.join(", ") : "")),
        ))));
      }
    }
    return parts;
  }

  function showItem(item) {
    state.item = item;
    const box = $("item");
    $("item-placeholder").hidden = !!item;
    box.hidden = !item;
    if (!item) { box.replaceChildren(); return; }
    const mine = item.status === "claimed" && state.me && item.claimed_by === state.me.name;
    const canReveal = state.me && state.me.roles.includes("reveal");
    box.replaceChildren(...[
      el("h2", {}, el("span", { class: "band band-" + item.band }, item.band + " " + item.priority), " ", item.conversation_id),
      el("div", { class: "meta" },
        "item " + item.item_id + " · ", el("span", { class: "status-" + item.status, id: "item-status" }, item.status),
        " · tenant " + (item.tenant || "—") + " · " + item.admission +
        (item.admission === "sampled" ? " (p=" + item.inclusion_probability + ")" : "") +
        (item.claimed_by ? " · claimed by " + item.claimed_by + (item.lease_expires_at ? " until " + item.lease_expires_at : "") : "") +
        (item.labeled_by ? " · labeled by " + item.labeled_by : "")),
      state.revealed ? el("p", { class: "revealed-banner" }, "Unmasked values shown; this view was logged.") : null,
      el("div", { class: "actions" },
        el("button", { id: "btn-claim", type: "button", disabled: !(item.status === "open" || mine), onclick: claim }, mine ? "Renew claim (c)" : "Claim (c)"),
        el("button", { id: "btn-tp", type: "button", disabled: !mine, onclick: () => labelAll("true_positive") }, "All true positive (t)"),
        el("button", { id: "btn-fp", type: "button", disabled: !mine, onclick: () => labelAll("false_positive") }, "All false positive (f)"),
        el("button", { id: "btn-label", type: "button", class: "primary", disabled: !mine, onclick: submitLabel }, "Submit label"),
        el("button", { id: "btn-release", type: "button", disabled: !mine, onclick: release }, "Release (r)"),
        canReveal ? el("button", { id: "btn-reveal", type: "button", disabled: !item.revealable, onclick: toggleReveal },
          state.revealed ? "Mask (v)" : "Reveal " + item.revealable + " (v)") : null,
      ),
      el("h3", {}, "Reasons"),
      el("div", {}, item.reasons.map((r) => el("span", { class: "reason", title: (r.rule_id || "verdict") + " · " + r.event_id }, r.code + " " + r.priority))),
      el("h3", {}, "Conversation"),
      el("div", { id: "turns" }, item.turns.map((t) => el("div", { class: "turn role-" + t.role, "data-event": t.event_id },
        el("span", { class: "who" }, "#" + t.turn_index + " " + t.role + " · " + t.timestamp), ...highlighted(t)))),
      item.dropped_turns ? el("p", { class: "meta" }, item.dropped_turns + " turn(s) not kept") : null,
      el("h3", {}, "Findings"),
      el("table", { id: "findings" },
        el("thead", {}, el("tr", {}, ["Rule", "Entity", "Severity", "Direction", "Evidence", "Why", "Verdict"].map((h) => el("th", {}, h)))),
        el("tbody", {}, item.findings.map((f) => el("tr", { "data-finding": f.finding_id },
          el("td", {}, f.rule_id), el("td", {}, f.entity), el("td", {}, f.severity), el("td", {}, f.direction),
          el("td", { class: "evidence" }, f.evidence), el("td", {}, f.explanation), el("td", {}, verdictRadios(f)))))),
      item.verdicts.length ? el("h3", {}, "Claims") : null,
      ...claimsSection(item),
      el("h3", {}, "Note"),
      el("textarea", { id: "note", maxlength: 4000, placeholder: "What is wrong, what should happen" }),
      el("h3", {}, "Expected answer (optional)"),
      el("textarea", { id: "expected", maxlength: 8000 }),
    ].filter((node) => node !== null));
  }

  // --- actions ------------------------------------------------------------------------------
  async function act(kind, body) {
    const item = state.item;
    if (!item) return null;
    const r = await api("/items/" + encodeURIComponent(item.conversation_id) + "/" + kind, {
      method: "POST", body: Object.assign({ item_id: item.item_id }, body || {}),
    });
    if (!r.ok) { if (r.status !== 401) say(kind + ": " + problem(r), true); return null; }
    return r.data.item;
  }

  async function claim() {
    const item = await act("claim");
    if (item) { say("Claimed until " + item.lease_expires_at); showItem(item); await loadQueue(item.conversation_id); }
  }

  async function release() {
    const item = await act("release");
    if (item) { say("Released"); await loadQueue(item.conversation_id); }
  }

  function labelAll(verdict) {
    if (!state.item) return;
    for (const f of state.item.findings) state.verdicts[f.finding_id] = verdict;
    return submitLabel();
  }

  async function submitLabel() {
    const item = state.item;
    if (!item) return;
    if (!(item.status === "claimed" && item.claimed_by === state.me.name)) { say("Claim the item first (c)", true); return; }
    const missing = item.findings.filter((f) => !state.verdicts[f.finding_id]).length;
    if (missing) { say(missing + " finding(s) without a verdict", true); return; }
    const claims = [...document.querySelectorAll("select.correction")].map((s) => ({
      event_id: s.dataset.event, index: Number(s.dataset.index), status: s.value,
    }));
    const note = $("note").value.trim();
    const expected = $("expected").value.trim();
    const done = await act("label", {
      findings: item.findings.map((f) => ({ finding_id: f.finding_id, verdict: state.verdicts[f.finding_id] })),
      claims, note: note || null, expected_answer: expected || null,
    });
    if (done) { say("Labeled " + done.item_id); state.verdicts = {}; await loadQueue(); }
  }

  async function toggleReveal() {
    if (!state.item || !state.me.roles.includes("reveal")) return;
    await openItem(state.item.conversation_id, !state.revealed);
  }

  // --- wiring -------------------------------------------------------------------------------
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || $("app").hidden) return;
    const t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) return;
    const keys = {
      j: () => select(Math.min(state.index + 1, state.items.length - 1)),
      k: () => select(Math.max(state.index - 1, 0)),
      c: claim, t: () => labelAll("true_positive"), f: () => labelAll("false_positive"),
      r: release, v: toggleReveal, u: () => loadQueue(),
    };
    const fn = keys[e.key];
    if (fn) { e.preventDefault(); fn(); }
  });

  $("login-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const value = $("token").value.trim();
    if (!value) return;
    sessionStorage.setItem(TOKEN_KEY, value);
    signIn();
  });
  $("signout").addEventListener("click", () => signOut());
  $("refresh").addEventListener("click", () => loadQueue());
  $("status-filter").addEventListener("change", () => loadQueue());
  $("tenant-filter").addEventListener("change", () => loadQueue());

  if (token()) signIn(); else signOut();
})();
