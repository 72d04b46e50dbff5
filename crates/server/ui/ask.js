// The Ask view: a question answered from the store (POST /ask, streamed as server-sent events),
// each citation a link that opens the cited document with the located bytes highlighted.

import { fetchDocument, stream } from "./api.js";
import { ByteText, el, renderSpans } from "./text.js";

/** Opens `doc_id` in `panel`: the passage shaded, the cited span highlighted. */
async function openCitation(panel, citation, passage, status) {
  panel.hidden = false;
  panel.replaceChildren(el("p", "muted", `Loading ${citation.doc_id}…`));
  let doc;
  try {
    doc = await fetchDocument(citation.doc_id);
  } catch (e) {
    panel.replaceChildren(el("p", "error", `Cannot open ${citation.doc_id}: ${e.message}`));
    return;
  }
  const text = new ByteText(doc.text);
  const [start, end] = citation.span;
  const layers = [];
  if (passage) layers.push({ start: passage.span[0], end: passage.span[1], cls: "context", title: `source ${passage.number}` });
  layers.push({ start, end, cls: "hit", title: `cited (${citation.match})` });
  const head = el("header", "doc-head");
  head.append(el("h2", null, doc.title || citation.doc_id));
  const meta = el("p", "muted", `${citation.doc_id} · bytes ${start}–${end} · ${citation.match} match`);
  const legend = el("p", "legend");
  legend.append(el("mark", "hit", "cited words"), " ", el("span", "context", "the passage given to the model"));
  const body = el("div", "doc-text");
  const first = renderSpans(body, text, layers);
  panel.replaceChildren(head, meta, legend, body);
  if (first) panel.scrollTop = Math.max(0, first.offsetTop - panel.clientHeight / 3);
  panel.focus({ preventScroll: true });
  status(`Opened source ${citation.source}: ${citation.doc_id}`);
}

/** The answer's sentences, each followed by its citations as links (✓ located, ✗ not). */
function renderAnswer(box, answer, panel, status) {
  box.replaceChildren();
  const passages = new Map(answer.passages.map((p) => [p.number, p]));
  if (answer.abstained) box.append(el("p", "abstained", answer.answer));
  const text = el("p", "answer-text");
  for (const s of answer.sentences) {
    const sentence = el("span", s.withheld ? "sentence withheld" : "sentence", s.text);
    if (s.withheld) sentence.title = "left out: no citation was located";
    text.append(sentence);
    for (const c of s.citations) {
      const label = `[${c.source}${c.verified ? " ✓" : " ✗"}]`;
      if (c.verified && c.span) {
        const link = el("button", "citation verified", label);
        link.type = "button";
        link.dataset.docId = c.doc_id;
        link.dataset.start = String(c.span[0]);
        link.dataset.end = String(c.span[1]);
        link.title = c.quote ? `“${c.quote}” (${c.match})` : `backed by the source (${c.match})`;
        link.addEventListener("click", () => openCitation(panel, c, passages.get(c.source), status));
        text.append(" ", link);
      } else {
        const mark = el("span", "citation unverified", label);
        mark.title = c.quote ? `“${c.quote}” was not found in the sources` : "cited without a quote the sources hold";
        text.append(" ", mark);
      }
    }
    text.append(" ");
  }
  box.append(text);
  const list = el("ol", "passages");
  for (const p of answer.passages) {
    const item = el("li");
    item.value = p.number;
    item.append(el("span", "doc-id", p.doc_id), el("span", "muted", ` bytes ${p.span[0]}–${p.span[1]}, ${p.tokens} tokens`));
    list.append(item);
  }
  box.append(el("h3", null, "Sources"), list);
  const t = answer.timings;
  box.append(el("p", "muted", `${answer.answerer} · ${answer.context.tokens} of ${answer.context.budget} context tokens · ${answer.tokens.prompt} prompt and ${answer.tokens.answer} answer tokens · ${(t.total_ms / 1000).toFixed(1)} s`));
}

export function setupAsk(status) {
  const form = document.getElementById("ask-form");
  const box = document.getElementById("answer");
  const panel = document.getElementById("ask-doc");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const question = form.elements.question.value;
    const body = {
      question,
      extractive: form.elements.extractive.checked,
      strict: form.elements.strict.checked,
      stream: true,
    };
    box.replaceChildren(el("p", "answer-text streaming"));
    const live = box.firstChild;
    panel.hidden = true;
    form.dataset.state = "asking";
    status("Asking…");
    try {
      await stream("/ask", body, (name, data) => {
        if (name === "token") {
          live.append(data.text);
        } else if (name === "answer") {
          renderAnswer(box, data, panel, status);
          const located = data.sentences.flatMap((s) => s.citations).filter((c) => c.verified).length;
          status(data.abstained ? "The sources do not answer this question" : `Answered; ${located} citation(s) located in the sources`);
        } else if (name === "error") {
          box.replaceChildren(el("p", "error", data.message));
          status(data.message, true);
        }
      });
    } catch (e) {
      box.replaceChildren(el("p", "error", e.message));
      status(e.message, true);
    }
    form.dataset.state = "done";
  });
}
