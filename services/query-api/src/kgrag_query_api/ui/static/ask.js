// Ask: POST /v1/ask with options.stream, read as server-sent events, each verified sentence shown as it
// arrives (docs/http-api.md, "Streaming answers"). Search: the server-rendered results fragment.
// Everything from the API is inserted as text (textContent), never as HTML.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, text) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };
  const sourceHref = (c) => "/ui/documents/" + encodeURIComponent(c.doc_id) +
    (c.span ? "?start=" + c.span[0] + "&end=" + c.span[1] : "");

  function filters(data) {
    const out = {};
    const sources = (data.get("sources") || "").split(",").map((s) => s.trim()).filter(Boolean);
    if (sources.length) out.sources = sources;
    const range = {};
    if (data.get("date_from")) range.from = data.get("date_from");
    if (data.get("date_to")) range.to = data.get("date_to");
    if (Object.keys(range).length) out.time_range = range;
    if (data.get("as_of")) out.as_of = data.get("as_of");
    return Object.keys(out).length ? out : null;
  }

  document.addEventListener("DOMContentLoaded", () => {
    const form = $("ask-form");
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const data = new FormData(form);
      const action = e.submitter && e.submitter.value === "search" ? "search" : "ask";
      if (action === "search") {
        $("answer").hidden = true;
        const params = new URLSearchParams();
        for (const k of ["q", "sources", "date_from", "date_to", "as_of"]) if (data.get(k)) params.set(k, data.get(k));
        htmx.ajax("GET", "/ui/fragments/search?" + params.toString(), { target: "#results", swap: "innerHTML" });
      } else {
        $("results").replaceChildren();
        ask(String(data.get("q")), filters(data));
      }
    });
  });

  let running = null;

  async function ask(question, filt) {
    if (running) running.abort();
    running = new AbortController();
    const state = { cited: new Set() };
    for (const id of ["answer-text", "answer-conflicts", "answer-citations", "answer-links", "answer-feedback"]) $(id).replaceChildren();
    $("answer-meta").textContent = "";
    $("answer").hidden = false;
    $("answer").setAttribute("aria-busy", "true");
    status("Searching…");
    const body = { question, options: { stream: true } };
    if (filt) body.filters = filt;
    let response;
    try {
      response = await fetch("/v1/ask", {
        method: "POST",
        headers: Object.assign({ "content-type": "application/json" }, window.kgrag.authHeaders()),
        body: JSON.stringify(body),
        signal: running.signal,
      });
    } catch (err) { status("The server could not be reached: " + err); return; }
    if (response.status === 401) { window.kgrag.toSignin(); return; }
    if (!response.ok) { showError((await response.json()).error); return; }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const raw = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const name = (raw.match(/^event: (.*)$/m) || [])[1];
        const data = (raw.match(/^data: (.*)$/m) || [])[1];
        if (name && data) handle(name, JSON.parse(data), state);
      }
    }
    $("answer").removeAttribute("aria-busy");
  }

  function status(text) { $("answer-status").textContent = text; }

  function showError(error) {
    $("answer").removeAttribute("aria-busy");
    const box = el("div", { class: "error", role: "alert", "data-error-code": error.code });
    box.append(el("strong", {}, error.code), ": " + error.message);
    $("answer-text").replaceChildren(box);
    status("");
  }

  function handle(name, data, state) {
    if (name === "route") {
      $("answer-meta").textContent = "Route: " + (data.route || "hybrid search") + " · answerer: " + data.answerer +
        (data.graph_degraded ? " · graph degraded: " + data.graph_degraded : "");
      status("Answering…");
    } else if (name === "sentence") {
      for (const c of data.citations) addCitation(c, state);
      const sentence = el("span", { class: "sentence" }, data.text);
      for (const c of data.citations) sentence.append(" ", marker(c));
      $("answer-text").append(sentence, " ");
    } else if (name === "conflicts") {
      renderConflicts(data.conflicts);
    } else if (name === "confidence") {
      $("answer-meta").append(el("span", { class: "confidence", "data-confidence": data.confidence }, " · confidence: " + data.confidence));
    } else if (name === "done") {
      finish(data, state);
    } else if (name === "error") {
      showError(data.error);
    }
  }

  function marker(c) {
    return el("a", { class: "cite", href: sourceHref(c), "aria-label": "Source " + c.id + ": " + c.title }, "[" + c.id + "]");
  }

  function addCitation(c, state) {
    if (state.cited.has(c.id)) return;
    state.cited.add(c.id);
    const item = el("li", { id: "citation-" + c.id, value: String(c.id) });
    item.append(el("a", { href: sourceHref(c), class: "citation-link" }, c.title));
    item.append(el("q", {}, c.quote));
    $("answer-citations").append(item);
  }

  function renderConflicts(conflicts) {
    const box = $("answer-conflicts");
    box.replaceChildren();
    for (const conflict of conflicts || []) {
      const section = el("section", { class: "conflict", "aria-label": "Sources disagree" });
      section.append(el("h3", {}, "Sources disagree: " + conflict.subject + " · " + conflict.attribute));
      const sides = el("div", { class: "sides" });
      for (const v of conflict.values) {
        const side = el("div", { class: "side" });
        side.append(el("p", { class: "value" }, v.value));
        const list = el("ul");
        for (const s of v.sources) {
          const li = el("li");
          li.append(el("a", { href: sourceHref(s) }, s.title), " · " + (s.written_at || "undated").slice(0, 10));
          list.append(li);
        }
        side.append(list);
        sides.append(side);
      }
      section.append(sides);
      if (conflict.note) section.append(el("p", { class: "help" }, conflict.note));
      box.append(section);
    }
  }

  function finish(body, state) {
    for (const c of body.citations || []) addCitation(c, state);
    if (!body.answered) $("answer-text").replaceChildren(el("p", { class: "notice" }, body.answer));
    if (body.conflicts && body.conflicts.length) renderConflicts(body.conflicts);
    // Every fact the answer states, marked current, superseded, plan, negated or conflict.
    const facts = body.facts || [];
    if (facts.length) {
      const list = el("ul", { class: "facts-marked", "aria-label": "Facts in this answer" });
      for (const f of facts) {
        const li = el("li", { "data-status": f.status || "current" });
        const when = [f.valid_from && "from " + f.valid_from, f.valid_to && "to " + f.valid_to].filter(Boolean).join(" ");
        li.append(el("span", { class: "badge badge-" + (f.status || "current") }, f.status || "current"),
          " " + f.subject + " · " + f.predicate + ": " + f.value + (when ? " (" + when + ")" : ""));
        list.append(li);
      }
      $("answer-conflicts").append(el("h3", {}, "Facts"), list);
    }
    $("answer-meta").prepend(el("span", { class: "mode" }, "Answer: " + body.mode + " · "));
    if (body.notice) $("answer-links").append(el("span", { class: "help" }, body.notice + " "));
    if (body.trace_id) {
      $("answer-links").append(el("a", { href: "/ui/traces/" + encodeURIComponent(body.trace_id), class: "why" }, "Why this answer"));
      feedbackButtons(body.trace_id);
    }
    status(body.answered ? "Done." : "No answer.");
  }

  function feedbackButtons(traceId) {
    const form = el("form", { class: "feedback", "hx-post": "/ui/fragments/feedback", "hx-swap": "outerHTML" });
    form.append(el("input", { type: "hidden", name: "trace_id", value: traceId }));
    form.append(el("span", { id: "feedback-label" }, "Was this helpful? "));
    for (const [rating, label] of [[5, "Helpful"], [1, "Not helpful"]]) {
      form.append(el("button", { type: "submit", name: "rating", value: String(rating), "aria-describedby": "feedback-label" }, label));
    }
    $("answer-feedback").replaceChildren(form);
    htmx.process(form);
  }
})();
