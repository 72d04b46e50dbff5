// Similar: two texts (pasted, or two stored documents) scored by the chunk-pair method beside
// the whole-text cosine, the matching chunk pairs highlighted and joined by lines.

import { fetchDocument, post } from "./api.js";
import { ByteText, el, renderSpans } from "./text.js";

const SVG = "http://www.w3.org/2000/svg";

async function textOf(form, name) {
  const id = form.elements[`doc_${name}`].value.trim();
  if (id) return (await fetchDocument(id)).text;
  return form.elements[name].value;
}

/** Draws a line from each A chunk to its B chunk across the gap between the panes. */
function drawLines(view, svg, pairs) {
  const box = view.getBoundingClientRect();
  svg.replaceChildren();
  svg.setAttribute("width", String(box.width));
  svg.setAttribute("height", String(box.height));
  pairs.forEach((p, i) => {
    const a = view.querySelector(`.pane-a [data-chunk="${p.a.chunk}"]`);
    const b = view.querySelector(`.pane-b [data-chunk="${p.b.chunk}"]`);
    if (!a || !b) return;
    // A chunk scrolled out of its pane is pointed at from the pane's edge.
    const clamp = (rect, pane) => {
      const p = pane.getBoundingClientRect();
      return Math.min(Math.max(rect.top + rect.height / 2, p.top), p.bottom);
    };
    const ra = a.getBoundingClientRect();
    const rb = b.getBoundingClientRect();
    const ya = clamp(ra, a.closest(".pane"));
    const yb = clamp(rb, b.closest(".pane"));
    const line = document.createElementNS(SVG, "line");
    line.setAttribute("x1", String(ra.right - box.left));
    line.setAttribute("y1", String(ya - box.top));
    line.setAttribute("x2", String(rb.left - box.left));
    line.setAttribute("y2", String(yb - box.top));
    line.setAttribute("class", `pair-line pair-${i % 5}`);
    const title = document.createElementNS(SVG, "title");
    title.textContent = `cosine ${p.cosine.toFixed(4)}`;
    line.append(title);
    svg.append(line);
  });
}

/** One pane: its text with each chunk of a top pair marked once (a chunk may be in several
 * pairs), coloured by the first pair it is in. */
function pane(cls, text, sides) {
  const box = el("div", `pane ${cls}`);
  const chunks = new Map();
  sides.forEach((side, i) => { if (!chunks.has(side.chunk)) chunks.set(side.chunk, { ...side, pair: i }); });
  const layers = [...chunks.values()].map((c) => ({
    start: c.span[0], end: c.span[1], cls: `hit pair-${c.pair % 5}`, tag: "mark", chunk: c.chunk,
    title: `chunk ${c.chunk}`,
  }));
  renderSpans(box, new ByteText(text), layers, "never");
  box.querySelectorAll("[data-start]").forEach((node) => {
    const layer = layers.find((l) => String(l.start) === node.dataset.start && String(l.end) === node.dataset.end);
    if (layer) node.dataset.chunk = String(layer.chunk);
  });
  return box;
}

export function setupSimilar(status) {
  const form = document.getElementById("similar-form");
  const scores = document.getElementById("similar-scores");
  const view = document.getElementById("similar-pair");
  let redraw = null;
  window.addEventListener("resize", () => redraw && redraw());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status("Comparing the texts…");
    try {
      const [a, b] = await Promise.all([textOf(form, "a"), textOf(form, "b")]);
      const topK = Number(form.elements.top_k.value) || 3;
      const r = await post("/similar", { a, b, top_k: topK, explain: true });
      scores.replaceChildren(
        el("p", "score-line", `chunk-pair score ${r.chunk_pair.toFixed(4)} (mean of the top ${r.top.length} of ${r.chunks[0] * r.chunks[1]} chunk pairs; ${r.chunks[0]} × ${r.chunks[1]} chunks, ${r.chunker})`),
        el("p", "score-line", `whole-text cosine ${r.whole.toFixed(4)}`),
        el("p", "verdict", `${r.duplicate ? "duplicate" : "different"} at threshold ${r.threshold} (by whole-text cosine: ${r.whole_duplicate ? "duplicate" : "different"})`),
      );
      const svg = document.createElementNS(SVG, "svg");
      svg.setAttribute("class", "pair-lines");
      svg.setAttribute("aria-hidden", "true");
      view.replaceChildren(pane("pane-a", a, r.top.map((p) => p.a)), svg, pane("pane-b", b, r.top.map((p) => p.b)));
      redraw = () => drawLines(view, svg, r.top);
      // Each pane starts at the chunk of the best pair, and the lines follow scrolling.
      for (const [selector, chunk] of [[".pane-a", r.top[0]?.a.chunk], [".pane-b", r.top[0]?.b.chunk]]) {
        const paneBox = view.querySelector(selector);
        const mark = paneBox.querySelector(`[data-chunk="${chunk}"]`);
        if (mark) paneBox.scrollTop = Math.max(0, mark.offsetTop - paneBox.offsetTop - 40);
        paneBox.addEventListener("scroll", () => requestAnimationFrame(redraw));
      }
      requestAnimationFrame(redraw);
      status(`Chunk-pair score ${r.chunk_pair.toFixed(4)}`);
    } catch (e) {
      scores.replaceChildren();
      view.replaceChildren();
      status(e.message, true);
    }
  });
}
