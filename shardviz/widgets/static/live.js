// @ts-check
// shardviz live training view: a plain ES module for anywidget (no bundler; shardviz/widgets/esm.py
// puts static/shared.js in front of it, so what ships imports nothing and works offline).
//
// Synced state (see shardviz/widgets/live.py, LiveWidget):
//   title           heading text
//   status          idle | compiling | running | stopping | done | stopped | error
//   step            steps finished
//   total_steps     steps planned, 0 if not known
//   losses          one loss per step (null for a non-finite loss)
//   step_ms         one wall time per step in ms; the first includes compiling (several
//                   processes: the slowest process's)
//   host_step_ms    [{process, step_ms}]: each process's own step times (empty for one process)
//   memory          [{device, bytes, peak, limit, color, process?}]
//   memory_source   "device" | "estimate" | ""
//   memory_note     one line on what the bars mean
//   error           the error that ended the run, or ""
//   stop_requested  set to true by the Stop button (the only thing the view writes)
//   readouts        every word and scale shown besides the numbers (see shardviz/render/live/view.py):
//                   progress, tick labels, tooltips, notes, chart ranges, the memory scale
//
// Python formats everything: this module formats no number, it places the numbers on the
// scales it is sent and draws the words it is sent. The loss chart grows in place: existing
// points are kept (and moved if the scale changes), new ones are appended. Every model string
// enters the DOM through textContent or setAttribute, never through innerHTML.

import { node, svg } from "./shared.js";

/** @typedef {import("./shared.js").Model} Model */
/**
 * One device's memory reading (see live_memory.py).
 * @typedef {{ device: number, bytes: number, peak: number | null, limit: number | null,
 *             color: string }} MemoryEntry
 */
/**
 * A tick label on a y axis: where it goes (in the chart's units) and what it says.
 * @typedef {{ value: number, text: string }} Tick
 */
/**
 * The readouts Python sends (shardviz/render/live/view.py: its views as JSON): one part per panel.
 * @typedef {{ progress: string }} HeadReadout
 * @typedef {{ range: [number, number], ticks: Tick[], titles: string[], last: string }} LossReadout
 * @typedef {{ process: number, color: string, title: string }} HostLine
 * @typedef {{ range: [number, number], ticks: Tick[], median: { value: number, title: string } | null,
 *             note: string, hosts: HostLine[] }} TimeReadout
 * @typedef {{ label: string, text: string, title: string }} MemoryRowWords
 * @typedef {{ scale: number, rows: MemoryRowWords[], more: string, note: string }} MemoryReadout
 * @typedef {{ head: HeadReadout, loss: LossReadout, time: TimeReadout, memory: MemoryReadout }} Readouts
 */

// Chart geometry, shared with shardviz/render/live/view.py (px).
const LOSS_W = 380, LOSS_H = 180;
const TIME_W = 240, TIME_H = 120;
const PAD_L = 56, PAD_R = 10, PAD_T = 10, PAD_B = 22;
const MEM_ROW = 18, MEM_LABEL = 52, MEM_BAR = 150, MEM_VALUE = 78;
const ACTIVE = new Set(["compiling", "running"]);

/**
 * A coordinate, short: 12, 12.5.
 * @param {number} value
 * @returns {string}
 */
