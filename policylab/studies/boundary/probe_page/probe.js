// The probe page: maps from /api/maps, worlds run through /api/run and /api/render. Plain DOM and SVG,
// no library: the page must work with no network beyond the probe's own server.
//
// Every string the server sends (from the store: a sweep is named by its policy file, and a file name can
// hold markup) enters the page as text, through `node` (textContent and attribute values), never as HTML.
"use strict";
const NS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);
// The server's token, written into the page it serves; requests that change anything carry it (probe_server.Guard).
const TOKEN = document.querySelector('meta[name="probe-token"]').content;
let MAPS = null;

// A new element (in the SVG namespace when `ns` is given) with attributes and text, appended to `parent`.
function node(parent, tag, attrs, text, ns) {
  const el = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  parent.appendChild(el);
  return el;
}

function svgEl(parent, tag, attrs, text) { return node(parent, tag, attrs, text, NS); }

function dangerColor(d) {  // 0 white-yellow .. 1 dark red; undefined (all diverged) grey
  if (d === null || d === undefined) return "#bbb";
  const stops = [[255, 255, 204], [254, 178, 76], [240, 59, 32], [128, 0, 38]];
  const x = Math.min(Math.max(d, 0), 1) * (stops.length - 1), i = Math.min(Math.floor(x), stops.length - 2), f = x - i;
  const c = stops[i].map((v, k) => Math.round(v + f * (stops[i + 1][k] - v)));
  return `rgb(${c.join(",")})`;
}

function deltaColor(d) {  // survival change: blue safer, red worse
  if (d === null || d === undefined) return "#bbb";
  const a = Math.min(Math.abs(d), 1);
  return d >= 0 ? `rgb(${Math.round(255 - 200 * a)},${Math.round(255 - 120 * a)},255)`
                : `rgb(255,${Math.round(255 - 200 * a)},${Math.round(255 - 200 * a)})`;
}

// Grid geometry shared by both maps: columns are the column axis's values (pushes), rows the row axis's
// (frictions), lowest at the bottom; `ax` names both (probe_view.map_axes).
function frame(svg, mus, pushes, ax) {
  svg.replaceChildren();
  const W = +svg.getAttribute("width"), H = +svg.getAttribute("height"), L = 60, B = 40, T = 10, R = 10;
  const cw = (W - L - R) / pushes.length, ch = (H - T - B) / mus.length;
  const g = { L, T, cw, ch, H, B, W,
    x: (j) => L + j * cw, y: (i) => T + (mus.length - 1 - i) * ch,
    // a push value (%BW) at its place between the cell centres (linear between grid values)
    px: (p) => L + cw * (0.5 + interpIndex(pushes, p)), my: (m) => T + ch * (mus.length - 0.5 - interpIndex(mus, m)) };
  const step = Math.max(1, Math.ceil(pushes.length / 10));
  pushes.forEach((p, j) => { if (j % step === 0) svgEl(svg, "text", { x: g.x(j) + cw / 2, y: H - B + 14, "text-anchor": "middle", "font-size": 10 }, p); });
  const mstep = Math.max(1, Math.ceil(mus.length / 12));
  mus.forEach((m, i) => { if (i % mstep === 0) svgEl(svg, "text", { x: L - 4, y: g.y(i) + ch / 2 + 3, "text-anchor": "end", "font-size": 10 }, m.toFixed(2)); });
  svgEl(svg, "text", { x: L + (W - L - R) / 2, y: H - 6, "text-anchor": "middle", "font-size": 11 }, axisTitle(ax.col));
  svgEl(svg, "text", { x: 12, y: T + (H - T - B) / 2, "font-size": 11, transform: `rotate(-90 12 ${T + (H - T - B) / 2})`, "text-anchor": "middle" }, axisTitle(ax.row));
  return g;
}

function interpIndex(values, v) {
  if (values.length === 1) return 0;
  if (v <= values[0]) return (v - values[0]) / (values[1] - values[0]);
  for (let k = 1; k < values.length; k++) if (v <= values[k]) return k - 1 + (v - values[k - 1]) / (values[k] - values[k - 1]);
  const n = values.length - 1;
  return n + (v - values[n]) / (values[n] - values[n - 1]);
}

