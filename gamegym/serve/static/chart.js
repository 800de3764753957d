// A small line chart on a canvas: drawChart(canvas, series, options).
// series: [{name, points: [[x, y], ...]}];
// options: {ymin, ymax, xlabel, empty, integer (whole-number x ticks)}.
// The canvas's data-points attribute says how many points were drawn.
"use strict";

const CHART_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
                       "#17becf", "#7f7f7f"];

function niceTicks(low, high, count, integer) {
  const span = high - low || 1;
  const raw = integer ? Math.max(1, span / count) : span / count;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(m => m * power).find(s => s >= raw) || raw;
  const ticks = [];
  for (let t = Math.ceil(low / step) * step; t <= high + step * 1e-9; t += step) {
    ticks.push(Math.round(t / step) * step);
  }
  return ticks;
}

function formatTick(value) {
  if (Math.abs(value) >= 1000) return value.toFixed(0);
  return String(Number(value.toPrecision(3)));
}

function drawChart(canvas, series, options) {
  options = options || {};
  const ctx = canvas.getContext("2d");
  const width = canvas.width, height = canvas.height;
  const left = 46, right = 10, top = 10, bottom = 50;
  ctx.clearRect(0, 0, width, height);
  ctx.font = "11px system-ui, sans-serif";
  const points = series.flatMap(s => s.points).filter(p => isFinite(p[0]) && isFinite(p[1]));
  canvas.dataset.points = String(points.length);
  if (!points.length) {
    ctx.fillStyle = "#999";
    ctx.textAlign = "center";
    ctx.fillText(options.empty || "no data yet", width / 2, height / 2);
    return;
  }
  let xmin = Math.min(...points.map(p => p[0])), xmax = Math.max(...points.map(p => p[0]));
  let ymin = options.ymin !== undefined ? options.ymin : Math.min(...points.map(p => p[1]));
  let ymax = options.ymax !== undefined ? options.ymax : Math.max(...points.map(p => p[1]));
  if (xmax === xmin) { xmin -= 1; xmax += 1; }
  if (ymax === ymin) { ymin -= Math.abs(ymin) * 0.1 + 0.5; ymax += Math.abs(ymax) * 0.1 + 0.5; }
  const X = x => left + (x - xmin) / (xmax - xmin) * (width - left - right);
  const Y = y => height - bottom - (y - ymin) / (ymax - ymin) * (height - top - bottom);

  ctx.strokeStyle = "#eee";
  ctx.fillStyle = "#666";
  ctx.lineWidth = 1;
  ctx.textAlign = "right";
  for (const t of niceTicks(ymin, ymax, 4)) {
    ctx.beginPath(); ctx.moveTo(left, Y(t)); ctx.lineTo(width - right, Y(t)); ctx.stroke();
    ctx.fillText(formatTick(t), left - 4, Y(t) + 4);
  }
  ctx.textAlign = "center";
  for (const t of niceTicks(xmin, xmax, 6, options.integer)) {
    ctx.fillText(formatTick(t), X(t), height - bottom + 14);
  }
  if (options.xlabel) {
    ctx.fillText(options.xlabel, (left + width - right) / 2, height - bottom + 27);
  }
  ctx.strokeStyle = "#999";
  ctx.beginPath(); ctx.moveTo(left, top); ctx.lineTo(left, height - bottom);
  ctx.lineTo(width - right, height - bottom); ctx.stroke();

  let legendX = left;
  series.forEach((s, i) => {
    const colour = CHART_COLOURS[i % CHART_COLOURS.length];
    const pts = s.points.filter(p => isFinite(p[0]) && isFinite(p[1]));
    ctx.strokeStyle = colour; ctx.fillStyle = colour; ctx.lineWidth = 1.8;
    ctx.beginPath();
    pts.forEach((p, j) => j ? ctx.lineTo(X(p[0]), Y(p[1])) : ctx.moveTo(X(p[0]), Y(p[1])));
    ctx.stroke();
    if (pts.length < 60) {
      for (const p of pts) { ctx.beginPath(); ctx.arc(X(p[0]), Y(p[1]), 2.5, 0, 7); ctx.fill(); }
    }
    ctx.textAlign = "left";
    ctx.fillRect(legendX, height - 10, 10, 3);
    ctx.fillText(s.name, legendX + 13, height - 6);
    legendX += 22 + ctx.measureText(s.name).width;
  });
}
