// shardviz MeshView: a plain ES module for anywidget (no bundler, no imports, works offline).
//
// Synced state (see shardviz/widgets/mesh_view.py):
//   mesh            MeshLayout.to_json()
//   array           ArrayLayout.to_json() or ""
//   selected_device device id, -1 for none
//   colors          {"<device id>": "#rrggbb"}
//
// Every model string enters the DOM through textContent or an attribute set with
// setAttribute, never through innerHTML.

/**
 * @typedef {{ id: number, process_index: number, platform: string, kind: string }} Device
 * @typedef {{ axis_names: string[], axis_sizes: number[], devices: Device[] }} MeshJson
 * @typedef {{ device_id: number, index: [number, number][], shape: number[],
 *             nbytes: number, replica_id: number }} TileJson
 * @typedef {{ name: string, shape: number[], dtype: string, spec: string[][] | null,
 *             mesh: MeshJson, tiles: TileJson[] }} ArrayJson
 * @typedef {{
 *   get(name: string): any,
 *   set(name: string, value: any): void,
 *   save_changes(): void,
 *   on(event: string, callback: () => void): void,
 *   off(event?: string | null, callback?: (() => void) | null): void,
 * }} Model
 */

const NO_DEVICE = -1;
const SELECTED = "sv-selected";

/**
 * An element with a class and optional text (set as textContent, never parsed).
 * @param {string} tag
 * @param {string} cls
 * @param {string} [text]
 * @returns {HTMLElement}
 */
function node(tag, cls, text) {
  const e = document.createElement(tag);
  e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
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

/**
 * Mesh coordinate of the device at a row-major flat position.
 * @param {number} flat
 * @param {number[]} sizes
 * @returns {number[]}
 */
function coordsOf(flat, sizes) {
  const out = [];
  for (let a = sizes.length - 1; a >= 0; a--) {
    out.unshift(flat % sizes[a]);
    flat = Math.floor(flat / sizes[a]);
  }
  return out;
}

/**
 * An index slice in numpy's spelling: [0:4, 4:8].
 * @param {[number, number][]} index
 * @returns {string}
 */
function formatIndex(index) {
  return "[" + index.map(([a, b]) => `${a}:${b}`).join(", ") + "]";
}

/**
 * A partition spec in jax's spelling.
 * @param {string[][] | null} spec
 * @returns {string}
 */
function formatSpec(spec) {
  if (!spec) return "(not a named sharding)";
  const parts = spec.map((e) =>
    e.length === 0 ? "None" : e.length === 1 ? `'${e[0]}'` : "(" + e.map((a) => `'${a}'`).join(", ") + ")",
  );
  return parts.length === 1 ? `P(${parts[0]},)` : `P(${parts.join(", ")})`;
}

/**
 * The mesh as a grid: the last axis along the columns, all others flattened down the rows.
 * @param {MeshJson} mesh
 * @param {Record<string, string>} colors
 * @returns {HTMLElement}
 */
function meshGrid(mesh, colors) {
  const names = mesh.axis_names;
  const sizes = mesh.axis_sizes;
  const nd = sizes.length;
  const ncols = nd === 0 ? 1 : sizes[nd - 1];
  const nrows = Math.max(1, mesh.devices.length / ncols);
  const rowNames = names.slice(0, Math.max(0, nd - 1));

  const wrap = node("div", "sv-w-mesh");
  const colTitle = node("div", "sv-w-axis sv-w-axis-cols", nd > 0 ? `${names[nd - 1]} (${ncols})` : "");
  const rowTitle = node(
    "div",
    "sv-w-axis sv-w-axis-rows",
    rowNames.map((n, i) => `${n} (${sizes[i]})`).join(" × "),
  );
  const grid = node("div", "sv-w-grid");
  grid.style.gridTemplateColumns = `auto repeat(${ncols}, minmax(3.2em, auto))`;

  grid.appendChild(node("div", "sv-w-corner"));
  for (let c = 0; c < ncols; c++) grid.appendChild(node("div", "sv-w-tick", nd > 0 ? String(c) : ""));
  mesh.devices.forEach((dev, flat) => {
    const coord = coordsOf(flat, sizes);
    if (flat % ncols === 0) {
      const r = Math.floor(flat / ncols);
      const label = rowNames.length ? coord.slice(0, -1).join(",") : nrows > 1 ? String(r) : "";
      grid.appendChild(node("div", "sv-w-tick sv-w-tick-row", label));
    }
    const cell = node("div", "sv-w-device");
    cell.dataset.device = String(dev.id);
    cell.setAttribute("role", "button");
    cell.setAttribute("tabindex", "0");
    cell.style.background = colors[String(dev.id)] || "#eaeef2";
    const where = names.map((n, i) => `${n}=${coord[i]}`).join(", ");
    cell.title = `device ${dev.id} (${dev.platform}, process ${dev.process_index})` + (where ? ` at ${where}` : "");
    cell.appendChild(node("span", "sv-w-id", String(dev.id)));
    if (nd > 0) cell.appendChild(node("span", "sv-w-coord", "(" + coord.join(",") + ")"));
    grid.appendChild(cell);
  });

  const body = node("div", "sv-w-body");
  body.append(rowTitle, grid);
  wrap.append(colTitle, body);
  return wrap;
}

/**
 * Tiles grouped by index: one group per distinct piece, replica 0 first.
 * @param {TileJson[]} tiles
 * @returns {TileJson[][]}
 */
function distinctTiles(tiles) {
  /** @type {Map<string, TileJson[]>} */
  const groups = new Map();
  for (const t of tiles) {
    const key = JSON.stringify(t.index);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key)?.push(t);
  }
  return [...groups.values()].map((g) =>
    g.slice().sort((a, b) => a.replica_id - b.replica_id || a.device_id - b.device_id),
  );
}

