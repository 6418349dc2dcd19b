// The sign-in and the token: kept in this tab's sessionStorage and sent as a bearer header with every
// request the app makes (htmx fragments and the streamed ask). See docs/adr/0010-web-app-stack.md.
"use strict";
(function () {
  const KEY = "kgrag.token";
  const SIGNIN = "/ui/signin";

  function token() { return sessionStorage.getItem(KEY); }
  function authHeaders() { const t = token(); return t ? { Authorization: "Bearer " + t } : {}; }
  function toSignin() {
    sessionStorage.removeItem(KEY);
    const next = location.pathname + location.search;
    location.assign(SIGNIN + (next.startsWith("/ui") && !next.startsWith(SIGNIN) ? "?next=" + encodeURIComponent(next) : ""));
  }
  window.kgrag = { token, authHeaders, toSignin };

  const onSignin = location.pathname === SIGNIN;
  if (!onSignin && !token()) { toSignin(); return; }

  document.addEventListener("htmx:configRequest", (e) => {
    const t = token();
    if (t) e.detail.headers["Authorization"] = "Bearer " + t;
  });
  document.addEventListener("htmx:beforeSwap", (e) => {
    const status = e.detail.xhr.status;
    if (status === 401) { toSignin(); return; }
    // The fragments answer errors in HTML (the API's code and message): show them where the data would be.
    if (status >= 400) { e.detail.shouldSwap = true; e.detail.isError = false; }
  });
  document.addEventListener("htmx:afterSwap", (e) => {
    e.target.removeAttribute("aria-busy");
    const cited = e.target.querySelector("#cited");
    if (cited) { cited.scrollIntoView({ block: "center" }); cited.focus({ preventScroll: true }); }
  });

  document.addEventListener("DOMContentLoaded", () => {
    const out = document.getElementById("signout");
    if (out) out.addEventListener("click", () => { sessionStorage.removeItem(KEY); location.assign(SIGNIN); });
    const form = document.getElementById("signin-form");
    if (form) form.addEventListener("submit", signin);
  });

  async function signin(e) {
    e.preventDefault();
    const input = document.getElementById("token");
    const failed = document.getElementById("signin-error");
    const candidate = input.value.trim().replace(/^Bearer\s+/i, "");
    const response = await fetch("/ui/fragments/me", { headers: { Authorization: "Bearer " + candidate } });
    if (!response.ok) {
      let message = "The token was rejected.";
      try { message = (await response.json()).error.message; } catch (_) { /* not JSON: keep the generic text */ }
      failed.textContent = message;
      failed.hidden = false;
      input.focus();
      return;
    }
    sessionStorage.setItem(KEY, candidate);
    const next = new URLSearchParams(location.search).get("next");
    location.assign(next && next.startsWith("/ui") ? next : "/ui");
  }
})();
