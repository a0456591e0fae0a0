package serve

// The page 'pepa serve' shows at /: every model, with each machine's
// finishing-time CDF conditioned on the completions observed, redrawn
// every 2 s. The page and its script load without a token; the data is
// fetched with one the user enters, kept in the tab's sessionStorage and
// sent in the Authorization header, never in a URL the server sees. A
// #token=...&beta=... fragment (never sent to the server) is read once,
// kept the same way and removed from the address bar. The script builds
// the DOM with textContent only (model names are the clients'), and the
// Content-Security-Policy allows scripts and styles from the server only.

const pageHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pepa serve</title>
<link rel="stylesheet" href="/serve.css">
<script src="/serve.js" defer></script>
</head>
<body>
<header>
<h1>pepa serve</h1>
<p class="sub">Each mapping's robustness given the completions observed so far: every machine's finishing-time
CDF conditioned on the record, on the batch's time axis (seconds since it started). Updated every 2 s.</p>
<form id="auth" autocomplete="off">
<label>token <input id="token" type="password" size="28" placeholder="the server's --token-file"></label>
<button type="submit">connect</button>
<button type="button" id="forget">forget token</button>
<label>goal &beta; (s) <input id="beta" size="8" inputmode="decimal" placeholder="E[makespan]"></label>
</form>
<p id="status" role="status">loading&hellip;</p>
</header>
<main id="models"></main>
<footer>
<p>Shaded: the past, up to <i>now</i> (the latest event, unless asked otherwise); a running machine has not
finished by then, a finished one steps to 1 at its recorded time. Dashed: the goal &beta;. Bold: the bottleneck,
the machine that sets the robustness min<sub>j</sub> P(F<sub>j</sub> &le; &beta;). The figures are those of
<code>pepa robustness --format json</code> on the model and its record (<code>GET /v1/models/ID/robustness?beta=B</code>).</p>
</footer>
</body>
</html>
`

const pageCSS = `body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1000px; padding: 0 16px 32px; color: #222; }
h1 { font-size: 22px; margin: 16px 0 4px; }
.sub { margin: 0 0 10px; color: #555; }
form { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; }
input { font: inherit; padding: 2px 4px; }
#status { color: #555; min-height: 1.4em; }
#status.error { color: #b00; }
section.model { border: 1px solid #ddd; border-radius: 6px; padding: 8px 14px 12px; margin: 14px 0; }
section.model h2 { font-size: 17px; margin: 4px 0; }
section.model h2 .id { font: 12px monospace; color: #777; margin-left: 8px; }
.summary { margin: 2px 0 6px; }
.summary b { font-variant-numeric: tabular-nums; }
.err { color: #b00; white-space: pre-wrap; }
svg.cdf { width: 100%; height: auto; max-width: 720px; display: block; }
svg.cdf text { font: 11px system-ui, sans-serif; fill: #333; }
table.machines { border-collapse: collapse; font-variant-numeric: tabular-nums; }
table.machines th, table.machines td { padding: 2px 10px 2px 0; text-align: right; }
table.machines th:first-child, table.machines td:first-child { text-align: left; }
table.machines .state { text-align: left; color: #555; }
.swatch { display: inline-block; width: 14px; height: 3px; vertical-align: middle; margin-right: 6px; }
.swatch.bold { height: 5px; }
footer { color: #666; font-size: 12px; margin-top: 24px; }
`

const pageJS = `"use strict";
(function () {
  var TOKEN = "pepa-serve-token", BETA = "pepa-serve-beta", PERIOD = 2000;
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  var SVG = "http://www.w3.org/2000/svg";
  var token = sessionStorage.getItem(TOKEN) || "";
  var defaultBeta = sessionStorage.getItem(BETA) || "";
  var cards = {};
  var timer = null, generation = 0;

  // A #token=...&beta=... fragment: kept in this tab's sessionStorage and
  // removed from the address bar and the history entry.
  if (location.hash.length > 1) {
    var h = new URLSearchParams(location.hash.slice(1));
    if (h.get("token")) { token = h.get("token").trim(); sessionStorage.setItem(TOKEN, token); }
    if (h.get("beta")) { defaultBeta = h.get("beta").trim(); sessionStorage.setItem(BETA, defaultBeta); }
    history.replaceState(null, "", location.pathname + location.search);
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function num(x, digits) {
    if (x === null || x === undefined) { return "\u2013"; }
    return Number(x).toFixed(digits);
  }
  function short(x) { return String(Math.round(x * 1e4) / 1e4); }
  function status(text, error) {
    var s = document.getElementById("status");
    s.textContent = text;
    s.className = error ? "error" : "";
  }

  function AuthError() { this.message = "the server refused the token"; }
  function api(path) {
    return fetch(path, { headers: { "Authorization": "Bearer " + token }, cache: "no-store" }).then(function (r) {
      if (r.status === 401) { throw new AuthError(); }
      return r.json().then(function (j) {
        if (!r.ok) { throw new Error(j.error || r.statusText); }
        return j;
      });
    });
  }

  function card(m) {
    var c = cards[m.id];
    if (c) { return c; }
    c = { id: m.id, last: "" };
    c.root = el("section", "model");
    c.root.setAttribute("data-id", m.id);
    var h2 = el("h2");
    c.name = el("span", "name", m.name);
    h2.appendChild(c.name);
    h2.appendChild(el("span", "id", m.id));
    c.root.appendChild(h2);
    c.summary = el("p", "summary");
    c.root.appendChild(c.summary);
    var label = el("label", "", "goal \u03b2 (s) ");
    c.beta = el("input", "beta");
    c.beta.size = 8;
    c.beta.setAttribute("inputmode", "decimal");
    c.beta.value = sessionStorage.getItem(BETA + ":" + m.id) || "";
    c.beta.placeholder = defaultBeta || "E[makespan]";
    c.beta.addEventListener("change", function () {
      sessionStorage.setItem(BETA + ":" + m.id, c.beta.value.trim());
      c.last = "";
      refresh(c);
    });
    label.appendChild(c.beta);
    c.root.appendChild(label);
    c.chart = svg("svg", { "class": "cdf", viewBox: "0 0 720 300", role: "img" });
    c.root.appendChild(c.chart);
    c.table = el("table", "machines");
    c.root.appendChild(c.table);
    c.error = el("p", "err");
    c.root.appendChild(c.error);
    cards[m.id] = c;
    return c;
  }

  function refresh(c) {
    var beta = c.beta.value.trim() || defaultBeta;
    var q = beta ? "?beta=" + encodeURIComponent(beta) : "";
    return api("/v1/models/" + encodeURIComponent(c.id) + "/cdf" + q).then(function (d) {
      c.error.textContent = "";
      var key = JSON.stringify(d);
      if (key !== c.last) { c.last = key; draw(c, d); }
    }, function (e) {
      if (e instanceof AuthError) { throw e; }
      c.error.textContent = e.message;
    });
  }

  function ticks(max, n) {
    var raw = max / n, p = Math.pow(10, Math.floor(Math.log10(raw))), steps = [1, 2, 2.5, 5, 10], step = p;
    for (var i = 0; i < steps.length; i++) { if (steps[i] * p >= raw) { step = steps[i] * p; break; } }
    var out = [];
    for (var t = 0; t <= max + 1e-9 * max; t += step) { out.push(Math.round(t / step) * step); }
    return out;
  }

  function draw(c, d) {
    c.name.textContent = d.model;
    c.summary.textContent = "";
    var parts = [["robustness ", num(d.robustness, 4)], [" \u00b7 P(all \u2264 " + short(d.beta) + ") ", num(d.p_all_by_beta, 4)],
      [" \u00b7 E[makespan] ", num(d.expected_makespan, 2)], [" \u00b7 " + d.events + (d.events === 1 ? " event" : " events") + ", now = ", short(d.now)]];
    parts.forEach(function (p) { c.summary.appendChild(document.createTextNode(p[0])); c.summary.appendChild(el("b", "", p[1])); });
    if (d.beta_default) { c.summary.appendChild(document.createTextNode(" (\u03b2 = " + short(d.beta) + ": E[makespan] rounded up)")); }

    var W = 720, H = 300, L = 52, R = 14, T = 12, B = 40;
    var x = function (t) { return L + (W - L - R) * t / d.t_max; };
    var y = function (p) { return T + (H - T - B) * (1 - p); };
    var g = c.chart;
    while (g.firstChild) { g.removeChild(g.firstChild); }
    g.setAttribute("aria-label", d.model + ": finishing-time CDFs of " + d.machines.length + " machines");
    g.appendChild(svg("rect", { x: 0, y: 0, width: W, height: H, fill: "#fff" }));
    if (d.now > 0) {
      g.appendChild(svg("rect", { x: x(0), y: y(1), width: x(Math.min(d.now, d.t_max)) - x(0), height: y(0) - y(1), fill: "#f1f1f1" }));
    }
    ticks(d.t_max, 8).forEach(function (t) {
      g.appendChild(svg("line", { x1: x(t), x2: x(t), y1: y(0), y2: y(1), stroke: "#e4e4e4" }));
      g.appendChild(svg("text", { x: x(t), y: y(0) + 15, "text-anchor": "middle" }, short(t)));
    });
    [0, 0.25, 0.5, 0.75, 1].forEach(function (p) {
      g.appendChild(svg("line", { x1: x(0), x2: x(d.t_max), y1: y(p), y2: y(p), stroke: "#e4e4e4" }));
      g.appendChild(svg("text", { x: L - 6, y: y(p) + 4, "text-anchor": "end" }, String(p)));
    });
    g.appendChild(svg("rect", { x: x(0), y: y(1), width: x(d.t_max) - x(0), height: y(0) - y(1), fill: "none", stroke: "#999" }));
    g.appendChild(svg("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, "time t (seconds since the batch started)"));
    g.appendChild(svg("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle", transform: "rotate(-90 12 " + ((T + H - B) / 2) + ")" }, "P(F \u2264 t | record)"));
    var bold = null;
    d.machines.forEach(function (m, i) {
      if (!m.points.length) { return; }
      var pts = m.points.map(function (p) { return x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1); }).join(" ");
      var line = svg("polyline", { points: pts, fill: "none", stroke: PALETTE[i % PALETTE.length], "stroke-width": m.bottleneck ? 3.2 : 1.5 });
      line.appendChild(svg("title", {}, m.name));
      if (m.bottleneck) { bold = line; } else { g.appendChild(line); }
    });
    if (bold) { g.appendChild(bold); }
    if (d.now > 0) {
      g.appendChild(svg("line", { x1: x(d.now), x2: x(d.now), y1: y(0), y2: y(1), stroke: "#888" }));
      g.appendChild(svg("text", { x: x(d.now) - 4, y: y(1) + 12, "text-anchor": "end" }, "now = " + short(d.now)));
    }
    g.appendChild(svg("line", { x1: x(d.beta), x2: x(d.beta), y1: y(0), y2: y(1), stroke: "#000", "stroke-dasharray": "5 4" }));
    g.appendChild(svg("text", { x: x(d.beta) + 4, y: y(0) - 6 }, "\u03b2 = " + short(d.beta)));

    var t = c.table;
    while (t.firstChild) { t.removeChild(t.firstChild); }
    var head = el("tr");
    ["machine", "P(F \u2264 \u03b2)", "E[F]", "q99", "state"].forEach(function (s) { head.appendChild(el("th", s === "state" ? "state" : "", s)); });
    t.appendChild(head);
    d.machines.forEach(function (m, i) {
      var tr = el("tr");
      tr.className = "machine";
      var name = el("td", "name");
      var sw = el("span", m.bottleneck ? "swatch bold" : "swatch");
      sw.style.background = PALETTE[i % PALETTE.length];
      name.appendChild(sw);
      name.appendChild(document.createTextNode(m.name));
      tr.appendChild(name);
      tr.appendChild(el("td", "p", num(m.p_by_beta, 4)));
      tr.appendChild(el("td", "", num(m.mean, 2)));
      tr.appendChild(el("td", "", num(m.q99, 2)));
      var state = m.finished_at !== null ? "finished at " + short(m.finished_at) : (m.points.length ? "running" : (m.note || "not computed"));
      if (m.bottleneck) { state += " (bottleneck)"; }
      tr.appendChild(el("td", "state", state));
      t.appendChild(tr);
    });
  }

  function poll() {
    clearTimeout(timer);
    var mine = ++generation;
    var next = function () { if (mine === generation) { timer = setTimeout(poll, PERIOD); } };
    if (!token) {
      status("Enter the token (the content of the server's --token-file) to see the models.");
      document.getElementById("token").focus();
      return;
    }
    api("/v1/models").then(function (list) {
      var main = document.getElementById("models"), seen = {};
      list.models.forEach(function (m) {
        seen[m.id] = true;
        var c = card(m);
        main.appendChild(c.root); // in the server's order
      });
      Object.keys(cards).forEach(function (id) {
        if (!seen[id]) { main.removeChild(cards[id].root); delete cards[id]; }
      });
      status(list.models.length ? list.models.length + (list.models.length === 1 ? " model" : " models") + "; updated " + new Date().toLocaleTimeString()
        : "No model yet: POST one to /v1/models.");
      return Promise.all(list.models.map(function (m) { return refresh(cards[m.id]); }));
    }).then(next, function (e) {
      if (e instanceof AuthError) {
        status("The server refused the token: enter the content of its --token-file.", true);
        return;
      }
      status("Cannot reach the server: " + e.message + " (retrying)", true);
      next();
    });
  }

  document.getElementById("auth").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var v = document.getElementById("token").value.trim();
    if (v) { token = v; sessionStorage.setItem(TOKEN, token); document.getElementById("token").value = ""; }
    poll();
  });
  document.getElementById("forget").addEventListener("click", function () {
    token = "";
    sessionStorage.removeItem(TOKEN);
    Object.keys(cards).forEach(function (id) { cards[id].root.remove(); delete cards[id]; });
    poll();
  });
  var betaInput = document.getElementById("beta");
  betaInput.value = defaultBeta;
  betaInput.addEventListener("change", function () {
    defaultBeta = betaInput.value.trim();
    sessionStorage.setItem(BETA, defaultBeta);
    Object.keys(cards).forEach(function (id) { cards[id].beta.placeholder = defaultBeta || "E[makespan]"; cards[id].last = ""; });
    poll();
  });
  poll();
})();
`
