// Evaluate this store: what `ckeep eval recommend` does, run by the server (POST /evaluate),
// its progress followed (GET /evaluate/{id}), the candidates drawn with their 95 % intervals
// against the store's default, and the winner applied (POST /evaluate/{id}/apply).

import { get, post } from "./api.js";
import { el } from "./text.js";

const SVG = "http://www.w3.org/2000/svg";
/** How often a running evaluation is asked for its progress, in milliseconds. */
const POLL_MS = 1000;

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Each candidate's margin over the default as a point with its 95 % interval as a line. */
export function marginChart(rec) {
  const rows = rec.candidates;
  const [labelW, plotW, rowH] = [360, 320, 26];
  const lo = Math.min(0, ...rows.map((c) => c.margin_ci[0]));
  const hi = Math.max(0, ...rows.map((c) => c.margin_ci[1]));
  const span = hi - lo || 1;
  const x = (v) => labelW + ((v - lo) / span) * plotW;
  const height = rows.length * rowH + 30;
  const chart = svg("svg", { class: "margin-chart", width: labelW + plotW + 70, height, role: "img",
    "aria-label": `${rec.metric} margin over the default with 95 % intervals` });
  chart.append(svg("line", { x1: x(0), x2: x(0), y1: 0, y2: height - 20, class: "zero" }));
  rows.forEach((c, i) => {
    const y = i * rowH + rowH / 2;
    const row = svg("g", { class: i === rec.winner ? "candidate winner" : "candidate", "data-strategy": c.strategy });
    row.append(svg("text", { x: labelW - 8, y: y + 4, "text-anchor": "end" }, c.strategy.length > 52 ? `${c.strategy.slice(0, 51)}…` : c.strategy));
    row.append(svg("line", { x1: x(c.margin_ci[0]), x2: x(c.margin_ci[1]), y1: y, y2: y, class: "interval" }));
    row.append(svg("circle", { cx: x(c.margin), cy: y, r: 4 }));
    row.append(svg("text", { x: labelW + plotW + 8, y: y + 4 }, `${c.margin >= 0 ? "+" : ""}${c.margin.toFixed(4)}`));
    row.append(svg("title", {}, `${c.strategy}: ${rec.metric} ${c.mean.toFixed(4)}, ${c.margin.toFixed(4)} [${c.margin_ci[0].toFixed(4)}, ${c.margin_ci[1].toFixed(4)}] over the default, p = ${c.p_value.toFixed(4)}`));
    chart.append(row);
  });
  chart.append(svg("text", { x: x(0), y: height - 4, "text-anchor": "middle", class: "axis" }, "0 (the store's default)"));
  return chart;
}

function candidateTable(rec) {
  const table = el("table", "metrics");
  const head = el("tr");
  for (const h of ["strategy", rec.metric, "vs default [95 %]", "p", "ms/query", "index MB"]) head.append(el("th", null, h));
  table.append(head);
  rec.candidates.forEach((c, i) => {
    const row = el("tr", i === rec.winner ? "best" : null);
    row.append(
      el("td", "strategy-name", c.strategy),
      el("td", null, c.mean.toFixed(4)),
      el("td", null, `${c.margin >= 0 ? "+" : ""}${c.margin.toFixed(4)} [${c.margin_ci[0].toFixed(4)}, ${c.margin_ci[1].toFixed(4)}]`),
      el("td", null, c.p_value.toFixed(4)),
      el("td", null, c.query_ms.toFixed(1)),
      el("td", null, (c.index_bytes / 1e6).toFixed(1)),
    );
    table.append(row);
  });
  return table;
}

const APPLIED = {
  applied: "Applied: searches that name no strategy now use the winner.",
  already_default: "The store's default is already the best candidate; nothing changed.",
  not_confident: "Nothing changed: no candidate beats the default with confidence on this set.",
};

function renderDone(target, job, status) {
  const rec = job.recommendation;
  const best = rec.candidates[rec.winner];
  const made = job.test_set;
  const summary = el("p", "recommended", `Recommended: ${best.strategy} (${rec.metric} ${best.mean.toFixed(4)}, ${best.margin >= 0 ? "+" : ""}${best.margin.toFixed(4)} over the default, ${rec.confident ? "a gain this set shows with confidence" : "not a confident gain"}). Choosing this way is worth ${rec.out_of_fold.toFixed(4)} on queries it was not made on (${rec.folds} folds).`);
  const parts = [el("h3", null, `${rec.dataset}: ${rec.queries} queries${made ? ` made from ${made.documents_used} of ${made.documents} documents` : ""}, ${job.elapsed_seconds.toFixed(0)} s`), marginChart(rec), candidateTable(rec), summary];
  const outcome = el("p", "applied-outcome", job.applied ? APPLIED[job.applied] : "");
  if (!job.applied && rec.winner !== rec.baseline) {
    const button = el("button", null, "Make the winner the store's default");
    button.type = "button";
    button.disabled = !rec.confident;
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        const after = await post(`/evaluate/${job.id}/apply`);
        outcome.textContent = APPLIED[after.applied];
        status(APPLIED[after.applied]);
      } catch (e) {
        outcome.textContent = e.message;
        outcome.classList.add("error");
        status(`Cannot apply: ${e.message}`, true);
      }
    });
    parts.push(button);
  }
  parts.push(outcome);
  target.replaceChildren(...parts);
}

async function follow(id, target, bar, label, status) {
  for (;;) {
    let job;
    try {
      job = await get(`/evaluate/${id}`);
    } catch (e) {
      status(`Lost the evaluation: ${e.message}`, true);
      return;
    }
    if (job.state === "running") {
      bar.max = Math.max(job.total, 1);
      bar.value = job.done;
      label.textContent = `${job.stage}: ${job.done} of ${job.total} (${job.elapsed_seconds.toFixed(0)} s)`;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      continue;
    }
    bar.hidden = true;
    label.textContent = "";
    if (job.state === "failed") {
      target.replaceChildren(el("p", "error", job.error));
      status(`The evaluation failed: ${job.error}`, true);
    } else {
      renderDone(target, job, status);
      status(`Evaluated ${job.recommendation.candidates.length} strategies on ${job.recommendation.queries} queries`);
    }
    return;
  }
}

export function setupRecommend(status) {
  const form = document.getElementById("recommend-form");
  const target = document.getElementById("recommendation");
  const bar = document.getElementById("recommend-progress");
  const label = document.getElementById("recommend-stage");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const body = { count: Number(data.get("count")), generator: data.get("generator") };
    const strategies = String(data.get("strategies") || "").split("\n").map((s) => s.trim()).filter(Boolean);
    if (strategies.length) body.strategies = strategies;
    const button = form.querySelector("button");
    button.disabled = true;
    target.replaceChildren();
    try {
      const job = await post("/evaluate", body);
      bar.hidden = false;
      bar.removeAttribute("value");
      status(`Evaluation ${job.id} started`);
      await follow(job.id, target, bar, label, status);
    } catch (e) {
      target.replaceChildren(el("p", "error", e.message));
      status(`Cannot evaluate: ${e.message}`, true);
    } finally {
      button.disabled = false;
    }
  });
}
