// Byte spans in JavaScript. The engine reports UTF-8 byte offsets; JavaScript strings count
// UTF-16 units. Texts are sliced as bytes and decoded, so a highlight covers exactly the bytes
// the server named, in every script.

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: false });

/** A text and its UTF-8 bytes. */
export class ByteText {
  constructor(text) {
    this.text = text;
    this.bytes = encoder.encode(text);
  }

  get length() {
    return this.bytes.length;
  }

  /** The text of bytes `start..end`. */
  slice(start, end) {
    return decoder.decode(this.bytes.subarray(start, end));
  }
}

/**
 * Renders `text` into `container` with byte-span layers: each layer is `{start, end, cls,
 * tag?, title?}`. Where layers overlap, the later one wins (list context first, hits last). Every
 * highlighted piece is a `<mark>` (or `<span>` for the context class) carrying its layer's
 * byte span in `data-start`/`data-end`. Returns the first hit element, to scroll to.
 */
export function renderSpans(container, text, layers, hitClass = "hit") {
  const bt = text instanceof ByteText ? text : new ByteText(text);
  const n = bt.length;
  const owner = new Int32Array(n + 1).fill(-1);
  layers.forEach((layer, i) => {
    const s = Math.max(0, Math.min(n, layer.start));
    const e = Math.max(s, Math.min(n, layer.end));
    owner.fill(i, s, e);
  });
  container.replaceChildren();
  let first = null;
  let at = 0;
  while (at < n) {
    const who = owner[at];
    let end = at + 1;
    while (end < n && owner[end] === who) end++;
    const piece = bt.slice(at, end);
    if (who < 0) {
      container.append(piece);
    } else {
      const layer = layers[who];
      const el = document.createElement(layer.tag || (layer.cls === hitClass ? "mark" : "span"));
      el.className = layer.cls;
      el.textContent = piece;
      el.dataset.start = String(layer.start);
      el.dataset.end = String(layer.end);
      el.dataset.pieceStart = String(at);
      el.dataset.pieceEnd = String(end);
      if (layer.title) el.title = layer.title;
      container.append(el);
      if (!first && layer.cls === hitClass) first = el;
    }
    at = end;
  }
  return first;
}

/** A short preview of a text: its first `chars` characters, whitespace folded. */
export function preview(text, chars = 240) {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > chars ? `${flat.slice(0, chars)}…` : flat;
}

/** `<tag class=cls>text</tag>`, built without HTML parsing. */
export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}
