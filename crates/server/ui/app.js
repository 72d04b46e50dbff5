// The playground: views switched by the URL hash (#search, #compare, …), each a module.

import { get, post } from "./api.js";
import { openDocument, renderResults } from "./results.js";
import { strategyControls } from "./strategy.js";
import { setupSimilar } from "./similar.js";
import { setupEvaluate } from "./evaluate.js";
import { setupRecommend } from "./recommend.js";
import { setupStore } from "./store.js";
import { setupAsk } from "./ask.js";

const VIEWS = ["search", "ask", "compare", "similar", "evaluate", "store"];
const statusLine = document.getElementById("status");

/** Tells the user what happened (screen readers hear it too); errors stand out. */
export function status(message, isError = false) {
  statusLine.textContent = message;
  statusLine.classList.toggle("error", isError);
}

function show(view) {
  const name = VIEWS.includes(view) ? view : "search";
  for (const v of VIEWS) {
    document.getElementById(`view-${v}`).hidden = v !== name;
    const link = document.querySelector(`nav a[data-view="${v}"]`);
    if (v === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.dispatchEvent(new CustomEvent("view", { detail: name }));
}

async function main() {
  let stats = { manifest: {} };
  try {
    stats = await get("/stats");
    document.getElementById("store-name").textContent =
      `${stats.store} · ${stats.stats.documents} documents · ${stats.manifest.model || "BM25 only"}`;
  } catch (e) {
    status(`Cannot read the store: ${e.message}`, true);
  }
  const model = stats.manifest.model;
  let offered = { choices: {}, defaults: {}, filter: {} };
  try {
    offered = await get("/strategy");
  } catch (e) {
    status(`Cannot read the strategy choices: ${e.message}`, true);
  }
  offered.representations = stats.manifest.representations || [];

  // Search.
  const searchForm = document.getElementById("search-form");
  const readSearch = strategyControls(searchForm, offered);
  const results = document.getElementById("search-results");
  const panel = document.getElementById("doc-panel");
  searchForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const query = searchForm.elements.query.value;
    status("Searching…");
    try {
      const response = await post("/search", { query, ...readSearch(), explain: true });
      renderResults(results, response, (r) => openDocument(panel, r, status));
      status(`${response.results.length} result(s) for “${query}”`);
    } catch (e) {
      results.replaceChildren();
      status(e.message, true);
    }
  });

  // Compare: one query, two strategies, results both returned marked.
  const compareForm = document.getElementById("compare-form");
  const [leftBox, rightBox] = document.querySelectorAll("#view-compare .strategy-form");
  const readLeft = strategyControls(leftBox, offered, { mode: "bm25" });
  const readRight = strategyControls(rightBox, offered, { mode: model ? "dense" : "bm25", level: "doc", agg: "max" });
  compareForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const query = compareForm.elements.query.value;
    status("Comparing…");
    try {
      const [a, b] = await Promise.all([
        post("/search", { query, ...readLeft() }),
        post("/search", { query, ...readRight() }),
      ]);
      const ids = (r) => new Set(r.results.map((x) => x.doc_id));
      const [inA, inB] = [ids(a), ids(b)];
      const open = (r) => { location.hash = "#search"; openDocument(panel, r, status); };
      renderResults(document.getElementById("compare-left"), a, open, (r) => (inB.has(r.doc_id) ? "both" : null));
      renderResults(document.getElementById("compare-right"), b, open, (r) => (inA.has(r.doc_id) ? "both" : null));
      const shared = [...inA].filter((d) => inB.has(d)).length;
      status(`${shared} document(s) in both lists (marked)`);
    } catch (e) {
      status(e.message, true);
    }
  });

  setupAsk(status);
  setupSimilar(status);
  setupEvaluate(status);
  setupRecommend(status);
  setupStore(status, stats);

  window.addEventListener("hashchange", () => show(location.hash.slice(1)));
  document.addEventListener("keydown", (event) => {
    const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
    if (event.key === "/" && !typing) {
      event.preventDefault();
      location.hash = "#search";
      searchForm.elements.query.focus();
    } else if (event.key === "Escape") {
      panel.hidden = true;
      document.getElementById("ask-doc").hidden = true;
    }
  });
  show(location.hash.slice(1));
}

main();
