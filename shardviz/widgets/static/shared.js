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

// --------------------------------------------------------------------------------------------
// Laid-out grids: Python lays a mesh or an array out as view objects (shardviz/render/
// grid_view.py, whose words the static HTML prints too); these functions only draw their JSON.

/**
 * One slot along a page axis: [start, stop, tick label, slots hidden (0 if shown), hover text
 * of an elided band ("" if shown)].
 * @typedef {[number, number, string, number, string]} BandJson
 */

/**
 * The rows or the columns of a grid (grid_view.AxisView).
 * @typedef {{ used: boolean, title: string, bands: BandJson[] }} AxisJson
 */

/**
 * A device of a laid-out mesh: [row band, column band, device id, coordinate text, hover text].
 * @typedef {[number, number, number, string, string]} MeshCellJson
 */

/**
 * A tile's place in a laid-out array: [row band, column band, tile] (tile -1 where no device
 * holds a part).
 * @typedef {[number, number, number]} ArrayCellJson
 */

/**
 * A small multiple and its cells, or, where `gap` is not empty, the words for panels left
 * out (grid_view.MeshPanelView / ArrayPanelView).
 * @template C
 * @typedef {{ label: string, cells: C[], gap: string }} PanelJson
 */

/**
 * A laid-out grid (grid_view.MeshGridView / ArrayGridView): band sizes in px,
 * panels of cells, a summary line and one note per elided band.
 * @template C
 * @typedef {{ rows: AxisJson, cols: AxisJson, row_sizes: number[], col_sizes: number[],
 *   panels: PanelJson<C>[], summary: string, notes: string[] }} GridJson
 */

/**
 * A distinct tile and every device holding it, replica 0 first (grid_view.TileView;
 * `shard` points into the array's `shards`).
 * @typedef {{ index: [number, number][], shape: number[], nbytes: number, devices: number[],
 *   label: string, shard: number }} DistinctTileJson
 */

/**
 * What drawing a tile needs of its array: the name, the shard words and the tiles.
 * @typedef {{ name: string, shards: string[], tiles: DistinctTileJson[] }} TiledJson
 */

/**
 * Colours and mesh coordinates of devices, for fills and hover text.
 * @typedef {{ color(id: number): string, coordLabel(id: number): string }} Paint
 */

/** A cell's box in its panel's SVG. @typedef {{ x: number, y: number, width: number, height: number }} Box */

/** Holders listed in a tile's hover text before "… N more" (render/html.py MAX_HOLDERS). */
const TILE_HOLDERS = 16;

/**
 * An SVG text at (x, y), anchored by `anchor` ("start", "middle" or "end").
 * @param {string} className
 * @param {number} x
 * @param {number} y
 * @param {string} text
 * @param {string} [anchor]
 * @param {Record<string, string | number>} [attrs]
 * @returns {SVGElement}
 */
export function svgLabel(className, x, y, text, anchor = "start", attrs = {}) {
  /** @type {Record<string, string>} */
  const anchored = anchor === "start" ? {} : { "text-anchor": anchor };
  return svg("text", { class: className, x, y, ...anchored, ...attrs }, text);
}

/**
 * Approximate width of monospace text at 9-11px (render/svg.py CHAR_WIDTH).
 * @param {string} text
 * @param {number} [size]
 */
export function textWidth(text, size = 11) {
  return text.length * (size <= 9 ? 5.5 : size <= 10 ? 6.1 : 6.7);
}

/**
 * Running positions: where each of `sizes` starts, the first at `start`.
 * @param {number[]} sizes
 * @param {number} start
 */
export function offsets(sizes, start) {
  const out = [];
  let position = start;
  for (const size of sizes) {
    out.push(position);
    position += size;
  }
  return out;
}

/** @param {number[]} values */
export function sum(values) {
  return values.reduce((total, value) => total + value, 0);
}

/**
 * A count and its noun: "1 group", "3 groups".
 * @param {number} count
 * @param {string} noun
 */
