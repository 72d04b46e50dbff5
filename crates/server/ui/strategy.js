// The strategy controls of the Search and Compare views: every option of `ckeep search`.

import { el } from "./text.js";

const CHOICES = {
  mode: ["bm25", "dense", "hybrid", "hybrid:linear=0.5"],
  level: ["chunk", "doc"],
  agg: ["", "max", "sum", "mean:3"],
  expand: ["", "window:1", "window:2", "parent", "doc"],
};

function select(name, label, options, value) {
  const wrap = el("label", "control", `${label} `);
  const s = document.createElement("select");
  s.name = name;
  for (const v of options) {
    const o = el("option", null, v === "" ? "(none)" : v);
    o.value = v;
    s.append(o);
  }
  s.value = value;
  wrap.append(s);
  return wrap;
}

function input(name, label, attrs) {
  const wrap = el("label", "control", `${label} `);
  const i = document.createElement("input");
  i.name = name;
  Object.assign(i, attrs);
  wrap.append(i);
  return wrap;
}

/** Numbers and booleans as themselves (metadata keeps `year: 2020`), anything else as text. */
function filterValue(raw) {
  if (/^-?\d+(\.\d+)?$/.test(raw)) return Number(raw);
  if (raw === "true" || raw === "false") return raw === "true";
  return raw;
}

/**
 * Adds the controls to `container`; `representations` come from the store's manifest.
 * Returns `read()`, giving the `/search` fields the controls set.
 */
export function strategyControls(container, representations, defaults = {}) {
  const reprs = ["", ...representations.filter((r) => r !== "plain")];
  const parts = [
    select("mode", "mode", CHOICES.mode, defaults.mode || "bm25"),
    select("level", "level", CHOICES.level, defaults.level || "chunk"),
    select("agg", "aggregate", CHOICES.agg, defaults.agg || ""),
    select("expand", "expand", CHOICES.expand, defaults.expand || ""),
    select("repr", "representation", reprs, defaults.repr || ""),
    input("k", "k", { type: "number", min: 1, max: 100, value: defaults.k || 10 }),
    input("filter", "filter", { placeholder: "key=value, …", size: 16 }),
  ];
  const box = el("fieldset", "controls");
  box.append(el("legend", null, "Strategy"), ...parts);
  container.append(box);
  const value = (name) => box.querySelector(`[name="${name}"]`).value.trim();
  return function read() {
    const body = { mode: value("mode"), level: value("level"), k: Number(value("k")) || 10 };
    for (const name of ["agg", "expand", "repr"]) {
      if (value(name)) body[name] = value(name);
    }
    const filter = value("filter");
    if (filter) {
      body.filter = {};
      for (const pair of filter.split(",")) {
        const [k, ...rest] = pair.split("=");
        if (k.trim() && rest.length) body.filter[k.trim()] = filterValue(rest.join("=").trim());
      }
    }
    return body;
  };
}
