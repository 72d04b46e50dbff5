// A result list (Search and Compare) and the document view: the whole stored text with every
// matched chunk highlighted, the returned context shaded, and the score breakdown beside it.

import { fetchDocument } from "./api.js";
import { ByteText, el, preview, renderSpans } from "./text.js";

/** Fills `list` with results; `onOpen(result)` when one is chosen. `mark(result)` may return a
 * class to add (Compare marks results both strategies returned). */
export function renderResults(list, response, onOpen, mark = () => null) {
  list.replaceChildren();
  const results = response.results || [];
  if (!results.length) {
    list.append(el("li", "empty", "No results. Try other words, or another mode or level."));
    return;
  }
  const top = Math.max(...results.map((r) => Math.abs(r.score)), 1e-9);
  for (const r of results) {
    const item = el("li", "result");
    const extra = mark(r);
    if (extra) item.classList.add(extra);
    const button = el("button", "result-open");
    button.type = "button";
    button.dataset.docId = r.doc_id;
    button.dataset.rank = String(r.rank);
    const head = el("span", "result-head");
    head.append(el("span", "rank", `${r.rank}.`), el("span", "doc-id", r.doc_id),
      el("span", "score", r.score.toFixed(4)));
    const bar = el("span", "score-bar");
    const fill = el("span", "score-fill");
    fill.style.width = `${Math.max(2, (100 * Math.abs(r.score)) / top)}%`;
    bar.append(fill);
    button.append(head, bar);
    if (r.headings) button.append(el("span", "headings", r.headings));
    button.append(el("span", "snippet", preview(r.text)));
    button.addEventListener("click", () => onOpen(r, button));
    item.append(button);
    list.append(item);
  }
}

function explainTable(explain) {
  const box = el("div", "explain");
  box.append(el("h3", null, "Why it ranks here"));
  const facts = el("dl");
  for (const key of ["mode", "model", "aggregation", "expansion", "representation"]) {
    if (explain[key]) facts.append(el("dt", null, key), el("dd", null, explain[key]));
  }
  const d = explain.diversity;
  if (d) {
    const like = d.similar_to ? `, most like #${d.similar_to}` : "";
    const text = `mmr ${d.mmr.toFixed(3)}: relevance ${d.relevance.toFixed(3)}, redundancy ` +
      `${d.redundancy.toFixed(3)} (${d.similarity}${like}); first-stage rank ${d.first_rank}`;
    facts.append(el("dt", null, "diversity"), el("dd", null, text));
  }
  if (explain.query_terms && explain.query_terms.length) {
    facts.append(el("dt", null, "query terms"), el("dd", null, explain.query_terms.join(" ")));
  }
  box.append(facts);
  for (const c of explain.chunks || []) {
    const section = el("div", "explain-chunk");
    const parts = [];
    if (c.bm25 !== undefined) parts.push(`BM25 ${c.bm25.toFixed(3)}`);
    if (c.dense !== undefined) parts.push(`cosine ${c.dense.toFixed(3)}`);
    if (c.bm25_rank !== undefined) parts.push(`BM25 rank ${c.bm25_rank}`);
    if (c.dense_rank !== undefined) parts.push(`dense rank ${c.dense_rank}`);
    if (c.fused !== undefined) parts.push(`fused ${c.fused.toFixed(4)}`);
    section.append(el("p", null, `chunk ${c.chunk_id} (bytes ${c.span[0]}–${c.span[1]}): ${parts.join(", ")}`));
    if (c.terms && c.terms.length) {
      const table = el("table", "terms");
      const head = el("tr");
      for (const h of ["term", "tf", "idf", "score", "share"]) head.append(el("th", null, h));
      table.append(head);
      const total = c.terms.reduce((sum, t) => sum + t.score, 0) || 1;
      for (const t of c.terms) {
        const row = el("tr");
        row.append(el("td", null, t.term), el("td", null, t.tf), el("td", null, t.idf.toFixed(3)),
          el("td", null, t.score.toFixed(3)), el("td", null, `${((100 * t.score) / total).toFixed(0)} %`));
        table.append(row);
      }
      section.append(table);
    }
    box.append(section);
  }
  return box;
}

/** Opens `result`'s document in `panel`: hits (`mark.hit`) and context (`span.context`). */
export async function openDocument(panel, result, status) {
  panel.hidden = false;
  panel.replaceChildren(el("p", "muted", `Loading ${result.doc_id}…`));
  let doc;
  try {
    doc = await fetchDocument(result.doc_id);
  } catch (e) {
    panel.replaceChildren(el("p", "error", `Cannot open ${result.doc_id}: ${e.message}`));
    return;
  }
  const text = new ByteText(doc.text);
  const layers = [
    ...result.spans.map(([start, end]) => ({ start, end, cls: "context", title: "returned context" })),
    ...result.chunks.map((c) => ({ start: c.span[0], end: c.span[1], cls: "hit", title: `matched chunk ${c.chunk_id}, score ${c.score.toFixed(4)}` })),
  ];
  const head = el("header", "doc-head");
  const close = el("button", "close", "Close");
  close.type = "button";
  close.addEventListener("click", () => { panel.hidden = true; });
  head.append(el("h2", null, doc.title || result.doc_id), close);
  const meta = el("p", "muted", `${result.doc_id} · ${text.length} bytes · rank ${result.rank} · ${result.chunks.length} matched chunk(s), ${result.spans.length} context span(s)`);
  const body = el("div", "doc-text");
  const first = renderSpans(body, text, layers);
  const legend = el("p", "legend");
  legend.append(el("mark", "hit", "matched chunk"), " ", el("span", "context", "returned context"));
  panel.replaceChildren(head, meta, legend);
  if (result.explain) panel.append(explainTable(result.explain));
  panel.append(body);
  // Scroll the panel, not the page, to the first hit.
  if (first) panel.scrollTop = Math.max(0, first.offsetTop - panel.clientHeight / 3);
  panel.focus({ preventScroll: true });
  if (status) status(`Opened ${result.doc_id}`);
}
