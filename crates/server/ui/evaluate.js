// Evaluate: a `ckeep eval run --report DIR` directory opened from this computer: the table,
// the plots, and per-query wins and losses between two strategies.

import { el } from "./text.js";

function metricTable(results) {
  const table = el("table", "metrics");
  const head = el("tr");
  head.append(el("th", null, "strategy"), ...results.metrics.map((m) => el("th", null, m)), el("th", null, "context words"));
  table.append(head);
  const best = results.metrics.map((_, i) => Math.max(...results.strategies.map((s) => s.evaluation.means[i])));
  for (const s of results.strategies) {
    const row = el("tr");
    row.append(el("td", "strategy-name", s.strategy));
    s.evaluation.means.forEach((v, i) => {
      const p = s.p_values[i];
      const cell = el("td", Math.abs(v - best[i]) < 1e-12 ? "best" : null, v.toFixed(4));
      if (p !== null && p !== undefined) cell.append(el("span", p < 0.05 ? "p sig" : "p", ` p=${p.toFixed(3)}`));
      row.append(cell);
    });
    row.append(el("td", null, s.context_words.toFixed(0)));
    table.append(row);
  }
  return table;
}

function choose(label, strategies, value) {
  const wrap = el("label", "control", `${label} `);
  const s = document.createElement("select");
  strategies.forEach((st, i) => {
    const o = el("option", null, `${i + 1}. ${st.strategy}`);
    o.value = String(i);
    s.append(o);
  });
  s.value = String(value);
  wrap.append(s);
  return [wrap, s];
}

/** Per-query differences of `metric` between strategies `a` and `b`, largest first. */
function winsAndLosses(results, a, b, metric) {
  const m = results.metrics.indexOf(metric);
  const values = (s) => new Map(s.evaluation.queries.map((q, i) => [q, s.evaluation.per_query[i][m]]));
  const [va, vb] = [values(results.strategies[a]), values(results.strategies[b])];
  const rows = [];
  for (const [q, x] of va) if (vb.has(q)) rows.push({ q, a: x, b: vb.get(q), d: vb.get(q) - x });
  rows.sort((x, y) => Math.abs(y.d) - Math.abs(x.d) || x.q.localeCompare(y.q));
  return rows;
}

function comparison(results) {
  const box = el("div", "wins");
  const [la, sa] = choose("baseline", results.strategies, 0);
  const [lb, sb] = choose("against", results.strategies, Math.min(1, results.strategies.length - 1));
  const metricWrap = el("label", "control", "metric ");
  const sm = document.createElement("select");
  for (const m of results.metrics) sm.append(Object.assign(el("option", null, m), { value: m }));
  metricWrap.append(sm);
  const out = el("div");
  const render = () => {
    const rows = winsAndLosses(results, Number(sa.value), Number(sb.value), sm.value);
    const wins = rows.filter((r) => r.d > 0).length;
    const losses = rows.filter((r) => r.d < 0).length;
    const table = el("table", "per-query");
    const head = el("tr");
    for (const h of ["query", "baseline", "against", "difference"]) head.append(el("th", null, h));
    table.append(head);
    for (const r of rows.filter((x) => x.d !== 0).slice(0, 200)) {
      const row = el("tr", r.d > 0 ? "win" : "loss");
      row.append(el("td", null, r.q), el("td", null, r.a.toFixed(4)), el("td", null, r.b.toFixed(4)), el("td", null, (r.d > 0 ? "+" : "") + r.d.toFixed(4)));
      table.append(row);
    }
    out.replaceChildren(el("p", null, `${wins} win(s), ${losses} loss(es), ${rows.length - wins - losses} tie(s) over ${rows.length} queries (largest differences first, at most 200 shown)`), table);
  };
  for (const s of [sa, sb, sm]) s.addEventListener("change", render);
  box.append(el("h3", null, "Wins and losses per query"), la, lb, metricWrap, out);
  render();
  return box;
}

async function open(files, status) {
  const list = [...files];
  const results = list.find((f) => f.name === "results.json");
  const target = document.getElementById("report");
  if (!results) {
    target.replaceChildren(el("p", "error", "No results.json among the chosen files: choose the directory `--report` wrote."));
    status("No results.json", true);
    return;
  }
  let parsed;
  try {
    parsed = JSON.parse(await results.text());
    if (!Array.isArray(parsed.strategies) || !Array.isArray(parsed.metrics)) throw new Error("not a ckeep report");
  } catch (e) {
    target.replaceChildren(el("p", "error", `results.json cannot be read: ${e.message}`));
    status("Unreadable report", true);
    return;
  }
  const plots = el("div", "plots");
  for (const f of list.filter((x) => x.name.endsWith(".svg")).sort((x, y) => x.name.localeCompare(y.name))) {
    const img = document.createElement("img");
    img.src = URL.createObjectURL(f);
    img.alt = f.name;
    plots.append(img);
  }
  target.replaceChildren(el("h2", null, `${parsed.dataset} — ${parsed.documents} documents, ${parsed.queries} queries`), metricTable(parsed), plots);
  if (parsed.strategies.length > 1) target.append(comparison(parsed));
  status(`Opened the report on ${parsed.dataset}`);
}

export function setupEvaluate(status) {
  for (const id of ["report-dir", "report-files"]) {
    const input = document.getElementById(id);
    input.addEventListener("change", () => open(input.files, status));
  }
}
