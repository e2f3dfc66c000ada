// @ts-check
// shardviz Explorer: a plain ES module for anywidget (no bundler; shardviz/widgets/esm.py puts
// static/shared.js in front of it, so what ships imports nothing and works offline).
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
//   stale               which control is wrong while the panes keep the last valid
//                       configuration (the status then says so instead of "done"), or ""
//   changes             what the last recompile changed (ledger, bytes, peak), or ""
//   generation          bumped by Python with every new report
//   findings            the Findings pane (JSON text, widgets/explorer/findings_pane.py: the
//                       findings' view object and what each links to): "pending" while
//                       Python compiles their fixes, or ""
//   selected_finding    the finding picked in the Findings pane, or -1
//   fixed               while the panes show a program shardviz fixed, which fixes (a badge)
//
// Findings: a pane above the others; picking a finding lights up its collectives (ledger
// rows), its arrays (chips in the arrays pane; its leaf is picked) and its devices (mesh and
// memory). "try this fix" sends {type: "try-fix", generation, finding} to Python, which sets
// a spec box or the mesh shape, or compiles the fixed program, in the background.
//
// Words and numbers (bytes, seconds, operands, device runs, source lines) arrive ready-made in
// the payloads, spelled by the same Python functions as the static views, and the mesh and the
// picked array arrive laid out (shardviz/render/grid_view.py: the JSON of the views whose words
// the static HTML prints); this module only draws them and highlights.
//
// Prefetch: once a payload is drawn the view sends {type: "prefetch", generation} and Python
// answers with custom messages {type: "prefetched", generation, arrays: [[id, json], ...],
// done}, each json exactly what the `array` trait would carry for that id. The view keeps them
// (and every `array` it receives) for the current generation, so a pick of a kept array draws
// at once; messages of another generation are dropped. The root's data-prefetch says "pending"
// or "done"; a "sv-x-forget" event on the root (detail: an array id, or none for all) drops
// kept arrays, for tests and benchmarks of the path through the kernel.
//
// Filters, the view's own (nothing synced, nothing sent): a text box beside the array picker
// narrows its options by name (a part of it, `*` within one path component), and two selects
// over the ledger hide the rows of other kinds or other mesh axes; each says how many it shows.
// A hidden selection stays selected. They are kept across a redraw of the same generation and
// reset for a new report.
//
// Every model string enters the DOM through textContent or setAttribute, never innerHTML.