function drawSweep() {
  const entry = MAPS.sweeps.find((s) => s.name === $("sweep").value);
  const svg = $("map");
  $("banner").hidden = !entry.gate_warning;
  $("banner").textContent = entry.gate_warning ? `Equivalence gate not passed: ${entry.gate_warning}` : "";
  $("sweep-error").textContent = entry.error ? `No map: ${entry.error}` : "";
  $("cell").textContent = "Click a cell of the map.";
  if (!entry.reduction) { svg.replaceChildren(); $("boundary-text").textContent = ""; return; }
  const red = entry.reduction, grid = red.sweep.grid, mus = grid.rows, pushes = grid.cols;
  const ax = entry.axes, g = frame(svg, mus, pushes, ax);
  for (const c of red.cells) {
    const r = svgEl(svg, "rect", { class: "cell", x: g.x(c.col_idx), y: g.y(c.row_idx), width: g.cw, height: g.ch,
      fill: dangerColor(c.danger), "data-mu": c.row_idx, "data-push": c.col_idx });
    svgEl(r, "title", {}, `${cellName(ax, c)}: S = ${c.survival === null ? "n/a" : c.survival.toFixed(2)} (${c.n_failed} failed, ${c.n_censored} survived, ${c.n_diverged} diverged)`);
    r.addEventListener("click", () => showCell(entry, c, r));
  }
  const tr = red.training;
  if (tr && !grid.row_axis) {  // the training distribution on a friction x push map: friction band, largest push, dashed
    const dash = { stroke: "#1565c0", "stroke-width": 2, "stroke-dasharray": "6 4", fill: "none" };
    if (tr.friction_range) for (const m of tr.friction_range) svgEl(svg, "line", { ...dash, x1: g.L, x2: g.W - 10, y1: g.my(m), y2: g.my(m), class: "training" });
    if (tr.push_pct_max > 0) svgEl(svg, "line", { ...dash, x1: g.px(tr.push_pct_max), x2: g.px(tr.push_pct_max), y1: g.T, y2: g.H - g.B, class: "training" });
  }
  const lines = [];
  for (const b of red.boundary) {  // median with its 95% interval, per friction row that has one
    if (b.status !== "boundary") continue;
    const y = g.y(b.row_idx) + g.ch / 2;
    svgEl(svg, "line", { x1: g.px(b.ci95[0]), x2: g.px(b.ci95[1]), y1: y, y2: y, stroke: "#000", "stroke-width": 2, class: "boundary-ci" });
    svgEl(svg, "circle", { cx: g.px(b.median), cy: y, r: 4, fill: "#000", class: "boundary" });
    lines.push(`${ax.row.label} ${b.row}: ${b.median.toFixed(1)} [${b.ci95[0].toFixed(1)}, ${b.ci95[1].toFixed(1)}] ${ax.col.unit}`);
  }
  $("boundary-text").textContent = `${red.sweep.checkpoint}: ${red.totals.failed} failed, ${red.totals.censored} survived, ${red.totals.diverged} diverged. Boundary (median [95% CI]): ` + (lines.join("; ") || "none in range");
}

function drawDiff() {
  const d = MAPS.diffs[+$("diff").value];
  const svg = $("diffmap");
  if (d.error) { svg.replaceChildren(); $("diff-summary").textContent = `${d.a} vs ${d.b}: not comparable (${d.error})`; return; }
  const g = frame(svg, d.grid.rows, d.grid.cols, d.axes);
  for (const c of d.cells) {
    const r = svgEl(svg, "rect", { x: g.x(c.col_idx), y: g.y(c.row_idx), width: g.cw, height: g.ch, fill: deltaColor(c.delta_survival),
      stroke: c.change === "unchanged" ? "#fff" : "#000", "stroke-width": c.change === "unchanged" ? 0.5 : 2, class: `diff-cell ${c.change}` });
    svgEl(r, "title", {}, `S ${c.survival_a} -> ${c.survival_b}, Fisher q ${c.q_fisher.toPrecision(2)}: ${c.change}`);
  }
  const s = d.summary;
  $("diff-summary").textContent = `${d.a} -> ${d.b}: ${s.safer} cells safer, ${s.worse} significantly worse, ${s.unchanged} unchanged (Fisher exact, Benjamini-Hochberg q < ${s.fdr_q}; outlined cells changed; blue = B survives more).`;
}

function showCell(entry, c, rect) {
  document.querySelectorAll("rect.cell.picked").forEach((r) => r.classList.remove("picked"));
  rect.classList.add("picked");
  const grid = entry.reduction.sweep.grid, box = $("cell");
  box.className = "";
  box.replaceChildren();
  node(box, "p", {}, `${entry.name}: ${cellName(entry.axes, c)}, direction ${grid.push_dir_deg} deg, start ${grid.push_t0_s} s; S = ${c.survival === null ? "n/a" : c.survival.toFixed(3)}`);
  const table = node(box, "table", { id: "cell-worlds" });
  const head = table.insertRow();
  for (const h of ["seed index", "seed", "stored outcome", "t_fail (s)", ""]) node(head, "th", {}, h);
  for (const r of c.rollouts) {
    const tr = table.insertRow();
    tr.className = "world";
    tr.dataset.seed = r.seed;
    tr.dataset.status = r.status;
    for (const v of [r.seed_idx, r.seed, r.status, r.t_fail === null ? "-" : r.t_fail.toFixed(2)]) tr.insertCell().textContent = v;
    const b = document.createElement("button");
    b.textContent = "Load + run";
    b.className = "run-world";
    b.addEventListener("click", () => {
      setWorld({ ...entry.axes.world, [entry.axes.row.name]: c.row, [entry.axes.col.name]: c.col });
      $("checkpoint").value = entry.name;
      $("sweep_seed").value = r.seed;
      $("seed-sweep").checked = true;
      run();
    });
    tr.insertCell().appendChild(b);
  }
}

