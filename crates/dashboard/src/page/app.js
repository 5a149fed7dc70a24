// The salsify dashboard page: samples arrive as server-sent events (a live call as it runs,
// a recorded run all at once) and are drawn as SVG line charts around a time cursor.
"use strict";

// Each chart: its series (name on the wire, label), unit, and whether its axis starts at 0.
const CHARTS = [
  { id: "rates", title: "Link and sender", unit: "kb/s", zero: true, series: [
    ["link.capacity_kbps", "link capacity"], ["link.delivered_kbps", "delivered by the link"],
    ["send.sent_kbps", "sent"], ["send.target_kbps", "encoder target"]] },
  { id: "queue", title: "Link queue", unit: "kB", zero: true, series: [
    ["link.queue_kB", "queued (most in the bin)"]] },
  { id: "sizes", title: "Frame sizes", unit: "kB", zero: true, series: [
    ["send.frame_kB", "mean"], ["send.frame_max_kB", "largest"], ["send.budget_kB", "Salsify's budget"]] },
  { id: "choices", title: "Options chosen, skipped, dropped", unit: "per s", zero: true, series: [
    ["send.better", "better"], ["send.worse", "worse"], ["send.forced", "forced worse"],
    ["send.only", "only option"], ["send.skipped", "skipped"], ["send.dropped", "dropped"]] },
  { id: "quantizer", title: "Quantizer of frames sent", unit: "q", zero: false, series: [
    ["send.quantizer", "mean"]] },
  { id: "resolution", title: "Resolution shown", unit: "lines", zero: true, series: [
    ["recv.height", "picture height"]] },
  { id: "fps", title: "Frames shown", unit: "per s", zero: true, series: [
    ["recv.shown", "shown"]] },
  { id: "delay", title: "Per-frame delay, capture to display", unit: "ms", zero: true, series: [
    ["recv.delay_ms", "mean"], ["recv.delay_max_ms", "largest"]] },
  { id: "ssim", title: "Quality shown (SSIM)", unit: "dB", zero: false, series: [
    ["recv.ssim_db", "mean"]] },
  { id: "losses", title: "Losses and refused datagrams", unit: "per s", zero: true, series: [
    ["recv.lost", "frames lost"], ["recv.refused", "datagrams refused"], ["link.drops", "dropped by the link"]] },
];
const TOTALS = [["recv.shown", "frames shown"], ["send.frames", "frames sent"],
  ["recv.lost", "lost"], ["recv.refused", "refused"]];
const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"];

const token = new URLSearchParams(location.search).get("token");
const probing = new URLSearchParams(location.search).has("probe");
const q = (path) => token ? `${path}${path.includes("?") ? "&" : "?"}token=${token}` : path;
const $ = (id) => document.getElementById(id);

const data = { t: [], v: {}, tot: [], meta: {}, ended: false, picture: 0 };
let dirty = true;

function addSamples(list) {
  for (const s of list) {
    const i = data.t.length;
    data.t.push(s.t);
    for (const [k, x] of Object.entries(s.v)) {
      if (!data.v[k]) data.v[k] = [];
      data.v[k][i] = x;
    }
    data.tot.push(s.tot);
  }
  dirty = true;
}

// The index of the last sample at or before time `t`.
function indexAt(t) {
  let lo = 0, hi = data.t.length - 1;
  if (hi < 0 || data.t[0] > t) return -1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (data.t[mid] <= t) lo = mid; else hi = mid - 1;
  }
  return lo;
}

function fmt(x) {
  if (x === undefined || x === null || Number.isNaN(x)) return "-";
  const a = Math.abs(x);
  return a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : x.toFixed(2);
}

// Scheme gauges are not known in advance: one chart per `scheme.` series seen.
function chartList() {
  const scheme = Object.keys(data.v).filter((k) => k.startsWith("scheme.")).sort();
  return CHARTS.concat(scheme.map((k) => ({
    id: "s-" + k.slice(7), title: `${data.meta.scheme || "scheme"}: ${k.slice(7)}`,
    unit: "", zero: false, series: [[k, k.slice(7)]] })));
}

const SVG = "http://www.w3.org/2000/svg";
function el(name, attrs, parent) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