export function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/**
 * Per device id, its mesh coordinate in words: `data=1, model=2`.
 * @param {MeshJson | null} mesh
 * @returns {Map<number, string>}
 */
export function coordLabels(mesh) {
  /** @type {Map<number, string>} */
  const out = new Map();
  if (!mesh) return out;
  mesh.devices.forEach((device, flat) => {
    const coord = meshCoords(flat, mesh.axis_sizes);
    out.set(device.id, mesh.axis_names.map((name, axis) => `${name}=${coord[axis]}`).join(", "));
  });
  return out;
}

/**
 * Where a panel's body sits: room on the left for the row ticks and title (rotated beside the
 * body when it fits, else "↓ title" above), on top for the column title and ticks.
 * @param {AxisJson} rows
 * @param {AxisJson} cols
 * @param {number} bodyHeight
 * @returns {{ rotate: boolean, left: number, top: number }}
 */
function panelFrame(rows, cols, bodyHeight) {
  const ticks = rows.used ? rows.bands.map((band) => band[2]) : [];
  const tickWidth = Math.max(0, ...ticks.map((tick) => textWidth(tick, 10)));
  const titleWidth = textWidth(rows.title);
  const rotate = rows.used && titleWidth + 8 <= bodyHeight;
  const left = !rows.used ? 4 : rotate ? 20 + tickWidth + 6 : Math.max(tickWidth + 10, titleWidth + 14);
  const above = rows.used && !rotate;
  const top = cols.used ? (above ? 44 : 32) : above ? 30 : 4;
  return { rotate, left, top };
}

/**
 * The column title and ticks: each band's label centred when every label fits, else (like a
 * ruler) where each band starts (render/svg.py Frame._col_axis).
 * @param {SVGElement} root
 * @param {string} prefix
 * @param {AxisJson} cols
 * @param {number[]} colX
 * @param {number[]} sizes
 * @param {number} top
 */
function columnAxis(root, prefix, cols, colX, sizes, top) {
  const bodyW = sum(sizes);
  root.appendChild(svgLabel(`${prefix}-axis`, colX[0] + bodyW / 2, 12, cols.title + " →", "middle"));
  const fits = (/** @type {string} */ text, /** @type {number} */ room) => textWidth(text, 10) <= room;
  const centred = cols.bands.every(([, , tick, hidden], col) => hidden > 0 || fits(tick, sizes[col] + 2));
  cols.bands.forEach(([start, , tick, hidden], col) => {
    const x = colX[col];
    const w = sizes[col];
    if (centred || hidden > 0) {
      if (tick && fits(tick, w + 2)) root.appendChild(svgLabel(`${prefix}-tick`, x + w / 2, top - 6, tick, "middle"));
    } else if (fits(String(start), w - 2)) {
      root.appendChild(svgLabel(`${prefix}-tick`, x + 2, top - 6, String(start)));
      root.appendChild(svg("path", { d: `M${x + 0.5} ${top - 5}v5`, stroke: "#8c959f" }));
    }
  });
}

/**
 * The row title and ticks.
 * @param {SVGElement} root
 * @param {string} prefix
 * @param {AxisJson} rows
 * @param {number[]} rowY
 * @param {number[]} sizes
 * @param {{ rotate: boolean, left: number, top: number }} frame
 */
function rowAxis(root, prefix, rows, rowY, sizes, frame) {
  if (frame.rotate) {
    const centreY = frame.top + sum(sizes) / 2;
    const turn = { transform: `rotate(-90 12 ${centreY})` };
    root.appendChild(svgLabel(`${prefix}-axis`, 12, centreY, rows.title, "middle", turn));
  } else {
    root.appendChild(svgLabel(`${prefix}-axis`, 4, 24, "↓ " + rows.title));
  }
  rows.bands.forEach(([, , tick], row) => {
    const rowH = sizes[row];
    if (tick && rowH >= 10) {
      const centre = { "dominant-baseline": "central" };
      root.appendChild(svgLabel(`${prefix}-tick`, frame.left - 5, rowY[row] + rowH / 2, tick, "end", centre));
    }
  });
}