function axisTitle(a) { return a.unit ? `${a.label.replace(/ \(.*\)$/, "")}, ${a.unit}` : a.label; }

// A cell by its row and column values.
function cellName(ax, c) { return `${ax.row.label} ${c.row}, ${ax.col.label} ${c.col}`; }

function setWorld(values) {
  for (const [k, v] of Object.entries(values)) { const el = $(`axis-${k}`); if (el) el.value = v; }
}

function buildForm() {
  const box = $("axes");
  for (const a of MAPS.axes) {  // one input per world axis the study declares (axes.CATALOGUE)
    const p = node(box, "div");
    node(p, "label", { for: `axis-${a.name}` }, `${a.label} (${a.unit})`);
    p.append(" ");
    node(p, "input", { id: `axis-${a.name}`, type: "number", step: "any", value: a.default });
    p.append(" ");
    node(p, "span", { class: "muted" }, `${a.min} to ${a.max}, resolution ${a.step}`);
  }
  $("probe-range").textContent = `seed = ${MAPS.probe_seeds.base} + index (range ${MAPS.probe_seeds.range}, ${MAPS.probe_seeds.size} seeds)`;
  const sel = $("checkpoint");
  for (const s of MAPS.sweeps) sel.add(new Option(s.name, s.name));
  sel.add(new Option("a policy file...", ""));
  sel.addEventListener("change", () => { $("policy-file-box").hidden = sel.value !== ""; });
  $("run").addEventListener("click", run);
  $("form").addEventListener("submit", (e) => e.preventDefault());
}

function request() {
  const world = {};
  for (const a of MAPS.axes) {
    const raw = $(`axis-${a.name}`).value.trim();
    world[a.name] = raw === "" ? null : Number(raw);
  }
  const body = { map: $("sweep").value, world, save: $("save").checked };
  if ($("checkpoint").value) body.checkpoint = $("checkpoint").value; else body.policy_file = $("policy_file").value;
  const kind = $("seed-probe").checked ? "seed_index" : "sweep_seed";
  const raw = $(kind).value.trim();
  body[kind] = raw === "" ? null : Number(raw);
  return body;
}

async function post(url, body) {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", "x-probe-token": TOKEN }, body: JSON.stringify(body || {}) });
  let data;
  try { data = await res.json(); } catch (e) { data = { error: `HTTP ${res.status}` }; }
  return { status: res.status, data };
}

let pending = 0;
async function run() {
  $("error").textContent = "";
  pending += 1;
  $("status").textContent = pending > 1 ? `running (${pending - 1} queued)...` : "running...";
  const t0 = performance.now();
  try {
    const { status, data } = await post("/api/run", request());
    if (status !== 200) { $("error").textContent = data.error; $("error").dataset.status = status; return; }
    showResult(data, performance.now() - t0);
    $("clip-status").textContent = "rendering the clip...";
    const r = await post(`/api/render/${encodeURIComponent(data.run_id)}`);
    if (r.status !== 200) { $("clip-status").textContent = `clip: ${r.data.error}`; return; }
    if ($("result").dataset.runId !== data.run_id) return;  // a later run is shown now
    const v = $("clip");
    v.src = r.data.clip_url; v.hidden = false;
    $("clip-status").textContent = `clip rendered from this trajectory in ${r.data.clip_s.toFixed(2)} s (frames show the record's outcome: ${r.data.clip_consistent}); ${((performance.now() - t0) / 1000).toFixed(2)} s from click`;
    $("clip-status").dataset.done = "1";
  } catch (e) {
    $("error").textContent = `request failed: ${e}`;
  } finally {
    pending -= 1;
    $("status").textContent = pending ? `running (${pending - 1} queued)...` : "";
  }
}

function fmtOutcome(o) {
  return o.status + (o.t_fail !== null && o.t_fail !== undefined ? ` at ${o.t_fail.toFixed(2)} s` : "") + (o.fail_reason ? ` (${o.fail_reason})` : "");
}