function num(value) {
  return String(Math.round(value * 10) / 10);
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
 * Tick labels left of the y axis, at their values on the scale `[lo, hi]`.
 * @param {Tick[]} ticks
 * @param {[number, number]} range
 * @param {number} height
 * @returns {SVGElement[]}
 */
function yTicks(ticks, [lo, hi], height) {
  return ticks.map(({ value, text }) => tick(PAD_L - 4, yOf(value, lo, hi, height) + 3, text, "end"));
}

/**
 * One memory bar row: the entry's numbers drawn on `scale`, with the words sent for it.
 * @param {number} row
 * @param {MemoryEntry} entry
 * @param {MemoryRowWords} words
 * @param {number} scale
 * @returns {SVGElement}
 */
function memoryRow(row, entry, words, scale) {
  const y = row * MEM_ROW;
  const used = Number(entry.bytes) || 0;
  const width = Math.max(1, (used / scale) * MEM_BAR);
  const group = svg("g", { class: "sv-l-bar", "data-device": String(entry.device) });
  const label = svg("text", { class: "sv-l-dev", x: 0, y: y + 12 }, words.label);
  const rect = svg("rect", { x: MEM_LABEL, y: y + 3, width: num(width), height: MEM_ROW - 6 });
  rect.setAttribute("fill", String(entry.color || "#eaeef2"));
  group.append(svg("title", {}, words.title), label, rect);
  if (entry.peak) {
    const peakX = num(MEM_LABEL + (entry.peak / scale) * MEM_BAR);
    group.appendChild(svg("line", { class: "sv-l-peak", x1: peakX, y1: y + 2, x2: peakX, y2: y + MEM_ROW - 3 }));
  }
  group.appendChild(svg("text", { x: num(MEM_LABEL + width + 4), y: y + 12 }, words.text));
  return group;
}

/**
 * The words for the `i`-th process line (a plain line if the readouts lag the numbers).
 * @param {TimeReadout} words
 * @param {number} i
 * @returns {HostLine}
 */
function hostWords(words, i) {
  return (words.hosts || [])[i] ?? { process: i, color: "#57606a", title: "" };
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
    const hostLines = svg("g", { class: "sv-l-host-lines" });
    time.root.appendChild(hostLines);
    const legend = node("div", "sv-l-legend");
    const timeNote = node("div", "sv-l-note sv-l-time-note");
    timeFig.append(time.root, legend, timeNote);

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

    /** @returns {Readouts} */
    function readouts() {
      return model.get("readouts");
    }

    function drawHead() {
      const state = String(model.get("status") || "idle");
      title.textContent = String(model.get("title") || "");
      status.textContent = state;
      status.className = `sv-l-status sv-l-status-${state.replace(/[^a-z]/g, "")}`;
      progress.textContent = readouts().head.progress;
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
      const words = readouts().loss;
      const [lo, hi] = words.range;
      const count = losses.length;
      const total = stepsShown(count);
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
        /** @type {Element} */ (dot.firstChild).textContent = words.titles[step] ?? "";
      });
      loss.line.setAttribute("d", pathOf(line));
      loss.ticks.replaceChildren(...xTicks(total, LOSS_W, LOSS_H), ...yTicks(words.ticks, words.range, LOSS_H));
      last.textContent = words.last;
    }

    function drawTime() {
      /** @type {number[]} */
      const ms = (model.get("step_ms") || []).map(Number);
      const words = readouts().time;
      const [lo, top] = words.range;
      const total = stepsShown(ms.length);
      /**
       * @param {number[]} values
       * @returns {[number, number][]}
       */
      const pointsOf = (values) =>
        values.slice(1).map((value, step) => [xOf(step + 1, total, TIME_W), yOf(value, lo, top, TIME_H)]);
      time.line.setAttribute("d", pathOf(pointsOf(ms)));
      /** @type {{ process: number, step_ms: number[] }[]} */
      const hosts = model.get("host_step_ms") || [];
      time.root.classList.toggle("sv-l-hosts", hosts.length > 0);
      hostLines.replaceChildren(
        ...hosts.map((host, i) => {
          const said = hostWords(words, i);
          const path = svg("path", { class: "sv-l-host", d: pathOf(pointsOf((host.step_ms || []).map(Number))) });
          path.setAttribute("stroke", said.color);
          path.appendChild(svg("title", {}, said.title));
          return path;
        }),
      );
      legend.replaceChildren(
        ...words.hosts.map((line) => {
          const key = node("span", "sv-l-key", `p${line.process}`);
          key.style.setProperty("--sv-key", line.color);
          key.title = line.title;
          return key;
        }),
      );
      legend.hidden = words.hosts.length === 0;
      time.extra.replaceChildren();
      if (words.median) {
        const y = num(yOf(words.median.value, lo, top, TIME_H));
        const medianLine = svg("line", { class: "sv-l-median", x1: PAD_L, y1: y, x2: TIME_W - PAD_R, y2: y });
        medianLine.appendChild(svg("title", {}, words.median.title));
        time.extra.appendChild(medianLine);
      }
      time.ticks.replaceChildren(...xTicks(total, TIME_W, TIME_H), ...yTicks(words.ticks, words.range, TIME_H));
      timeNote.textContent = words.note;
    }

    function drawMemory() {
      /** @type {MemoryEntry[]} */
      const memory = model.get("memory") || [];
      const words = readouts().memory;
      const shown = memory.slice(0, words.rows.length);
      const rows = shown.map((entry, row) => memoryRow(row, entry, words.rows[row], words.scale));
      const height = Math.max(1, MEM_ROW * (shown.length + (words.more ? 1 : 0)));
      if (words.more) rows.push(tick(0, height - 5, words.more, "start"));
      const width = MEM_LABEL + MEM_BAR + MEM_VALUE;
      mem.setAttribute("width", String(width));
      mem.setAttribute("height", String(height));
      mem.setAttribute("viewBox", `0 0 ${width} ${height}`);
      mem.replaceChildren(...rows);
      memNote.textContent = words.note;
    }

    /** Everything drawn from the readouts (they change with the numbers they describe). */
    function drawReadouts() {
      drawLoss();
      drawTime();
      drawMemory();
      drawHead();
    }

    function onStop() {
      stop.disabled = true;
      model.set("stop_requested", true);
      model.save_changes();
    }

    // Python changes the numbers and their readouts in one message (or the numbers first),
    // so the charts are drawn when the readouts arrive.
    /** @type {[string, () => void][]} */
    const listeners = [
      ["change:title", drawHead],
      ["change:status", drawHead],
      ["change:stop_requested", drawHead],
      ["change:readouts", drawReadouts],
      ["change:error", drawError],
    ];
    stop.addEventListener("click", onStop);
    for (const [event, callback] of listeners) model.on(event, callback);
    drawReadouts();
    drawError();

    return () => {
      stop.removeEventListener("click", onStop);
      for (const [event, callback] of listeners) model.off(event, callback);
    };
  },
};