import {
  NO_SELECTION,
  SELECTED,
  addTitle,
  arrayPanels,
  coordLabels,
  deviceSvg,
  formatIndex,
  gridNotes,
  gridPanels,
  isActivation,
  node,
  parse,
  selectTilesOf,
  setPressed,
  svg,
  svgLabel,
  textWidth,
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
 * One pickable array of the report payload (explorer_payload._array_item).
 * @typedef {{ id: string, role: string, name: string, label: string, shape: number[],
 *   dtype: string, spec: string[][] | null, spec_str: string, value: string, op: string,
 *   source: number | null, reshard: boolean }} ArrayItem
 */

/**
 * One group of the array picker (explorer_payload.picker_groups): a module path's leaves, or
 * the intermediates; `arrays` are positions in the payload's `arrays`.
 * @typedef {{ label: string, role: string, params: boolean, arrays: number[] }} PickerGroup
 */

/**
 * One ledger entry (explorer_payload._collective_item and collective_text).
 * @typedef {{ index: number, name: string, kind: string, axes: string[],
 *   in_dtype: string, in_shape: number[], out_dtype: string, out_shape: number[],
 *   in_bytes: number, out_bytes: number, moved_bytes: number, group_size: number,
 *   groups: number | null, groups_text: string, pairs: number | null, source: number | null,
 *   user_written: boolean, op_name: string, reshard: string | null,
 *   reshard_array: string | null, estimated_seconds: number | null, estimate_formula: string,
 *   axes_text: string, operand: string, in_value: string, out_value: string,
 *   in_bytes_text: string, moved_bytes_text: string, in_bytes_exact: string,
 *   out_bytes_exact: string, moved_bytes_exact: string,
 *   estimated_text: string | null, why_text: string | null, why_change: string | null,
 *   traffic: TrafficItem }} CollectiveItem
 */

/**
 * Who sends to whom in one collective under the ring model (explorer_payload.traffic_item):
 * `links` is a position in the payload's `traffic_links` (per group, [source, target] ids).
 * @typedef {{ pattern: string, words: string, label: string, step_bytes: number, steps: number,
 *   device_bytes: number, arrows: number, drawn: number, links: number }} TrafficItem
 */

/**
 * Per-device memory (explorer_payload.memory_payload, with `scale` from memory_scale).
 * @typedef {{ parts: string[], colors: string[], devices: number[], bytes: number[][],
 *   alias_bytes: number, peak_bytes: number, peak_definition: string, peak_text: string,
 *   note: string, label_of: number[], labels: [string, string][], same: string,
 *   scale: { bytes: number, text: string, hbm_on_scale: boolean },
 *   host?: HostMemoryPayload }} MemoryPayload
 */

/**
 * Host memory beside HBM (explorer_payload.host_payload), only for programs that keep
 * something on host: per device `bytes` by role (`roles`, drawn in `colors`), `hbm_bytes` (the
 * HBM bar by the same roles) and `totals`; `leaves` are [path, role, memory kind, bytes, exact].
 * @typedef {{ roles: string[], colors: string[], bytes: number[][], hbm_bytes: number[][],
 *   totals: number[], total: number, total_text: string, total_exact: string, text: string,
 *   line: string, heading: string, source: string, from_compiler: boolean, mismatch: string,
 *   leaves: [string, string, string, string, string][], label_of: number[],
 *   labels: [string, string][], scale: { bytes: number, text: string },
 *   transfers: HostTransfersPayload | null }} HostMemoryPayload
 */

/**
 * Host <-> device transfers per device per step (explorer_payload.host_transfers_payload);
 * `rows` are [name, for, direction, per step, exact per step, line].
 * @typedef {{ to_host_bytes: number, to_device_bytes: number, count: number, text: string,
 *   note: string, rows: [string, string, string, string, string, string][] }} HostTransfersPayload
 */

/**
 * The estimate on a target (explorer_payload.estimate_payload and estimate_text).
 * @typedef {{ target: string, words: string, target_line: string | null, bound: string,
 *   hbm_bytes: number, fits: boolean | null, hbm_text: string, headline: string,
 *   tooltip: string, hbm_bytes_text: string, hbm_bytes_exact: string,
 *   uncounted?: string[], not_a_bound?: string }} EstimatePayload
 */

/**
 * The program's kernels (explorer_payload.kernels_payload): `rows` are
 * [name, how, counted, flops, meaning]; `notice` names the kernels not counted ("" when
 * every kernel was counted), spelled in Python.
 * @typedef {{ heading: string, rows: [string, string, boolean, string, string][],
 *   uncounted: string, notice: string, tooltip: string }} KernelsPayload
 */

/**
 * The shown report (explorer_payload.report_payload); `mesh_grid` is the mesh laid out.
 * @typedef {{ version: number, function: string, platform: string, status_line: string,
 *   notes: string[], mesh: MeshJson | null, mesh_grid: GridJson<MeshCellJson> | null,
 *   mesh_summary: string,
 *   colors: Record<string, string>, arrays: ArrayItem[], arrays_left_out?: number,
 *   picker: PickerGroup[],
 *   collectives: CollectiveItem[],
 *   groupings: number[][][], pairings: [number, number][][],
 *   traffic_links: [number, number][][][],
 *   sources: [number, number, string][][], source_labels: [string, string, string][],
 *   files: string[], group_labels: string[][], group_colors: string[],
 *   kind_colors: Record<string, [string, string]>, memory: MemoryPayload,
 *   estimate: EstimatePayload | null, kernels?: KernelsPayload | null,
 *   timeline?: TimelinePayload | null, op_profile?: OpProfilePayload | null }} ReportPayload
 */

/**
 * The step by module, by layer and its costliest ops (explorer_payload.op_profile_payload, the
 * cells `print(sv.op_profile(report))` shows), spelled in Python.
 * @typedef {{ title: string, headline: string, columns: string[], modules: string[][],
 *   layers: string[][], op_columns: string[], ops: string[][], notes: string[] }} OpProfilePayload
 */

/**
 * One profiled step per device, laid out: render/timeline.py's TimelineView as JSON, the view
 * the report's text and HTML print. Each bar is [x, width, position in `kinds`, tooltip]; each
 * tick [x, text].
 * @typedef {{ label: string, illustrative: boolean, heading: string, width: number,
 *   kinds: [string, string, string][],
 *   lanes: { device: number, bars: [number, number, number, string][] }[],
 *   ticks: [number, string][] }} TimelinePayload
 */

/**
 * The picked array (explorer_payload.entry_payload): `facts` and `grid` are null, and
 * `message` says why, when it has no tiles.
 * @typedef {{ id: string, role: string, name: string, shape: number[], dtype: string,
 *   spec: string[][] | null, spec_str: string, value: string, message: string | null,
 *   facts: { kind: string, shard_shape: number[], shard_text: string, tiles: string,
 *            bytes: string, computed: boolean } | null,
 *   tiles: DistinctTileJson[], shards: string[], grid: GridJson<ArrayCellJson> | null }} ArrayPayload
 */

/** @typedef {{ id: string, title: string, description: string, mesh: string }} StrategyItem */

/**
 * What a finding lights up (findings_pane.highlights): ledger positions, array ids, devices.
 * @typedef {{ collectives: number[], leaf: string | null, values: string[], arrays: string[],
 *   devices: number[] }} FindingHighlight
 */

/**
 * One finding's words: render/findings/view.py's FindingView as JSON, the very object the
 * text and the HTML print (`where` rows are WhereRow, the check's rows CheckRow).
 * @typedef {{ kind: string, severity: string, title: string, why: string, cost: string,
 *   where: { label: string, text: string }[], place: string,
 *   fix: { kind: string, description: string, code: string } | null, no_fix: string,
 *   check: { helps: boolean, word: string, verdict: string,
 *            rows: { key: string, label: string, before: string, after: string }[] } | null,
 *   summary: string }} FindingViewJson
 */

/**
 * The findings' words (FindingsView as JSON).
 * @typedef {{ function: string, count: string, counts: [string, number][], checked: string,
 *   untried: string, items: FindingViewJson[], notes: string[] }} FindingsViewJson
 */

/**
 * What one finding links to in this Explorer (findings_pane.link): `route` says how "try this
 * fix" applies its fix ("box", "mesh", "program"; "" when it cannot be tried here or there is
 * no fix), `how` says so in words.
 * @typedef {{ route: string, how: string, highlight: FindingHighlight }} FindingLink
 */

/**
 * A finding of the pane: its position, its view and its links.
 * @typedef {{ index: number, said: FindingViewJson, link: FindingLink }} FindingItem
 */

/**
 * The Findings pane (findings_pane.findings_state): the findings' view, or, without one,
 * what the pane says (`words`); `state` is "done", "pending", "none" (not diagnosed) or
 * "error".
 * @typedef {{ version: number, generation: number, state: string, words: string,
 *   checked: string, severity_colors: Record<string, [string, string, string]>,
 *   view: FindingsViewJson | null, links: FindingLink[] }} FindingsState
 */

/**
 * A call chain in words, and its frames as [file, line, function], outermost first.
 * @typedef {{ location: string, short: string, chain: string,
 *             frames: [string, number, string][] }} SourceInfo
 */

const PAYLOAD_VERSION = 5;
const FINDINGS_VERSION = 2;
/** The `type` of the "try this fix" message to Python (see explorer.py). */
const TRY_FIX = "try-fix";
/** The class that marks what the picked finding lights up, in every pane. */
const FLAGGED = "sv-x-flagged";
/** The CSS property a device cell's group outline colour is set in. */
const RING = "--sv-x-ring";
const MAX_PAIRS = 16;
/** @type {Record<string, string>} */
const STATUS_TEXT = {
  compiling: "compiling…",
  running: "running…",
  done: "done",
  error: "error",
  stale: "showing the last valid configuration",
};
/** The `type` of the prefetch request and of the batches that answer it (see explorer.py). */
const PREFETCH = "prefetch";
const PREFETCHED = "prefetched";
const FORGET = "sv-x-forget";
const MEM_H = 110;
/** The height of the host bars (drawn apart from the HBM bars, on a scale of their own). */
const HOST_H = 56;

// --------------------------------------------------------------------------------------------
// Drawing helpers

/**
 * A darker shade of a #rrggbb colour, for outlines.
 * @param {string} hex
 * @returns {string}
 */
function darker(hex) {
  const match = /^#([0-9a-f]{6})$/i.exec(hex || "");
  if (!match) return "#1b1f24";
  const rgb = parseInt(match[1], 16);
  const channels = [16, 8, 0].map((shift) => Math.round(((rgb >> shift) & 255) * 0.5));
  return "#" + channels.map((channel) => channel.toString(16).padStart(2, "0")).join("");
}

// --------------------------------------------------------------------------------------------
// What the payload means

/**
 * Derived lookups for one report payload, built once per payload.
 */
class Report {
  /** @param {ReportPayload} payload */
  constructor(payload) {
    this.payload = payload;
    /** @type {MeshJson | null} */
    this.mesh = payload.mesh;
    /** @type {Map<number, string>} device id -> its mesh coordinate in words */
    this.where = coordLabels(this.mesh);
    /** @type {Map<number, number>[]} per grouping: device id -> group number */
    this.groupOf = payload.groupings.map((groups) => {
      /** @type {Map<number, number>} */
      const groupOfDevice = new Map();
      groups.forEach((group, number) => group.forEach((device) => groupOfDevice.set(device, number)));
      return groupOfDevice;
    });
    /** @type {Set<number>[]} per pairing: devices that send or receive */
    this.inPairs = payload.pairings.map((pairs) => new Set(pairs.flat()));
    /** @type {Map<string, ArrayItem>} */
    this.arrays = new Map(payload.arrays.map((item) => [item.id, item]));
  }

  /** @param {number} id */
  color(id) {
    return this.payload.colors[String(id)] || "#eaeef2";
  }

  /** data=1, model=2 @param {number} id */
  coordLabel(id) {
    return this.where.get(id) || "";
  }

  /**
   * Whether a device takes part in a collective.
   * @param {CollectiveItem} collective
   * @param {number} id
   */
  involves(collective, id) {
    if (collective.groups !== null && this.groupOf[collective.groups].has(id)) return true;
    return collective.pairs !== null && this.inPairs[collective.pairs].has(id);
  }

  /**
   * A call chain in words and frames, or null.
   * @param {number | null} chain a position in the payload's `sources`
   * @returns {SourceInfo | null}
   */
  source(chain) {
    if (chain === null || chain === undefined) return null;
    const [location, short, names] = this.payload.source_labels[chain];
    /** @type {[string, number, string][]} */
    const frames = this.payload.sources[chain].map(([file, line, fn]) => [this.payload.files[file], line, fn]);
    return { location, short, chain: names, frames };
  }

  /** @param {string} kind @returns {[string, string]} */
  kindColors(kind) {
    return this.payload.kind_colors[kind] || this.payload.kind_colors[""];
  }

  /** @param {number} group */
  groupColor(group) {
    const colors = this.payload.group_colors;
    return colors.length ? colors[group % colors.length] : "#9ecbff";
  }
}

// --------------------------------------------------------------------------------------------
// Header: title, strategy selector, estimate, notes

/**
 * @param {Report} report
 * @param {StrategyItem[]} strategies
 * @param {string} chosen
 */
function header(report, strategies, chosen) {
  const payload = report.payload;
  const head = node("div", "sv-x-header");
  const title = node("div", "sv-x-title");
  title.append(node("span", "sv-x-fn", payload.function), node("span", "sv-x-dim", ` · ${payload.platform}`));
  head.appendChild(title);
  if (strategies.length) head.appendChild(strategyPicker(strategies, chosen));
  head.appendChild(node("div", "sv-x-line", `${payload.mesh_summary} · ${payload.status_line}`));
  const estimate = payload.estimate;
  if (estimate) {
    if (estimate.target_line) head.appendChild(node("div", "sv-x-line sv-x-target", estimate.target_line));
    const line = node("div", "sv-x-estimate");
    line.dataset.bound = estimate.bound;
    if (estimate.not_a_bound) line.dataset.bounded = "0";
    line.append(
      node("span", "sv-x-estword", "estimate"),
      ` ${estimate.headline} · `,
      node("span", "sv-x-dim", estimate.words),
    );
    line.title = estimate.tooltip;
    head.appendChild(line);
  }
  const kernels = payload.kernels;
  if (kernels && kernels.notice) {
    // A kernel whose flops are unknown is named, never left silently at zero.
    const missing = node("div", "sv-x-uncounted", kernels.notice);
    missing.title = kernels.tooltip;
    head.appendChild(missing);
  }
  if (payload.notes.length) {
    const notes = node("div", "sv-x-notes");
    for (const note of payload.notes) notes.appendChild(node("div", "", note));
    head.appendChild(notes);
  }
  return head;
}

/**
 * The strategy selector of a comparison.
 * @param {StrategyItem[]} strategies
 * @param {string} chosen
 */
function strategyPicker(strategies, chosen) {
  const wrap = node("label", "sv-x-strategies", "strategy ");
  const pick = /** @type {HTMLSelectElement} */ (node("select", "sv-x-strategy"));
  for (const strategy of strategies) {
    const option = /** @type {HTMLOptionElement} */ (node("option", "", `${strategy.title} (${strategy.id})`));
    option.value = strategy.id;
    option.title = `${strategy.description} · ${strategy.mesh}`;
    pick.appendChild(option);
  }
  pick.value = chosen;
  wrap.appendChild(pick);
  return wrap;
}

// --------------------------------------------------------------------------------------------
// Mesh pane

/**
 * The device grid as Python laid it out (the static view's: the last two axes on the page, the
 * others as panels, long runs elided), each device a button; a layer per panel for arrows.
 * @param {Report} report
 * @returns {HTMLElement}
 */
function meshPane(report) {
  const pane = node("section", "sv-x-pane sv-x-meshpane");
  pane.appendChild(node("h4", "", "Mesh"));
  const grid = report.payload.mesh_grid;
  if (!grid) {
    pane.appendChild(node("div", "sv-x-dim", "no mesh (one device)"));
    return pane;
  }
  if (grid.summary) pane.appendChild(node("div", "sv-x-facts", grid.summary));
  const panels = gridPanels(grid, "sv-x", "mesh", (cell, box) => deviceSvg("sv-x", cell, box, report.color(cell[2])));
  for (const map of panels.querySelectorAll(".sv-x-mesh")) map.appendChild(svg("g", { class: "sv-x-pairs" }));
  pane.append(panels, ...gridNotes("sv-x", grid.notes), node("div", "sv-x-devline"));
  return pane;
}

/**
 * Centre of a device cell on the mesh, from its fill rect.
 * @param {Element} cell
 * @returns {[number, number]}
 */
function cellCentre(cell) {
  const rect = /** @type {SVGRectElement} */ (cell.querySelector(".sv-x-fill"));
  const x = Number(rect.getAttribute("x"));
  const y = Number(rect.getAttribute("y"));
  return [x + Number(rect.getAttribute("width")) / 2, y + Number(rect.getAttribute("height")) / 2];
}

/**
 * A curved arrow between two cell centres, stopping short of each: neighbours get a shallow
 * bend, longer jumps a deeper one so they pass beside the cells in between (the shape of
 * report_html's permute maps).
 * @param {number} x1 @param {number} y1 @param {number} x2 @param {number} y2
 * @param {number} cell the cell size, what counts as a neighbour
 * @returns {[string, string]} the curve's and the head's path data
 */
function arrowPaths(x1, y1, x2, y2, cell) {
  const dist = Math.hypot(x2 - x1, y2 - y1) || 1;
  const unitX = (x2 - x1) / dist;
  const unitY = (y2 - y1) / dist;
  const bend = dist <= 1.5 * cell ? 0.22 * dist + 2 : 0.36 * dist;
  const controlX = (x1 + x2) / 2 - unitY * bend;
  const controlY = (y1 + y2) / 2 + unitX * bend;
  /** @type {(x: number, y: number) => [number, number]} */
  const toward = (x, y) => {
    const length = Math.hypot(controlX - x, controlY - y) || 1;
    return [x + ((controlX - x) / length) * 7, y + ((controlY - y) / length) * 7];
  };
  const [startX, startY] = toward(x1, y1);
  const [endX, endY] = toward(x2, y2);
  const tangentLength = Math.hypot(endX - controlX, endY - controlY) || 1;
  const tangentX = (endX - controlX) / tangentLength;
  const tangentY = (endY - controlY) / tangentLength;
  const baseX = endX - tangentX * 6;
  const baseY = endY - tangentY * 6;
  const fixed = (/** @type {number} */ value) => value.toFixed(1);
  return [
    `M${fixed(startX)} ${fixed(startY)}Q${fixed(controlX)} ${fixed(controlY)} ${fixed(baseX)} ${fixed(baseY)}`,
    `M${fixed(endX)} ${fixed(endY)}` +
      `L${fixed(baseX - tangentY * 3)} ${fixed(baseY + tangentX * 3)}` +
      `L${fixed(baseX + tangentY * 3)} ${fixed(baseY - tangentX * 3)}Z`,
  ];
}

/**
 * Arrows for a collective-permute's source -> target pairs, in each mesh panel between the
 * cells it draws (a pair across panels or with an elided end has none, as in the static view).
 * @param {HTMLElement} root
 * @param {[number, number][]} pairs
 */
function drawPairs(root, pairs) {
  for (const layer of root.querySelectorAll(".sv-x-pairs")) {
    layer.replaceChildren();
    const map = layer.parentNode;
    if (!pairs.length || !map) continue;
    /** @type {Map<number, Element>} */
    const cells = new Map();
    for (const cell of map.querySelectorAll(".sv-x-dev")) {
      cells.set(Number(/** @type {SVGElement} */ (cell).dataset.device), cell);
    }
    const first = map.querySelector(".sv-x-dev .sv-x-fill");
    const cellSize = first ? Number(first.getAttribute("width")) + 2 : 40;
    for (const [source, target] of pairs) {
      const from = cells.get(source);
      const to = cells.get(target);
      if (!from || !to || source === target) continue;
      const [x1, y1] = cellCentre(from);
      const [x2, y2] = cellCentre(to);
      const [curve, head] = arrowPaths(x1, y1, x2, y2, cellSize);
      layer.appendChild(svg("path", { class: "sv-x-arrow", "data-pair": `${source} ${target}`, d: curve }));
      layer.appendChild(svg("path", { class: "sv-x-arrowhead", d: head }));
    }
  }
}

/**
 * A collective's ring or all-pairs traffic as arrows, one colour per group, in each mesh panel
 * between the cells it draws (Python sends only links whose ends share a drawn panel). A
 * collective-permute's pairs are drawn by drawPairs.
 * @param {HTMLElement} root
 * @param {Report} report
 * @param {CollectiveItem | null} collective
 */
function drawTraffic(root, report, collective) {
  const traffic = collective ? collective.traffic : null;
  if (!traffic || (traffic.pattern !== "ring" && traffic.pattern !== "all-pairs")) return;
  const groups = report.payload.traffic_links[traffic.links] || [];
  for (const layer of root.querySelectorAll(".sv-x-pairs")) {
    const map = layer.parentNode;
    if (!map) continue;
    /** @type {Map<number, Element>} */
    const cells = new Map();
    for (const cell of map.querySelectorAll(".sv-x-dev")) {
      cells.set(Number(/** @type {SVGElement} */ (cell).dataset.device), cell);
    }
    const first = map.querySelector(".sv-x-dev .sv-x-fill");
    const cellSize = first ? Number(first.getAttribute("width")) + 2 : 40;
    groups.forEach((links, group) => {
      const color = darker(report.groupColor(group));
      for (const [source, target] of links) {
        const from = cells.get(source);
        const to = cells.get(target);
        if (!from || !to) continue;
        const [x1, y1] = cellCentre(from);
        const [x2, y2] = cellCentre(to);
        const [curve, head] = arrowPaths(x1, y1, x2, y2, cellSize);
        const line = svg("path", {
          class: "sv-x-tarrow",
          "data-group": String(group),
          "data-link": `${source} ${target}`,
          d: curve,
          fill: "none",
          stroke: color,
          "stroke-width": "1.4",
          opacity: "0.8",
          "pointer-events": "none",
        });
        const title = svg("title", {});
        title.textContent = `d${source} → d${target}: ${traffic.label}`;
        line.appendChild(title);
        layer.append(line, svg("path", { class: "sv-x-tarrowhead", d: head, fill: color, opacity: "0.8" }));
      }
    });
  }
}

/**
 * The traffic sentence of the details pane, and how many arrows the mesh leaves out.
 * @param {CollectiveItem} collective
 * @returns {HTMLElement}
 */
function trafficWords(collective) {
  const traffic = collective.traffic;
  const line = node("span", "sv-x-traffic", traffic.words);
  if (traffic.pattern !== "none") line.append(node("span", "sv-x-dim", ` · each arrow: ${traffic.label}`));
  if (traffic.drawn < traffic.arrows && traffic.pattern !== "pairs") {
    line.append(node("span", "sv-x-dim", ` · ${traffic.arrows - traffic.drawn} of ${traffic.arrows} arrows not drawn`));
  }
  return line;
}

// --------------------------------------------------------------------------------------------
// Arrays pane

/**
 * The picker and its filter: every argument leaf and output leaf, grouped by module path
 * (parameters first), then the intermediates (past a few hundred, the reshard points and the
 * values a collective links to: the group's label says how many are left out). Python orders
 * and names the groups (explorer_payload.picker_groups); each option shows its leaf's short
 * label, its whole path on hover.
 * @param {Report} report
 * @returns {HTMLElement}
 */
function arrayPicker(report) {
  const row = node("div", "sv-x-pickrow");
  const pick = /** @type {HTMLSelectElement} */ (node("select", "sv-x-pick"));
  pick.setAttribute("aria-label", "array");
  for (const entry of report.payload.picker) {
    const group = /** @type {HTMLOptGroupElement} */ (node("optgroup", ""));
    group.label = entry.label;
    group.dataset.role = entry.role;
    for (const position of entry.arrays) group.appendChild(arrayOption(report.payload.arrays[position]));
    pick.appendChild(group);
  }
  const filter = /** @type {HTMLInputElement} */ (node("input", "sv-x-filter"));
  filter.type = "search";
  filter.placeholder = "filter: wq, layers/*/wq";
  filter.setAttribute("aria-label", "filter arrays by name");
  filter.title = "a part of the name, case-insensitive; * matches within one path component";
  row.append(pick, filter, node("span", "sv-x-pickcount"));
  return row;
}

/**
 * One option of the picker: the leaf's short label, its value, spec and op.
 * @param {ArrayItem} item
 * @returns {HTMLOptionElement}
 */
function arrayOption(item) {
  const extra = item.op ? ` · ${item.op}` : "";
  const reshard = item.reshard ? " · reshard" : "";
  const text = `${item.label} · ${item.value} · ${item.spec_str}${extra}${reshard}`;
  const option = /** @type {HTMLOptionElement} */ (node("option", "", text));
  option.value = item.id;
  option.title = item.name;
  return option;
}

/**
 * A test of names for a filter's text: a case-insensitive part of the name, where `*` matches
 * within one path component (so "layers/" + "*" + "/wq" finds every layer's wq); empty text
 * matches every name.
 * @param {string} text
 * @returns {(name: string) => boolean}
 */
function nameMatcher(text) {
  const wanted = text.trim();
  if (!wanted) return () => true;
  const escape = (/** @type {string} */ part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const pattern = new RegExp(wanted.split("*").map(escape).join("[^/]*"), "i");
  return (name) => pattern.test(name);
}

/**
 * Show only the options whose array's name matches the filter (groups left empty hide too),
 * and say how many are shown. The selection is not changed: a picked array the filter hides
 * stays picked, and the closed picker still names it.
 * @param {HTMLElement} root
 * @param {Report} report
 * @param {string} text the filter's text
 */
function filterPicker(root, report, text) {
  const matches = nameMatcher(text);
  let shown = 0;
  let total = 0;
  for (const group of root.querySelectorAll(".sv-x-pick optgroup")) {
    let any = false;
    for (const element of group.querySelectorAll("option")) {
      const option = /** @type {HTMLOptionElement} */ (element);
      const item = report.arrays.get(option.value);
      const on = Boolean(item && matches(item.name));
      option.hidden = !on;
      any = any || on;
      shown += on ? 1 : 0;
      total += 1;
    }
    /** @type {HTMLElement} */ (group).hidden = !any;
  }
  const count = root.querySelector(".sv-x-pickcount");
  if (count) count.textContent = `${formatCount(shown)} of ${formatCount(total)} shown`;
}

/** 7131 -> "7,131". @param {number} count */
function formatCount(count) {
  return count.toLocaleString("en-US");
}

/**
 * The picked array: its facts, then its tiles (or why there are none).
 * @param {Report} report
 * @param {ArrayPayload | null} array the array payload, or null
 * @param {string} wanted the selected array id
 * @returns {HTMLElement}
 */
function arrayView(report, array, wanted) {
  const wrap = node("div", "sv-x-array");
  if (!wanted) {
    wrap.appendChild(node("div", "sv-x-dim", "no array selected"));
    return wrap;
  }
  if (!array || array.id !== wanted) {
    wrap.appendChild(node("div", "sv-x-dim sv-x-loading", "computing tiles…"));
    return wrap;
  }
  const head = node("div", "sv-x-head");
  head.append(
    node("span", "sv-x-name", array.name),
    node("span", "sv-x-dim", ` · ${array.value} `),
    node("code", "sv-x-spec", array.spec_str),
  );
  if (array.facts) head.appendChild(node("span", "sv-x-kind", array.facts.kind));
  wrap.appendChild(head);
  const item = report.arrays.get(array.id);
  if (item && item.role === "intermediate") {
    const source = report.source(item.source);
    const line = `intermediate · ${item.op}` + (source ? ` · ${source.short} · ${source.chain}` : "");
    const facts = node("div", "sv-x-facts", line);
    if (item.reshard) facts.appendChild(node("span", "sv-x-pill sv-x-rs", "reshard"));
    wrap.appendChild(facts);
  }
  if (array.message || !array.facts || !array.grid) {
    wrap.appendChild(node("div", "sv-x-message", array.message || ""));
    return wrap;
  }
  const facts = array.facts;
  const line = `${facts.tiles} · shard ${facts.shard_text} · ${facts.bytes}`;
  wrap.appendChild(node("div", "sv-x-facts", line + (facts.computed ? " · tiles computed from the spec" : "")));
  wrap.appendChild(node("div", "sv-x-facts", array.grid.summary));
  wrap.append(arrayPanels("sv-x", array, array.grid, report), ...gridNotes("sv-x", array.grid.notes));
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
/** Columns of LEDGER_HEAD aligned right (numbers). */
const LEDGER_RIGHT = new Set([1, 5, 6, 7]);
/** Where the estimate's column goes (before "group"), when there is an estimate. */
const LEDGER_EST_AT = 7;

/**
 * Mesh axes as the ledger's axes column writes them: "data, model", or "(no mesh axis)".
 * @param {string[]} axes
 */
function axesLabel(axes) {
  return axes.length ? axes.join(", ") : "(no mesh axis)";
}

/**
 * The ledger's filters: a select of the kinds present, one of the axes groups present (each
 * labelled as the ledger labels it, valued by its axes as JSON), and how many rows are shown.
 * Nothing for an empty ledger.
 * @param {Report} report
 * @returns {HTMLElement[]}
 */
function ledgerFilters(report) {
  const collectives = report.payload.collectives;
  if (!collectives.length) return [];
  /** @type {Map<string, string>} */
  const kinds = new Map(collectives.map((c) => [c.kind, c.kind]));
  /** @type {Map<string, string>} */
  const axes = new Map(collectives.map((c) => [JSON.stringify(c.axes), axesLabel(c.axes)]));
  const bar = node("div", "sv-x-lfilters");
  bar.append(
    filterSelect("sv-x-lkind", "collective kind", "all kinds", kinds),
    filterSelect("sv-x-laxes", "mesh axes", "all axes", axes),
    node("span", "sv-x-lcount"),
  );
  return [bar];
}

/**
 * A select whose first option ("" valued) shows everything.
 * @param {string} className
 * @param {string} name what it filters by, for screen readers
 * @param {string} all the first option's text
 * @param {Map<string, string>} choices value -> text, in order
 * @returns {HTMLSelectElement}
 */
function filterSelect(className, name, all, choices) {
  const select = /** @type {HTMLSelectElement} */ (node("select", className));
  select.setAttribute("aria-label", `filter the ledger by ${name}`);
  for (const [value, text] of [["", all], ...choices]) {
    const option = /** @type {HTMLOptionElement} */ (node("option", "", text));
    option.value = value;
    select.appendChild(option);
  }
  return select;
}

/**
 * Hide the ledger rows of another kind or other axes than the filters', and say how many
 * rows are shown. A selected row that is hidden stays selected (its details still show).
 * @param {HTMLElement} root
 * @param {Report} report
 * @param {string} kind a kind, or "" for all
 * @param {string} axes axes as JSON, or "" for all
 */
function filterLedger(root, report, kind, axes) {
  const rows = root.querySelectorAll(".sv-x-coll");
  let shown = 0;
  for (const element of rows) {
    const row = /** @type {HTMLElement} */ (element);
    const collective = report.payload.collectives[Number(row.dataset.index)];
    const on = (!kind || collective.kind === kind) && (!axes || JSON.stringify(collective.axes) === axes);
    row.hidden = !on;
    shown += on ? 1 : 0;
  }
  const count = root.querySelector(".sv-x-lcount");
  if (count) count.textContent = `${formatCount(shown)} of ${formatCount(rows.length)} rows`;
}

/**
 * The ledger: one row per collective, in program order.
 * @param {Report} report
 * @returns {HTMLElement}
 */
function ledger(report) {
  const collectives = report.payload.collectives;
  const wrap = node("div", "sv-x-ledgerwrap");
  if (!collectives.length) {
    wrap.appendChild(node("div", "sv-x-dim", "no collectives: every device computes on its own data"));
    return wrap;
  }
  const table = node("table", "sv-x-ledger");
  const headRow = node("tr", "");
  LEDGER_HEAD.forEach((title, col) => headRow.appendChild(node("th", LEDGER_RIGHT.has(col) ? "sv-x-r" : "", title)));
  const estimate = report.payload.estimate;
  if (estimate) {
    const th = node("th", "sv-x-r sv-x-est", "est.");
    th.title = `estimated seconds on ${estimate.target}: ${estimate.words}`;
    headRow.insertBefore(th, headRow.children[LEDGER_EST_AT]);
  }
  const thead = node("thead", "");
  thead.appendChild(headRow);
  const body = node("tbody", "");
  for (const collective of collectives) body.appendChild(ledgerRow(report, collective, estimate));
  table.append(thead, body);
  wrap.appendChild(table);
  return wrap;
}

/**
 * One ledger row: a button that selects the collective.
 * @param {Report} report
 * @param {CollectiveItem} collective
 * @param {EstimatePayload | null} estimate
 */
function ledgerRow(report, collective, estimate) {
  const row = node("tr", "sv-x-coll");
  row.dataset.index = String(collective.index);
  row.dataset.kind = collective.kind;
  row.setAttribute("role", "button");
  row.setAttribute("tabindex", "0");
  const [foreground, background] = report.kindColors(collective.kind);
  const kind = node("span", "sv-x-pill", collective.kind);
  kind.style.color = foreground;
  kind.style.background = background;
  const source = report.source(collective.source);
  const kindCell = node("td", "");
  kindCell.appendChild(kind);
  const inCell = node("td", "sv-x-r", collective.in_bytes_text);
  inCell.title = `${collective.in_bytes_exact} in, ${collective.out_bytes_exact} out`;
  const movedCell = node("td", "sv-x-r", collective.moved_bytes_text);
  movedCell.title = `${collective.moved_bytes_exact} moved per device (ring model)`;
  const sourceCell = node("td", "sv-x-src");
  if (source) {
    const code = node("code", "", source.short);
    code.title = source.location;
    const chain = node("span", "sv-x-chain", source.chain);
    chain.title = source.chain;
    sourceCell.append(code, chain);
  } else {
    sourceCell.appendChild(node("span", "sv-x-dim", "?"));
  }
  const cells = [
    node("td", "sv-x-mark"),
    node("td", "sv-x-r", String(collective.index + 1)),
    kindCell,
    node("td", "sv-x-axes", axesLabel(collective.axes)),
    node("td", "sv-x-mono", collective.operand),
    inCell,
    movedCell,
    node("td", "sv-x-r", String(collective.group_size)),
    node("td", collective.user_written ? "sv-x-user" : "sv-x-dim", collective.user_written ? "user" : "partitioner"),
    sourceCell,
  ];
  if (estimate) cells.splice(LEDGER_EST_AT, 0, estimateCell(collective, estimate));
  row.append(...cells);
  return row;
}

/**
 * A collective's estimated time, with how it was estimated on hover.
 * @param {CollectiveItem} collective
 * @param {EstimatePayload} estimate
 */
function estimateCell(collective, estimate) {
  const seconds = collective.estimated_seconds;
  if (seconds === null || collective.estimated_text === null) return node("td", "sv-x-r sv-x-dim", "—");
  const cell = node("td", "sv-x-r sv-x-est", collective.estimated_text);
  cell.dataset.seconds = String(seconds);
  cell.title = `estimated (${estimate.words}): ${collective.estimate_formula}`;
  return cell;
}

/**
 * The selected collective: what it moves, its groups, where it came from, what caused it.
 * @param {Report} report
 * @param {number} position the selected ledger position, or NO_SELECTION
 * @returns {HTMLElement}
 */
function details(report, position) {
  const box = node("div", "sv-x-details");
  const collective = report.payload.collectives[position];
  if (!collective) {
    const hint =
      "Click a collective to see its device groups on the mesh, its source line and the reshard that caused it.";
    box.appendChild(node("div", "sv-x-dim", hint));
    return box;
  }
  box.dataset.index = String(position);
  box.appendChild(
    node(
      "div",
      "sv-x-dtitle",
      `#${position + 1} ${collective.kind} over ${collective.axes_text} · ${collective.name}`,
    ),
  );
  const list = node("dl", "sv-x-dl");
  /** @param {string} term @param {string | HTMLElement} value @param {string} [className] */
  const add = (term, value, className) => {
    const dd = node("dd", className || "");
    if (typeof value === "string") dd.textContent = value;
    else dd.appendChild(value);
    list.append(node("dt", "", term), dd);
  };
  add("operand", `${collective.in_value} → ${collective.out_value}`);
  const inOut = `${collective.in_bytes_exact} in · ${collective.out_bytes_exact} out`;
  add("bytes", `${inOut} · ${collective.moved_bytes_exact} moved per device`);
  const estimate = report.payload.estimate;
  if (collective.estimated_text !== null && estimate) {
    const line = node("span", "sv-x-est");
    line.append(`${collective.estimated_text} on ${estimate.target} `, node("span", "sv-x-dim", `(${estimate.words})`));
    if (collective.estimate_formula) line.append(node("div", "sv-x-mono sv-x-dim", collective.estimate_formula));
    add("estimated", line);
  }
  add("origin", collective.user_written ? "written by the user (e.g. in shard_map)" : "inserted by the partitioner");
  if (collective.op_name) add("op", collective.op_name, "sv-x-mono");
  const source = report.source(collective.source);
  if (source) {
    add("source", source.location, "sv-x-mono sv-x-source");
    add("call chain", frameList(source));
  } else {
    add("source", "unknown", "sv-x-source");
  }
  add("caused by", reshardLine(report, collective));
  if (collective.why_text) add("why", whyLine(collective), "sv-x-why");
  if (collective.traffic) add("traffic", trafficWords(collective));
  const legend = node("div", "sv-x-legend");
  if (collective.groups !== null) {
    const groups = report.payload.groupings[collective.groups];
    groupLegend(report, legend, groups.length, report.payload.group_labels[collective.groups]);
    add("groups", collective.groups_text);
  } else if (collective.pairs !== null) {
    const pairs = report.payload.pairings[collective.pairs];
    const shown = pairs.slice(0, MAX_PAIRS).map(([source, target]) => `d${source}→d${target}`);
    const more = pairs.length > MAX_PAIRS ? ` … ${pairs.length - MAX_PAIRS} more` : "";
    legend.appendChild(node("span", "sv-x-mono", shown.join(" ") + more));
    add("pairs", `${pairs.length} source → target pair${pairs.length === 1 ? "" : "s"}`);
  } else {
    add("groups", "no replica groups");
  }
  box.append(list, legend);
  return box;
}

/**
 * Why the partitioner inserted a collective: the conversion, then the sentence (both from
 * explorer_payload.collective_text).
 * @param {CollectiveItem} collective
 */
function whyLine(collective) {
  const line = node("span", "");
  if (collective.why_change) line.append(node("div", "sv-x-mono", collective.why_change));
  line.append(collective.why_text || "");
  return line;
}

/**
 * A call chain, one frame per line: function at file:line.
 * @param {SourceInfo} source
 */
function frameList(source) {
  const list = node("ul", "sv-x-frames");
  for (const [file, line, fn] of source.frames) {
    const item = node("li", "");
    item.append(node("span", "sv-x-fnname", fn), node("span", "sv-x-dim", " at "), node("span", "", `${file}:${line}`));
    list.appendChild(item);
  }
  return list;
}

/**
 * The reshard that caused a collective, with a button to the intermediate's tiles.
 * @param {Report} report
 * @param {CollectiveItem} collective
 */
function reshardLine(report, collective) {
  const line = node("span", "sv-x-reshard");
  if (!collective.reshard) {
    line.append(node("span", "sv-x-dim", "no reshard recorded"));
    return line;
  }
  line.append("resharding ", node("code", "", collective.reshard));
  const item = collective.reshard_array ? report.arrays.get(collective.reshard_array) : null;
  if (item) {
    line.append(node("span", "sv-x-dim", ` · ${item.value} ${item.spec_str} `));
    const go = node("button", "sv-x-goto", "show its tiles");
    go.dataset.array = item.id;
    go.setAttribute("type", "button");
    line.appendChild(go);
  } else {
    line.append(node("span", "sv-x-dim", " (not among the recorded intermediates)"));
  }
  return line;
}

/**
 * A swatch per device group in the group's colour, and how many more there are.
 * @param {Report} report
 * @param {HTMLElement} legend
 * @param {number} count how many groups
 * @param {string[]} labels the first groups' device ids in words
 */
function groupLegend(report, legend, count, labels) {
  labels.forEach((text, group) => {
    const item = node("span", "sv-x-legitem");
    item.dataset.group = String(group);
    const swatch = node("span", "sv-x-sw");
    swatch.style.background = report.groupColor(group);
    swatch.style.borderColor = darker(report.groupColor(group));
    item.append(swatch, text);
    legend.appendChild(item);
  });
  if (count > labels.length) legend.appendChild(node("span", "sv-x-dim", `… ${count - labels.length} more groups`));
}

// --------------------------------------------------------------------------------------------
// Memory pane

/**
 * Per-device bars stacked by part, with the peak as a dashed line.
 * @param {Report} report
 * @returns {HTMLElement}
 */
function memoryPane(report) {
  const memory = report.payload.memory;
  const estimate = report.payload.estimate;
  const pane = node("section", "sv-x-pane sv-x-mempane");
  pane.appendChild(node("h4", "", "Memory per device"));
  if (memory.same) pane.appendChild(node("div", "sv-x-memsame", memory.same));
  const host = memory.host;
  if (host) pane.appendChild(node("div", "sv-x-hosttext", host.text));
  // With host bars below, both charts share a left margin so each device's bars line up.
  const left = Math.max(...[memory.scale.text, ...(host ? [host.scale.text, "host"] : [])].map((t) => textWidth(t, 10))) + 8;
  pane.appendChild(memoryBars(memory, estimate, left));
  pane.appendChild(memoryLegend(memory, estimate));
  pane.appendChild(node("div", "sv-x-note", memory.note));
  if (host) pane.appendChild(hostMemory(memory, host, left));
  if (estimate) {
    const line = node("div", "sv-x-hbmline");
    if (estimate.fits !== null) line.dataset.fits = estimate.fits ? "1" : "0";
    const word = estimate.fits === false ? "sv-x-bad" : "sv-x-ok";
    const where = memory.scale.hbm_on_scale ? "the blue dash-dot line" : "far above these bars";
    line.append(
      node("span", "sv-x-estword", "estimate"),
      ` HBM on ${estimate.target}: `,
      node("span", estimate.fits === null ? "" : word, estimate.hbm_text),
      node("span", "sv-x-dim", ` (${where}; ${estimate.words})`),
    );
    pane.appendChild(line);
  }
  pane.appendChild(node("div", "sv-x-memline"));
  return pane;
}

/**
 * The bars: one per device, its parts stacked, the peak dashed and the target's HBM when near.
 * @param {MemoryPayload} memory
 * @param {EstimatePayload | null} estimate
 * @param {number} left where the bars start (after the scale's label)
 */
function memoryBars(memory, estimate, left) {
  const topBytes = memory.scale.bytes;
  const hbm = memory.scale.hbm_on_scale && estimate ? estimate : null;
  const same = Boolean(memory.same);
  const count = same ? 1 : memory.devices.length;
  const barW = Math.max(1, Math.min(26, 640 / Math.max(1, count)));
  const gap = barW >= 4 ? 1 : 0;
  const width = left + barW * count + 6;
  const height = MEM_H + 30;
  const root = svg("svg", { class: "sv-x-membars", width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  const yOf = (/** @type {number} */ nbytes) => 4 + MEM_H - (MEM_H * nbytes) / topBytes;
  root.appendChild(svgLabel("sv-x-tick", left - 4, 10, memory.scale.text, "end"));
  root.appendChild(svgLabel("sv-x-tick", left - 4, MEM_H + 4, "0", "end"));
  root.appendChild(svg("path", { d: `M${left} ${MEM_H + 4}h${barW * count}`, stroke: "#afb8c1" }));
  memory.devices.slice(0, count).forEach((device, position) => {
    // Identical bars are drawn once, for every device (not a pick of one device).
    const bar = same ? svg("g", { class: "sv-x-memall" }) : svg("g", { class: "sv-x-mem", "data-device": device });
    addTitle(bar, `${same ? memory.same : `d${device}`}: ${memory.labels[memory.label_of[position]][0]}`);
    const x = left + position * barW;
    bar.appendChild(svg("rect", { class: "sv-x-memhit", x, y: 4, width: barW, height: MEM_H }));
    let below = 0;
    memory.parts.forEach((part, partAt) => {
      const nbytes = memory.bytes[position][partAt];
      if (nbytes <= 0) return;
      const bottom = yOf(below);
      const top = yOf(below + nbytes);
      const box = { x, y: top, width: Math.max(0.5, barW - gap), height: bottom - top };
      bar.appendChild(
        svg("rect", {
          class: "sv-x-seg",
          "data-part": part,
          "data-bytes": nbytes,
          ...box,
          fill: memory.colors[partAt],
        }),
      );
      below += nbytes;
    });
    root.appendChild(bar);
  });
  root.appendChild(svg("path", { class: "sv-x-peak", d: `M${left} ${yOf(memory.peak_bytes)}h${barW * count}` }));
  if (hbm) {
    const line = svg("path", {
      class: "sv-x-hbm",
      "data-hbm": hbm.hbm_bytes,
      d: `M${left} ${yOf(hbm.hbm_bytes)}h${barW * count}`,
    });
    addTitle(line, `HBM per device on ${hbm.target}: ${hbm.hbm_bytes_exact} (estimate)`);
    root.appendChild(line);
  }
  root.appendChild(svg("path", { class: "sv-x-memmark", "data-y": MEM_H + 5, d: "" }));
  if (same) {
    root.appendChild(svgLabel("sv-x-tick", left + barW / 2, MEM_H + 16, "all", "middle"));
  } else if (count <= 32 && barW >= 12) {
    memory.devices.forEach((device, position) => {
      root.appendChild(svgLabel("sv-x-tick", left + position * barW + barW / 2, MEM_H + 16, String(device), "middle"));
    });
  } else if (count) {
    root.appendChild(svgLabel("sv-x-tick", left, MEM_H + 16, `d${memory.devices[0]}`));
    root.appendChild(svgLabel("sv-x-tick", left + barW * count, MEM_H + 16, `d${memory.devices[count - 1]}`, "end"));
  }
  const axis = same ? "every device" : "device";
  root.appendChild(svgLabel("sv-x-axis", left + (barW * count) / 2, MEM_H + 28, axis, same ? "start" : "middle"));
  return root;
}

/**
 * A swatch per part, the peak line and (when on the scale) the target's HBM line.
 * @param {MemoryPayload} memory
 * @param {EstimatePayload | null} estimate
 */
function memoryLegend(memory, estimate) {
  const legend = node("div", "sv-x-legend");
  memory.parts.forEach((part, partAt) => {
    const item = node("span", "sv-x-legitem");
    const swatch = node("span", "sv-x-sw");
    swatch.style.background = memory.colors[partAt];
    item.append(swatch, part);
    legend.appendChild(item);
  });
  const peak = node("span", "sv-x-legitem");
  peak.append(node("span", "sv-x-sw sv-x-sw-peak"), `peak ${memory.peak_text} = ${memory.peak_definition}`);
  legend.appendChild(peak);
  if (memory.scale.hbm_on_scale && estimate) {
    const hbm = node("span", "sv-x-legitem");
    hbm.append(node("span", "sv-x-sw sv-x-sw-hbm"), `HBM ${estimate.hbm_bytes_text} per device on the target`);
    legend.appendChild(hbm);
  }
  return legend;
}

/**
 * Host memory per device, apart from HBM: its bars (by role, on a scale of their own, never
 * counted against the HBM line), their legend, whose figures they are, the leaves kept on
 * host and the host transfers per step.
 * @param {MemoryPayload} memory
 * @param {HostMemoryPayload} host
 * @param {number} left where the bars start, as the HBM bars'
 * @returns {HTMLElement}
 */
function hostMemory(memory, host, left) {
  const box = node("div", "sv-x-hostmem");
  box.dataset.bytes = String(host.total);
  box.appendChild(node("div", "sv-x-hosthead", host.heading));
  box.appendChild(hostBars(memory, host, left));
  const legend = node("div", "sv-x-legend");
  host.roles.forEach((role, at) => {
    // Only the roles some device holds on host.
    if (!host.bytes.some((row) => row[at] > 0)) return;
    const item = node("span", "sv-x-legitem");
    const swatch = node("span", "sv-x-sw sv-x-sw-host");
    swatch.style.background = host.colors[at];
    item.append(swatch, `host · ${role}`);
    legend.appendChild(item);
  });
  box.appendChild(legend);
  box.appendChild(node("div", "sv-x-note sv-x-hostsource", `host figures: ${host.source}`));
  if (host.mismatch) box.appendChild(node("div", "sv-x-note sv-x-hostmismatch", `differs: ${host.mismatch}`));
  if (host.leaves.length) {
    const table = node("table", "sv-x-hostleaves");
    const head = node("tr", "");
    for (const title of ["on host", "role", "memory", "per device"]) head.appendChild(node("th", "", title));
    table.appendChild(head);
    for (const [path, role, kind, text, exact] of host.leaves) {
      const row = node("tr", "sv-x-hostleaf");
      row.dataset.memory = kind;
      row.append(node("td", "sv-x-mono", path), node("td", "", role), node("td", "", kind));
      const bytes = node("td", "sv-x-num", text);
      bytes.title = exact;
      row.appendChild(bytes);
      table.appendChild(row);
    }
    box.appendChild(table);
  }
  const transfers = host.transfers;
  if (transfers) {
    const line = node("div", "sv-x-hosttransfers", transfers.text);
    line.dataset.toHost = String(transfers.to_host_bytes);
    line.dataset.toDevice = String(transfers.to_device_bytes);
    line.title = [
      ...transfers.rows.map(([name, role, direction, , exact, where]) => `${name} (${role}) ${direction}: ${exact} per step · ${where}`),
      transfers.note,
    ].join("\n");
    box.appendChild(line);
  }
  return box;
}

/**
 * The host bars: one per device, under its HBM bar, its roles stacked, on a scale of their own.
 * @param {MemoryPayload} memory
 * @param {HostMemoryPayload} host
 * @param {number} left
 */
function hostBars(memory, host, left) {
  const topBytes = Math.max(1, host.scale.bytes);
  const same = Boolean(memory.same);
  const count = same ? 1 : memory.devices.length;
  const barW = Math.max(1, Math.min(26, 640 / Math.max(1, count)));
  const gap = barW >= 4 ? 1 : 0;
  const width = left + barW * count + 6;
  const height = HOST_H + 18;
  const root = svg("svg", {
    class: "sv-x-membars sv-x-hostbars",
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: "img",
    "aria-label": "host memory per device",
  });
  const yOf = (/** @type {number} */ nbytes) => 4 + HOST_H - (HOST_H * nbytes) / topBytes;
  root.appendChild(svgLabel("sv-x-tick", left - 4, 10, host.scale.text, "end"));
  root.appendChild(svgLabel("sv-x-tick sv-x-hostword", left - 4, 4 + HOST_H / 2 + 4, "host", "end"));
  root.appendChild(svgLabel("sv-x-tick", left - 4, HOST_H + 4, "0", "end"));
  root.appendChild(svg("path", { d: `M${left} ${HOST_H + 4}h${barW * count}`, stroke: "#afb8c1" }));
  memory.devices.slice(0, count).forEach((device, position) => {
    const bar = same
      ? svg("g", { class: "sv-x-memall sv-x-hostbar" })
      : svg("g", { class: "sv-x-mem sv-x-hostbar", "data-device": device });
    bar.dataset.bytes = String(host.totals[position]);
    addTitle(bar, `${same ? memory.same : `d${device}`}: ${host.labels[host.label_of[position]][0]}`);
    const x = left + position * barW;
    bar.appendChild(svg("rect", { class: "sv-x-memhit", x, y: 4, width: barW, height: HOST_H }));
    let below = 0;
    host.roles.forEach((role, at) => {
      const nbytes = host.bytes[position][at];
      if (nbytes <= 0) return;
      const bottom = yOf(below);
      const top = yOf(below + nbytes);
      bar.appendChild(
        svg("rect", {
          class: "sv-x-seg sv-x-hostseg",
          "data-role": role,
          "data-bytes": nbytes,
          x,
          y: top,
          width: Math.max(0.5, barW - gap),
          height: bottom - top,
          fill: host.colors[at],
        }),
      );
      below += nbytes;
    });
    root.appendChild(bar);
  });
  root.appendChild(svg("path", { class: "sv-x-memmark", "data-y": HOST_H + 5, d: "" }));
  if (same) root.appendChild(svgLabel("sv-x-tick", left + barW / 2, HOST_H + 16, "all", "middle"));
  return root;
}

// --------------------------------------------------------------------------------------------
// Status and error: always shown, even before a payload

/**
 * The status line and the error box, and how to bring them up to date.
 * @param {Model} model
 */
function statusView(model) {
  const bar = node("div", "sv-x-statusbar");
  const status = node("span", "sv-x-status");
  status.setAttribute("role", "status");
  bar.append(status);
  const staleLine = node("span", "sv-x-staleline");
  const fixed = node("div", "sv-x-fixed");
  const changes = node("div", "sv-x-changes");
  bar.append(staleLine);
  const errorBox = node("div", "sv-x-error");
  errorBox.setAttribute("role", "alert");
  function draw() {
    // While a control is wrong the panes show the last valid configuration: say so, not "done".
    const stale = String(model.get("stale") || "");
    const state = stale ? "stale" : String(model.get("status") || "");
    status.dataset.status = state;
    status.textContent = STATUS_TEXT[state] || "";
    status.hidden = !state;
    staleLine.textContent = stale;
    staleLine.hidden = !stale;
    const changed = String(model.get("changes") || "");
    changes.textContent = changed;
    changes.hidden = !changed;
    const fixedWords = String(model.get("fixed") || "");
    fixed.textContent = fixedWords;
    fixed.hidden = !fixedWords;
    const error = String(model.get("error") || "");
    errorBox.textContent = error;
    errorBox.hidden = !error;
  }
  return { elements: [bar, fixed, changes, errorBox], draw };
}

// --------------------------------------------------------------------------------------------
// Arrays kept for the current report (prefetch)

/**
 * The JSON text of arrays already received for one generation of the report: id -> the text
 * the `array` trait would carry. A new generation empties it.
 */
class ArrayCache {
  /** @param {number} generation */
  constructor(generation) {
    /** @type {Map<string, string>} */
    this.kept = new Map();
    this.generation = generation;
    /** The `array` text last kept (each text is parsed once). */
    this.lastTrait = "";
  }

  /**
   * The kept arrays, emptied first when the report has changed since they were kept, with
   * the `array` trait's JSON added.
   * @param {number} generation the current one
   * @param {string} traitText the `array` trait
   * @returns {Map<string, string>}
   */
  current(generation, traitText) {
    if (this.generation !== generation) {
      this.kept = new Map();
      this.generation = generation;
      this.lastTrait = "";
    }
    if (traitText && traitText !== this.lastTrait) {
      this.lastTrait = traitText;
      const array = parse(traitText);
      if (array && typeof array.id === "string") this.kept.set(array.id, traitText);
    }
    return this.kept;
  }

  /**
   * Keep a batch of prefetched arrays (pairs that are not [id, text] are skipped).
   * @param {Map<string, string>} into the current kept arrays
   * @param {unknown[]} pairs
   */
  static keep(into, pairs) {
    for (const pair of pairs) {
      if (Array.isArray(pair) && typeof pair[0] === "string" && typeof pair[1] === "string") {
        into.set(pair[0], pair[1]);
      }
    }
  }
}

// --------------------------------------------------------------------------------------------
// Findings pane

/**
 * The Findings pane's state for the current report, or why there is none to draw ("" for none).
 * @param {string} text the `findings` trait
 * @param {number} generation the current one
 * @returns {FindingsState | string}
 */
function readFindings(text, generation) {
  /** @type {FindingsState | null} */
  const findings = parse(text);
  if (!findings) return "";
  if (findings.version !== FINDINGS_VERSION) {
    return `this front end reads findings version ${FINDINGS_VERSION}, got ${findings.version}`;
  }
  return findings.generation === generation ? findings : "";
}

/**
 * The pane's findings, each with its position and links.
 * @param {FindingsState} findings
 * @returns {FindingItem[]}
 */
function findingItems(findings) {
  const items = findings.view ? findings.view.items : [];
  return items.map((said, index) => ({ index, said, link: findings.links[index] }));
}

/**
 * A severity badge in the static view's colours.
 * @param {FindingsState} findings
 * @param {string} severity
 * @param {string} text
 */
function severityBadge(findings, severity, text) {
  const badge = node("span", `sv-x-sev sv-x-sev-${severity}`, text);
  badge.dataset.severity = severity;
  const colors = findings.severity_colors[severity];
  if (colors) {
    badge.style.color = colors[0];
    badge.style.background = colors[1];
    badge.style.borderColor = colors[2];
  }
  return badge;
}

/**
 * The pane: a count badge (alone, collapsed, when there is nothing to list), then one row per
 * finding; the picked one opens to say why, where, its fix and what the fix did.
 * @param {FindingsState | string} findings
 * @param {number} selected the picked finding, or NO_SELECTION
 * @returns {HTMLElement | null}
 */
function findingsPane(findings, selected) {
  if (!findings) return null;
  const pane = node("section", "sv-x-pane sv-x-findpane");
  const head = node("h4", "", "Findings ");
  pane.appendChild(head);
  if (typeof findings === "string") {
    pane.appendChild(node("div", "sv-x-message", findings));
    return pane;
  }
  const view = findings.view;
  const items = findingItems(findings);
  pane.dataset.state = findings.state;
  pane.dataset.count = String(items.length);
  const count = node("span", "sv-x-fcount", view ? view.count : findings.words);
  count.dataset.state = findings.state;
  count.title = view ? view.checked : findings.checked;
  head.appendChild(count);
  if (!view || !items.length) {
    pane.classList.add("sv-x-collapsed");
    return pane;
  }
  pane.appendChild(
    node("div", "sv-x-dim sv-x-fhint", "Click a finding to light up its collectives, arrays and devices in the panes below."),
  );
  const list = node("div", "sv-x-flist");
  for (const item of items) list.appendChild(findingRow(findings, item, item.index === selected));
  pane.appendChild(list);
  const said = [view.untried, ...view.notes].filter(Boolean);
  if (said.length) {
    const notes = node("div", "sv-x-fnotes");
    for (const note of said) notes.appendChild(node("div", "", `note: ${note}`));
    pane.appendChild(notes);
  }
  return pane;
}

/**
 * One finding: a row that picks it, and when picked what it is about and its fix.
 * @param {FindingsState} findings
 * @param {FindingItem} item
 * @param {boolean} open
 */
function findingRow(findings, item, open) {
  const said = item.said;
  const wrap = node("div", `sv-x-finding sv-x-at-${said.severity}`);
  wrap.dataset.finding = String(item.index);
  wrap.dataset.kind = said.kind;
  wrap.dataset.severity = said.severity;
  const colors = findings.severity_colors[said.severity];
  if (colors) wrap.style.borderLeftColor = colors[2];
  const head = node("div", "sv-x-fhead");
  head.dataset.finding = String(item.index);
  head.setAttribute("role", "button");
  head.setAttribute("tabindex", "0");
  setPressed(head, open);
  head.append(severityBadge(findings, said.severity, said.severity), node("span", "sv-x-fkind", said.kind));
  head.append(node("span", "sv-x-ftitle", said.title));
  wrap.appendChild(head);
  if (!open) return wrap;
  const body = node("div", "sv-x-fbody");
  body.appendChild(node("p", "sv-x-why", said.why));
  const list = node("dl", "sv-x-dl sv-x-fwhere");
  list.append(node("dt", "", "cost"), node("dd", "", said.cost));
  for (const { label, text } of said.where) {
    const dd = node("dd", "");
    if (label === "code") dd.appendChild(node("code", "", text));
    else dd.textContent = text;
    list.append(node("dt", "", label), dd);
  }
  body.appendChild(list);
  body.appendChild(fixBlock(item));
  wrap.appendChild(body);
  return wrap;
}

/**
 * A finding's fix: what to change, the code, the before/after of compiling it, and the button.
 * @param {FindingItem} item
 */
function fixBlock(item) {
  const block = node("div", "sv-x-fix");
  const fix = item.said.fix;
  if (!fix) {
    block.append(node("b", "", "fix "), node("span", "sv-x-dim", item.said.no_fix));
    return block;
  }
  block.dataset.fix = fix.kind;
  block.append(node("b", "", "fix "), fix.description);
  block.appendChild(node("pre", "sv-x-fixcode", fix.code));
  const check = item.said.check;
  if (check) {
    const verdict = node("div", `sv-x-verdict ${check.helps ? "sv-x-helps" : "sv-x-nohelp"}`);
    verdict.append(node("b", "", check.word), check.verdict ? `: ${check.verdict}` : "");
    verdict.append(node("span", "sv-x-dim", " (compiled before and after, compile-only; per device)"));
    const table = node("table", "sv-x-ba");
    const top = node("tr", "");
    top.append(node("th", "", ""), node("th", "sv-x-r", "before"), node("th", "sv-x-r", "after"));
    table.appendChild(top);
    for (const { key, label, before, after } of check.rows) {
      const row = node("tr", "sv-x-barow");
      row.dataset.row = key;
      if (before !== after) row.dataset.changed = "1";
      row.append(node("td", "", label), node("td", "sv-x-r", before), node("td", "sv-x-r", after));
      table.appendChild(row);
    }
    block.append(verdict, table);
  }
  const act = node("div", "sv-x-tryline");
  const { route, how } = item.link;
  if (route) {
    const button = node("button", "sv-x-tryfix", "try this fix");
    button.setAttribute("type", "button");
    button.dataset.finding = String(item.index);
    button.title = how;
    act.append(button, node("span", "sv-x-dim", ` ${how}`));
  } else {
    act.append(node("span", "sv-x-dim", how));
  }
  block.appendChild(act);
  return block;
}

/**
 * What the picked finding lights up: its ledger rows, devices (mesh cells and memory bars)
 * and, in the arrays pane, a chip per array that picks it.
 * @param {HTMLElement} root
 * @param {Report} report
 * @param {FindingItem | null} item the picked finding, or null
 * @param {string} array the picked array id
 */
function highlightFinding(root, report, item, array) {
  const mark = item ? item.link.highlight : null;
  const rows = new Set(mark ? mark.collectives : []);
  for (const element of root.querySelectorAll(".sv-x-coll")) {
    element.classList.toggle(FLAGGED, rows.has(Number(/** @type {HTMLElement} */ (element).dataset.index)));
  }
  const devices = new Set(mark ? mark.devices : []);
  for (const element of root.querySelectorAll(".sv-x-dev, .sv-x-mem")) {
    element.classList.toggle(FLAGGED, devices.has(Number(/** @type {SVGElement} */ (element).dataset.device)));
  }
  const arrays = mark ? mark.arrays.filter((id) => report.arrays.has(id)) : [];
  const flagged = new Set(arrays);
  for (const element of root.querySelectorAll(".sv-x-pick option")) {
    const option = /** @type {HTMLOptionElement} */ (element);
    option.classList.toggle(FLAGGED, flagged.has(option.value));
  }
  const slot = root.querySelector(".sv-x-fchips");
  if (!slot) return;
  slot.replaceChildren();
  if (!item || !arrays.length) return;
  slot.appendChild(node("span", "sv-x-dim", `finding ${item.index + 1} (${item.said.kind}): `));
  for (const id of arrays) {
    const entry = report.arrays.get(id);
    if (!entry) continue;
    const chip = node("button", `sv-x-goto sv-x-fchip ${FLAGGED}`, `${entry.name} · ${entry.spec_str}`);
    chip.setAttribute("type", "button");
    chip.dataset.array = id;
    chip.title = `${entry.role} ${entry.name} · ${entry.value} ${entry.spec_str}`;
    setPressed(chip, id === array);
    slot.appendChild(chip);
  }
}

// --------------------------------------------------------------------------------------------
// Highlighting: what the selections light up in each pane

/**
 * The mesh: the selected device, and the selected collective's groups (their colours) or
 * pairs (arrows between the cells that send and receive).
 * @param {HTMLElement} root
 * @param {Report} report
 * @param {number} device the selected device, or NO_SELECTION
 * @param {CollectiveItem | null} collective the selected collective, or null
 */
function highlightMesh(root, report, device, collective) {
  const groupOf = collective && collective.groups !== null ? report.groupOf[collective.groups] : null;
  const paired = collective && collective.pairs !== null ? report.inPairs[collective.pairs] : null;
  for (const element of root.querySelectorAll(".sv-x-dev")) {
    const cell = /** @type {SVGElement} */ (element);
    const id = Number(cell.dataset.device);
    setPressed(cell, id === device);
    const fill = /** @type {SVGElement} */ (cell.querySelector(".sv-x-fill"));
    delete cell.dataset.group;
    cell.classList.remove("sv-x-out", "sv-x-ingroup");
    fill.setAttribute("fill", report.color(id));
    cell.style.removeProperty(RING);
    if (!collective || (!groupOf && !paired)) continue;
    const group = groupOf ? groupOf.get(id) : undefined;
    if (group !== undefined) {
      cell.dataset.group = String(group);
      cell.classList.add("sv-x-ingroup");
      fill.setAttribute("fill", report.groupColor(group));
      cell.style.setProperty(RING, darker(report.groupColor(group)));
    } else if (paired && paired.has(id)) {
      const [outline, background] = report.kindColors(collective.kind);
      cell.classList.add("sv-x-ingroup");
      fill.setAttribute("fill", background);
      cell.style.setProperty(RING, outline);
    } else {
      cell.classList.add("sv-x-out");
    }
  }
  drawPairs(root, paired && collective && collective.pairs !== null ? report.payload.pairings[collective.pairs] : []);
  drawTraffic(root, report, collective);
}

/**
 * The ledger: the selected row, and a mark on the rows the device takes part in.
 * @param {HTMLElement} root
 * @param {Report} report
 * @param {number} device
 * @param {number} selected the selected ledger position
 * @returns {number} how many collectives the device takes part in
 */
function highlightLedger(root, report, device, selected) {
  let involved = 0;
  for (const element of root.querySelectorAll(".sv-x-coll")) {
    const row = /** @type {HTMLElement} */ (element);
    const position = Number(row.dataset.index);
    setPressed(row, position === selected);
    const takesPart = device !== NO_SELECTION && report.involves(report.payload.collectives[position], device);
    if (takesPart) involved += 1;
    row.classList.toggle("sv-x-involved", takesPart);
    const mark = row.querySelector(".sv-x-mark");
    if (mark) mark.textContent = takesPart ? "●" : "";
  }
  return involved;
}

/**
 * The memory pane: the device's bar, and a mark under it.
 * @param {HTMLElement} root
 * @param {number} device
 */
function highlightMemory(root, device) {
  // The HBM bars and (for host memory) the host bars: each chart marks its own bar.
  for (const chart of root.querySelectorAll(".sv-x-membars")) {
    let markPath = "";
    const mark = chart.querySelector(".sv-x-memmark");
    const markY = Number(mark?.getAttribute("data-y") ?? MEM_H + 5);
    for (const bar of chart.querySelectorAll(".sv-x-mem")) {
      const on = Number(/** @type {SVGElement} */ (bar).dataset.device) === device;
      bar.classList.toggle(SELECTED, on);
      if (on) {
        const hit = /** @type {SVGRectElement} */ (bar.querySelector(".sv-x-memhit"));
        const x = Number(hit.getAttribute("x")) + Number(hit.getAttribute("width")) / 2;
        markPath = `M${x} ${markY}l-4 6h8z`;
      }
    }
    if (mark) mark.setAttribute("d", markPath);
  }
}

/**
 * The picked array's side of the links only: the tiles `device` holds and the readout of its
 * tile. A new array redraws only this pane, so only this pane is updated (at 512 devices the
 * whole of highlight() costs a few ms and a restyle of every pane).
 * @param {HTMLElement} root
 * @param {ArrayPayload | null} array the drawn array
 * @param {number} device
 */
function highlightTiles(root, array, device) {
  selectTilesOf(root.querySelectorAll(".sv-x-tile"), device);
  const readout = root.querySelector(".sv-x-tileline");
  if (!readout || !array || !array.tiles) return;
  const tile = array.tiles.find((candidate) => candidate.devices.includes(device));
  readout.textContent =
    device === NO_SELECTION
      ? ""
      : tile
        ? `d${device} holds ${array.name}${formatIndex(tile.index)}: shard ${array.shards[tile.shard]}`
        : `d${device} holds no part of ${array.name}`;
}

/**
 * The one-line readouts under the mesh and the memory bars.
 * @param {HTMLElement} root
 * @param {Report} report
 * @param {number} device
 * @param {number} involved how many collectives the device takes part in
 */
function drawReadouts(root, report, device, involved) {
  const deviceLine = root.querySelector(".sv-x-devline");
  const memoryLine = root.querySelector(".sv-x-memline");
  const none = device === NO_SELECTION;
  if (deviceLine) {
    const where = report.coordLabel(device);
    const total = report.payload.collectives.length;
    deviceLine.textContent = none
      ? "Click a device to see its tiles, its memory and its collectives."
      : `d${device}${where ? ` (${where})` : ""} takes part in ${involved} of ${total} collectives`;
  }
  if (memoryLine) {
    const memory = report.payload.memory;
    const position = memory.devices.indexOf(device);
    const host = memory.host ? ` · ${memory.host.labels[memory.host.label_of[position]][1]}` : "";
    memoryLine.textContent =
      none || position < 0 ? "" : `d${device}: ${memory.labels[memory.label_of[position]][1]}${host}`;
  }
}

// --------------------------------------------------------------------------------------------
// Event routing: clicks, keys and selects inside the root

/**
 * @typedef {{ device(id: number): void, collective(position: number): void,
 *             array(id: string): void, strategy(id: string): void,
 *             finding(index: number): void, tryFix(index: number, button: HTMLElement): void }} Picks
 */

/**
 * What a click or key press on `target` selects, if anything.
 * @param {HTMLElement} root
 * @param {EventTarget | null} target
 * @param {Picks} picks
 * @returns {(() => void) | null}
 */
function actionFor(root, target, picks) {
  const element = /** @type {Element | null} */ (target);
  if (!element || !element.closest) return null;
  /** @param {string} selector */
  const inside = (selector) => {
    const found = /** @type {HTMLElement | null} */ (element.closest(selector));
    return found && root.contains(found) ? found : null;
  };
  const tryFix = inside(".sv-x-tryfix");
  if (tryFix) return () => picks.tryFix(Number(tryFix.dataset.finding), tryFix);
  const finding = inside(".sv-x-fhead");
  if (finding) return () => picks.finding(Number(finding.dataset.finding));
  const goto = inside(".sv-x-goto");
  if (goto) return () => picks.array(goto.dataset.array || "");
  const device = inside(".sv-x-dev, .sv-x-mem");
  if (device) return () => picks.device(Number(device.dataset.device));
  const row = inside(".sv-x-coll");
  if (row) return () => picks.collective(Number(row.dataset.index));
  return null;
}

/**
 * Route clicks, Enter/Space and select changes inside `root` to `picks`.
 * @param {HTMLElement} root
 * @param {Picks} picks
 * @returns {() => void} removes the listeners
 */
function routeEvents(root, picks) {
  /** @param {Event} event */
  function onClick(event) {
    const act = actionFor(root, event.target, picks);
    if (act) act();
  }
  /** @param {KeyboardEvent} event */
  function onKey(event) {
    if (!isActivation(event)) return;
    const target = /** @type {Element} */ (event.target);
    if (target.tagName === "SELECT" || target.tagName === "BUTTON" || target.tagName === "INPUT") return;
    const act = actionFor(root, event.target, picks);
    if (act) {
      event.preventDefault();
      act();
    }
  }
  /** @param {Event} event */
  function onChange(event) {
    const select = /** @type {HTMLSelectElement} */ (event.target);
    if (select.classList.contains("sv-x-pick")) picks.array(select.value);
    else if (select.classList.contains("sv-x-strategy")) picks.strategy(select.value);
  }
  root.addEventListener("click", onClick);
  root.addEventListener("keydown", onKey);
  root.addEventListener("change", onChange);
  return () => {
    root.removeEventListener("click", onClick);
    root.removeEventListener("keydown", onKey);
    root.removeEventListener("change", onChange);
  };
}

// --------------------------------------------------------------------------------------------
// Timeline pane (only for a profiled report)

/** Px of the lane labels, of one lane and of the gap between lanes. */
const TL_LABEL = 64;
const TL_LANE = 14;
const TL_GAP = 4;
/** The lane labels' and ticks' font. */
const TL_FONT = { "font-family": "monospace", "font-size": 10, fill: "#57606a" };

/**
 * One lane of bars per device on a time axis, a legend with each kind's total, and whether
 * the times are illustrative (CPU) or real.
 * @param {TimelinePayload} timeline
 * @returns {HTMLElement}
 */
function timelinePane(timeline) {
  const pane = node("section", "sv-x-pane sv-x-tlpane");
  pane.style.overflowX = "auto"; // styled here, so the pane needs no rules in explorer.css
  pane.appendChild(node("h4", "", timeline.heading));
  const label = node("div", timeline.illustrative ? "sv-x-tllabel sv-x-illus" : "sv-x-tllabel", timeline.label);
  pane.appendChild(label);
  const axisY = timeline.lanes.length * (TL_LANE + TL_GAP) + 2;
  const width = TL_LABEL + timeline.width + 40;
  const height = axisY + 18;
  const plot = svg("svg", { class: "sv-x-tlsvg", width, height, viewBox: `0 0 ${width} ${height}` });
  timeline.lanes.forEach((lane, i) => {
    const y = i * (TL_LANE + TL_GAP);
    const group = svg("g", { class: "sv-x-tllane", "data-device": lane.device });
    group.appendChild(svg("text", { class: "sv-x-tllab", x: 0, y: y + TL_LANE - 3, ...TL_FONT }, `dev ${lane.device}`));
    for (const [x, w, kind, tip] of lane.bars) {
      const [name, color] = timeline.kinds[kind];
      const bar = svg("rect", {
        class: "sv-x-tlbar", "data-kind": name, fill: color, x: TL_LABEL + x, y, width: w, height: TL_LANE,
      });
      addTitle(bar, tip);
      group.appendChild(bar);
    }
    plot.appendChild(group);
  });
  plot.appendChild(svg("line", { x1: TL_LABEL, y1: axisY, x2: TL_LABEL + timeline.width, y2: axisY, stroke: "#8c959f" }));
  for (const [x, text] of timeline.ticks) {
    plot.appendChild(svg("line", { x1: TL_LABEL + x, y1: axisY, x2: TL_LABEL + x, y2: axisY + 3, stroke: "#8c959f" }));
    plot.appendChild(svg("text", { class: "sv-x-tltick", x: TL_LABEL + x, y: axisY + 14, "text-anchor": "middle", ...TL_FONT }, text));
  }
  pane.appendChild(plot);
  const keys = node("div", "sv-x-tllegend");
  for (const [name, color, total] of timeline.kinds) {
    const key = node("span", "sv-x-tlkey");
    key.dataset.kind = name;
    key.style.marginRight = "12px";
    const swatch = node("i", "sv-x-tlswatch");
    Object.assign(swatch.style, {
      display: "inline-block", width: "10px", height: "10px", marginRight: "4px", background: color,
    });
    key.append(swatch, `${name} ${total}`);
    keys.appendChild(key);
  }
  keys.appendChild(node("span", "sv-x-dim", "totals summed over devices"));
  pane.appendChild(keys);
  return pane;
}

/**
 * One table of the op profile: a header row, then one row per module, layer or op.
 * @param {string} group "module", "layer" or "op"
 * @param {string[]} columns
 * @param {string[][]} rows
 * @returns {HTMLElement}
 */
function opTable(group, columns, rows) {
  // The ledger's look (padding, rules, numbers right-aligned under their headers), content wide.
  const table = node("table", "sv-x-ledger sv-x-optable");
  Object.assign(table.style, { width: "auto", marginBottom: "10px" });
  table.dataset.group = group;
  // The first column names a row; the op table's last two name its module and layer.
  const number = (/** @type {number} */ i) => i > 0 && !(group === "op" && i >= columns.length - 2);
  const head = node("tr", "");
  columns.forEach((c, i) => head.appendChild(node("th", number(i) ? "sv-x-r" : "", i ? c : group)));
  table.appendChild(head);
  for (const cells of rows) {
    const row = node("tr", "");
    row.dataset.name = cells[0];
    cells.forEach((c, i) => row.appendChild(node("td", number(i) ? "sv-x-r" : "", c)));
    table.appendChild(row);
  }
  return table;
}

/**
 * The op profile pane: where the step's predicted time, flops and bytes go, by module, by
 * layer and op by op (the text view's tables).
 * @param {OpProfilePayload} profile
 * @returns {HTMLElement}
 */
function opProfilePane(profile) {
  const pane = node("section", "sv-x-pane sv-x-oppane");
  pane.style.overflowX = "auto"; // styled here, so the pane needs no rules in explorer.css
  pane.append(node("h4", "", profile.title), node("div", "sv-x-dim", profile.headline));
  pane.append(
    opTable("module", profile.columns, profile.modules),
    opTable("layer", profile.columns, profile.layers),
    opTable("op", profile.op_columns, profile.ops),
  );
  for (const note of profile.notes) pane.appendChild(node("div", "sv-x-dim", note));
  return pane;
}

// --------------------------------------------------------------------------------------------
// Filters: the picker's text and the ledger's kind and axes, local to the view

/**
 * What the filters hold ("" for none), kept across redraws of one generation of the report.
 * @typedef {{ generation: number, text: string, kind: string, axes: string }} Filters
 */

/** No filter, for a generation of the report. @param {number} generation @returns {Filters} */
function noFilters(generation) {
  return { generation, text: "", kind: "", axes: "" };
}

/**
 * Set a select to a value it offers, else to "" (all); returns what it is set to.
 * @param {Element | null} element
 * @param {string} value
 */
function setChoice(element, value) {
  const select = /** @type {HTMLSelectElement | null} */ (element);
  if (!select) return "";
  select.value = value;
  if (select.value !== value) select.value = "";
  return select.value;
}

/**
 * Put the filters into freshly drawn controls (a kind or axes the report lacks falls back to
 * all), then apply them.
 * @param {HTMLElement} root
 * @param {Report} report
 * @param {Filters} filters
 */
function restoreFilters(root, report, filters) {
  const text = /** @type {HTMLInputElement | null} */ (root.querySelector(".sv-x-filter"));
  if (text) text.value = filters.text;
  filters.kind = setChoice(root.querySelector(".sv-x-lkind"), filters.kind);
  filters.axes = setChoice(root.querySelector(".sv-x-laxes"), filters.axes);
  runFilters(root, report, filters);
}

/**
 * Apply the filters to the picker and the ledger.
 * @param {HTMLElement} root
 * @param {Report} report
 * @param {Filters} filters
 */
function runFilters(root, report, filters) {
  filterPicker(root, report, filters.text);
  filterLedger(root, report, filters.kind, filters.axes);
}

/**
 * Read a filter control's new value into `filters`; returns whether `target` was one.
 * @param {EventTarget | null} target
 * @param {Filters} filters
 */
function readFilter(target, filters) {
  const control = /** @type {HTMLInputElement | null} */ (target);
  if (!control || !control.classList) return false;
  if (control.classList.contains("sv-x-filter")) filters.text = control.value;
  else if (control.classList.contains("sv-x-lkind")) filters.kind = control.value;
  else if (control.classList.contains("sv-x-laxes")) filters.axes = control.value;
  else return false;
  return true;
}

// --------------------------------------------------------------------------------------------
// The widget

/**
 * The panes of one report, drawn into `body`.
 * @param {HTMLElement} body
 * @param {Report} report
 */
function drawPanes(body, report) {
  const top = node("div", "sv-x-row");
  const arrays = node("section", "sv-x-pane sv-x-arraypane");
  arrays.append(node("h4", "", "Arrays"), arrayPicker(report), node("div", "sv-x-fchips"), node("div", "sv-x-arrayslot"));
  top.append(meshPane(report), arrays);
  const collectives = node("section", "sv-x-pane sv-x-collpane");
  collectives.append(
    node("h4", "", `Collectives · ${report.payload.collectives.length} in the compiled program`),
    ...ledgerFilters(report),
    ledger(report),
    node("div", "sv-x-detailslot"),
  );
  body.append(top, collectives, memoryPane(report));
  if (report.payload.timeline) body.appendChild(timelinePane(report.payload.timeline));
  if (report.payload.op_profile) body.appendChild(opProfilePane(report.payload.op_profile));
}

/**
 * The report in a payload, or why there is none to draw.
 * @param {string} text the `payload` trait
 * @returns {Report | string}
 */
function readPayload(text) {
  /** @type {ReportPayload | null} */
  const payload = parse(text);
  if (!payload) return "";
  if (payload.version !== PAYLOAD_VERSION) {
    return `this front end reads payload version ${PAYLOAD_VERSION}, got ${payload.version}`;
  }
  return new Report(payload);
}

export default {
  /**
   * Draw the explorer into `el`; returns the cleanup anywidget calls when the view goes away.
   * @param {{ model: Model, el: HTMLElement }} context
   * @returns {() => void}
   */
  render({ model, el }) {
    const root = node("div", "sv-x-root");
    el.replaceChildren(root);
    const status = statusView(model);
    const headSlot = node("div", "sv-x-headslot");
    const findSlot = node("div", "sv-x-findslot");
    const body = node("div", "sv-x-body");
    root.append(headSlot, ...status.elements, findSlot, body);

    /** @type {Report | null} */
    let report = null;
    const selectedDevice = () => Number(model.get("selected_device"));
    const selectedCollective = () => Number(model.get("selected_collective"));
    const selectedFinding = () => {
      const value = model.get("selected_finding");
      return value === undefined || value === null ? NO_SELECTION : Number(value);
    };
    /** @type {FindingsState | string} */
    let findings = "";
    const generation = () => Number(model.get("generation") || 0);
    const cache = new ArrayCache(generation());
    const keptArrays = () => cache.current(generation(), String(model.get("array") || ""));
    /** The JSON text drawn in the array pane: null while "computing tiles…", undefined if none. */
    let drawnText = /** @type {string | null | undefined} */ (undefined);
    /** @type {ArrayPayload | null} the drawn array, parsed (null while loading or for none) */
    let drawnArray = null;
    /** The picker's and the ledger's filters: kept for a redraw of the same generation. */
    let filters = noFilters(generation());

    /** Tell Python. @param {string} name @param {any} value */
    function send(name, value) {
      model.set(name, value);
      model.save_changes();
    }

    /** Tell Python several changes at once. @param {[string, any][]} changes */
    function sendAll(changes) {
      for (const [name, value] of changes) model.set(name, value);
      model.save_changes();
    }

    /** The picked finding's item, or null. */
    function pickedFinding() {
      const index = selectedFinding();
      if (typeof findings === "string" || index < 0) return null;
      return findingItems(findings)[index] || null;
    }

    /** The Findings pane, from the `findings` trait and the picked finding. */
    function drawFindings() {
      findings = readFindings(String(model.get("findings") || ""), generation());
      const pane = findingsPane(findings, selectedFinding());
      findSlot.replaceChildren(...(pane ? [pane] : []));
    }

    /**
     * Pick a finding (again: none). Its leaf (else its first array) is picked in the arrays
     * pane and its first collective in the ledger, so their tiles and details show.
     * @param {number} index
     */
    function pickFinding(index) {
      if (selectedFinding() === index) {
        send("selected_finding", NO_SELECTION);
        return;
      }
      /** @type {[string, any][]} */
      const changes = [["selected_finding", index]];
      const item = typeof findings === "string" ? null : findingItems(findings)[index];
      if (item && report) {
        const mark = item.link.highlight;
        const array = mark.arrays.find((id) => report && report.arrays.has(id));
        if (array && array !== model.get("selected_array")) changes.push(["selected_array", array]);
        const first = mark.collectives[0];
        if (first !== undefined && first !== selectedCollective()) changes.push(["selected_collective", first]);
      }
      sendAll(changes);
    }

    /**
     * Ask Python to try a finding's fix; the button says so until the next payload.
     * @param {number} index
     * @param {HTMLElement} button
     */
    function tryFix(index, button) {
      if (typeof model.send !== "function") return;
      model.send({ type: TRY_FIX, generation: generation(), finding: index });
      button.textContent = "trying…";
      button.setAttribute("disabled", "");
    }

    function drawHeader() {
      headSlot.replaceChildren();
      if (!report) return;
      const strategies = model.get("strategies") || [];
      headSlot.appendChild(header(report, strategies, String(model.get("selected_strategy") || "")));
    }

    /**
     * Draw the picked array: from the kept arrays at once, else "computing tiles…" until
     * Python's `array` arrives. The same JSON text as the one drawn is not drawn again.
     */
    function drawArray() {
      const slot = root.querySelector(".sv-x-arrayslot");
      if (!slot || !report) return;
      const picker = /** @type {HTMLSelectElement | null} */ (root.querySelector(".sv-x-pick"));
      const wanted = String(model.get("selected_array") || "");
      if (picker) picker.value = wanted;
      const text = wanted ? (keptArrays().get(wanted) ?? null) : "";
      if (text !== null && text === drawnText) return;
      drawnText = text;
      drawnArray = text ? parse(text) : null;
      slot.replaceChildren(arrayView(report, drawnArray, wanted));
      highlightTiles(root, drawnArray, selectedDevice());
    }

    function drawAll() {
      body.replaceChildren();
      drawnText = undefined;
      drawFindings();
      const read = readPayload(String(model.get("payload") || ""));
      report = typeof read === "string" ? null : read;
      drawHeader();
      if (typeof read === "string") {
        body.appendChild(read ? node("div", "sv-x-message", read) : node("div", "sv-x-dim", "nothing to show yet"));
        return;
      }
      drawPanes(body, read);
      if (filters.generation !== generation()) filters = noFilters(generation());
      restoreFilters(root, read, filters);
      drawArray();
      highlight();
    }

    /** A filter's text or choice changed: show what matches (nothing is sent to Python). */
    function onFilterInput(/** @type {Event} */ event) {
      if (report && readFilter(event.target, filters)) runFilters(root, report, filters);
    }

    /** Every link between the panes, from the current selections. */
    function highlight() {
      if (!report) return;
      const device = selectedDevice();
      const position = selectedCollective();
      const collective = position >= 0 ? report.payload.collectives[position] || null : null;
      highlightMesh(root, report, device, collective);
      highlightTiles(root, drawnArray, device);
      const involved = highlightLedger(root, report, device, position);
      highlightMemory(root, device);
      highlightFinding(root, report, pickedFinding(), String(model.get("selected_array") || ""));
      const slot = root.querySelector(".sv-x-detailslot");
      if (slot) slot.replaceChildren(details(report, position));
      drawReadouts(root, report, device, involved);
    }

    /** Ask Python for the arrays of the current generation (it answers with PREFETCHED). */
    function requestPrefetch() {
      if (!report || typeof model.send !== "function") return;
      root.dataset.prefetch = "pending";
      model.send({ type: PREFETCH, generation: generation() });
    }

    /** A new report: drop the arrays kept for the old one and ask for the new one's. */
    function onGeneration() {
      keptArrays();
      requestPrefetch();
    }

    /**
     * A custom message from Python: a batch of prefetched arrays, kept if it belongs to the
     * current generation (a stale one is dropped).
     * @param {any} message
     */
    function onMessage(message) {
      if (!message || message.type !== PREFETCHED || message.generation !== generation()) return;
      ArrayCache.keep(keptArrays(), message.arrays || []);
      if (message.done) root.dataset.prefetch = "done";
      if (drawnText === null) drawArray(); // "computing tiles…": the answer may be here now
    }

    /** Drop one kept array (detail: its id) or all of them. @param {Event} event */
    function onForget(event) {
      const id = /** @type {CustomEvent} */ (event).detail;
      if (typeof id === "string") keptArrays().delete(id);
      else keptArrays().clear();
    }

    // A pick tells Python; its change event draws or highlights. An array is drawn at once if
    // kept, else "computing tiles…" until Python answers with the `array` trait.
    const stopRouting = routeEvents(root, {
      device: (id) => send("selected_device", selectedDevice() === id ? NO_SELECTION : id),
      collective: (position) =>
        send("selected_collective", selectedCollective() === position ? NO_SELECTION : position),
      array: (id) => send("selected_array", id),
      strategy: (id) => send("selected_strategy", id),
      finding: pickFinding,
      tryFix,
    });

    /** Mark the finding's array chip that is picked (only the chips: no other pane). */
    function pressChips() {
      const picked = String(model.get("selected_array") || "");
      for (const chip of root.querySelectorAll(".sv-x-fchip")) {
        setPressed(/** @type {HTMLElement} */ (chip), /** @type {HTMLElement} */ (chip).dataset.array === picked);
      }
    }

    /** The findings or the picked finding changed: redraw the pane and the highlights. */
    function onFindings() {
      drawFindings();
      highlight();
    }
    /** @type {[string, (...args: any[]) => void][]} */
    const handlers = [
      ["change:payload", drawAll],
      ["change:generation", onGeneration],
      ["msg:custom", onMessage],
      ["change:array", drawArray],
      ["change:selected_array", drawArray],
      ["change:selected_array", pressChips],
      ["change:findings", onFindings],
      ["change:selected_finding", onFindings],
      ["change:fixed", status.draw],
      // A fix that failed or left a box wrong: the pane's "trying…" button comes back.
      ["change:error", drawFindings],
      ["change:stale", drawFindings],
      ["change:selected_device", highlight],
      ["change:selected_collective", highlight],
      ["change:strategies", drawHeader],
      ["change:selected_strategy", drawHeader],
      ["change:status", status.draw],
      ["change:error", status.draw],
      ["change:stale", status.draw],
      ["change:changes", status.draw],
    ];
    root.addEventListener(FORGET, onForget);
    root.addEventListener("input", onFilterInput);
    for (const [event, handler] of handlers) model.on(event, handler);
    status.draw();
    drawAll();
    requestPrefetch();

    return () => {
      stopRouting();
      root.removeEventListener(FORGET, onForget);
      root.removeEventListener("input", onFilterInput);
      for (const [event, handler] of handlers) model.off(event, handler);
    };
  },
};