function showResult(d, ms) {
  $("result").hidden = false;
  $("result").dataset.runId = d.run_id;
  $("clip").hidden = true; $("clip").removeAttribute("src");
  delete $("clip-status").dataset.done;
  const w = d.world, o = d.outcome, out = $("outcome");
  out.textContent = `${d.checkpoint}: ${fmtOutcome(o)} - mu ${w.mu}, push ${w.push_pct} %BW, direction ${w.push_dir} deg, start ${w.push_t0} s, seed ${w.seed}`;
  out.dataset.status = o.status;
  out.dataset.tFail = JSON.stringify(o.t_fail);
  out.dataset.key = d.key;
  out.dataset.sha256 = d.payload_sha256;
  const st = $("stored");
  if (d.stored) {
    st.textContent = `In the store: ${fmtOutcome(d.stored.outcome)}. The new trajectory ` + (d.stored.bitwise_equal
      ? "equals the stored one bit for bit." : `differs from the stored one (max |qpos difference| ${d.stored.qpos_max_abs_diff}).`);
    st.dataset.bitwise = d.stored.bitwise_equal ? "equal" : "different";
  } else {
    st.textContent = d.saved ? "Not in the store before: written into it now." : "Not in the store (tick the box to write it).";
    st.dataset.bitwise = "absent";
  }
  $("timing").textContent = `simulated in ${d.simulate_s.toFixed(3)} s; ${(ms / 1000).toFixed(2)} s from click`;
  $("dl-npz").href = d.npz_url;
  $("dl-rrd").href = d.rrd_url;
  drawTracks(d);
}

function drawTracks(d) {
  const svg = $("tracks");
  svg.replaceChildren();
  const t = d.tracks.time, tmax = Math.max(t[t.length - 1], 5), W = 620, L = 50, R = 10;
  const x = (v) => L + (W - L - R) * v / tmax;
  const panels = [["torso height (m)", d.tracks.torso_z, d.thresholds.torso_z_fail_m, 0, 10],
                  ["uprightness", d.tracks.uprightness, d.thresholds.uprightness_fail, 0, 185]];
  for (const [label, ys, thr, , top] of panels) {
    const h = 150, finite = ys.filter((v) => v !== null);
    const lo = Math.min(thr, ...finite) - 0.05, hi = Math.max(thr, ...finite) + 0.05;
    const y = (v) => top + h - h * (v - lo) / (hi - lo);
    svgEl(svg, "rect", { x: x(d.push_window_s[0]), y: top, width: x(d.push_window_s[1]) - x(d.push_window_s[0]), height: h, fill: "#fde0dc", class: "push-window" });
    svgEl(svg, "rect", { x: L, y: top, width: W - L - R, height: h, fill: "none", stroke: "#999" });
    svgEl(svg, "line", { x1: L, x2: W - R, y1: y(thr), y2: y(thr), stroke: "#c00", "stroke-dasharray": "5 3", class: "threshold" });
    svgEl(svg, "text", { x: W - R - 4, y: y(thr) - 3, "text-anchor": "end", "font-size": 10, fill: "#c00" }, `fail below ${thr}`);
    const pts = t.map((tv, k) => (ys[k] === null ? null : `${x(tv).toFixed(1)},${y(ys[k]).toFixed(1)}`)).filter((p) => p);
    svgEl(svg, "polyline", { points: pts.join(" "), fill: "none", stroke: "#1565c0", "stroke-width": 1.5, class: "track" });
    svgEl(svg, "text", { x: L + 4, y: top + 12, "font-size": 11 }, label);
    svgEl(svg, "text", { x: L - 4, y: top + 10, "text-anchor": "end", "font-size": 9 }, hi.toFixed(2));
    svgEl(svg, "text", { x: L - 4, y: top + h, "text-anchor": "end", "font-size": 9 }, lo.toFixed(2));
  }
  if (d.outcome.t_fail !== null) svgEl(svg, "line", { x1: x(d.outcome.t_fail), x2: x(d.outcome.t_fail), y1: 10, y2: 335, stroke: "#000", class: "t-fail" });
  for (let s = 0; s <= tmax; s += 1) svgEl(svg, "text", { x: x(s), y: 352, "text-anchor": "middle", "font-size": 10 }, `${s} s`);
}

async function init() {
  const res = await fetch("/api/maps");
  MAPS = await res.json();
  if (res.status !== 200) { $("loading").textContent = MAPS.error; return; }
  $("store").textContent = MAPS.store;
  for (const s of MAPS.sweeps) $("sweep").add(new Option(s.name + (s.gate_warning ? " (gate not passed)" : ""), s.name));
  $("sweep").addEventListener("change", drawSweep);
  if (MAPS.diffs.length) {
    $("diff-box").hidden = false;
    MAPS.diffs.forEach((d, i) => $("diff").add(new Option(`${d.a} -> ${d.b}`, i)));
    $("diff").addEventListener("change", drawDiff);
    drawDiff();
  }
  buildForm();
  drawSweep();
  $("loading").remove();
  document.body.dataset.ready = "1";
}

init();
