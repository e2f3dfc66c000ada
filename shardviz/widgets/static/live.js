// @ts-check
// shardviz live training view: a plain ES module for anywidget (no bundler; shardviz/widgets/esm.py
// puts static/shared.js in front of it, so what ships imports nothing and works offline).
//
// Synced state (see shardviz/widgets/live.py, LiveView):
//   title           heading text
//   status          idle | compiling | running | stopping | done | stopped | error
//   step            steps finished
//   total_steps     steps planned, 0 if not known
//   losses          one loss per step (null for a non-finite loss)
//   step_ms         one wall time per step in ms; the first includes compiling
//   memory          [{device, bytes, peak, limit, color}]
//   memory_source   "device" | "estimate" | ""
//   memory_note     one line on what the bars mean
//   error           the error that ended the run, or ""
//   stop_requested  set to true by the Stop button (the only thing the view writes)
//
// The loss chart grows in place: existing points are kept (and moved if the scale changes),
// new ones are appended. Every model string enters the DOM through textContent or
// setAttribute, never through innerHTML.

import { node, svg } from "./shared.js";

/** @typedef {import("./shared.js").Model} Model */
/**
 * One device's memory reading (see live.py).
 * @typedef {{ device: number, bytes: number, peak: number | null, limit: number | null,
 *             color: string }} MemoryEntry
 */

// Chart geometry, shared with live.py (px).
const LOSS_W = 380, LOSS_H = 180;
const TIME_W = 240, TIME_H = 120;
const PAD_L = 56, PAD_R = 10, PAD_T = 10, PAD_B = 22;
const MEM_ROW = 18, MEM_LABEL = 52, MEM_BAR = 150, MEM_VALUE = 78;
const MAX_MEMORY_BARS = 64;
const ACTIVE = new Set(["compiling", "running"]);
const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/**
 * A coordinate, short: 12, 12.5.
 * @param {number} value
 * @returns {string}
 */
function num(value) {
  return String(Math.round(value * 10) / 10);
}

/**
 * A loss with four significant digits.
 * @param {number | null | undefined} loss
 * @returns {string}
 */
function formatLoss(loss) {
  return typeof loss === "number" && Number.isFinite(loss) ? String(Number(loss.toPrecision(4))) : "not finite";
}

/**
 * Milliseconds, fewer decimals as they grow.
 * @param {number} ms
 * @returns {string}
 */
function formatMs(ms) {
  return ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);
}

/**
 * Bytes for people: 512 B, 1.5 KiB, 64 MiB (as `shardviz.render.geometry.format_bytes`; the
 * one JS copy, since this view's memory readings arrive as numbers while it runs).
 * @param {number} nbytes
 * @returns {string}
 */