/**
 * Sorted distinct cut points of one dim over all tiles.
 * @param {TileJson[][]} groups
 * @param {number} dim
 * @returns {number[]}
 */
function cuts(groups, dim) {
  const set = new Set();
  for (const g of groups) {
    set.add(g[0].index[dim][0]);
    set.add(g[0].index[dim][1]);
  }
  return [...set].sort((a, b) => a - b);
}

/**
 * One tile element: coloured by its first holder, listing its index and holders.
 * @param {string} tag
 * @param {TileJson[]} group
 * @param {Record<string, string>} colors
 * @returns {HTMLElement}
 */
function tileNode(tag, group, colors) {
  const first = group[0];
  const ids = group.map((t) => t.device_id);
  const e = node(tag, "sv-w-tile");
  e.dataset.devices = ids.join(" ");
  e.style.background = colors[String(first.device_id)] || "#eaeef2";
  e.title = `${formatIndex(first.index)} shape (${first.shape.join(", ")}) on device${ids.length > 1 ? "s" : ""} ${ids.join(", ")}`;
  return e;
}

/**
 * The array: its facts, then its distinct tiles (a grid for 1-D/2-D, a list per device for N-D).
 * @param {ArrayJson} array
 * @param {Record<string, string>} colors
 * @returns {HTMLElement}
 */
