// Store: counts and representations, documents a page at a time (a cursor, so a store of any
// size costs one page), and a document's chunks with spans and heading paths.

import { fetchChunks, get } from "./api.js";
import { el } from "./text.js";

const PAGE = 50;

function statsView(stats) {
  const box = el("div", "stats");
  const s = stats.stats || {};
  const m = stats.manifest || {};
  const dl = el("dl", "facts");
  const facts = [
    ["store", stats.store], ["model", m.model || "none (BM25 only)"], ["chunker", m.chunker],
    ["documents", s.documents], ["chunks", s.chunks], ["leaf chunks", s.leaf_chunks],
    ["text", `${((s.text_bytes || 0) / 1e6).toFixed(2)} MB`], ["on disk", `${((s.disk_bytes || 0) / 1e6).toFixed(2)} MB`],
  ];
  for (const [k, v] of facts) dl.append(el("dt", null, k), el("dd", null, v ?? "—"));
  box.append(dl);
  if ((s.representations || []).length) {
    const table = el("table");
    const head = el("tr");
    for (const h of ["representation", "vectors", "bytes"]) head.append(el("th", null, h));
    table.append(head);
    for (const r of s.representations) {
      const row = el("tr");
      row.append(el("td", null, r.name), el("td", null, r.vectors), el("td", null, r.bytes));
      table.append(row);
    }
    box.append(table);
  }
  return box;
}

async function showChunks(panel, id, status) {
  panel.replaceChildren(el("p", "muted", `Loading ${id}…`));
  try {
    const doc = await fetchChunks(id);
    const list = el("ol", "chunks");
    for (const c of doc.chunks) {
      const item = el("li");
      const path = (c.headings || []).join(" › ");
      item.append(el("p", "chunk-meta", `#${c.ordinal} · bytes ${c.span[0]}–${c.span[1]} · depth ${c.depth ?? 0}${path ? ` · ${path}` : ""}`), el("pre", "chunk-text", c.text));
      list.append(item);
    }
    panel.replaceChildren(el("h2", null, doc.title || id), el("p", "muted", `${id} · ${doc.chunks.length} chunk(s)`), list);
    panel.focus();
  } catch (e) {
    panel.replaceChildren(el("p", "error", e.message));
    status(e.message, true);
  }
}

export function setupStore(status, stats) {
  const list = document.getElementById("doc-list");
  const info = document.getElementById("page-info");
  const prev = document.getElementById("page-prev");
  const next = document.getElementById("page-next");
  const panel = document.getElementById("chunk-panel");
  const cursors = [null];
  let page = 0;
  let loaded = false;
  const load = async () => {
    const after = cursors[page];
    try {
      const res = await get(`/documents?limit=${PAGE}${after ? `&after=${encodeURIComponent(after)}` : ""}`);
      list.replaceChildren();
      if (!res.ids.length) list.append(el("li", "empty", "The store has no documents yet: add some with `ckeep add`."));
      for (const id of res.ids) {
        const item = el("li");
        const button = el("button", "doc-open", id);
        button.type = "button";
        button.addEventListener("click", () => showChunks(panel, id, status));
        item.append(button);
        list.append(item);
      }
      cursors[page + 1] = res.next;
      const first = page * PAGE + 1;
      info.textContent = res.ids.length ? `${first}–${first + res.ids.length - 1} of ${res.total}` : `0 of ${res.total}`;
      prev.disabled = page === 0;
      next.disabled = !res.next;
    } catch (e) {
      status(e.message, true);
    }
  };
  prev.addEventListener("click", () => { if (page > 0) { page--; load(); } });
  next.addEventListener("click", () => { if (cursors[page + 1]) { page++; load(); } });
  document.addEventListener("view", (event) => {
    if (event.detail !== "store" || loaded) return;
    loaded = true;
    document.getElementById("store-stats").replaceChildren(statsView(stats));
    load();
  });
}
