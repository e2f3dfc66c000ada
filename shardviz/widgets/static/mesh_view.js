// @ts-check
// shardviz MeshView: a plain ES module for anywidget (no bundler; shardviz/widgets/esm.py puts
// static/shared.js in front of it, so what ships imports nothing and works offline).
//
// Synced state (see shardviz/widgets/mesh_view.py):
//   mesh            MeshLayout.to_json()
//   array           ArrayLayout.to_json() or ""
//   grids           {"mesh": laid-out mesh, "array": {name, value, spec_str, kind, tiles,
//                   shards, grid} or null}, laid out in Python as the static view lays them out
//   selected_device device id, -1 for none
//   colors          {"<device id>": "#rrggbb"}
//
// This module draws the grids it is sent and highlights the selection; it lays nothing out.
// Every model string enters the DOM through textContent or an attribute set with
// setAttribute, never through innerHTML.

import {
  NO_SELECTION,
  arrayPanels,
  coordLabels,
  deviceSvg,
  gridNotes,
  gridPanels,
  isActivation,
  node,
  parse,
  selectTilesOf,
  setPressed,
} from "./shared.js";

/** @typedef {import("./shared.js").Model} Model */
/** @typedef {import("./shared.js").MeshJson} MeshJson */
/** @typedef {import("./shared.js").MeshCellJson} MeshCellJson */
/** @typedef {import("./shared.js").ArrayCellJson} ArrayCellJson */
/** @typedef {import("./shared.js").DistinctTileJson} DistinctTileJson */
/** @typedef {import("./shared.js").Paint} Paint */
/**
 * @template C
 * @typedef {import("./shared.js").GridJson<C>} GridJson
 */

/**
 * The array as mesh_view.grids_json sends it (grid_view.TiledArrayView).
 * @typedef {{ name: string, value: string, spec_str: string, kind: string,
 *   tiles: DistinctTileJson[], shards: string[], grid: GridJson<ArrayCellJson> }} ArrayViewJson
 */

/** @typedef {{ mesh: GridJson<MeshCellJson>, array: ArrayViewJson | null }} GridsJson */

const PREFIX = "sv-w";

/**
 * The mesh: which axes are panels, then its panels of device buttons.
 * @param {GridJson<MeshCellJson>} grid
 * @param {Paint} paint
 * @returns {HTMLElement}
 */
function meshView(grid, paint) {
  const wrap = node("div", "sv-w-mesh");
  if (grid.summary) wrap.appendChild(node("div", "sv-w-facts", grid.summary));
  wrap.appendChild(gridPanels(grid, PREFIX, "mesh", (cell, box) => deviceSvg(PREFIX, cell, box, paint.color(cell[2]))));
  wrap.append(...gridNotes(PREFIX, grid.notes));
  return wrap;
}

/**
 * The array: its name, value and spec, which dims are where, then its panels of tiles.
 * @param {ArrayViewJson} array
 * @param {Paint} paint
 * @returns {HTMLElement}
 */
function arrayView(array, paint) {
  const wrap = node("div", "sv-w-array");
  const head = node("div", "sv-w-head");
  head.append(
    node("span", "sv-w-name", array.name),
    node("span", "sv-w-dim", ` · ${array.value} `),
    node("code", "sv-w-spec", array.spec_str),
    node("span", "sv-w-kind", array.kind),
  );
  wrap.append(head, node("div", "sv-w-facts", array.grid.summary));
  wrap.append(arrayPanels(PREFIX, array, array.grid, paint), ...gridNotes(PREFIX, array.grid.notes));
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
      for (const cell of root.querySelectorAll(".sv-w-dev")) {
        setPressed(cell, /** @type {SVGElement} */ (cell).dataset.device === String(selected));
      }
      selectTilesOf(root.querySelectorAll(".sv-w-tile"), selected);
    }

    function draw() {
      root.replaceChildren();
      /** @type {GridsJson | null} */
      const grids = parse(model.get("grids"));
      if (!grids || !grids.mesh) {
        root.appendChild(node("div", "sv-w-empty", "no mesh"));
        return;
      }
      /** @type {Record<string, string>} */
      const colors = model.get("colors") || {};
      const where = coordLabels(parse(model.get("mesh")));
      /** @type {Paint} */
      const paint = {
        color: (id) => colors[String(id)] || "#eaeef2",
        coordLabel: (id) => where.get(id) || "",
      };
      root.appendChild(meshView(grids.mesh, paint));
      if (grids.array) root.appendChild(arrayView(grids.array, paint));
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
     * @returns {SVGElement | null}
     */
    function cellOf(event) {
      const target = /** @type {Element | null} */ (event.target);
      const cell = /** @type {SVGElement | null} */ (target && target.closest ? target.closest(".sv-w-dev") : null);
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
      ["change:grids", draw],
      ["change:mesh", draw],
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
