// @ts-check
// shardviz's front-end helpers, shared by every widget's ES module.
//
// Not loaded on its own: shardviz/widgets/esm.py puts this text in front of each widget's
// module (dropping the `export` keywords here and the widget's `import ... from "./shared.js"`),
// so every widget ships as one module that imports nothing and works offline. The `export`s
// and imports are for the type checker (`tsc --noEmit`, see tsconfig.json) and editors.
//
// Every model string enters the DOM through textContent or setAttribute, never innerHTML.

/**
 * The synced model anywidget hands to `render` (only what the widgets use).
 * @typedef {{
 *   get(name: string): any,
 *   set(name: string, value: any): void,
 *   save_changes(): void,
 *   send(content: any): void,
 *   on(event: string, callback: (...args: any[]) => void): void,
 *   off(event?: string | null, callback?: ((...args: any[]) => void) | null): void,
 * }} Model
 */

/**
 * One device, as `shardviz.model.Device` writes it to JSON.
 * @typedef {{ id: number, process_index: number, platform: string, kind: string }} DeviceJson
 */

/**
 * A mesh, as `MeshLayout.to_json()` writes it: devices in row-major mesh order.
 * @typedef {{ axis_names: string[], axis_sizes: number[], devices: DeviceJson[] }} MeshJson
 */

/**
 * The part of an array one device holds, as `shardviz.model.Tile` writes it to JSON.
 * @typedef {{ device_id: number, index: [number, number][], shape: number[], nbytes: number,
 *             replica_id: number }} TileJson
 */

/**
 * An array's tiles, as `ArrayLayout.to_json()` writes them.
 * @typedef {{ name: string, shape: number[], dtype: string, spec: string[][] | null,
 *             mesh: MeshJson, tiles: TileJson[] }} ArrayJson
 */

/** The SVG namespace (a name, not a resource: nothing is fetched from it). */
export const SVG_NS = "http://www.w3.org/2000/svg";
/** The class of a selected device, tile, ledger row or memory bar. */
export const SELECTED = "sv-selected";
/** What `selected_device` (and the Explorer's `selected_collective`) hold with nothing picked. */
export const NO_SELECTION = -1;

/**
 * An HTML element with a class and optional text (set as textContent, never parsed).
 * @param {string} tag
 * @param {string} className
 * @param {string} [text]
 * @returns {HTMLElement}
 */
export function node(tag, className, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}

/**
 * An SVG element with attributes (each set with setAttribute) and optional text.
 * @param {string} tag
 * @param {Record<string, string | number>} [attrs]
 * @param {string} [text]
 * @returns {SVGElement}
 */
export function svg(tag, attrs, text) {
  const element = /** @type {SVGElement} */ (document.createElementNS(SVG_NS, tag));
  for (const [name, value] of Object.entries(attrs || {})) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

/**
 * Hover text for an SVG element: a <title> child.
 * @param {SVGElement} element
 * @param {string} text
 */
export function addTitle(element, text) {
  element.appendChild(svg("title", {}, text));
}

/**
 * Parse a JSON state string; "" or invalid text gives null.
 * @param {string} text
 * @returns {any}
 */
export function parse(text) {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * The mesh coordinate of the device at a row-major position (`MeshLayout.coords`).
 * @param {number} flat
 * @param {number[]} sizes the mesh's axis sizes
 * @returns {number[]}
 */
export function meshCoords(flat, sizes) {
  const coords = [];
  let rest = flat;
  for (let axis = sizes.length - 1; axis >= 0; axis--) {
    coords.unshift(rest % sizes[axis]);
    rest = Math.floor(rest / sizes[axis]);
  }
  return coords;
}

/**
 * An index in numpy's spelling, `[0:4, 4:8]` (as `shardviz.model.array.format_index`).
 * @param {[number, number][]} index
 * @returns {string}
 */
export function formatIndex(index) {
  return "[" + index.map(([start, stop]) => `${start}:${stop}`).join(", ") + "]";
}

/**
 * Mark `element` selected or not, for the eye (class) and for screen readers (aria-pressed).
 * @param {Element} element
 * @param {boolean} on
 */
export function setPressed(element, on) {
  element.classList.toggle(SELECTED, on);
  element.setAttribute("aria-pressed", on ? "true" : "false");
}

/**
 * Select every tile (an element with `data-devices`, ids split by spaces) that `device` holds.
 * @param {Iterable<Element>} tiles
 * @param {number} device a device id, or NO_SELECTION to clear
 */
export function selectTilesOf(tiles, device) {
  const wanted = String(device);
  for (const tile of tiles) {
    const holders = (/** @type {HTMLElement | SVGElement} */ (tile).dataset.devices || "").split(" ");
    tile.classList.toggle(SELECTED, device !== NO_SELECTION && holders.includes(wanted));
  }
}

/**
 * Whether a key press activates a focused button-like element (Enter or Space).
 * @param {KeyboardEvent} event
 * @returns {boolean}
 */
export function isActivation(event) {
  return event.key === "Enter" || event.key === " ";
}