/**
 * A dashed band where a run was elided, with its hover text.
 * @param {string} prefix
 * @param {Box} box
 * @param {string} text
 * @param {string} tip
 */
function elidedBand(prefix, box, text, tip) {
  const band = svg("g", { class: `${prefix}-elided` });
  addTitle(band, tip);
  band.appendChild(svg("rect", { ...box }));
  band.appendChild(svg("text", { x: box.x + box.width / 2, y: box.y + box.height / 2 }, text));
  return band;
}

/**
 * One small multiple of a laid-out grid: ticks, axis titles, a cell per `cells` entry drawn by
 * `drawCell` in its box, and dashed bands where runs were elided.
 * @template {[number, number, ...any[]]} C
 * @param {GridJson<C>} grid
 * @param {{ label: string, cells: C[] }} panel
 * @param {string} prefix the widget's class prefix ("sv-x", "sv-w")
 * @param {string} kind the SVG's own class (after the prefix): "mesh" or "grid"
 * @param {(cell: C, box: Box) => SVGElement} drawCell
 * @returns {HTMLElement}
 */
export function gridPanel(grid, panel, prefix, kind, drawCell) {
  const { rows, cols } = grid;
  const bodyW = sum(grid.col_sizes);
  const bodyH = sum(grid.row_sizes);
  const frame = panelFrame(rows, cols, bodyH);
  const colX = offsets(grid.col_sizes, frame.left);
  const rowY = offsets(grid.row_sizes, frame.top);
  const width = frame.left + bodyW + 4;
  const height = frame.top + bodyH + 4;
  const root = svg("svg", { class: `${prefix}-${kind}`, width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  if (cols.used) columnAxis(root, prefix, cols, colX, grid.col_sizes, frame.top);
  if (rows.used) rowAxis(root, prefix, rows, rowY, grid.row_sizes, frame);
  for (const cell of panel.cells) {
    const [row, col] = cell;
    root.appendChild(drawCell(cell, { x: colX[col], y: rowY[row], width: grid.col_sizes[col], height: grid.row_sizes[row] }));
  }
  cols.bands.forEach(([, , , hidden, tip], col) => {
    if (!hidden) return;
    const box = { x: colX[col] + 1, y: frame.top, width: grid.col_sizes[col] - 2, height: bodyH };
    root.appendChild(elidedBand(prefix, box, "…", tip));
  });
  rows.bands.forEach(([, , , hidden, tip], row) => {
    if (!hidden) return;
    const long = `⋯ ${hidden} more ⋯`;
    const box = { x: frame.left, y: rowY[row] + 1, width: bodyW, height: grid.row_sizes[row] - 2 };
    root.appendChild(elidedBand(prefix, box, textWidth(long) > bodyW - 8 ? "⋯" : long, tip));
  });
  const figure = node("figure", `${prefix}-panel`);
  if (panel.label) figure.appendChild(node("figcaption", "", panel.label));
  figure.appendChild(root);
  return figure;
}

/**
 * Every panel of a laid-out grid (see gridPanel), and a note where panels were left out.
 * @template {[number, number, ...any[]]} C
 * @param {GridJson<C>} grid
 * @param {string} prefix
 * @param {string} kind
 * @param {(cell: C, box: Box) => SVGElement} drawCell
 * @returns {HTMLElement}
 */
export function gridPanels(grid, prefix, kind, drawCell) {
  const panels = node("div", `${prefix}-panels`);
  for (const panel of grid.panels) {
    panels.appendChild(panel.gap ? node("div", `${prefix}-gap`, panel.gap) : gridPanel(grid, panel, prefix, kind, drawCell));
  }
  return panels;
}

/**
 * The lines under a grid: one per elided band.
 * @param {string} prefix
 * @param {string[]} notes
 * @returns {HTMLElement[]}
 */
export function gridNotes(prefix, notes) {
  return notes.map((note) => node("div", `${prefix}-note`, note));
}

/**
 * One device of a laid-out mesh: a button filled with its colour, its id and coordinate.
 * @param {string} prefix
 * @param {MeshCellJson} cell
 * @param {Box} box
 * @param {string} fill
 * @returns {SVGElement}
 */
export function deviceSvg(prefix, cell, box, fill) {
  const [, , id, coord, tip] = cell;
  const { x, y, width, height } = box;
  const group = svg("g", { class: `${prefix}-dev`, "data-device": id, role: "button", tabindex: 0, "aria-pressed": "false" });
  addTitle(group, tip);
  group.appendChild(svg("rect", { class: `${prefix}-fill`, x: x + 1, y: y + 1, width: width - 2, height: height - 2, rx: 2, fill }));
  group.appendChild(svg("rect", { class: `${prefix}-ring`, x: x + 1.5, y: y + 1.5, width: width - 3, height: height - 3, rx: 2 }));
  group.appendChild(svgLabel(`${prefix}-lbl`, x + width / 2, y + (coord ? 15 : height / 2), `d${id}`, "middle"));
  if (coord) group.appendChild(svgLabel(`${prefix}-sub`, x + width / 2, y + 29, coord, "middle"));
  return group;
}

/**
 * One distinct tile: filled by its first holder, labelled with its holders when they fit, with
 * hover text giving the index, shard and each holder's coordinate (as render/html.py's tiles).
 * @param {string} prefix
 * @param {TiledJson} array
 * @param {DistinctTileJson | undefined} tile undefined where no device holds a part
 * @param {Box} box
 * @param {Paint} paint
 * @returns {SVGElement}
 */
export function tileSvg(prefix, array, tile, box, paint) {
  const { x, y, width, height } = box;
  if (!tile) {
    const empty = svg("g", { class: `${prefix}-tile`, "data-devices": "" });
    addTitle(empty, `${array.name}: held by no device`);
    empty.appendChild(svg("rect", { x, y, width, height, fill: "#ffffff", "stroke-dasharray": "2 2" }));
    return empty;
  }
  const ids = tile.devices;
  const group = svg("g", { class: `${prefix}-tile`, "data-devices": ids.join(" ") });
  const holders = ids.slice(0, TILE_HOLDERS).map((id) => {
    const where = paint.coordLabel(id);
    return `  d${id}` + (where ? ` (${where})` : "");
  });
  if (ids.length > TILE_HOLDERS) holders.push(`  … ${ids.length - TILE_HOLDERS} more`);
  addTitle(
    group,
    [
      `${array.name}${formatIndex(tile.index)}`,
      `shard ${array.shards[tile.shard]}`,
      `held by ${plural(ids.length, "device")}:`,
      ...holders,
    ].join("\n"),
  );
  group.appendChild(svg("rect", { class: `${prefix}-fill`, x, y, width, height, fill: paint.color(ids[0]) }));
  const inset = { x: x + 1.5, y: y + 1.5, width: Math.max(0, width - 3), height: Math.max(0, height - 3) };
  group.appendChild(svg("rect", { class: `${prefix}-ring`, ...inset }));
  let text = tile.label;
  if (textWidth(text) > width - 4) text = ids.length > 1 ? `d${ids[0]}+${ids.length - 1}` : `d${ids[0]}`;
  if (textWidth(text) <= width - 4 && height >= 13) {
    group.appendChild(svgLabel(`${prefix}-lbl`, x + width / 2, y + height / 2, text, "middle"));
  }
  return group;
}

/**
 * Every panel of a laid-out array, each cell its tile.
 * @param {string} prefix
 * @param {TiledJson} array
 * @param {GridJson<ArrayCellJson>} grid
 * @param {Paint} paint
 * @returns {HTMLElement}
 */
export function arrayPanels(prefix, array, grid, paint) {
  return gridPanels(grid, prefix, "grid", ([, , at], box) =>
    tileSvg(prefix, array, at >= 0 ? array.tiles[at] : undefined, box, paint),
  );
}