function arrayView(array, colors) {
  const wrap = node("div", "sv-w-array");
  const head = node("div", "sv-w-head");
  head.append(
    node("span", "sv-w-name", array.name),
    node("span", "sv-w-dim", ` · ${array.dtype}[${array.shape.join(", ")}] `),
    node("code", "sv-w-spec", formatSpec(array.spec)),
  );
  wrap.appendChild(head);
  const groups = distinctTiles(array.tiles);
  const nd = array.shape.length;

  if (nd <= 2) {
    const rowCuts = nd === 2 ? cuts(groups, 0) : [0, 1];
    const colCuts = nd === 0 ? [0, 1] : cuts(groups, nd - 1);
    const grid = node("div", "sv-w-tiles");
    grid.style.gridTemplateColumns = `repeat(${colCuts.length - 1}, minmax(4.5em, auto))`;
    for (const g of groups) {
      const idx = g[0].index;
      const cell = tileNode("div", g, colors);
      const [r0, r1] = nd === 2 ? idx[0] : [0, 1];
      const [c0, c1] = nd === 0 ? [0, 1] : idx[nd - 1];
      cell.style.gridRow = `${rowCuts.indexOf(r0) + 1} / ${rowCuts.indexOf(r1) + 1}`;
      cell.style.gridColumn = `${colCuts.indexOf(c0) + 1} / ${colCuts.indexOf(c1) + 1}`;
      cell.append(
        node("span", "sv-w-index", nd === 0 ? "[]" : formatIndex(idx)),
        node("span", "sv-w-holders", g.map((t) => t.device_id).join(" ")),
      );
      grid.appendChild(cell);
    }
    wrap.appendChild(grid);
  } else {
    const list = node("ul", "sv-w-tilelist");
    for (const g of groups) {
      const item = tileNode("li", g, colors);
      item.textContent = `${formatIndex(g[0].index)} on ${g.length > 1 ? "devices" : "device"} ${g
        .map((t) => t.device_id)
        .join(", ")}`;
      list.appendChild(item);
    }
    wrap.appendChild(list);
  }
  return wrap;
}

export default {
  /**
   * Draw the view into `el`; returns the cleanup anywidget calls when the view goes away.
   * @param {{ model: Model, el: HTMLElement }} ctx
   * @returns {() => void}
   */
  render({ model, el }) {
    const root = node("div", "sv-w-root");
    el.replaceChildren(root);

    function highlight() {
      const sel = Number(model.get("selected_device"));
      for (const cell of root.querySelectorAll(".sv-w-device")) {
        const on = /** @type {HTMLElement} */ (cell).dataset.device === String(sel);
        cell.classList.toggle(SELECTED, on);
        cell.setAttribute("aria-pressed", on ? "true" : "false");
      }
      for (const tile of root.querySelectorAll(".sv-w-tile")) {
        const ids = (/** @type {HTMLElement} */ (tile).dataset.devices || "").split(" ");
        tile.classList.toggle(SELECTED, sel !== NO_DEVICE && ids.includes(String(sel)));
      }
    }

    function draw() {
      root.replaceChildren();
      /** @type {MeshJson | null} */
      const mesh = parse(model.get("mesh"));
      /** @type {ArrayJson | null} */
      const array = parse(model.get("array"));
      const colors = model.get("colors") || {};
      if (!mesh) {
        root.appendChild(node("div", "sv-w-empty", "no mesh"));
        return;
      }
      root.appendChild(meshGrid(mesh, colors));
      if (array) root.appendChild(arrayView(array, colors));
      highlight();
    }

    /** @param {number} id */
    function select(id) {
      const next = Number(model.get("selected_device")) === id ? NO_DEVICE : id;
      model.set("selected_device", next);
      model.save_changes();
      highlight();
    }

    /** @param {Event} ev */
    function onClick(ev) {
      const cell = /** @type {HTMLElement | null} */ (
        /** @type {Element} */ (ev.target).closest(".sv-w-device")
      );
      if (cell && root.contains(cell)) select(Number(cell.dataset.device));
    }

    /** @param {KeyboardEvent} ev */
    function onKey(ev) {
      if (ev.key !== "Enter" && ev.key !== " ") return;
      const cell = /** @type {HTMLElement | null} */ (
        /** @type {Element} */ (ev.target).closest(".sv-w-device")
      );
      if (cell && root.contains(cell)) {
        ev.preventDefault();
        select(Number(cell.dataset.device));
      }
    }

    root.addEventListener("click", onClick);
    root.addEventListener("keydown", onKey);
    model.on("change:selected_device", highlight);
    model.on("change:mesh", draw);
    model.on("change:array", draw);
    model.on("change:colors", draw);
    draw();

    return () => {
      root.removeEventListener("click", onClick);
      root.removeEventListener("keydown", onKey);
      model.off("change:selected_device", highlight);
      model.off("change:mesh", draw);
      model.off("change:array", draw);
      model.off("change:colors", draw);
    };
  },
};
