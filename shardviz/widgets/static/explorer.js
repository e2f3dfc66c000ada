// shardviz Explorer: a plain ES module for anywidget (no bundler, no imports, works offline).
//
// Four linked panes over one report: the mesh, the arrays (one drawn as tiles), the
// collective ledger, and per-device memory. Synced state (see shardviz/widgets/explorer.py and
// explorer_payload.py for the JSON shapes):
//   payload             the shown report (JSON text): mesh, colors, arrays, collectives, memory
//   array               the selected array's tiles and page layout (JSON text), or ""
//   strategies          [{id, title, description, mesh}] for a comparison, else []
//   selected_strategy   strategy id, or ""
//   selected_array      array id ("arg:…", "out:…", "mid:…"), or ""
//   selected_device     device id, or -1
//   selected_collective ledger position, or -1
//   status              "", "compiling", "running", "done" or "error"
//   error               message shown in an inline box, or ""
//   generation          bumped by Python with every new report
//
// Prefetch: once a payload is drawn the view sends {type: "prefetch", generation} and Python
// answers with custom messages {type: "prefetched", generation, arrays: [[id, json], ...],
// done}, each json exactly what the `array` trait would carry for that id. The view keeps them
// (and every `array` it receives) for the current generation, so a pick of a kept array draws
// at once; messages of another generation are dropped. The root's data-prefetch says "pending"
// or "done"; a "sv-x-forget" event on the root (detail: an array id, or none for all) drops
// kept arrays, for tests and benchmarks of the path through the kernel.
//
// Every model string enters the DOM through textContent or setAttribute, never innerHTML.

/**
 * @typedef {{
 *   get(name: string): any,
 *   set(name: string, value: any): void,
 *   save_changes(): void,
 *   send(content: any): void,
 *   on(event: string, callback: (...args: any[]) => void): void,
 *   off(event?: string | null, callback?: ((...args: any[]) => void) | null): void,
 * }} Model
 * @typedef {{ id: number, process_index: number, platform: string, kind: string }} Device
 * @typedef {{ axis_names: string[], axis_sizes: number[], devices: Device[] }} MeshJson
 * @typedef {{ index: [number, number][], shape: number[], nbytes: number, devices: number[] }} TileJson
 */

const NONE = -1;
const PAYLOAD_VERSION = 1;
const SELECTED = "sv-selected";
/** The CSS property a device cell's group outline colour is set in. */
const RING = "--sv-x-ring";
const SVG_NS = "http://www.w3.org/2000/svg"; // the SVG namespace name, not a resource
const MAX_HOLDERS = 16;
const MAX_LEGEND = 16;
const STATUS_TEXT = { compiling: "compiling…", running: "running…", done: "done", error: "error" };
/** The `type` of the prefetch request and of the batches that answer it (see explorer.py). */
const PREFETCH = "prefetch";
const PREFETCHED = "prefetched";
const FORGET = "sv-x-forget";

// --------------------------------------------------------------------------------------------
// DOM helpers

/**
 * An HTML element with a class and optional text (set as textContent, never parsed).
 * @param {string} tag
 * @param {string} cls
 * @param {string} [text]
 * @returns {HTMLElement}
 */