// Draws one chart over [from, to] with the cursor at `to`; returns the values at the cursor.
function drawChart(spec, from, to, at) {
  let box = $("chart-" + spec.id);
  const present = spec.series.filter(([k]) => data.v[k]);
  if (!box) {
    if (present.length === 0) return null;
    box = document.createElement("div");
    box.className = "chart"; box.id = "chart-" + spec.id;
    box.innerHTML = `<h2>${spec.title} <small>${spec.unit}</small></h2><svg viewBox="0 0 420 130" preserveAspectRatio="none"></svg><div class="legend"></div>`;
    $("charts").appendChild(box);
  }
  const svg = box.querySelector("svg");
  svg.textContent = "";
  const [w, h, left, bottom] = [420, 130, 34, 14];
  const i0 = Math.max(0, indexAt(from)), i1 = indexAt(to);
  let lo = spec.zero ? 0 : Infinity, hi = -Infinity;
  for (const [k] of present)
    for (let i = i0; i <= i1; i++) {
      const x = data.v[k][i];
      if (x !== undefined) { lo = Math.min(lo, x); hi = Math.max(hi, x); }
    }
  if (!(hi >= lo)) { lo = 0; hi = 1; }
  if (hi === lo) hi = lo + 1;
  const X = (t) => left + (w - left - 2) * (t - from) / Math.max(1e-9, to - from);
  const Y = (v) => 9 + (h - bottom - 11) * (1 - (v - lo) / (hi - lo));
  el("line", { class: "axis", x1: left, x2: w, y1: h - bottom, y2: h - bottom }, svg);
  for (const v of [lo, (lo + hi) / 2, hi]) {
    el("text", { x: 2, y: Y(v) + 3 }, svg).textContent = fmt(v);
    el("line", { class: "axis", x1: left, x2: w, y1: Y(v), y2: Y(v), "stroke-opacity": .4 }, svg);
  }
  el("text", { x: left, y: h - 2 }, svg).textContent = `${from.toFixed(0)} s`;
  el("text", { x: w - 40, y: h - 2 }, svg).textContent = `${to.toFixed(0)} s`;
  const values = {};
  const legend = box.querySelector(".legend");
  legend.textContent = "";
  spec.series.forEach(([k, label], n) => {
    if (!data.v[k]) return;
    const pts = [];
    for (let i = i0; i <= i1; i++) {
      const x = data.v[k][i];
      if (x !== undefined) pts.push(`${X(data.t[i]).toFixed(1)},${Y(x).toFixed(1)}`);
    }
    el("polyline", { points: pts.join(" "), stroke: COLOURS[n % COLOURS.length], "data-series": k }, svg);
    const value = at >= 0 ? data.v[k][at] : undefined;
    values[k] = fmt(value);
    const item = document.createElement("span");
    item.innerHTML = `<i style="background:${COLOURS[n % COLOURS.length]}"></i>${label} <b data-series="${k}">${values[k]}</b>`;
    legend.appendChild(item);
  });
  el("line", { class: "cursor", x1: X(to), x2: X(to), y1: 0, y2: h - bottom }, svg);
  return values;
}

function cursorTime() {
  const end = data.t.length ? data.t[data.t.length - 1] : 0;
  const c = $("cursor");
  c.max = end;
  if ($("follow").checked) c.value = end;
  return Math.min(Number(c.value), end);
}

let lastRender = -1e9;
function render() {
  if (!dirty) return;
  dirty = false;
  lastRender = performance.now();
  const to = cursorTime();
  const span = Number($("span").value);
  const from = span > 0 ? Math.max(0, to - span) : 0;
  $("cursor-time").textContent = `${to.toFixed(2)} s`;
  const at = indexAt(to);
  for (const spec of chartList()) drawChart(spec, from, Math.max(to, from + 1), at);
  const tot = at >= 0 ? data.tot[at] : {};
  $("totals").innerHTML = TOTALS.map(([k, label]) =>
    `<dt>${label}</dt><dd data-total="${k}">${tot[k] === undefined ? "-" : Math.round(tot[k])}</dd>`).join("");
}

function showMeta(meta) {
  data.meta = meta;
  $("title").textContent = meta.title || "salsify";
  document.title = `salsify: ${meta.title || "dashboard"}`;
  $("status").textContent = meta.mode === "replay" ? "replay" : "live";
  $("status").className = "status " + (meta.mode === "replay" ? "replay" : "live");
  const rows = Object.entries(meta.summary || {}).filter(([, v]) => typeof v === "number");
  $("summary").innerHTML = rows.length ? "<caption>summary.json</caption>" + rows.map(([k, v]) =>
    `<tr><td>${k}</td><td data-summary="${k}">${Number.isInteger(v) ? v : v.toFixed(2)}</td></tr>`).join("") : "";
  if (meta.mode === "replay") {
    $("picture").style.display = "none";
    $("picture-caption").textContent = meta.picture_note || "no pictures in a recorded run";
  }
  dirty = true;
}

function showPicture(seq) {
  const img = $("picture");
  img.onload = () => { data.picture = seq; $("picture-caption").textContent = `last shown picture (#${seq})`; };
  img.src = q(`picture.jpg?seq=${seq}`);
}

// What the page shows, read back from its own DOM, for tests and scripts (`?probe`).
function probe(ended) {
  const values = {};
  document.querySelectorAll(".legend b[data-series]").forEach((b) => { values[b.dataset.series] = b.textContent; });
  const totals = {};
  document.querySelectorAll("[data-total]").forEach((d) => { totals[d.dataset.total] = d.textContent; });
  const summary = {};
  document.querySelectorAll("[data-summary]").forEach((d) => { summary[d.dataset.summary] = d.textContent; });
  const charts = [...document.querySelectorAll(".chart svg")]
    .filter((s) => [...s.querySelectorAll("polyline")].some((p) => p.getAttribute("points").split(" ").length >= 2)).length;
  const report = { ended, charts, values, totals, summary, picture: data.picture,
    cursor: $("cursor-time").textContent, samples: data.t.length };
  fetch(q("probe"), { method: "POST", body: JSON.stringify(report) }).catch(() => {});
}

function connect() {
  const events = new EventSource(q("events"));
  events.addEventListener("meta", (e) => showMeta(JSON.parse(e.data)));
  events.addEventListener("samples", (e) => {
    addSamples(JSON.parse(e.data));
    // Drawn at once when the last drawing is old (timers alone may be held back, as in a
    // headless screenshot), else by the next tick.
    if (performance.now() - lastRender > 250) render();
  });
  events.addEventListener("picture", (e) => showPicture(Number(e.data)));
  events.addEventListener("end", () => {
    events.close();
    data.ended = true;
    if (data.meta.mode !== "replay") { $("status").textContent = "ended"; $("status").className = "status ended"; }
    dirty = true; render();
    probe(true);
  });
}

$("cursor").addEventListener("input", () => { $("follow").checked = false; dirty = true; });
$("follow").addEventListener("change", () => { dirty = true; });
$("span").addEventListener("change", () => { dirty = true; });
setInterval(render, 250);
if (probing) setInterval(() => probe(data.ended), 500);
connect();
