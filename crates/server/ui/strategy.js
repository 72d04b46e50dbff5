// The strategy controls of the Search and Compare views: every option of `ckeep search`.

import { el } from "./text.js";

function select(name, label, options, value) {
  const wrap = el("label", "control", `${label} `);
  const s = document.createElement("select");
  s.name = name;
  for (const v of options || []) {
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

/**
 * Adds the controls to `container`. `offered` is the server's `GET /strategy` (each part's
 * choices, the defaults and the filter syntax) with the store's `representations`; `defaults`
 * overrides the server's defaults for this form.
 * Returns `read()`, giving the `/search` fields the controls set.
 */
export function strategyControls(container, offered, defaults = {}) {
  const { choices, filter } = offered;
  const start = { ...offered.defaults, ...defaults };
  const reprs = ["", ...offered.representations.filter((r) => r !== "plain")];
  const parts = [
    select("mode", "mode", choices.mode, start.mode),
    select("level", "level", choices.level, start.level),
    select("agg", "aggregate", choices.agg, start.agg),
    select("expand", "expand", choices.expand, start.expand),
    select("diversify", "diversify", choices.diversify, start.diversify),
    select("repr", "representation", reprs, defaults.repr || ""),
    input("k", "k", { type: "number", min: 1, max: 100, value: Number(start.k) || 10 }),
    input("filter", "filter", { placeholder: `${filter.condition}; …`, title: filter.help, size: 16 }),
  ];
  const box = el("fieldset", "controls");
  box.append(el("legend", null, "Strategy"), ...parts);
  container.append(box);
  const value = (name) => box.querySelector(`[name="${name}"]`).value.trim();
  return function read() {
    const body = { k: Number(value("k")) || 10 };
    for (const name of ["mode", "level", "agg", "expand", "diversify", "repr"]) {
      if (value(name)) body[name] = value(name);
    }
    // Conditions separated by `;`, each read by the server as `ckeep search --filter` reads it.
    const conditions = value("filter").split(";").map((c) => c.trim()).filter(Boolean);
    if (conditions.length) body.filter = conditions;
    return body;
  };
}