function formatBytes(nbytes) {
  let value = nbytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${nbytes} B` : `${value.toFixed(1).replace(/\.0$/, "")} ${UNITS[unit]}`;
}

/**
 * Median of the step times after the first (compile) step; null before two steps.
 * @param {number[]} ms
 * @returns {number | null}
 */
function medianMs(ms) {
  const rest = ms.slice(1).sort((low, high) => low - high);
  if (!rest.length) return null;
  const mid = Math.floor(rest.length / 2);
  return rest.length % 2 ? rest[mid] : (rest[mid - 1] + rest[mid]) / 2;
}

/**
 * @param {any} value
 * @returns {value is number}
 */
function finite(value) {
  return typeof value === "number" && Number.isFinite(value);
}

/**
 * x of the step at `step` (0-based) when the axis spans `count` steps.
 * @param {number} step
 * @param {number} count
 * @param {number} width
 * @returns {number}
 */
function xOf(step, count, width) {
  const plot = width - PAD_L - PAD_R;
  return PAD_L + (count <= 1 ? plot / 2 : (step / (count - 1)) * plot);
}

/**
 * The y range drawn for some finite values: their range, padded a little.
 * @param {number[]} values
 * @returns {[number, number]}
 */
function span(values) {
  if (!values.length) return [0, 1];
  const lo = Math.min(...values), hi = Math.max(...values);
  if (hi === lo) {
    const pad = Math.abs(hi) * 0.05 || 1;
    return [lo - pad, hi + pad];
  }
  const pad = (hi - lo) * 0.04;
  return [lo - pad, hi + pad];
}

/**
 * @param {number} value
 * @param {number} lo
 * @param {number} hi
 * @param {number} height
 * @returns {number}
 */
function yOf(value, lo, hi, height) {
  return PAD_T + ((hi - value) / (hi - lo)) * (height - PAD_T - PAD_B);
}

/**
 * An SVG path through the points, broken at null.
 * @param {([number, number] | null)[]} points
 * @returns {string}
 */
function pathOf(points) {
  let path = "";
  let down = false;
  for (const point of points) {
    if (!point) {
      down = false;
      continue;
    }
    path += `${down ? "L" : "M"}${num(point[0])} ${num(point[1])}`;
    down = true;
  }
  return path;
}

/**
 * An empty chart: axes, a group for tick labels, a path; returns its parts.
 * @param {string} className
 * @param {number} width
 * @param {number} height
 * @param {string} label
 */
function chart(className, width, height, label) {
  const root = svg("svg", {
    class: `sv-l-chart ${className}`,
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: "img",
    "aria-label": label,
  });
  const bottom = height - PAD_B;
  root.append(
    svg("line", { class: "sv-l-axis", x1: PAD_L, y1: PAD_T, x2: PAD_L, y2: bottom }),
    svg("line", { class: "sv-l-axis", x1: PAD_L, y1: bottom, x2: width - PAD_R, y2: bottom }),
  );
  const ticks = svg("g", { class: "sv-l-ticks" });
  const extra = svg("g");
  const line = svg("path", { class: "sv-l-line", d: "" });
  root.append(ticks, extra, line);
  return { root, ticks, extra, line };
}

/**
 * A tick label.
 * @param {number} x
 * @param {number} y
 * @param {string} text
 * @param {string} anchor
 * @returns {SVGElement}
 */
function tick(x, y, text, anchor) {
  return svg("text", { x: num(x), y: num(y), "text-anchor": anchor }, text);
}

/**
 * Tick labels under the x axis: the first and the last step.
 * @param {number} count
 * @param {number} width
 * @param {number} height
 * @returns {SVGElement[]}
 */
function xTicks(count, width, height) {
  const y = height - PAD_B + 14;
  const out = [tick(PAD_L, y, "1", "start")];
  if (count > 1) out.push(tick(width - PAD_R, y, String(count), "end"));
  return out;
}

/**
 * Tick labels, in order of importance, keeping only those 10 px clear of the ones kept.
 * @param {[number, string][]} labels
 * @param {number} top
 * @returns {[number, string][]}
 */
function spaced(labels, top) {
  const plot = TIME_H - PAD_T - PAD_B;
  /** @type {[number, string][]} */
  const kept = [];
  for (const [value, text] of labels) {
    if (kept.every(([keptValue]) => (Math.abs(value - keptValue) / top) * plot >= 10)) kept.push([value, text]);
  }
  return kept;
}

/**
 * One memory bar row.
 * @param {number} row
 * @param {MemoryEntry} entry
 * @param {number} scale
 * @returns {SVGElement}
 */
function memoryRow(row, entry, scale) {
  const y = row * MEM_ROW;
  const used = Number(entry.bytes) || 0;
  const width = Math.max(1, (used / scale) * MEM_BAR);
  const group = svg("g", { class: "sv-l-bar", "data-device": String(entry.device) });
  const title = svg("title");
  let hover = `device ${entry.device}: ${formatBytes(used)}`;
  const label = svg("text", { class: "sv-l-dev", x: 0, y: y + 12 }, `dev ${entry.device}`);
  const rect = svg("rect", { x: MEM_LABEL, y: y + 3, width: num(width), height: MEM_ROW - 6 });
  rect.setAttribute("fill", String(entry.color || "#eaeef2"));
  group.append(title, label, rect);
  if (entry.peak) {
    const peakX = num(MEM_LABEL + (entry.peak / scale) * MEM_BAR);
    group.appendChild(svg("line", { class: "sv-l-peak", x1: peakX, y1: y + 2, x2: peakX, y2: y + MEM_ROW - 3 }));
    hover += `, peak ${formatBytes(entry.peak)}`;
  }
  if (entry.limit) hover += ` of ${formatBytes(entry.limit)}`;
  title.textContent = hover;
  group.appendChild(svg("text", { x: num(MEM_LABEL + width + 4), y: y + 12 }, formatBytes(used)));
  return group;
}

/**
 * The bar length that means "full": the limit when every device has one, else the largest.
 * @param {MemoryEntry[]} memory
 * @returns {number}
 */
function memoryScale(memory) {
  if (memory.length && memory.every((entry) => entry.limit)) {
    return Math.max(...memory.map((entry) => Number(entry.limit)));
  }
  const sizes = memory.map((entry) => Math.max(Number(entry.bytes) || 0, Number(entry.peak) || 0));
  return Math.max(0, ...sizes) || 1;
}

export default {
  /**
   * Draw the view into `el`; returns the cleanup anywidget calls when the view goes away.
   * @param {{ model: Model, el: HTMLElement }} context
   * @returns {() => void}
   */
  render({ model, el }) {
    const root = node("div", "sv-l-root");
    const head = node("div", "sv-l-head");
    const title = node("span", "sv-l-title");
    const status = node("span", "sv-l-status");
    const progress = node("span", "sv-l-progress");
    const last = node("span", "sv-l-last");
    const stop = /** @type {HTMLButtonElement} */ (node("button", "sv-l-stop", "Stop"));
    stop.type = "button";
    stop.title = "stop after the current step";
    head.append(title, status, progress, last, stop);
    const error = node("div", "sv-l-error");
    error.setAttribute("role", "alert");

    const panels = node("div", "sv-l-panels");
    const lossFig = node("figure", "sv-l-panel");
    lossFig.appendChild(node("figcaption", "", "loss"));
    const loss = chart("sv-l-loss", LOSS_W, LOSS_H, "loss by step");
    const points = svg("g", { class: "sv-l-pts" });
    loss.root.appendChild(points);
    lossFig.appendChild(loss.root);

    const timeFig = node("figure", "sv-l-panel");
    timeFig.appendChild(node("figcaption", "", "step time (ms)"));
    const time = chart("sv-l-time", TIME_W, TIME_H, "step time by step");
    const timeNote = node("div", "sv-l-note sv-l-time-note");
    timeFig.append(time.root, timeNote);

    const memFig = node("figure", "sv-l-panel");
    memFig.appendChild(node("figcaption", "", "memory per device"));
    const mem = svg("svg", { class: "sv-l-mem", role: "img", "aria-label": "memory per device" });
    const memNote = node("div", "sv-l-note sv-l-mem-note");
    memFig.append(mem, memNote);

    panels.append(lossFig, timeFig, memFig);
    root.append(head, error, panels);
    el.replaceChildren(root);

    /**
     * How many steps the x axis spans: those planned, or more if more have run.
     * @param {number} done
     * @returns {number}
     */
    function stepsShown(done) {
      return Math.max(Number(model.get("total_steps")) || 0, done);
    }

    function drawHead() {
      const state = String(model.get("status") || "idle");
      title.textContent = String(model.get("title") || "");
      status.textContent = state;
      status.className = `sv-l-status sv-l-status-${state.replace(/[^a-z]/g, "")}`;
      const total = Number(model.get("total_steps")) || 0;
      const step = Number(model.get("step")) || 0;
      progress.textContent = total ? `step ${step} / ${total}` : `step ${step}`;
      stop.hidden = !(ACTIVE.has(state) || state === "stopping");
      stop.disabled = state === "stopping" || Boolean(model.get("stop_requested"));
    }

    function drawError() {
      const text = String(model.get("error") || "");
      error.textContent = text;
      error.hidden = !text;
    }

    function drawLoss() {
      /** @type {(number | null)[]} */
      const losses = model.get("losses") || [];
      const count = losses.length;
      const total = stepsShown(count);
      const good = losses.filter(finite);
      const [lo, hi] = span(good);
      const radius = count <= 200 ? "2.5" : "1.5";
      /** @type {([number, number] | null)[]} */
      const line = [];
      const dots = points.children;
      while (dots.length > count) dots[dots.length - 1].remove();
      losses.forEach((value, step) => {
        const ok = finite(value);
        const x = xOf(step, total, LOSS_W);
        const y = ok ? yOf(value, lo, hi, LOSS_H) : PAD_T;
        line.push(ok ? [x, y] : null);
        let dot = dots[step];
        if (!dot) {
          dot = svg("circle");
          dot.appendChild(svg("title"));
          points.appendChild(dot);
        }
        dot.setAttribute("class", ok ? "sv-l-pt" : "sv-l-pt sv-l-bad");
        dot.setAttribute("cx", num(x));
        dot.setAttribute("cy", num(y));
        dot.setAttribute("r", radius);
        /** @type {Element} */ (dot.firstChild).textContent = `step ${step + 1}: loss ${formatLoss(value)}`;
      });
      loss.line.setAttribute("d", pathOf(line));
      const ticks = xTicks(total, LOSS_W, LOSS_H);
      if (good.length) {
        const top = Math.max(...good), bottom = Math.min(...good);
        ticks.push(tick(PAD_L - 4, yOf(top, lo, hi, LOSS_H) + 3, formatLoss(top), "end"));
        if (bottom !== top) ticks.push(tick(PAD_L - 4, yOf(bottom, lo, hi, LOSS_H) + 3, formatLoss(bottom), "end"));
      }
      loss.ticks.replaceChildren(...ticks);
      last.textContent = count ? `loss ${formatLoss(losses[count - 1])}` : "";
    }

    function drawTime() {
      /** @type {number[]} */
      const ms = (model.get("step_ms") || []).map(Number);
      const total = stepsShown(ms.length);
      const rest = ms.slice(1);
      const top = rest.length ? Math.max(...rest) * 1.1 : 1;
      time.line.setAttribute(
        "d",
        pathOf(rest.map((value, step) => [xOf(step + 1, total, TIME_W), yOf(value, 0, top, TIME_H)])),
      );
      const ticks = xTicks(total, TIME_W, TIME_H);
      const median = medianMs(ms);
      /** @type {[number, string][]} */
      const labels = [[0, "0"]];
      if (median !== null) labels.push([median, formatMs(median)], [Math.max(...rest), formatMs(Math.max(...rest))]);
      for (const [value, text] of spaced(labels, top)) {
        ticks.push(tick(PAD_L - 4, yOf(value, 0, top, TIME_H) + 3, text, "end"));
      }
      time.extra.replaceChildren();
      if (median !== null) {
        const y = num(yOf(median, 0, top, TIME_H));
        const medianLine = svg("line", { class: "sv-l-median", x1: PAD_L, y1: y, x2: TIME_W - PAD_R, y2: y });
        medianLine.appendChild(svg("title", {}, `median ${formatMs(median)} ms`));
        time.extra.appendChild(medianLine);
      }
      time.ticks.replaceChildren(...ticks);
      if (!ms.length) {
        timeNote.textContent = "no step finished yet";
      } else {
        let text = `step 1 (compile): ${formatMs(ms[0])} ms`;
        if (median !== null) {
          const steps = ms.length === 2 ? "step 2" : `steps 2–${ms.length}`;
          text += ` · median ${formatMs(median)} ms over ${steps}`;
        }
        timeNote.textContent = text;
      }
    }

    function drawMemory() {
      /** @type {MemoryEntry[]} */
      const memory = model.get("memory") || [];
      const shown = memory.slice(0, MAX_MEMORY_BARS);
      const scale = memoryScale(memory);
      const rows = shown.map((entry, row) => memoryRow(row, entry, scale));
      const more = memory.length - shown.length;
      const height = Math.max(1, MEM_ROW * (shown.length + (more ? 1 : 0)));
      if (more) rows.push(tick(0, height - 5, `… ${more} more devices`, "start"));
      const width = MEM_LABEL + MEM_BAR + MEM_VALUE;
      mem.setAttribute("width", String(width));
      mem.setAttribute("height", String(height));
      mem.setAttribute("viewBox", `0 0 ${width} ${height}`);
      mem.replaceChildren(...rows);
      memNote.textContent = String(model.get("memory_note") || "not measured yet");
    }

    function drawSteps() {
      drawLoss();
      drawTime();
      drawHead();
    }

    function onStop() {
      stop.disabled = true;
      model.set("stop_requested", true);
      model.save_changes();
    }

    /** @type {[string, () => void][]} */
    const listeners = [
      ["change:title", drawHead],
      ["change:status", drawHead],
      ["change:step", drawHead],
      ["change:stop_requested", drawHead],
      ["change:total_steps", drawSteps],
      ["change:losses", drawLoss],
      ["change:step_ms", drawTime],
      ["change:memory", drawMemory],
      ["change:memory_note", drawMemory],
      ["change:error", drawError],
    ];
    stop.addEventListener("click", onStop);
    for (const [event, callback] of listeners) model.on(event, callback);
    drawSteps();
    drawMemory();
    drawError();

    return () => {
      stop.removeEventListener("click", onStop);
      for (const [event, callback] of listeners) model.off(event, callback);
    };
  },
};
