// Vigil review page: plain DOM, no build step. Chat text is hostile input: it only ever enters the
// page as text nodes (never innerHTML), and the server sends a strict Content-Security-Policy.
"use strict";
(function () {
  const API = document.body.dataset.api;
  const TOKEN_KEY = "vigil.review.token";
  const VERDICTS = [["true_positive", "TP", "true positive"], ["false_positive", "FP", "false positive"], ["unsure", "?", "unsure"]];
  const CATEGORIES = ["pii", "secret", "prompt_leak", "medical", "abstention", "grounding"];
  const STATUSES = ["supported", "contradicted", "unknown", "conflict"];
  const state = {
    me: null, schema: null, items: [], index: -1, item: null,
    verdicts: {}, current: -1, undo: null, confirm: null, revealed: false, correcting: false, revealing: false,
  };
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
    if (message && !isError) setTimeout(() => { if (box.textContent === message) box.textContent = ""; }, 5000);
  }

  // Local time with the UTC offset, e.g. "2026-11-04 21:41 UTC+01:00".
  function when(iso) {
    if (!iso) return "—";
    const d = new Date(iso);
    if (isNaN(d)) return iso;
    const p = (n) => String(Math.floor(Math.abs(n))).padStart(2, "0");
    const off = -d.getTimezoneOffset();
    return d.getFullYear() + "-" + p(d.getMonth() + 1) + "-" + p(d.getDate()) + " " + p(d.getHours()) + ":" + p(d.getMinutes()) +
      " UTC" + (off < 0 ? "−" : "+") + p(off / 60) + ":" + p(off % 60);
  }

  function age(iso) {
    const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (s < 90) return Math.round(s) + " s ago";
    if (s < 5400) return Math.round(s / 60) + " min ago";
    if (s < 172800) return Math.round(s / 3600) + " h ago";
    return Math.round(s / 86400) + " d ago";
  }

  const token = () => sessionStorage.getItem(TOKEN_KEY);

  async function api(path, options) {
    const opts = options || {};
    const headers = { Authorization: "Bearer " + token() };
    if (opts.body !== undefined) headers["Content-Type"] = "application/json";
    const resp = await fetch(API + path, {
      method: opts.method || "GET", headers, cache: "no-store",
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    let data = null;
    try { data = await resp.json(); } catch (e) { data = null; }
    if (resp.status === 401) signOut("The token was not accepted.");
    return { ok: resp.ok, status: resp.status, data: data || {} };
  }

  function problem(r) {
    const d = r.data || {};
    const detail = Array.isArray(d.detail) ? d.detail.map((x) => x.loc + ": " + x.msg).join("; ") : d.detail;
    return (d.error || ("HTTP " + r.status)) + (detail ? " — " + detail : "");
  }

  const mine = (item) => item && state.me && item.status === "claimed" && item.claimed_by === state.me.name;
  const may = (role) => state.me && state.me.roles.includes(role);

  // --- sign in ------------------------------------------------------------------------------
  function signOut(message) {
    sessionStorage.removeItem(TOKEN_KEY);
    state.me = null;
    state.items = []; state.index = -1; state.revealed = false;
    showItem(null);
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
    const s = await api("/schema");
    state.schema = s.ok ? s.data.schema : null;
    $("who").textContent = r.data.name + " (" + r.data.roles.join(", ") + ")";
    $("login").hidden = true;
    $("signout").hidden = false;
    $("app").hidden = false;
    await loadQueue();
  }

  // --- queue --------------------------------------------------------------------------------
  function queueParams() {
    const params = new URLSearchParams({ status: $("status-filter").value, limit: "200" });
    const add = (key, id) => { const v = $(id).value.trim(); if (v) params.set(key, v); };
    add("band", "band-filter"); add("reason", "reason-filter"); add("rule", "rule-filter");
    add("tenant", "tenant-filter"); add("since", "since-filter"); add("until", "until-filter");
    if ($("mine-filter").checked) params.set("mine", "1");
    return params;
  }

  async function loadQueue(options) {
    const opts = options || {};
    const r = await api("/items?" + queueParams().toString());
    if (!r.ok) { if (r.status !== 401) say(problem(r), true); return; }
    const shown = state.item && state.item.conversation_id;
    state.items = r.data.items;
    $("queue-partial").hidden = !r.data.partial;
    renderQueue();
    const at = state.items.findIndex((i) => i.conversation_id === (opts.keep || shown));
    if (opts.stay && state.item) { markRow(at); state.index = at; return; }
    let idx = at;
    if (idx < 0) idx = state.items.length ? Math.min(Math.max(state.index, 0), state.items.length - 1) : -1;
    await select(idx);
  }

  function renderQueue() {
    const body = $("queue").querySelector("tbody");
    body.replaceChildren(...state.items.map((it, i) => {
      const who = [it.claimed_by ? "claimed: " + it.claimed_by : null, it.assigned_to ? "assigned: " + it.assigned_to : null,
        it.labeled_by ? "labelled: " + it.labeled_by : null].filter(Boolean).join(" · ");
      return el("tr", { "data-cid": it.conversation_id, "data-status": it.status, onclick: () => select(i) },
        el("td", { class: "cid" }, it.conversation_id, el("span", { class: "sub" }, it.tenant || "no tenant")),
        el("td", {}, el("span", { class: "band band-" + it.band }, it.band + " " + it.priority)),
        el("td", { class: "status-" + it.status }, it.status,
          it.reviews_required > 1 ? el("span", { title: "needs a second reviewer" }, " ×2") : null,
          it.disagreement ? el("span", { class: "flag", title: "reviewers disagree" }, " ≠") : null,
          who ? el("span", { class: "sub" }, who) : null),
        el("td", {}, it.reasons.map((r) => el("span", { class: "reason" }, r))),
        el("td", { title: when(it.created_at) }, age(it.created_at)),
      );
    }));
    $("queue-empty").hidden = state.items.length > 0;
  }

  function markRow(i) {
    const rows = $("queue").querySelectorAll("tbody tr");
    rows.forEach((row, j) => { row.classList.toggle("selected", j === i); row.setAttribute("aria-selected", String(j === i)); });
    if (rows[i]) rows[i].scrollIntoView({ block: "nearest" });
  }

  async function select(i) {
    state.index = i;
    markRow(i);
    if (i < 0 || !state.items[i]) { showItem(null); return; }
    await openItem(state.items[i].conversation_id);
  }

  async function openItem(cid) {
    const r = await api("/items/" + encodeURIComponent(cid));
    if (!r.ok) { if (r.status !== 401) say(problem(r), true); return; }
    showItem(r.data.item, { revealed: false });
  }

  // --- text with highlights -----------------------------------------------------------------
  function highlighted(turn, explain) {
    const spans = [];
    for (const m of turn.marks) spans.push({ start: m.start, end: m.end, mark: m });
    for (const g of turn.gaps || []) spans.push({ start: g.start, end: g.end, gap: g });
    spans.sort((a, b) => a.start - b.start || b.end - a.end);
    const out = [];
    let cursor = 0;
    for (const s of spans) {
      if (s.start < cursor) continue;
      out.push(turn.text.slice(cursor, s.start));
      if (s.gap) {
        out.push(el("span", { class: "gap", role: "note" }, "… " + s.gap.omitted.toLocaleString("en") + " characters left out …"));
      } else {
        const m = s.mark;
        const why = (explain[m.finding_id] || {}).plain || m.rule_id;
        out.push(el("mark", { class: "sev-" + m.severity, title: why + " (" + m.rule_id + (m.masked ? ", masked" : "") + ")", "data-finding": m.finding_id },
          turn.text.slice(m.start, m.end)));
      }
      cursor = s.end;
    }
    out.push(turn.text.slice(cursor));
    return out;
  }

  function passageText(p) {
    if (!p.span) return [p.text];
    const [a, b] = p.span;
    return [p.text.slice(0, a), el("mark", { class: "span", title: "the part of the passage that matches the claim best" }, p.text.slice(a, b)), p.text.slice(b)];
  }

  // --- verdicts and keys --------------------------------------------------------------------
  function setVerdict(fid, value) {
    state.verdicts[fid] = value;
    const row = document.querySelector('#findings tr[data-finding="' + CSS.escape(fid) + '"]');
    if (row) row.querySelectorAll("input[type=radio]").forEach((r) => { r.checked = r.value === value; });
  }

  function focusFinding(n) {
    const f = state.item && state.item.findings[n];
    if (!f) return;
    state.current = n;
    document.querySelectorAll("#findings tr").forEach((row) => row.classList.toggle("current", row.dataset.finding === f.finding_id));
    document.querySelectorAll("#turns mark").forEach((m) => m.classList.toggle("current", m.dataset.finding === f.finding_id));
    const row = document.querySelector('#findings tr[data-finding="' + CSS.escape(f.finding_id) + '"]');
    if (row) { row.scrollIntoView({ block: "nearest" }); const first = row.querySelector("input"); if (first) first.focus({ preventScroll: true }); }
    say("Finding " + (n + 1) + ": " + f.rule_id + " — t / f / s");
  }

  function askAll(value) {
    const item = state.item;
    if (!item || !item.findings.length || !(mine(item) || state.correcting)) return;
    state.confirm = value;
    const box = $("confirm-box");
    const label = VERDICTS.find((v) => v[0] === value)[2];
    box.replaceChildren(
      el("span", {}, "Mark all " + item.findings.length + " findings " + label + "? "),
      el("button", { type: "button", id: "confirm-yes", class: "primary", onclick: confirmAll }, "Yes (Enter)"), " ",
      el("button", { type: "button", id: "confirm-no", onclick: cancelAll }, "No (Esc)"));
    box.hidden = false;
    $("confirm-yes").focus();
  }

  function confirmAll() {
    const value = state.confirm;
    if (!value || !state.item) return;
    state.undo = Object.assign({}, state.verdicts);
    for (const f of state.item.findings) setVerdict(f.finding_id, value);
    state.confirm = null;
    $("confirm-box").hidden = true;
    $("btn-undo").disabled = false;
    say("All findings marked " + VERDICTS.find((v) => v[0] === value)[2] + " — z to undo");
  }

  function cancelAll() { state.confirm = null; $("confirm-box").hidden = true; }

  function undo() {
    if (!state.undo || !state.item) return;
    const before = state.undo;
    state.undo = null;
    for (const f of state.item.findings) setVerdict(f.finding_id, before[f.finding_id]);
    $("btn-undo").disabled = true;
    say("Undone");
  }

  function verdictRadios(f, n, enabled) {
    const name = "v-" + n;
    return el("fieldset", { class: "verdict" },
      el("legend", {}, "Verdict for finding " + (n + 1)),
      VERDICTS.map(([value, short, long]) => el("label", { title: long },
        el("input", {
          type: "radio", name, value, checked: state.verdicts[f.finding_id] === value, disabled: !enabled,
          "aria-label": long + " (finding " + (n + 1) + ")", onchange: () => { state.verdicts[f.finding_id] = value; },
        }), short)));
  }

  // --- evidence -----------------------------------------------------------------------------
  // A structured reading of a medical claim (drug, amount, unit, basis, polarity, population)
  // and the passage claims it was compared with, when the claim checks provide one.
  function medicalReading(checks) {
    const who = (r) => [r.drugs.join(", ") || "no drug named", r.populations.length ? "for " + r.populations.join(", ") : null,
      r.polarity].filter(Boolean).join(" · ");
    return el("div", { class: "reading medical" }, checks.map((m) => el("div", {},
      el("span", { class: "claim-status " + m.status }, m.status), " · answer reads: ",
      el("strong", {}, m.reading.summary), " (" + who(m.reading) + ")",
      m.explanation ? el("p", { class: "meta" }, m.explanation) : null,
      (m.contradicting || []).slice(0, 1).map((p) => el("blockquote", { class: "contradicting" },
        el("span", { class: "meta" }, "contradicted by " + p.doc_id + " (" + p.reading.summary + "): "), p.sentence)),
      (m.supporting || []).slice(0, 1).map((p) => el("p", { class: "meta" }, "supported by " + p.doc_id + ": " + p.reading.summary)))));
  }

  // Fields a claim gains later than this page, shown as they are.
  function reading(extra) {
    const keys = Object.keys(extra || {});
    if (!keys.length) return null;
    const flat = (v) => (v && typeof v === "object") ? Object.entries(v).filter(([, x]) => x !== null && x !== "").map(([k, x]) => k + " " + flat(x)).join(", ") : String(v);
    return el("dl", { class: "reading" }, keys.map((k) => [el("dt", {}, k.replace(/_/g, " ") + ":"), el("dd", {}, flat(extra[k]))]));
  }

  function claimOrder(c) { return (c.grounded ? 2 : 0) + (c.kind === "other" ? 1 : 0); }

  function evidenceSection(item) {
    const parts = [];
    for (const v of item.evidence) {
      parts.push(el("h4", {}, "Answer #" + v.turn_index + " (" + v.event_id + ")"),
        el("p", { class: "meta" }, "faithfulness " + v.faithfulness.toFixed(2) + " · " + v.stratum +
          (v.fabricated_citations.length ? " · cites documents that were not retrieved: " + v.fabricated_citations.join(", ") : "")));
      if (v.fact_checks.length) {
        const editable = mine(item) || state.correcting;
        parts.push(el("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Fact checks" }, el("table", { class: "facts" },
          el("caption", { class: "visually-hidden" }, "Fact checks of answer " + v.event_id),
          el("thead", {}, el("tr", {}, ["Claim", "The answer says", "The registry holds", "Status", "Sources", "Corrected"].map((h) => el("th", { scope: "col" }, h)))),
          el("tbody", {}, v.fact_checks.map((fc) => el("tr", {},
            el("td", {}, fc.entity + " · " + fc.attribute.replace(/_/g, " ")),
            el("td", { class: "evidence" }, fc.answer_value),
            el("td", { class: "evidence" }, fc.registered.length ? fc.registered.join(" / ") : "nothing registered"),
            el("td", {}, el("span", { class: "claim-status " + fc.status }, fc.status)),
            el("td", {}, fc.sources.join(", ") || "—"),
            el("td", {}, el("select", {
              class: "correction", "data-event": v.event_id, "data-index": fc.index, disabled: !editable,
              "aria-label": "Corrected status of " + fc.entity + " " + fc.attribute,
            }, STATUSES.map((s) => el("option", { value: s, selected: s === fc.status }, s)))),
          ))))));
      }
      const claims = [...v.claims].sort((a, b) => claimOrder(a) - claimOrder(b) || a.index - b.index);
      const shown = claims.slice(0, 6);
      const block = (c) => el("div", { class: "claim", "data-claim": c.index },
        el("div", {},
          el("span", { class: "claim-status " + (c.grounded ? "grounded" : "ungrounded") }, c.grounded ? "grounded" : "not grounded"),
          " · " + c.kind + " · support " + c.support.toFixed(2) + (c.judge ? " · judge " + c.judge : "") +
          (c.numbers_missing.length ? " · numbers in no passage: " + c.numbers_missing.join(", ") : "")),
        el("p", { class: "plain" }, c.text),
        c.medical && c.medical.length ? medicalReading(c.medical) : null,
        reading(c.extra),
        c.passage ? el("blockquote", { "aria-label": "Passage " + c.passage.doc_id },
          el("span", { class: "meta" }, c.passage.doc_id + (c.passage.rank ? " (rank " + c.passage.rank + ")" : "") + ": "),
          ...passageText(c.passage))
          : el("p", { class: "meta" }, c.best_doc ? "passage " + c.best_doc + " is not kept with this item" : "no passage supports it"));
      parts.push(...shown.map(block));
      if (claims.length > shown.length) {
        parts.push(el("details", {}, el("summary", {}, (claims.length - shown.length) + " more claims"), ...claims.slice(shown.length).map(block)));
      }
    }
    return parts;
  }

  // --- the label form -------------------------------------------------------------------------
  function latest(item) { return item.labels.length ? item.labels[item.labels.length - 1] : null; }

  function choiceGroup(name, legend, options, type, selected, enabled) {
    return el("fieldset", { class: "group", id: "field-" + name },
      el("legend", {}, legend),
      el("div", { class: "options" }, options.map((o, i) => el("label", { title: o.description || "" },
        el("input", { type, name, value: o.value, id: name + "-" + i, checked: selected.includes(o.value), disabled: !enabled }),
        o.label))));
  }

  function labelForm(item, enabled) {
    const schema = state.schema;
    if (!schema) return [el("p", { class: "warn" }, "The label schema could not be read.")];
    const prior = state.correcting && latest(item) ? latest(item).decision : {};
    const answer = item.answer;
    const yesNo = [{ value: "true", label: "Yes" }, { value: "false", label: "No" }, { value: "", label: "Not judged" }];
    const ac = prior.answer_correct === true ? "true" : prior.answer_correct === false ? "false" : "";
    const parts = [
      choiceGroup("harm", "Harm severity" + (schema.harm_severity.required ? " (required)" : ""), schema.harm_severity.levels, "radio",
        prior.harm_severity ? [prior.harm_severity] : [], enabled),
      choiceGroup("category", "Error categories", schema.error_categories.values, "checkbox", prior.error_categories || [], enabled),
    ];
    if (answer) {
      parts.push(choiceGroup("answer-correct", "Answer #" + answer.turn_index + " correct and appropriate?", yesNo, "radio", [ac], enabled));
      if (answer.passages.length) {
        parts.push(choiceGroup("relevant", "Retrieved passages that answer the question (relevant)",
          answer.passages.map((d) => ({ value: d, label: d })), "checkbox", prior.relevant_doc_ids || [], enabled));
      }
    }
    parts.push(choiceGroup("missed", "Categories the rules missed", CATEGORIES.map((c) => ({ value: c, label: c.replace("_", " ") })),
      "checkbox", prior.missed_categories || [], enabled));
    for (const f of schema.rubric) {
      const id = "rubric-" + f.name;
      const value = (prior.rubric || {})[f.name];
      let control;
      if (f.data_type === "numeric") {
        control = el("input", { id, type: "number", min: f.min, max: f.max, step: "any", value: value === undefined ? "" : value, disabled: !enabled, "data-rubric": f.name, "data-type": "numeric" });
      } else if (f.data_type === "boolean") {
        control = el("select", { id, disabled: !enabled, "data-rubric": f.name, "data-type": "boolean" },
          [["", "—"], ["true", "Yes"], ["false", "No"]].map(([v, t]) => el("option", { value: v, selected: String(value === undefined ? "" : value) === v }, t)));
      } else {
        control = el("select", { id, disabled: !enabled, "data-rubric": f.name, "data-type": "categorical" },
          [el("option", { value: "" }, "—"), ...f.categories.map((c) => el("option", { value: c.value, selected: value === c.value }, c.label))]);
      }
      parts.push(el("div", { class: "field" }, el("label", { for: id }, f.label + (f.required ? " (required)" : "")), control,
        f.description ? el("span", { class: "desc" }, f.description) : null));
    }
    parts.push(
      el("div", { class: "field" }, el("label", { for: "expected" }, "Expected answer (optional)"),
        el("textarea", { id: "expected", maxlength: 8000, disabled: !enabled }, prior.expected_answer || "")),
      el("div", { class: "field" }, el("label", { for: "note" }, "Note"),
        el("textarea", { id: "note", maxlength: 4000, disabled: !enabled, placeholder: "What is wrong, what should happen" }, prior.note || "")));
    return parts;
  }

  function checked(name) { return [...document.querySelectorAll('input[name="' + name + '"]:checked')].map((i) => i.value); }

  function collect(item) {
    const rubric = {};
    document.querySelectorAll("[data-rubric]").forEach((c) => {
      const v = c.value.trim();
      if (!v) return;
      rubric[c.dataset.rubric] = c.dataset.type === "numeric" ? Number(v) : c.dataset.type === "boolean" ? v === "true" : v;
    });
    const ac = checked("answer-correct")[0];
    const relevant = checked("relevant");
    const body = {
      findings: item.findings.map((f) => ({ finding_id: f.finding_id, verdict: state.verdicts[f.finding_id] })),
      claims: [...document.querySelectorAll("select.correction")].map((s) => ({ event_id: s.dataset.event, index: Number(s.dataset.index), status: s.value })),
      harm_severity: checked("harm")[0] || null,
      error_categories: checked("category"),
      missed_categories: checked("missed"),
      rubric,
      note: $("note").value.trim() || null,
      expected_answer: $("expected").value.trim() || null,
    };
    if (item.answer) {
      body.answer_event_id = item.answer.event_id;
      body.answer_correct = ac === "true" ? true : ac === "false" ? false : null;
      if (document.querySelector('input[name="relevant"]')) body.relevant_doc_ids = relevant;
    }
    return body;
  }

  function summaryOf(d) {
    const parts = ["harm " + (d.harm_severity || "—")];
    if (d.error_categories.length) parts.push(d.error_categories.join(", "));
    if (d.answer_correct !== null && d.answer_correct !== undefined) parts.push("answer " + (d.answer_correct ? "correct" : "wrong"));
    if (d.relevant_doc_ids && d.relevant_doc_ids.length) parts.push("relevant: " + d.relevant_doc_ids.join(", "));
    if (d.missed_categories.length) parts.push("missed: " + d.missed_categories.join(", "));
    const counts = {};
    for (const f of d.findings) counts[f.verdict] = (counts[f.verdict] || 0) + 1;
    const v = VERDICTS.filter(([k]) => counts[k]).map(([k, , long]) => counts[k] + " " + long);
    if (v.length) parts.push(v.join(", "));
    return parts.join(" · ");
  }

  function decidedSection(item) {
    const last = latest(item);
    if (!last) return [];
    const out = [
      el("h3", {}, "Label"),
      el("div", { class: "decided", id: "decided" },
        el("p", { class: "plain" }, el("strong", {}, "Decided by " + last.reviewer), " at " + when(last.at) +
          (item.reviews_required > 1 ? " (review " + last.stage + " of 2)" : "")),
        el("p", { class: "plain" }, summaryOf(last.decision)),
        last.decision.note ? el("p", { class: "meta" }, "Note: " + last.decision.note) : null),
    ];
    if (item.disagreement.length) {
      out.push(el("p", { class: "disagree", id: "disagreement" }, "The two reviewers disagree on: " + item.disagreement.join(", ")));
    }
    out.push(el("h4", {}, "History (" + item.labels.length + (item.dropped_labels ? ", " + item.dropped_labels + " older not kept" : "") + ")"),
      el("ol", { class: "history", id: "history" }, item.labels.map((r) => el("li", { "data-label": r.label_id },
        when(r.at) + " — " + r.reviewer + (r.supersedes ? " corrected " + r.supersedes : " labelled") + ": " + summaryOf(r.decision)))));
    return out;
  }

  // --- one item -------------------------------------------------------------------------------
  function showItem(item, options) {
    const opts = options || {};
    const previous = state.item;
    state.item = item;
    const box = $("item");
    $("item-placeholder").hidden = !!item;
    box.hidden = !item;
    if (!item) { box.replaceChildren(); return; }
    if (!previous || previous.item_id !== item.item_id) {
      state.verdicts = {}; state.undo = null; state.current = -1; state.correcting = false; state.revealing = false;
    }
    if (opts.revealed !== undefined) state.revealed = opts.revealed;
    if (state.correcting && latest(item)) {
      for (const f of latest(item).decision.findings) if (!(f.finding_id in state.verdicts)) state.verdicts[f.finding_id] = f.verdict;
    }
    const own = mine(item);
    const editable = own || state.correcting;
    const canReveal = may("reveal");
    const canCorrect = item.labels.length > 0 && !(item.status === "claimed" && !own) && item.status !== "expired";
    const explain = item.highlights || {};
    const others = Object.entries(explain).filter(([, h]) => !h.has_row);
    box.replaceChildren(...[
      el("h2", {}, el("span", { class: "band band-" + item.band }, item.band + " " + item.priority), " ", item.conversation_id),
      el("p", { class: "meta" },
        "item " + item.item_id + " · ", el("span", { class: "status-" + item.status, id: "item-status" }, item.status),
        " · tenant " + (item.tenant || "—") + " · " + item.admission + (item.admission === "sampled" ? " (p=" + item.inclusion_probability + ")" : "") +
        " · created " + when(item.created_at) +
        (item.status === "claimed" && item.claimed_by ? " · claimed by " + item.claimed_by + (item.lease_expires_at ? " until " + when(item.lease_expires_at) : "") : "") +
        (item.assigned_to ? " · assigned to " + item.assigned_to + " until " + when(item.assignment_expires_at) : "") +
        (item.reviews_required > 1 ? " · needs two reviewers" : "")),
      state.revealed ? el("p", { class: "revealed-banner" }, "Unmasked values shown; this view was logged.") : null,
      el("div", { class: "actions" },
        el("button", { id: "btn-claim", type: "button", disabled: !(item.status === "open" || own), onclick: claim }, own ? "Renew claim (c)" : "Claim (c)"),
        el("button", { id: "btn-release", type: "button", disabled: !own, onclick: release }, "Release (r)"),
        el("button", { id: "btn-assign", type: "button", disabled: !["open", "claimed"].includes(item.status), onclick: assignToggle },
          item.assigned_to === (state.me && state.me.name) ? "Unassign me" : "Assign to me"),
        canReveal ? el("button", { id: "btn-reveal", type: "button", disabled: !own || !item.revealable, onclick: revealToggle,
          title: own ? "" : "claim the item first" }, state.revealed ? "Mask (v)" : "Reveal " + item.revealable + " value(s) (v)") : null,
        canCorrect ? el("button", { id: "btn-correct", type: "button", disabled: state.correcting, onclick: startCorrection }, "Correct this label") : null,
      ),
      el("form", { id: "reveal-form", class: "confirm", hidden: !state.revealing, onsubmit: (e) => { e.preventDefault(); reveal(); } },
        el("label", { for: "reveal-purpose" }, "Why do you need the unmasked values? (logged) "),
        el("input", { id: "reveal-purpose", minlength: 8, maxlength: 500, size: 40, required: true }), " ",
        el("button", { type: "submit", class: "primary", id: "reveal-submit" }, "Reveal"), " ",
        el("button", { type: "button", onclick: () => { state.revealing = false; $("reveal-form").hidden = true; } }, "Cancel")),
      ...decidedSection(item),
      el("h3", {}, "Why it is here"),
      el("ul", { id: "reasons" }, item.reason_groups.map((g) => el("li", {},
        el("span", { class: "reason" }, g.code + " · " + g.priority), g.count > 1 ? " ×" + g.count + " " : " ",
        g.description || "", g.rule_ids.length ? el("span", { class: "meta" }, " (" + g.rule_ids.join(", ") + ")") : null))),
      el("h3", {}, "Conversation"),
      el("div", { id: "turns" }, item.turns.map((t) => el("div", { class: "turn role-" + t.role, "data-event": t.event_id },
        el("span", { class: "who" }, "#" + t.turn_index + " " + t.role + " · " + when(t.timestamp) + (t.truncated ? " · shortened around its findings" : "")),
        ...highlighted(t, explain),
        t.passages.length ? el("details", { class: "passages" }, el("summary", {}, t.passages.length + " retrieved passage(s)"),
          t.passages.map((p) => el("blockquote", { "data-doc": p.doc_id }, el("span", { class: "meta" }, p.doc_id + (p.rank ? " (rank " + p.rank + ")" : "") + ": "), p.text))) : null))),
      item.dropped_turns ? el("p", { class: "meta" }, item.dropped_turns + " turn(s) not kept") : null,
      item.trimmed ? el("p", { class: "meta", id: "trimmed" }, "Shortened to fit the size limit of one stored item; every finding is kept") : null,
      el("h3", {}, "Findings"),
      el("div", { id: "confirm-box", class: "confirm", role: "alertdialog", "aria-live": "assertive", hidden: true }),
      el("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Findings" }, el("table", { id: "findings" },
        el("caption", { class: "visually-hidden" }, "Findings and your verdicts"),
        el("thead", {}, el("tr", {}, ["#", "What was found", "Severity", "Evidence", "Verdict"].map((h) => el("th", { scope: "col" }, h)))),
        el("tbody", {}, item.findings.map((f, n) => el("tr", { "data-finding": f.finding_id },
          el("td", {}, String(n + 1)),
          el("td", {}, el("p", { class: "plain" }, f.plain), el("p", { class: "tech" }, f.rule_id + " · " + f.direction + " · " + f.explanation)),
          el("td", {}, f.severity),
          el("td", { class: "evidence" }, f.evidence),
          el("td", {}, verdictRadios(f, n, editable))))))),
      item.findings.length ? null : el("p", { class: "meta" }, "No findings: say below what the rules missed, if anything."),
      others.length ? el("details", { id: "other-highlights" }, el("summary", {}, others.length + " other highlight(s) without a finding row"),
        el("ul", {}, others.map(([fid, h]) => el("li", { "data-finding": fid }, h.plain, el("span", { class: "meta" }, " (" + h.rule_id + ")"))))) : null,
      el("div", { class: "actions" },
        el("button", { id: "btn-all-tp", type: "button", disabled: !editable || !item.findings.length, onclick: () => askAll("true_positive") }, "All true positive… (T)"),
        el("button", { id: "btn-all-fp", type: "button", disabled: !editable || !item.findings.length, onclick: () => askAll("false_positive") }, "All false positive… (F)"),
        el("button", { id: "btn-undo", type: "button", disabled: !state.undo, onclick: undo }, "Undo (z)")),
      item.evidence.length ? el("h3", {}, "Claims and their evidence") : null,
      ...evidenceSection(item),
      el("h3", {}, state.correcting ? "Correct the label" : "Your label"),
      el("form", { id: "label-form", onsubmit: (e) => { e.preventDefault(); submitLabel(); } },
        ...labelForm(item, editable),
        el("div", { class: "actions" },
          el("button", { id: "btn-label", type: "submit", class: "primary", disabled: !editable }, state.correcting ? "Submit correction" : "Submit label"),
          state.correcting ? el("button", { type: "button", onclick: () => { state.correcting = false; showItem(state.item); } }, "Cancel") : null,
          editable ? null : el("span", { class: "meta" }, item.labels.length ? "" : "Claim the item to label it.")),
      ),
    ].filter((node) => node !== null));
  }

  // --- actions --------------------------------------------------------------------------------
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
    if (item) { say("Claimed until " + when(item.lease_expires_at)); showItem(item, { revealed: false }); await loadQueue({ stay: true }); }
  }

  async function release() {
    const item = await act("release");
    if (item) { say("Released"); showItem(item, { revealed: false }); await loadQueue({ stay: true }); }
  }

  async function assignToggle() {
    const item = state.item;
    if (!item) return;
    const me = state.me.name;
    const done = await act("assign", { assignee: item.assigned_to === me ? null : me });
    if (done) { say(done.assigned_to ? "Assigned to " + done.assigned_to : "Unassigned"); showItem(done); await loadQueue({ stay: true }); }
  }

  function revealToggle() {
    if (!state.item || !may("reveal")) return;
    if (state.revealed) { openItem(state.item.conversation_id); return; }
    if (!mine(state.item)) { say("Claim the item first (c)", true); return; }
    state.revealing = true;
    $("reveal-form").hidden = false;
    $("reveal-purpose").focus();
  }

  async function reveal() {
    const purpose = $("reveal-purpose").value.trim();
    if (purpose.length < 8) { say("Say why you need the values (at least 8 characters)", true); return; }
    const item = await act("reveal", { purpose });
    if (item) { state.revealing = false; showItem(item, { revealed: true }); }
  }

  function startCorrection() {
    if (!state.item || !latest(state.item)) return;
    state.correcting = true;
    showItem(state.item);
    const first = document.querySelector("#label-form input, #label-form select, #label-form textarea");
    if (first) first.focus();
  }

  async function submitLabel() {
    const item = state.item;
    if (!item) return;
    if (!(mine(item) || state.correcting)) { say("Claim the item first (c)", true); return; }
    const missing = item.findings.filter((f) => !state.verdicts[f.finding_id]).length;
    if (missing) { say(missing + " finding(s) without a verdict", true); return; }
    const body = collect(item);
    if (state.correcting) body.corrects = item.label_id;
    const done = await act("label", body);
    if (!done) return;
    const was = state.correcting;
    state.correcting = false;
    state.undo = null;
    say((was ? "Corrected: " : "Labelled: ") + done.label_id + (done.status === "open" ? " — waiting for a second reviewer" : ""));
    showItem(done);
    await loadQueue({ stay: true });
    const decided = $("decided");
    if (decided) decided.scrollIntoView({ block: "nearest" });
  }

  // --- wiring ---------------------------------------------------------------------------------
  document.addEventListener("keydown", (e) => {
    if ($("app").hidden) return;
    if (state.confirm) {
      if (e.key === "Enter") { e.preventDefault(); confirmAll(); }
      else if (e.key === "Escape") { e.preventDefault(); cancelAll(); }
      return;
    }
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") { e.preventDefault(); submitLabel(); return; }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t && (t.tagName === "TEXTAREA" || t.tagName === "SELECT" || (t.tagName === "INPUT" && !["radio", "checkbox"].includes(t.type)))) return;
    const item = state.item;
    const current = item && item.findings[state.current];
    const verdictKey = { t: "true_positive", f: "false_positive", s: "unsure" }[e.key];
    if (verdictKey && current && (mine(item) || state.correcting)) { e.preventDefault(); setVerdict(current.finding_id, verdictKey); return; }
    if (/^[1-9]$/.test(e.key) && item) { e.preventDefault(); focusFinding(Number(e.key) - 1); return; }
    const keys = {
      j: () => select(Math.min(state.index + 1, state.items.length - 1)),
      k: () => select(Math.max(state.index - 1, 0)),
      c: claim, r: release, v: revealToggle, g: () => loadQueue(), z: undo,
      T: () => askAll("true_positive"), F: () => askAll("false_positive"),
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
  $("filters").addEventListener("submit", (e) => { e.preventDefault(); loadQueue(); });
  for (const id of ["status-filter", "band-filter", "mine-filter", "since-filter", "until-filter"]) $(id).addEventListener("change", () => loadQueue());
  for (const id of ["reason-filter", "rule-filter", "tenant-filter"]) $(id).addEventListener("change", () => loadQueue());

  if (token()) signIn(); else signOut();
})();