function node(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/**
 * An SVG element with attributes (set with setAttribute) and optional text.
 * @param {string} tag
 * @param {Record<string, string | number>} [attrs]
 * @param {string} [text]
 * @returns {SVGElement}
 */
function svg(tag, attrs, text) {
  const e = /** @type {SVGElement} */ (document.createElementNS(SVG_NS, tag));
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/**
 * An SVG text at (x, y), anchored by `anchor` ("start", "middle" or "end").
 * @param {string} cls
 * @param {number} x
 * @param {number} y
 * @param {string} text
 * @param {string} [anchor]
 * @param {Record<string, string | number>} [attrs]
 * @returns {SVGElement}
 */
function label(cls, x, y, text, anchor = "start", attrs = {}) {
  const anchored = anchor === "start" ? {} : { "text-anchor": anchor };
  return svg("text", { class: cls, x, y, ...anchored, ...attrs }, text);
}

/**
 * Hover text for an SVG element: a <title> child.
 * @param {SVGElement} e
 * @param {string} text
 */
function tip(e, text) {
  e.appendChild(svg("title", {}, text));
}

/**
 * Parse a JSON state string; "" or invalid gives null.
 * @param {string} text
 * @returns {any}
 */
function parse(text) {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

// --------------------------------------------------------------------------------------------
// Words and numbers (the same spelling as the Python views)

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/**
 * Bytes for people: 512 B, 1.5 KiB, 64 MiB; exact adds (1,536 B).
 * @param {number} n
 * @param {boolean} [exact]
 * @returns {string}
 */
function formatBytes(n, exact) {
  let value = n;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${n} B`;
  let text = value.toFixed(1).replace(/\.0$/, "") + " " + UNITS[unit];
  if (exact) text += ` (${n.toLocaleString("en-US")} B)`;
  return text;
}

/**
 * Three significant digits without a trailing ".0": 1.23, 45.6, 789 (as the Python views).
 * @param {number} x
 */
function sig3(x) {
  const a = Math.abs(x);
  let text = a < 10 ? x.toFixed(2) : a < 100 ? x.toFixed(1) : x.toFixed(0);
  if (text.includes(".")) text = text.replace(/0+$/, "").replace(/\.$/, "");
  return text;
}

/**
 * A model-FLOPs utilisation: 42%, 0.5%, <0.1% (as the Python views).
 * @param {number} mfu
 */
function formatMfu(mfu) {
  if (mfu >= 0.1) return `${Math.round(mfu * 100)}%`;
  return mfu >= 0.001 ? `${(mfu * 100).toFixed(1)}%` : "<0.1%";
}

/**
 * Seconds for people: 1.23 s, 45.6 ms, 789 µs, 12 ns (as the Python views).
 * @param {number | null} s
 */
function formatSeconds(s) {
  if (s === null || s === undefined) return "unknown";
  const a = Math.abs(s);
  for (const [scale, unit] of /** @type {[number, string][]} */ ([[1, "s"], [1e-3, "ms"], [1e-6, "µs"]])) {
    if (a >= scale) return `${sig3(s / scale)} ${unit}`;
  }
  return a ? `${sig3(s / 1e-9)} ns` : "0 s";
}

/** @param {number[]} shape */
function formatShape(shape) {
  return shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
}

/** @param {string} dtype @param {number[]} shape */
function valueStr(dtype, shape) {
  return `${dtype}[${shape.join(", ")}]`;
}

/** @param {[number, number][]} index */
function formatIndex(index) {
  return "[" + index.map(([a, b]) => `${a}:${b}`).join(", ") + "]";
}

/** @param {string[]} axes */
function axesRepr(axes) {
  if (axes.length === 0) return "()";
  return "(" + axes.map((a) => `'${a}'`).join(", ") + (axes.length === 1 ? ",)" : ")");
}

/** @param {string} path */
function basename(path) {
  const parts = path.replace(/\\/g, "/").split("/");
  return parts[parts.length - 1];
}

/**
 * [0, 1, 2, 3, 8] -> ["d0-d3", "d8"]: runs of three or more merged.
 * @param {number[]} ids
 * @returns {string[]}
 */
function deviceRuns(ids) {
  const out = [];
  let i = 0;
  while (i < ids.length) {
    let j = i;
    while (j + 1 < ids.length && ids[j + 1] === ids[j] + 1) j += 1;
    if (j - i >= 2) out.push(`d${ids[i]}-d${ids[j]}`);
    else for (let k = i; k <= j; k++) out.push(`d${ids[k]}`);
    i = j + 1;
  }
  return out;
}

/**
 * Device ids in few characters: d0, d0-d3, d7,d3 or d0…d12 (4).
 * @param {number[]} ids
 * @returns {string}
 */
function devicesLabel(ids) {
  if (!ids.length) return "—";
  for (const order of [ids, ids.slice().sort((a, b) => a - b)]) {
    const pieces = deviceRuns(order);
    const text = pieces.join(",");
    if (pieces.length <= 3 && text.length <= 14) return text;
  }
  return `d${Math.min(...ids)}…d${Math.max(...ids)} (${ids.length})`;
}

/**
 * {d0,d4} or {d0-d7}, at most `cap` pieces.
 * @param {number[]} ids
 * @param {number} [cap]
 */
function idsStr(ids, cap = 8) {
  const pieces = deviceRuns(ids);
  if (pieces.length > cap) return "{" + pieces.slice(0, cap - 1).join(",") + ",… }";
  return "{" + pieces.join(",") + "}";
}

/** Approximate width of monospace text at 10-11px. @param {string} t @param {number} [size] */
function textWidth(t, size = 11) {
  return t.length * (size <= 10 ? 6.1 : 6.7);
}

/**
 * Where a side title for the rows goes: rotated beside the body when it fits, else above.
 * @param {string} title
 * @param {string[]} ticks
 * @param {number} bodyH
 * @returns {{ rotate: boolean, left: number }}
 */
function rowFrame(title, ticks, bodyH) {
  const tickW = Math.max(0, ...ticks.map((t) => textWidth(t, 10)));
  const titleW = textWidth(title);
  const rotate = titleW + 8 <= bodyH;
  return { rotate, left: rotate ? 20 + tickW + 6 : Math.max(tickW + 10, titleW + 14) };
}

/**
 * The row title: rotated and centred on the body, or "↓ title" at the top left.
 * @param {SVGElement} root
 * @param {string} title
 * @param {boolean} rotate
 * @param {number} cy
 */
function rowTitle(root, title, rotate, cy) {
  if (rotate) {
    root.appendChild(label("sv-x-axis", 12, cy, title, "middle", { transform: `rotate(-90 12 ${cy})` }));
  } else {
    root.appendChild(label("sv-x-axis", 4, 24, "↓ " + title));
  }
}

/** @param {number[]} sizes @param {number} start */
function offsets(sizes, start) {
  const out = [];
  let pos = start;
  for (const s of sizes) {
    out.push(pos);
    pos += s;
  }
  return out;
}

/** @param {number[]} xs */
function sum(xs) {
  return xs.reduce((a, b) => a + b, 0);
}

/**
 * A darker shade of a #rrggbb colour, for outlines.
 * @param {string} hex
 * @returns {string}
 */
function darker(hex) {
  const v = /^#([0-9a-f]{6})$/i.exec(hex || "");
  if (!v) return "#1b1f24";
  const n = parseInt(v[1], 16);
  const ch = [16, 8, 0].map((s) => Math.round(((n >> s) & 255) * 0.5));
  return "#" + ch.map((c) => c.toString(16).padStart(2, "0")).join("");
}

// --------------------------------------------------------------------------------------------
// What the payload means

/**
 * Derived lookups for one report payload, built once per payload.
 */
class Report {
  /** @param {any} p */
  constructor(p) {
    this.p = p;
    /** @type {MeshJson | null} */
    this.mesh = p.mesh;
    /** @type {Map<number, number[]>} device id -> mesh coordinate */
    this.coords = new Map();
    if (this.mesh) {
      const sizes = this.mesh.axis_sizes;
      this.mesh.devices.forEach((d, flat) => {
        const c = [];
        let f = flat;
        for (let a = sizes.length - 1; a >= 0; a--) {
          c.unshift(f % sizes[a]);
          f = Math.floor(f / sizes[a]);
        }
        this.coords.set(d.id, c);
      });
    }
    /** @type {Map<number, number>[]} per grouping: device id -> group number */
    this.groupOf = p.groupings.map((/** @type {number[][]} */ gs) => {
      const m = new Map();
      gs.forEach((g, k) => g.forEach((d) => m.set(d, k)));
      return m;
    });
    /** @type {Set<number>[]} per pairing: devices that send or receive */
    this.inPairs = p.pairings.map((/** @type {number[][]} */ ps) => new Set(ps.flat()));
    /** @type {Map<string, any>} */
    this.arrays = new Map(p.arrays.map((/** @type {any} */ a) => [a.id, a]));
  }

  /** @param {number} id */
  color(id) {
    return this.p.colors[String(id)] || "#eaeef2";
  }

  /** data=1, model=2 @param {number} id */
  coordLabel(id) {
    const c = this.coords.get(id);
    if (!this.mesh || !c) return "";
    return this.mesh.axis_names.map((n, i) => `${n}=${c[i]}`).join(", ");
  }

  /** Whether a device takes part in collective `c`. @param {any} c @param {number} id */
  involves(c, id) {
    if (c.groups !== null && this.groupOf[c.groups].has(id)) return true;
    return c.pairs !== null && this.inPairs[c.pairs].has(id);
  }

  /** A call chain: {location, short, chain, frames: [file, line, function][]} or null. @param {number | null} k */
  source(k) {
    if (k === null || k === undefined) return null;
    const frames = this.p.sources[k].map((/** @type {[number, number, string]} */ [f, line, fn]) => [
      this.p.files[f],
      line,
      fn,
    ]);
    const last = frames[frames.length - 1];
    return {
      frames,
      location: last ? `${last[0]}:${last[1]}` : "?",
      short: last ? `${basename(last[0])}:${last[1]}` : "?",
      chain: frames.map((/** @type {any[]} */ f) => f[2]).join(" > "),
    };
  }

  /** @param {string} kind @returns {[string, string]} */
  kindColors(kind) {
    return this.p.kind_colors[kind] || this.p.kind_colors[""];
  }

  /** @param {number} k */
  groupColor(k) {
    const cs = this.p.group_colors;
    return cs.length ? cs[k % cs.length] : "#9ecbff";
  }
}

// --------------------------------------------------------------------------------------------
// Header: title, strategy selector, status, error

/**
 * @param {Report} R
 * @param {{id: string, title: string, description: string, mesh: string}[]} strategies
 * @param {string} chosen
 */
function header(R, strategies, chosen) {
  const head = node("div", "sv-x-header");
  const title = node("div", "sv-x-title");
  title.append(node("span", "sv-x-fn", R.p.function), node("span", "sv-x-dim", ` · ${R.p.platform}`));
  head.appendChild(title);
  if (strategies.length) {
    const label = node("label", "sv-x-strategies", "strategy ");
    const pick = /** @type {HTMLSelectElement} */ (node("select", "sv-x-strategy"));
    for (const s of strategies) {
      const o = /** @type {HTMLOptionElement} */ (node("option", "", `${s.title} (${s.id})`));
      o.value = s.id;
      o.title = `${s.description} · ${s.mesh}`;
      pick.appendChild(o);
    }
    pick.value = chosen;
    label.appendChild(pick);
    head.appendChild(label);
  }
  head.appendChild(node("div", "sv-x-line", `${R.p.mesh_summary} · ${R.p.status_line}`));
  const e = R.p.estimate;
  if (e) {
    if (e.target_line) head.appendChild(node("div", "sv-x-line sv-x-target", e.target_line));
    const mfu = e.mfu === null ? "" : `, MFU ≤ ${formatMfu(e.mfu)}`;
    const est = node("div", "sv-x-estimate");
    est.dataset.bound = e.bound;
    est.append(
      node("span", "sv-x-estword", "estimate"),
      ` step ≥ ${formatSeconds(e.step_seconds)} on ${e.target} (${e.bound}-bound${mfu}) · ${e.fit_text} · `,
      node("span", "sv-x-dim", e.words),
    );
    const why = e.rows.map((/** @type {string[]} */ [, name, value, meaning]) => `${name} ${value}${meaning ? `: ${meaning}` : ""}`);
    const notes = e.notes.map((/** @type {string[]} */ [kind, text]) => `${kind}: ${text}`);
    est.title = [...why, ...notes].join("\n");
    head.appendChild(est);
  }
  if (R.p.notes.length) {
    const notes = node("div", "sv-x-notes");
    for (const n of R.p.notes) notes.appendChild(node("div", "", n));
    head.appendChild(notes);
  }
  return head;
}

// --------------------------------------------------------------------------------------------
// Mesh pane

/**
 * The device grid: the last mesh axis across, the others flattened down.
 * @param {Report} R
 * @returns {HTMLElement}
 */
function meshPane(R) {
  const pane = node("section", "sv-x-pane sv-x-meshpane");
  pane.appendChild(node("h4", "", "Mesh"));
  const mesh = R.mesh;
  if (!mesh) {
    pane.appendChild(node("div", "sv-x-dim", "no mesh (one device)"));
    return pane;
  }
  const names = mesh.axis_names;
  const sizes = mesh.axis_sizes;
  const nd = sizes.length;
  const ncols = nd === 0 ? 1 : sizes[nd - 1];
  const nrows = Math.max(1, mesh.devices.length / ncols);
  const cw = Math.max(12, Math.min(56, 760 / ncols));
  const ch = cw >= 40 ? 40 : Math.max(14, cw);
  const rowLabels = [];
  for (let r = 0; r < nrows; r++) {
    const c = R.coords.get(mesh.devices[r * ncols].id) || [];
    rowLabels.push(nd >= 2 ? c.slice(0, -1).join(",") : "");
  }
  const rowsTitle = names.slice(0, -1).map((n, i) => `${n} (${sizes[i]})`).join(" × ");
  const frame = rowFrame(rowsTitle, rowLabels, nrows * ch);
  const left = nd >= 2 ? frame.left : 4;
  const top = nd >= 1 ? (nd >= 2 && !frame.rotate ? 44 : 32) : 4;
  const width = left + ncols * cw + 4;
  const height = top + nrows * ch + 4;
  const root = svg("svg", { class: "sv-x-mesh", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  if (nd >= 1) {
    root.appendChild(
      label("sv-x-axis", left + (ncols * cw) / 2, 12, `${names[nd - 1]} (${ncols}) →`, "middle"),
    );
    const step = Math.max(1, Math.ceil(18 / cw));
    for (let c = 0; c < ncols; c += step) {
      root.appendChild(label("sv-x-tick", left + c * cw + cw / 2, top - 6, String(c), "middle"));
    }
  }
  if (nd >= 2) {
    rowTitle(root, rowsTitle, frame.rotate, top + (nrows * ch) / 2);
    const step = Math.max(1, Math.ceil(12 / ch));
    rowLabels.forEach((t, r) => {
      if (r % step === 0) {
        root.appendChild(
          label("sv-x-tick", left - 5, top + r * ch + ch / 2, t, "end", { "dominant-baseline": "central" }),
        );
      }
    });
  }
  mesh.devices.forEach((dev, flat) => {
    const x = left + (flat % ncols) * cw;
    const y = top + Math.floor(flat / ncols) * ch;
    const g = svg("g", {
      class: "sv-x-dev",
      "data-device": dev.id,
      role: "button",
      tabindex: 0,
      "aria-pressed": "false",
    });
    const where = R.coordLabel(dev.id);
    const kind = dev.kind !== dev.platform ? ` (${dev.kind})` : "";
    tip(g, `d${dev.id}${where ? " · " + where : ""}\nprocess ${dev.process_index} · ${dev.platform}${kind}`);
    const box = { x: x + 1, y: y + 1, width: cw - 2, height: ch - 2, rx: 2 };
    g.appendChild(svg("rect", { class: "sv-x-fill", ...box, fill: R.color(dev.id) }));
    g.appendChild(svg("rect", { class: "sv-x-ring", x: x + 1.5, y: y + 1.5, width: cw - 3, height: ch - 3, rx: 2 }));
    if (cw >= 24) {
      const twoLines = ch >= 34 && nd > 0;
      g.appendChild(label("sv-x-lbl", x + cw / 2, y + (twoLines ? 15 : ch / 2), `d${dev.id}`, "middle"));
      if (twoLines) {
        const c = R.coords.get(dev.id) || [];
        g.appendChild(label("sv-x-sub", x + cw / 2, y + 29, "(" + c.join(",") + ")", "middle"));
      }
    }
    root.appendChild(g);
  });
  root.appendChild(svg("g", { class: "sv-x-pairs" }));
  pane.appendChild(root);
  pane.appendChild(node("div", "sv-x-devline"));
  return pane;
}

/**
 * Centre of a device cell on the mesh, from its fill rect.
 * @param {Element} cell
 * @returns {[number, number]}
 */
function cellCentre(cell) {
  const r = /** @type {SVGRectElement} */ (cell.querySelector(".sv-x-fill"));
  const x = Number(r.getAttribute("x"));
  const y = Number(r.getAttribute("y"));
  return [x + Number(r.getAttribute("width")) / 2, y + Number(r.getAttribute("height")) / 2];
}

/**
 * A curved arrow between two cell centres, stopping short of each: neighbours get a shallow
 * bend, longer jumps a deeper one so they pass beside the cells in between.
 * @param {number} x1 @param {number} y1 @param {number} x2 @param {number} y2
 * @param {number} cell the cell size, what counts as a neighbour
 * @returns {[string, string]} the curve's and the head's path data
 */
function arrowPaths(x1, y1, x2, y2, cell) {
  const dist = Math.hypot(x2 - x1, y2 - y1) || 1;
  const ux = (x2 - x1) / dist;
  const uy = (y2 - y1) / dist;
  const bend = dist <= 1.5 * cell ? 0.22 * dist + 2 : 0.36 * dist;
  const cx = (x1 + x2) / 2 - uy * bend;
  const cy = (y1 + y2) / 2 + ux * bend;
  const toward = (/** @type {number} */ x, /** @type {number} */ y) => {
    const d = Math.hypot(cx - x, cy - y) || 1;
    return [x + ((cx - x) / d) * 7, y + ((cy - y) / d) * 7];
  };
  const [sx, sy] = toward(x1, y1);
  const [ex, ey] = toward(x2, y2);
  const td = Math.hypot(ex - cx, ey - cy) || 1;
  const tx = (ex - cx) / td;
  const ty = (ey - cy) / td;
  const bx = ex - tx * 6;
  const by = ey - ty * 6;
  const f = (/** @type {number} */ v) => v.toFixed(1);
  return [
    `M${f(sx)} ${f(sy)}Q${f(cx)} ${f(cy)} ${f(bx)} ${f(by)}`,
    `M${f(ex)} ${f(ey)}L${f(bx - ty * 3)} ${f(by + tx * 3)}L${f(bx + ty * 3)} ${f(by - tx * 3)}Z`,
  ];
}

/**
 * Arrows for a collective-permute's source -> target pairs.
 * @param {HTMLElement} root
 * @param {number[][]} pairs
 */
function drawPairs(root, pairs) {
  const layer = root.querySelector(".sv-x-pairs");
  if (!layer) return;
  layer.replaceChildren();
  const first = root.querySelector(".sv-x-dev .sv-x-fill");
  const cell = first ? Number(first.getAttribute("width")) + 2 : 40;
  /** @type {Map<number, Element>} */
  const cells = new Map();
  if (pairs.length) {
    for (const e of root.querySelectorAll(".sv-x-dev")) {
      cells.set(Number(/** @type {SVGElement} */ (e).dataset.device), e);
    }
  }
  for (const [a, b] of pairs) {
    const ca = cells.get(a);
    const cb = cells.get(b);
    if (!ca || !cb || a === b) continue;
    const [x1, y1] = cellCentre(ca);
    const [x2, y2] = cellCentre(cb);
    const [d, head] = arrowPaths(x1, y1, x2, y2, cell);
    layer.appendChild(svg("path", { class: "sv-x-arrow", "data-pair": `${a} ${b}`, d }));
    layer.appendChild(svg("path", { class: "sv-x-arrowhead", d: head }));
  }
}

// --------------------------------------------------------------------------------------------
// Arrays pane

/**
 * The picker: every argument leaf, output leaf and intermediate.
 * @param {Report} R
 * @returns {HTMLSelectElement}
 */
function arrayPicker(R) {
  const pick = /** @type {HTMLSelectElement} */ (node("select", "sv-x-pick"));
  pick.setAttribute("aria-label", "array");
  const groups = { argument: "arguments", output: "outputs", intermediate: "intermediates" };
  for (const [role, label] of Object.entries(groups)) {
    const items = R.p.arrays.filter((/** @type {any} */ a) => a.role === role);
    if (!items.length) continue;
    const og = /** @type {HTMLOptGroupElement} */ (node("optgroup", ""));
    og.label = `${label} (${items.length})`;
    for (const a of items) {
      const extra = a.op ? ` · ${a.op}` : "";
      const o = /** @type {HTMLOptionElement} */ (
        node("option", "", `${a.name} · ${a.value} · ${a.spec_str}${extra}${a.reshard ? " · reshard" : ""}`)
      );
      o.value = a.id;
      og.appendChild(o);
    }
    pick.appendChild(og);
  }
  return pick;
}

/**
 * One distinct tile as an SVG group: filled by its first holder, labelled, with hover text.
 * @param {Report} R
 * @param {any} A
 * @param {TileJson | undefined} t
 * @param {number} x @param {number} y @param {number} w @param {number} h
 */
function tileSvg(R, A, t, x, y, w, h) {
  if (!t) {
    const g = svg("g", { class: "sv-x-tile", "data-devices": "" });
    tip(g, `${A.name}: held by no device`);
    g.appendChild(svg("rect", { x, y, width: w, height: h, fill: "#ffffff", "stroke-dasharray": "2 2" }));
    return g;
  }
  const ids = t.devices;
  const g = svg("g", { class: "sv-x-tile", "data-devices": ids.join(" ") });
  const holders = ids.slice(0, MAX_HOLDERS).map((d) => `  d${d}` + (R.coordLabel(d) ? ` (${R.coordLabel(d)})` : ""));
  if (ids.length > MAX_HOLDERS) holders.push(`  … ${ids.length - MAX_HOLDERS} more`);
  tip(
    g,
    [
      `${A.name}${formatIndex(t.index)}`,
      `shard ${formatShape(t.shape)} · ${formatBytes(t.nbytes, true)}`,
      `held by ${ids.length} device${ids.length === 1 ? "" : "s"}:`,
      ...holders,
    ].join("\n"),
  );
  g.appendChild(svg("rect", { class: "sv-x-fill", x, y, width: w, height: h, fill: R.color(ids[0]) }));
  const inset = { x: x + 1.5, y: y + 1.5, width: Math.max(0, w - 3), height: Math.max(0, h - 3) };
  g.appendChild(svg("rect", { class: "sv-x-ring", ...inset }));
  let text = devicesLabel(ids);
  if (textWidth(text) > w - 4) text = ids.length > 1 ? `d${ids[0]}+${ids.length - 1}` : `d${ids[0]}`;
  if (textWidth(text) <= w - 4 && h >= 13) {
    g.appendChild(label("sv-x-lbl", x + w / 2, y + h / 2, text, "middle"));
  }
  return g;
}

/**
 * One small multiple of the picked array, with tick labels and elided bands.
 * @param {Report} R
 * @param {any} A
 * @param {{label: string, cells: number[][]}} panel
 */
function arrayPanel(R, A, panel) {
  const grid = A.grid;
  const rows = grid.rows;
  const cols = grid.cols;
  const rowTicks = rows.used ? rows.bands.map((/** @type {any[]} */ b) => b[2]) : [];
  const bodyW = sum(grid.col_sizes);
  const bodyH = sum(grid.row_sizes);
  const frame = rowFrame(rows.title, rowTicks, bodyH);
  const left = rows.used ? frame.left : 4;
  const top = cols.used ? (rows.used && !frame.rotate ? 44 : 32) : rows.used && !frame.rotate ? 30 : 4;
  const colX = offsets(grid.col_sizes, left);
  const rowY = offsets(grid.row_sizes, top);
  const width = left + bodyW + 4;
  const height = top + bodyH + 4;
  const root = svg("svg", { class: "sv-x-grid", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  if (cols.used) {
    root.appendChild(label("sv-x-axis", left + bodyW / 2, 12, cols.title + " →", "middle"));
    cols.bands.forEach((/** @type {any[]} */ b, i) => {
      const w = grid.col_sizes[i];
      if (!b[3] && textWidth(b[2], 10) <= w + 2) {
        root.appendChild(label("sv-x-tick", colX[i] + w / 2, top - 6, b[2], "middle"));
      }
    });
  }
  if (rows.used) {
    rowTitle(root, rows.title, frame.rotate, top + bodyH / 2);
    rows.bands.forEach((/** @type {any[]} */ b, i) => {
      const h = grid.row_sizes[i];
      if (!b[3] && h >= 10) {
        root.appendChild(
          label("sv-x-tick", left - 5, rowY[i] + h / 2, b[2], "end", { "dominant-baseline": "central" }),
        );
      }
    });
  }
  for (const [r, c, k] of panel.cells) {
    const tile = k >= 0 ? A.tiles[k] : undefined;
    root.appendChild(tileSvg(R, A, tile, colX[c], rowY[r], grid.col_sizes[c], grid.row_sizes[r]));
  }
  /**
   * A dashed band where intervals were elided.
   * @type {(x: number, y: number, w: number, h: number, text: string) => void}
   */
  const gap = (x, y, w, h, text) => {
    const g = svg("g", { class: "sv-x-elided" });
    tip(g, text);
    g.appendChild(svg("rect", { x, y, width: w, height: h }));
    g.appendChild(svg("text", { x: x + w / 2, y: y + h / 2 }, "…"));
    root.appendChild(g);
  };
  cols.bands.forEach((/** @type {any[]} */ b, i) => {
    if (!b[3]) return;
    const hidden = `${b[3]} more intervals of ${cols.title} not shown (${b[0]}:${b[1]})`;
    gap(colX[i] + 1, top, grid.col_sizes[i] - 2, bodyH, hidden);
  });
  rows.bands.forEach((/** @type {any[]} */ b, i) => {
    if (!b[3]) return;
    const hidden = `${b[3]} more intervals of ${rows.title} not shown (${b[0]}:${b[1]})`;
    gap(left, rowY[i] + 1, bodyW, grid.row_sizes[i] - 2, hidden);
  });
  const fig = node("figure", "sv-x-panel");
  if (panel.label) fig.appendChild(node("figcaption", "", panel.label));
  fig.appendChild(root);
  return fig;
}

/**
 * The picked array: its facts, then its tiles (or why there are none).
 * @param {Report} R
 * @param {any} A the array payload, or null
 * @param {string} wanted the selected array id
 * @returns {HTMLElement}
 */
function arrayView(R, A, wanted) {
  const wrap = node("div", "sv-x-array");
  if (!wanted) {
    wrap.appendChild(node("div", "sv-x-dim", "no array selected"));
    return wrap;
  }
  if (!A || A.id !== wanted) {
    wrap.appendChild(node("div", "sv-x-dim sv-x-loading", "computing tiles…"));
    return wrap;
  }
  const head = node("div", "sv-x-head");
  head.append(
    node("span", "sv-x-name", A.name),
    node("span", "sv-x-dim", ` · ${A.value} `),
    node("code", "sv-x-spec", A.spec_str),
  );
  if (A.facts) head.appendChild(node("span", "sv-x-kind", A.facts.kind));
  wrap.appendChild(head);
  const info = R.arrays.get(A.id);
  if (info && info.role === "intermediate") {
    const src = R.source(info.source);
    const line = `intermediate · ${info.op}` + (src ? ` · ${src.short} · ${src.chain}` : "");
    const e = node("div", "sv-x-facts", line);
    if (info.reshard) e.appendChild(node("span", "sv-x-pill sv-x-rs", "reshard"));
    wrap.appendChild(e);
  }
  if (A.message) {
    wrap.appendChild(node("div", "sv-x-message", A.message));
    return wrap;
  }
  const facts = `${A.facts.tiles} · shard ${formatShape(A.facts.shard_shape)} · ${A.facts.bytes}`;
  wrap.appendChild(node("div", "sv-x-facts", facts + (A.facts.computed ? " · tiles computed from the spec" : "")));
  wrap.appendChild(node("div", "sv-x-facts", A.grid.summary));
  const panels = node("div", "sv-x-panels");
  for (const p of A.grid.panels) {
    panels.appendChild(p.gap !== undefined ? node("div", "sv-x-gap", p.gap) : arrayPanel(R, A, p));
  }
  wrap.appendChild(panels);
  wrap.appendChild(node("div", "sv-x-tileline"));
  return wrap;
}

// --------------------------------------------------------------------------------------------
// Collectives pane

const LEDGER_HEAD = [
  "",
  "#",
  "kind",
  "axes",
  "operand → result",
  "in",
  "moved",
  "group",
  "origin",
  "source · call chain",
];

/**
 * The ledger: one row per collective, in program order.
 * @param {Report} R
 * @returns {HTMLElement}
 */
function ledger(R) {
  const cs = R.p.collectives;
  const wrap = node("div", "sv-x-ledgerwrap");
  if (!cs.length) {
    wrap.appendChild(node("div", "sv-x-dim", "no collectives: every device computes on its own data"));
    return wrap;
  }
  const table = node("table", "sv-x-ledger");
  const tr = node("tr", "");
  LEDGER_HEAD.forEach((h, i) => tr.appendChild(node("th", i === 1 || (i >= 5 && i <= 7) ? "sv-x-r" : "", h)));
  const est = R.p.estimate !== null && R.p.estimate !== undefined;
  if (est) {
    const th = node("th", "sv-x-r sv-x-est", "est.");
    th.title = `estimated seconds on ${R.p.estimate.target}: ${R.p.estimate.words}`;
    tr.insertBefore(th, tr.children[7]);
  }
  const thead = node("thead", "");
  thead.appendChild(tr);
  const body = node("tbody", "");
  for (const c of cs) {
    const row = node("tr", "sv-x-coll");
    row.dataset.index = String(c.index);
    row.dataset.kind = c.kind;
    row.setAttribute("role", "button");
    row.setAttribute("tabindex", "0");
    const [fg, bg] = R.kindColors(c.kind);
    const kind = node("span", "sv-x-pill", c.kind);
    kind.style.color = fg;
    kind.style.background = bg;
    const changes = c.out_shape.join() !== c.in_shape.join() || c.out_dtype !== c.in_dtype;
    const operand = valueStr(c.in_dtype, c.in_shape) + (changes ? " → " + valueStr(c.out_dtype, c.out_shape) : "");
    const src = R.source(c.source);
    const cells = [
      node("td", "sv-x-mark"),
      node("td", "sv-x-r", String(c.index + 1)),
      node("td", ""),
      node("td", "", c.axes.length ? c.axes.join(", ") : "(no mesh axis)"),
      node("td", "sv-x-mono", operand),
      node("td", "sv-x-r", formatBytes(c.in_bytes)),
      node("td", "sv-x-r", formatBytes(c.moved_bytes)),
      node("td", "sv-x-r", String(c.group_size)),
      node("td", c.user_written ? "sv-x-user" : "sv-x-dim", c.user_written ? "user" : "partitioner"),
      node("td", "sv-x-src"),
    ];
    cells[2].appendChild(kind);
    cells[5].title = `${c.in_bytes.toLocaleString("en-US")} B in, ${c.out_bytes.toLocaleString("en-US")} B out`;
    cells[6].title = `${c.moved_bytes.toLocaleString("en-US")} B moved per device (ring model)`;
    if (src) {
      const code = node("code", "", src.short);
      code.title = src.location;
      const chain = node("span", "sv-x-chain", src.chain);
      chain.title = src.chain;
      cells[9].append(code, chain);
    } else {
      cells[9].appendChild(node("span", "sv-x-dim", "?"));
    }
    if (est) {
      const s = c.estimated_seconds;
      const cell = node("td", s === null ? "sv-x-r sv-x-dim" : "sv-x-r sv-x-est", s === null ? "—" : formatSeconds(s));
      if (s !== null) {
        cell.dataset.seconds = String(s);
        cell.title = `estimated (${R.p.estimate.words}): ${c.estimate_formula}`;
      }
      cells.splice(7, 0, cell);
    }
    row.append(...cells);
    body.appendChild(row);
  }
  table.append(thead, body);
  wrap.appendChild(table);
  return wrap;
}

/**
 * The selected collective: what it moves, its groups, where it came from, what caused it.
 * @param {Report} R
 * @param {number} k
 * @returns {HTMLElement}
 */
function details(R, k) {
  const box = node("div", "sv-x-details");
  const c = R.p.collectives[k];
  if (!c) {
    const hint =
      "Click a collective to see its device groups on the mesh, its source line and the reshard that caused it.";
    box.appendChild(node("div", "sv-x-dim", hint));
    return box;
  }
  box.dataset.index = String(k);
  box.appendChild(node("div", "sv-x-dtitle", `#${k + 1} ${c.kind} over ${axesRepr(c.axes)} · ${c.name}`));
  const dl = node("dl", "sv-x-dl");
  /** @param {string} term @param {string | HTMLElement} value @param {string} [cls] */
  const add = (term, value, cls) => {
    const dd = node("dd", cls || "");
    if (typeof value === "string") dd.textContent = value;
    else dd.appendChild(value);
    dl.append(node("dt", "", term), dd);
  };
  add("operand", `${valueStr(c.in_dtype, c.in_shape)} → ${valueStr(c.out_dtype, c.out_shape)}`);
  const inOut = `${formatBytes(c.in_bytes, true)} in · ${formatBytes(c.out_bytes, true)} out`;
  add("bytes", `${inOut} · ${formatBytes(c.moved_bytes, true)} moved per device`);
  if (c.estimated_seconds !== null && c.estimated_seconds !== undefined && R.p.estimate) {
    const est = node("span", "sv-x-est");
    est.append(`${formatSeconds(c.estimated_seconds)} on ${R.p.estimate.target} `, node("span", "sv-x-dim", `(${R.p.estimate.words})`));
    if (c.estimate_formula) est.append(node("div", "sv-x-mono sv-x-dim", c.estimate_formula));
    add("estimated", est);
  }
  add("origin", c.user_written ? "written by the user (e.g. in shard_map)" : "inserted by the partitioner");
  if (c.op_name) add("op", c.op_name, "sv-x-mono");

  const src = R.source(c.source);
  if (src) {
    add("source", src.location, "sv-x-mono sv-x-source");
    const list = node("ul", "sv-x-frames");
    for (const [file, line, fn] of src.frames) {
      const li = node("li", "");
      li.append(node("span", "sv-x-fnname", fn), node("span", "sv-x-dim", " at "), node("span", "", `${file}:${line}`));
      list.appendChild(li);
    }
    add("call chain", list);
  } else {
    add("source", "unknown", "sv-x-source");
  }

  const rs = node("span", "sv-x-reshard");
  if (c.reshard) {
    rs.append("resharding ", node("code", "", c.reshard));
    const info = c.reshard_array ? R.arrays.get(c.reshard_array) : null;
    if (info) {
      rs.append(node("span", "sv-x-dim", ` · ${info.value} ${info.spec_str} `));
      const go = node("button", "sv-x-goto", "show its tiles");
      go.dataset.array = info.id;
      go.setAttribute("type", "button");
      rs.appendChild(go);
    } else {
      rs.append(node("span", "sv-x-dim", " (not among the recorded intermediates)"));
    }
  } else {
    rs.append(node("span", "sv-x-dim", "no reshard recorded"));
  }
  add("caused by", rs);

  const legend = node("div", "sv-x-legend");
  if (c.groups !== null) {
    const gs = R.p.groupings[c.groups];
    gs.slice(0, MAX_LEGEND).forEach((/** @type {number[]} */ g, i) => {
      const item = node("span", "sv-x-legitem");
      item.dataset.group = String(i);
      const sw = node("span", "sv-x-sw");
      sw.style.background = R.groupColor(i);
      sw.style.borderColor = darker(R.groupColor(i));
      item.append(sw, idsStr(g));
      legend.appendChild(item);
    });
    if (gs.length > MAX_LEGEND) {
      legend.appendChild(node("span", "sv-x-dim", `… ${gs.length - MAX_LEGEND} more groups`));
    }
    add("groups", `${gs.length} group${gs.length === 1 ? "" : "s"} of ${c.group_size}`);
  } else if (c.pairs !== null) {
    const ps = R.p.pairings[c.pairs];
    const shown = ps.slice(0, MAX_LEGEND).map((/** @type {number[]} */ [a, b]) => `d${a}→d${b}`);
    const more = ps.length > MAX_LEGEND ? ` … ${ps.length - MAX_LEGEND} more` : "";
    legend.appendChild(node("span", "sv-x-mono", shown.join(" ") + more));
    add("pairs", `${ps.length} source → target pair${ps.length === 1 ? "" : "s"}`);
  } else {
    add("groups", "no replica groups");
  }
  box.append(dl, legend);
  return box;
}

// --------------------------------------------------------------------------------------------
// Memory pane

const MEM_H = 110;
/** The HBM line joins the memory scale when at most this many times the tallest bar. */
const HBM_SCALE = 4;

/**
 * Per-device bars stacked by part, with the peak as a dashed line.
 * @param {Report} R
 * @returns {HTMLElement}
 */
function memoryPane(R) {
  const m = R.p.memory;
  const pane = node("section", "sv-x-pane sv-x-mempane");
  pane.appendChild(node("h4", "", "Memory per device"));
  const totals = m.bytes.map((/** @type {number[]} */ b) => sum(b));
  const tallest = Math.max(1, m.peak_bytes, ...totals);
  const e = R.p.estimate;
  // The target's HBM joins the scale when near the bars (as in the comparison's charts).
  const hbmOnScale = !!e && e.hbm_bytes > 0 && e.hbm_bytes <= HBM_SCALE * tallest;
  const topBytes = hbmOnScale ? Math.max(tallest, e.hbm_bytes) : tallest;
  const n = m.devices.length;
  const bw = Math.max(1, Math.min(26, 640 / Math.max(1, n)));
  const gap = bw >= 4 ? 1 : 0;
  const left = textWidth(formatBytes(topBytes), 10) + 8;
  const width = left + bw * n + 6;
  const height = MEM_H + 30;
  const root = svg("svg", { class: "sv-x-membars", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  const yOf = (/** @type {number} */ v) => 4 + MEM_H - (MEM_H * v) / topBytes;
  root.appendChild(label("sv-x-tick", left - 4, 10, formatBytes(topBytes), "end"));
  root.appendChild(label("sv-x-tick", left - 4, MEM_H + 4, "0", "end"));
  root.appendChild(svg("path", { d: `M${left} ${MEM_H + 4}h${bw * n}`, stroke: "#afb8c1" }));
  m.devices.forEach((/** @type {number} */ d, i) => {
    const g = svg("g", { class: "sv-x-mem", "data-device": d });
    const parts = m.bytes[i];
    const lines = m.parts.map((/** @type {string} */ p, j) => `${p} ${formatBytes(parts[j], true)}`);
    tip(g, `d${d}: ${formatBytes(totals[i], true)}\n${lines.join("\n")}`);
    let acc = 0;
    const x = left + i * bw;
    g.appendChild(svg("rect", { class: "sv-x-memhit", x, y: 4, width: bw, height: MEM_H }));
    m.parts.forEach((/** @type {string} */ p, j) => {
      const v = parts[j];
      if (v <= 0) return;
      const y0 = yOf(acc);
      const y1 = yOf(acc + v);
      const box = { x, y: y1, width: Math.max(0.5, bw - gap), height: y0 - y1 };
      g.appendChild(svg("rect", { class: "sv-x-seg", "data-part": p, "data-bytes": v, ...box, fill: m.colors[j] }));
      acc += v;
    });
    root.appendChild(g);
  });
  const py = yOf(m.peak_bytes);
  root.appendChild(svg("path", { class: "sv-x-peak", d: `M${left} ${py}h${bw * n}` }));
  if (hbmOnScale) {
    const hy = yOf(e.hbm_bytes);
    const line = svg("path", { class: "sv-x-hbm", "data-hbm": e.hbm_bytes, d: `M${left} ${hy}h${bw * n}` });
    tip(line, `HBM per device on ${e.target}: ${formatBytes(e.hbm_bytes, true)} (estimate)`);
    root.appendChild(line);
  }
  root.appendChild(svg("path", { class: "sv-x-memmark", d: "" }));
  if (n <= 32 && bw >= 12) {
    m.devices.forEach((/** @type {number} */ d, i) => {
      root.appendChild(label("sv-x-tick", left + i * bw + bw / 2, MEM_H + 16, String(d), "middle"));
    });
  } else if (n) {
    root.appendChild(label("sv-x-tick", left, MEM_H + 16, `d${m.devices[0]}`));
    root.appendChild(label("sv-x-tick", left + bw * n, MEM_H + 16, `d${m.devices[n - 1]}`, "end"));
  }
  root.appendChild(label("sv-x-axis", left + (bw * n) / 2, MEM_H + 28, "device", "middle"));
  pane.appendChild(root);

  const legend = node("div", "sv-x-legend");
  m.parts.forEach((/** @type {string} */ p, j) => {
    const item = node("span", "sv-x-legitem");
    const sw = node("span", "sv-x-sw");
    sw.style.background = m.colors[j];
    item.append(sw, p);
    legend.appendChild(item);
  });
  const peak = node("span", "sv-x-legitem");
  peak.append(node("span", "sv-x-sw sv-x-sw-peak"), `peak ${formatBytes(m.peak_bytes)} = ${m.peak_definition}`);
  legend.appendChild(peak);
  if (hbmOnScale) {
    const hbm = node("span", "sv-x-legitem");
    hbm.append(node("span", "sv-x-sw sv-x-sw-hbm"), `HBM ${formatBytes(e.hbm_bytes)} per device on the target`);
    legend.appendChild(hbm);
  }
  pane.appendChild(legend);
  const notes = [];
  if (m.alias_bytes) {
    notes.push(`output shown without the ${formatBytes(m.alias_bytes)} aliased to arguments (written in place)`);
  }
  const args = m.from_leaves[0] ? "arguments from the leaves each device holds" : "arguments: the compiler's figure";
  notes.push(`${args}; temp is the compiler's figure, the same on every device`);
  pane.appendChild(node("div", "sv-x-note", notes.join(" · ")));
  if (e) {
    const line = node("div", "sv-x-hbmline");
    if (e.fits !== null) line.dataset.fits = e.fits ? "1" : "0";
    const word = e.fits === false ? "sv-x-bad" : "sv-x-ok";
    const where = hbmOnScale ? "the blue dash-dot line" : "far above these bars";
    line.append(
      node("span", "sv-x-estword", "estimate"),
      ` HBM on ${e.target}: `,
      node("span", e.fits === null ? "" : word, e.hbm_text),
      node("span", "sv-x-dim", ` (${where}; ${e.words})`),
    );
    pane.appendChild(line);
  }
  pane.appendChild(node("div", "sv-x-memline"));
  return pane;
}

// --------------------------------------------------------------------------------------------
// The widget

export default {
  /**
   * Draw the explorer into `el`; returns the cleanup anywidget calls when the view goes away.
   * @param {{ model: Model, el: HTMLElement }} ctx
   * @returns {() => void}
   */
  render({ model, el }) {
    const root = node("div", "sv-x-root");
    el.replaceChildren(root);
    /** @type {Report | null} */
    let R = null;

    const get = (/** @type {string} */ k) => model.get(k);
    const selDevice = () => Number(get("selected_device"));
    const selCollective = () => Number(get("selected_collective"));
    const generation = () => Number(get("generation") || 0);

    // --- arrays kept for the current generation: id -> the JSON text `array` would carry
    /** @type {Map<string, string>} */
    let kept = new Map();
    let keptGeneration = generation();
    /** The `array` text last put in `kept` (each text is parsed once). */
    let keptTrait = "";
    /** The JSON text drawn in the array pane: null while "computing tiles…", undefined if none. */
    let drawnText = /** @type {string | null | undefined} */ (undefined);
    /** The drawn array, parsed (null while loading or for no array). */
    let drawnArray = /** @type {any} */ (null);

    /** Tell Python. @param {string} k @param {any} v */
    function send(k, v) {
      model.set(k, v);
      model.save_changes();
    }

    // --- status and error: always present, even without a payload
    const statusBar = node("div", "sv-x-statusbar");
    const status = node("span", "sv-x-status");
    status.setAttribute("role", "status");
    const errorBox = node("div", "sv-x-error");
    errorBox.setAttribute("role", "alert");
    statusBar.append(status);
    const headSlot = node("div", "sv-x-headslot");
    const body = node("div", "sv-x-body");
    root.append(headSlot, statusBar, errorBox, body);

    function drawStatus() {
      const s = String(get("status") || "");
      status.dataset.status = s;
      status.textContent = STATUS_TEXT[/** @type {keyof STATUS_TEXT} */ (s)] || "";
      status.hidden = !s;
      const err = String(get("error") || "");
      errorBox.textContent = err;
      errorBox.hidden = !err;
    }

    function drawHeader() {
      headSlot.replaceChildren();
      if (R) headSlot.appendChild(header(R, get("strategies") || [], String(get("selected_strategy") || "")));
    }

    /**
     * The kept arrays, emptied first when the report has changed since they were kept, with
     * the `array` trait's JSON added.
     * @returns {Map<string, string>}
     */
    function arrays() {
      if (keptGeneration !== generation()) {
        kept = new Map();
        keptGeneration = generation();
        keptTrait = "";
      }
      const text = String(get("array") || "");
      if (text && text !== keptTrait) {
        keptTrait = text;
        const A = parse(text);
        if (A && typeof A.id === "string") kept.set(A.id, text);
      }
      return kept;
    }

    /**
     * Draw the picked array: from the kept arrays at once, else "computing tiles…" until
     * Python's `array` arrives. The same JSON text as the one drawn is not drawn again.
     */
    function drawArray() {
      const slot = root.querySelector(".sv-x-arrayslot");
      if (!slot || !R) return;
      const picker = /** @type {HTMLSelectElement | null} */ (root.querySelector(".sv-x-pick"));
      const wanted = String(get("selected_array") || "");
      if (picker) picker.value = wanted;
      const text = wanted ? (arrays().get(wanted) ?? null) : "";
      if (text !== null && text === drawnText) return;
      drawnText = text;
      drawnArray = text ? parse(text) : null;
      slot.replaceChildren(arrayView(R, drawnArray, wanted));
      highlightTiles(selDevice());
    }

    /** Ask Python for the arrays of the current generation (it answers with PREFETCHED). */
    function requestPrefetch() {
      if (!R || typeof model.send !== "function") return;
      root.dataset.prefetch = "pending";
      model.send({ type: PREFETCH, generation: generation() });
    }

    /** A new report: drop the arrays kept for the old one and ask for the new one's. */
    function onGeneration() {
      arrays();
      requestPrefetch();
    }

    /**
     * A custom message from Python: a batch of prefetched arrays, kept if it belongs to the
     * current generation (a stale one is dropped).
     * @param {any} msg
     */
    function onMessage(msg) {
      if (!msg || msg.type !== PREFETCHED || msg.generation !== generation()) return;
      const into = arrays();
      for (const pair of msg.arrays || []) {
        if (Array.isArray(pair) && typeof pair[0] === "string" && typeof pair[1] === "string") {
          into.set(pair[0], pair[1]);
        }
      }
      if (msg.done) root.dataset.prefetch = "done";
      if (drawnText === null) drawArray(); // "computing tiles…": the answer may be here now
    }

    /** Drop one kept array (detail: its id) or all of them. @param {Event} ev */
    function onForget(ev) {
      const id = /** @type {CustomEvent} */ (ev).detail;
      if (typeof id === "string") arrays().delete(id);
      else arrays().clear();
    }

    function drawAll() {
      body.replaceChildren();
      drawnText = undefined;
      const p = parse(get("payload"));
      R = null;
      if (!p) {
        body.appendChild(node("div", "sv-x-dim", "nothing to show yet"));
        drawHeader();
        return;
      }
      if (p.version !== PAYLOAD_VERSION) {
        const why = `this front end reads payload version ${PAYLOAD_VERSION}, got ${p.version}`;
        body.appendChild(node("div", "sv-x-message", why));
        drawHeader();
        return;
      }
      R = new Report(p);
      drawHeader();
      const top = node("div", "sv-x-row");
      const arrays = node("section", "sv-x-pane sv-x-arraypane");
      arrays.append(node("h4", "", "Arrays"), arrayPicker(R), node("div", "sv-x-arrayslot"));
      top.append(meshPane(R), arrays);
      const colls = node("section", "sv-x-pane sv-x-collpane");
      const n = p.collectives.length;
      colls.append(
        node("h4", "", `Collectives · ${n} in the compiled program`),
        ledger(R),
        node("div", "sv-x-detailslot"),
      );
      body.append(top, colls, memoryPane(R));
      drawArray();
      highlight();
    }

    /** Every link between the panes, from the current selections. */
    function highlight() {
      if (!R) return;
      const dev = selDevice();
      const k = selCollective();
      const c = k >= 0 ? R.p.collectives[k] : null;

      // mesh: the selected device, and the selected collective's groups or pairs
      const groupOf = c && c.groups !== null ? R.groupOf[c.groups] : null;
      const paired = c && c.pairs !== null ? R.inPairs[c.pairs] : null;
      for (const cell of root.querySelectorAll(".sv-x-dev")) {
        const e = /** @type {SVGElement} */ (cell);
        const id = Number(e.dataset.device);
        const on = id === dev;
        e.classList.toggle(SELECTED, on);
        e.setAttribute("aria-pressed", on ? "true" : "false");
        const fill = /** @type {SVGElement} */ (e.querySelector(".sv-x-fill"));
        const g = groupOf ? groupOf.get(id) : undefined;
        delete e.dataset.group;
        e.classList.remove("sv-x-out", "sv-x-ingroup");
        fill.setAttribute("fill", R.color(id));
        e.style.removeProperty(RING);
        if (groupOf || paired) {
          if (g !== undefined) {
            e.dataset.group = String(g);
            e.classList.add("sv-x-ingroup");
            fill.setAttribute("fill", R.groupColor(g));
            e.style.setProperty(RING, darker(R.groupColor(g)));
          } else if (paired && paired.has(id)) {
            e.classList.add("sv-x-ingroup");
            fill.setAttribute("fill", R.kindColors(c.kind)[1]);
            e.style.setProperty(RING, R.kindColors(c.kind)[0]);
          } else {
            e.classList.add("sv-x-out");
          }
        }
      }
      drawPairs(root, paired && c ? R.p.pairings[c.pairs] : []);

      // arrays: the tiles the device holds
      highlightTiles(dev);
      // ledger: the selected row, and the rows the device takes part in
      let involved = 0;
      for (const row of root.querySelectorAll(".sv-x-coll")) {
        const e = /** @type {HTMLElement} */ (row);
        const i = Number(e.dataset.index);
        e.classList.toggle(SELECTED, i === k);
        e.setAttribute("aria-pressed", i === k ? "true" : "false");
        const inv = dev !== NONE && R.involves(R.p.collectives[i], dev);
        if (inv) involved += 1;
        e.classList.toggle("sv-x-involved", inv);
        const mark = e.querySelector(".sv-x-mark");
        if (mark) mark.textContent = inv ? "●" : "";
      }
      // memory: the device's bar
      let markPath = "";
      for (const bar of root.querySelectorAll(".sv-x-mem")) {
        const on = Number(/** @type {SVGElement} */ (bar).dataset.device) === dev;
        bar.classList.toggle(SELECTED, on);
        if (on) {
          const hit = /** @type {SVGRectElement} */ (bar.querySelector(".sv-x-memhit"));
          const x = Number(hit.getAttribute("x")) + Number(hit.getAttribute("width")) / 2;
          markPath = `M${x} ${MEM_H + 5}l-4 6h8z`;
        }
      }
      const mark = root.querySelector(".sv-x-memmark");
      if (mark) mark.setAttribute("d", markPath);

      // details box and the one-line readouts
      const slot = root.querySelector(".sv-x-detailslot");
      if (slot) slot.replaceChildren(details(R, k));
      readouts(dev, involved);
    }

    /**
     * The picked array's side of the links only: the tiles `dev` holds and the readout of its
     * tile. A new array redraws only this pane, so only this pane is updated (at 512 devices the
     * whole of highlight() costs a few ms and a restyle of every pane).
     * @param {number} dev
     */
    function highlightTiles(dev) {
      for (const tile of root.querySelectorAll(".sv-x-tile")) {
        const ids = (/** @type {SVGElement} */ (tile).dataset.devices || "").split(" ");
        tile.classList.toggle(SELECTED, dev !== NONE && ids.includes(String(dev)));
      }
      tileReadout(dev);
    }

    /** @param {number} dev */
    function tileReadout(dev) {
      const tileline = root.querySelector(".sv-x-tileline");
      const A = drawnArray;
      if (tileline && A && A.tiles) {
        const t = A.tiles.find((/** @type {TileJson} */ t) => t.devices.includes(dev));
        tileline.textContent =
          dev === NONE
            ? ""
            : t
              ? `d${dev} holds ${A.name}${formatIndex(t.index)}: ` +
                `shard ${formatShape(t.shape)}, ${formatBytes(t.nbytes, true)}`
              : `d${dev} holds no part of ${A.name}`;
      }
    }

    /** @param {number} dev @param {number} involved */
    function readouts(dev, involved) {
      if (!R) return;
      const devline = root.querySelector(".sv-x-devline");
      const memline = root.querySelector(".sv-x-memline");
      const none = dev === NONE;
      if (devline) {
        const where = R.coordLabel(dev);
        devline.textContent = none
          ? "Click a device to see its tiles, its memory and its collectives."
          : `d${dev}${where ? ` (${where})` : ""} takes part in ${involved} of ${R.p.collectives.length} collectives`;
      }
      if (memline) {
        const m = R.p.memory;
        const i = m.devices.indexOf(dev);
        const parts = i < 0 ? [] : m.parts.map((/** @type {string} */ p, j) => `${p} ${formatBytes(m.bytes[i][j])}`);
        memline.textContent =
          none || i < 0 ? "" : `d${dev}: ${parts.join(" · ")} · total ${formatBytes(sum(m.bytes[i]))}`;
      }
    }

    /** @param {number} id */
    function pickDevice(id) {
      send("selected_device", selDevice() === id ? NONE : id); // its change event highlights
    }

    /** @param {number} i */
    function pickCollective(i) {
      send("selected_collective", selCollective() === i ? NONE : i); // its change event highlights
    }

    /** @param {string} id */
    function pickArray(id) {
      // Its change event draws the array if it is kept, else "computing tiles…" until Python
      // answers; either way Python hears of the pick and sends the `array` trait.
      send("selected_array", id);
    }

    /**
     * What a click or key press on `target` selects, if anything.
     * @param {EventTarget | null} target
     * @returns {(() => void) | null}
     */
    function actionFor(target) {
      const t = /** @type {Element} */ (target);
      if (!t || !t.closest) return null;
      const goto = /** @type {HTMLElement | null} */ (t.closest(".sv-x-goto"));
      if (goto && root.contains(goto)) return () => pickArray(goto.dataset.array || "");
      const dev = /** @type {HTMLElement | null} */ (t.closest(".sv-x-dev, .sv-x-mem"));
      if (dev && root.contains(dev)) return () => pickDevice(Number(dev.dataset.device));
      const row = /** @type {HTMLElement | null} */ (t.closest(".sv-x-coll"));
      if (row && root.contains(row)) return () => pickCollective(Number(row.dataset.index));
      return null;
    }

    /** @param {Event} ev */
    function onClick(ev) {
      const act = actionFor(ev.target);
      if (act) act();
    }

    /** @param {KeyboardEvent} ev */
    function onKey(ev) {
      if (ev.key !== "Enter" && ev.key !== " ") return;
      const t = /** @type {Element} */ (ev.target);
      if (t.tagName === "SELECT" || t.tagName === "BUTTON") return;
      const act = actionFor(ev.target);
      if (act) {
        ev.preventDefault();
        act();
      }
    }

    /** @param {Event} ev */
    function onChange(ev) {
      const t = /** @type {HTMLSelectElement} */ (ev.target);
      if (t.classList.contains("sv-x-pick")) pickArray(t.value);
      else if (t.classList.contains("sv-x-strategy")) send("selected_strategy", t.value);
    }

    const handlers = /** @type {[string, (...args: any[]) => void][]} */ ([
      ["change:payload", drawAll],
      ["change:generation", onGeneration],
      ["msg:custom", onMessage],
      ["change:array", drawArray],
      ["change:selected_array", drawArray],
      ["change:selected_device", highlight],
      ["change:selected_collective", highlight],
      ["change:strategies", drawHeader],
      ["change:selected_strategy", drawHeader],
      ["change:status", drawStatus],
      ["change:error", drawStatus],
    ]);
    root.addEventListener("click", onClick);
    root.addEventListener("keydown", onKey);
    root.addEventListener("change", onChange);
    root.addEventListener(FORGET, onForget);
    for (const [e, f] of handlers) model.on(e, f);
    drawStatus();
    drawAll();
    requestPrefetch();

    return () => {
      root.removeEventListener("click", onClick);
      root.removeEventListener("keydown", onKey);
      root.removeEventListener("change", onChange);
      root.removeEventListener(FORGET, onForget);
      for (const [e, f] of handlers) model.off(e, f);
    };
  },
};
