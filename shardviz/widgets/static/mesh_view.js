// @ts-check
// shardviz MeshView: a plain ES module for anywidget (no bundler; shardviz/widgets/esm.py puts
// static/shared.js in front of it, so what ships imports nothing and works offline).
//
// Synced state (see shardviz/widgets/mesh_view.py):
//   mesh            MeshLayout.to_json()
//   array           ArrayLayout.to_json() or ""
//   selected_device device id, -1 for none
//   colors          {"<device id>": "#rrggbb"}
//
// Every model string enters the DOM through textContent or an attribute set with
// setAttribute, never through innerHTML.

import {
  NO_SELECTION,
  formatIndex,
  isActivation,
  meshCoords,
  node,
  parse,
  selectTilesOf,
  setPressed,
} from "./shared.js";

/** @typedef {import("./shared.js").Model} Model */
/** @typedef {import("./shared.js").MeshJson} MeshJson */
/** @typedef {import("./shared.js").TileJson} TileJson */
/** @typedef {import("./shared.js").ArrayJson} ArrayJson */

/**
 * A partition spec in jax's spelling (as `shardviz.model.array.format_spec`; the one JS copy,
 * since this view's state is the model's own JSON).
 * @param {string[][] | null} spec
 * @returns {string}
 */
function formatSpec(spec) {
  if (!spec) return "(not a named sharding)";
  const quote = (/** @type {string} */ axis) => `'${axis}'`;
  const parts = spec.map((entry) =>
    entry.length === 0 ? "None" : entry.length === 1 ? quote(entry[0]) : "(" + entry.map(quote).join(", ") + ")",
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
  const rank = sizes.length;
  const numCols = rank === 0 ? 1 : sizes[rank - 1];
  const numRows = Math.max(1, mesh.devices.length / numCols);
  const rowNames = names.slice(0, Math.max(0, rank - 1));

  const wrap = node("div", "sv-w-mesh");
  const colTitle = node("div", "sv-w-axis sv-w-axis-cols", rank > 0 ? `${names[rank - 1]} (${numCols})` : "");
  const rowTitle = node(
    "div",
    "sv-w-axis sv-w-axis-rows",
    rowNames.map((name, axis) => `${name} (${sizes[axis]})`).join(" × "),
  );
  const grid = node("div", "sv-w-grid");
  grid.style.gridTemplateColumns = `auto repeat(${numCols}, minmax(3.2em, auto))`;

  grid.appendChild(node("div", "sv-w-corner"));
  for (let col = 0; col < numCols; col++) grid.appendChild(node("div", "sv-w-tick", rank > 0 ? String(col) : ""));
  mesh.devices.forEach((device, flat) => {
    const coord = meshCoords(flat, sizes);
    if (flat % numCols === 0) {
      const row = Math.floor(flat / numCols);
      const rowLabel = rowNames.length ? coord.slice(0, -1).join(",") : numRows > 1 ? String(row) : "";
      grid.appendChild(node("div", "sv-w-tick sv-w-tick-row", rowLabel));
    }
    const cell = node("div", "sv-w-device");
    cell.dataset.device = String(device.id);
    cell.setAttribute("role", "button");
    cell.setAttribute("tabindex", "0");
    cell.style.background = colors[String(device.id)] || "#eaeef2";
    const where = names.map((name, axis) => `${name}=${coord[axis]}`).join(", ");
    cell.title =
      `device ${device.id} (${device.platform}, process ${device.process_index})` + (where ? ` at ${where}` : "");
    cell.appendChild(node("span", "sv-w-id", String(device.id)));
    if (rank > 0) cell.appendChild(node("span", "sv-w-coord", "(" + coord.join(",") + ")"));
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
  for (const tile of tiles) {
    const key = JSON.stringify(tile.index);
    const group = groups.get(key);
    if (group) group.push(tile);
    else groups.set(key, [tile]);
  }
  return [...groups.values()].map((group) =>
    group.slice().sort((one, other) => one.replica_id - other.replica_id || one.device_id - other.device_id),
  );
}

/**
 * Sorted distinct cut points of one dim over all tiles.
 * @param {TileJson[][]} groups
 * @param {number} dim
 * @returns {number[]}
 */
function cuts(groups, dim) {
  /** @type {Set<number>} */
  const points = new Set();
  for (const group of groups) {
    points.add(group[0].index[dim][0]);
    points.add(group[0].index[dim][1]);
  }
  return [...points].sort((low, high) => low - high);
}

/**
 * The ids of the devices holding a group of tiles, replica 0 first.
 * @param {TileJson[]} group
 * @returns {number[]}
 */
function holders(group) {
  return group.map((tile) => tile.device_id);
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
  const ids = holders(group);
  const element = node(tag, "sv-w-tile");
  element.dataset.devices = ids.join(" ");
  element.style.background = colors[String(first.device_id)] || "#eaeef2";
  element.title =
    `${formatIndex(first.index)} shape (${first.shape.join(", ")}) on device${ids.length > 1 ? "s" : ""} ` +
    ids.join(", ");
  return element;
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
  const rank = array.shape.length;

  if (rank <= 2) {
    const rowCuts = rank === 2 ? cuts(groups, 0) : [0, 1];
    const colCuts = rank === 0 ? [0, 1] : cuts(groups, rank - 1);
    const grid = node("div", "sv-w-tiles");
    grid.style.gridTemplateColumns = `repeat(${colCuts.length - 1}, minmax(4.5em, auto))`;
    for (const group of groups) {
      const index = group[0].index;
      const cell = tileNode("div", group, colors);
      const [rowStart, rowStop] = rank === 2 ? index[0] : [0, 1];
      const [colStart, colStop] = rank === 0 ? [0, 1] : index[rank - 1];
      cell.style.gridRow = `${rowCuts.indexOf(rowStart) + 1} / ${rowCuts.indexOf(rowStop) + 1}`;
      cell.style.gridColumn = `${colCuts.indexOf(colStart) + 1} / ${colCuts.indexOf(colStop) + 1}`;
      cell.append(
        node("span", "sv-w-index", rank === 0 ? "[]" : formatIndex(index)),
        node("span", "sv-w-holders", holders(group).join(" ")),
      );
      grid.appendChild(cell);
    }
    wrap.appendChild(grid);
  } else {
    const list = node("ul", "sv-w-tilelist");
    for (const group of groups) {
      const item = tileNode("li", group, colors);
      const devices = group.length > 1 ? "devices" : "device";
      item.textContent = `${formatIndex(group[0].index)} on ${devices} ${holders(group).join(", ")}`;
      list.appendChild(item);
    }
    wrap.appendChild(list);
  }
  return wrap;
}

export default {
  /**
   * Draw the view into `el`; returns the cleanup anywidget calls when the view goes away.
   * @param {{ model: Model, el: HTMLElement }} context
   * @returns {() => void}
   */
  render({ model, el }) {
    const root = node("div", "sv-w-root");
    el.replaceChildren(root);

    function highlight() {
      const selected = Number(model.get("selected_device"));
      for (const cell of root.querySelectorAll(".sv-w-device")) {
        setPressed(cell, /** @type {HTMLElement} */ (cell).dataset.device === String(selected));
      }
      selectTilesOf(root.querySelectorAll(".sv-w-tile"), selected);
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
      const next = Number(model.get("selected_device")) === id ? NO_SELECTION : id;
      model.set("selected_device", next);
      model.save_changes();
      highlight();
    }

    /**
     * The device cell an event happened in, if it is in this view.
     * @param {Event} event
     * @returns {HTMLElement | null}
     */
    function cellOf(event) {
      const target = /** @type {Element | null} */ (event.target);
      const cell = /** @type {HTMLElement | null} */ (target && target.closest ? target.closest(".sv-w-device") : null);
      return cell && root.contains(cell) ? cell : null;
    }

    /** @param {Event} event */
    function onClick(event) {
      const cell = cellOf(event);
      if (cell) select(Number(cell.dataset.device));
    }

    /** @param {KeyboardEvent} event */
    function onKey(event) {
      if (!isActivation(event)) return;
      const cell = cellOf(event);
      if (cell) {
        event.preventDefault();
        select(Number(cell.dataset.device));
      }
    }

    /** @type {[string, () => void][]} */
    const listeners = [
      ["change:selected_device", highlight],
      ["change:mesh", draw],
      ["change:array", draw],
      ["change:colors", draw],
    ];
    root.addEventListener("click", onClick);
    root.addEventListener("keydown", onKey);
    for (const [event, callback] of listeners) model.on(event, callback);
    draw();

    return () => {
      root.removeEventListener("click", onClick);
      root.removeEventListener("keydown", onKey);
      for (const [event, callback] of listeners) model.off(event, callback);
    };
  },
};
