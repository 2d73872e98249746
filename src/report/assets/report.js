// mfu report: builds the page from the JSON in #data. No request leaves the page (see its CSP).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("data").textContent);

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function pct(v) { return v === null || v === undefined ? "-" : (v * 100).toFixed(1); }
  function num(v, digits) {
    if (v === null || v === undefined) return "-";
    return Number(v).toLocaleString("en-US", { maximumFractionDigits: digits === undefined ? 0 : digits });
  }
  function tflops(v) { return v === null || v === undefined ? "-" : num(v / 1e12, 1); }

  // Header: what was read.
  var m = data.meta;
  document.getElementById("meta").textContent =
    m.runs + " run" + (m.runs === 1 ? "" : "s") + ", " + num(m.rows) + " rows from " + m.inputs.length +
    " input" + (m.inputs.length === 1 ? "" : "s") + " (" + m.inputs.slice(0, 5).join(", ") +
    (m.inputs.length > 5 ? ", ..." : "") + "); mfu " + m.version + ", " + m.generated +
    "; peak table " + m.peak_table_sha256.slice(0, 12);

  // Where the time went: a bar per run, its buckets side by side in proportion to elapsed time.
  (function () {
    var box = document.getElementById("goodput");
    var buckets = [
      ["productive_s", "productive", "productive"],
      ["wasted_progress_s", "wasted progress", "wasted"],
      ["startup_s", "start-up", "startup"],
      ["pause_s", "pauses", "pause"],
      ["recovery_s", "recovery", "recovery"],
      ["other_s", "other", "other"]
    ];
    function hms(s) {
      if (s === null || s === undefined) return "-";
      if (s < 60) return s.toFixed(1) + " s";
      var t = Math.round(s);
      return Math.floor(t / 3600) + ":" + String(Math.floor(t / 60) % 60).padStart(2, "0") + ":" + String(t % 60).padStart(2, "0");
    }
    var legend = el("p", { "class": "goodput-legend" });
    buckets.forEach(function (b) {
      var item = el("span", { "class": "legend-item" });
      item.appendChild(el("span", { "class": "swatch " + b[2] }));
      item.appendChild(document.createTextNode(b[1]));
      legend.appendChild(item);
    });
    box.appendChild(legend);
    data.goodput.rows.forEach(function (r) {
      var row = el("div", { "class": "goodput-run" });
      var name = r.keys.map(function (k) { return k === null ? "-" : k; }).join(" / ");
      row.appendChild(el("div", { "class": "goodput-name" }, name));
      if (r.elapsed_s === null || !(r.elapsed_s > 0)) {
        row.appendChild(el("div", { "class": "note" }, "not measured: " + (r.notes.join("; ") || "no wall times")));
        box.appendChild(row);
        return;
      }
      var bar = el("div", { "class": "goodput-bar", "role": "img" });
      var said = [];
      buckets.forEach(function (b) {
        var v = r[b[0]] || 0;
        if (v <= 0) return;
        var share = v / r.elapsed_s;
        var part = el("span", { "class": "part " + b[2], "title": b[1] + ": " + hms(v) + " (" + pct(share) + "%)" });
        part.style.width = (share * 100).toFixed(3) + "%";
        bar.appendChild(part);
        said.push(b[1] + " " + pct(share) + "%");
      });
      bar.setAttribute("aria-label", name + ": " + said.join(", "));
      row.appendChild(bar);
      row.appendChild(el("div", { "class": "note" },
        "goodput " + pct(r.goodput) + "% of " + hms(r.elapsed_s) + "; " + r.attempts + " attempt" + (r.attempts === 1 ? "" : "s") +
        (r.launches_without_steps ? " (and " + r.launches_without_steps + " launch" + (r.launches_without_steps === 1 ? "" : "es") + " without steps)" : "") +
        ", " + num(r.steps_kept) + " of " + num(r.steps_executed) + " steps kept" +
        (r.mfu_productive === null ? "" : "; MFU " + pct(r.mfu_productive) + "% while productive, " + pct(r.mfu_effective) + "% over the elapsed time") +
        (r.notes.length ? "; " + r.notes.join("; ") : "")));
      box.appendChild(row);
    });
  })();

  // The summary: the columns of `mfu summary`, sortable.
  var keys = data.summary.keys;
  var columns = keys.map(function (k, i) {
    return { title: k, value: function (r) { return r.keys[i]; }, text: function (r) { return r.keys[i] === null ? "-" : r.keys[i]; } };
  }).concat([
    { title: "device", value: function (r) { return r.device; }, text: function (r) { return r.device || "-"; } },
    { title: "dtype", value: function (r) { return r.dtype; }, text: function (r) { return r.dtype || "-"; } },
    { title: "devices", value: function (r) { return r.num_devices; }, text: function (r) { return num(r.num_devices); }, numeric: true },
    { title: "steps", value: function (r) { return r.steps; }, text: function (r) { return num(r.steps); }, numeric: true },
    { title: "tokens/s", value: function (r) { return r.tokens_per_second; }, text: function (r) { return num(r.tokens_per_second); }, numeric: true },
    { title: "MFU %", value: function (r) { return r.mfu_wall_clock; }, text: function (r) { return pct(r.mfu_wall_clock); }, numeric: true },
    { title: "MFU fwd+bwd %", value: function (r) { return r.mfu_fwd_bwd; }, text: function (r) { return pct(r.mfu_fwd_bwd); }, numeric: true },
    { title: "p10 %", value: function (r) { return r.mfu_wall_clock_p10; }, text: function (r) { return pct(r.mfu_wall_clock_p10); }, numeric: true },
    { title: "p50 %", value: function (r) { return r.mfu_wall_clock_p50; }, text: function (r) { return pct(r.mfu_wall_clock_p50); }, numeric: true },
    { title: "p90 %", value: function (r) { return r.mfu_wall_clock_p90; }, text: function (r) { return pct(r.mfu_wall_clock_p90); }, numeric: true },
    { title: "peak TFLOP/s", value: function (r) { return r.peak_flops_per_device; }, text: function (r) { return tflops(r.peak_flops_per_device); }, numeric: true },
    { title: "flags", value: function (r) { return r.flags.join("; "); }, text: function (r) { return r.flags.join("; "); } }
  ]);
  // The framework's own MFU, where a run's log holds one (`mfu audit`), and the audit of it below.
  var audited = data.summary.rows.filter(function (r) { return r.audit; });
  if (audited.length) {
    columns.push({ title: "logged MFU %", value: function (r) { return r.mfu_logged; }, text: function (r) { return r.framework ? pct(r.mfu_logged) + " (" + r.framework + ")" : "-"; }, numeric: true });
    var audits = document.getElementById("audits");
    audits.appendChild(el("h3", {}, "What the frameworks logged"));
    audited.forEach(function (r) {
      var name = r.keys.map(function (k) { return k === null ? "-" : k; }).join(" ");
      var p = el("p", { "class": "audit" });
      p.appendChild(el("strong", {}, name + ": "));
      p.appendChild(document.createTextNode(r.audit));
      audits.appendChild(p);
    });
  }
  var table = document.getElementById("summary");
  var rows = data.summary.rows.slice();
  var sortState = { column: -1, descending: false };
  function renderSummary() {
    table.textContent = "";
    var head = el("thead"), tr = el("tr");
    columns.forEach(function (c, i) {
      var th = el("th", { "data-column": String(i), "class": c.numeric ? "numeric" : "" }, c.title);
      if (sortState.column === i) th.setAttribute("aria-sort", sortState.descending ? "descending" : "ascending");
      th.addEventListener("click", function () { sortBy(i); });
      tr.appendChild(th);
    });
    head.appendChild(tr);
    table.appendChild(head);
    var body = el("tbody");
    rows.forEach(function (r) {
      var row = el("tr", { "class": r.flags.length ? "flagged" : "" });
      columns.forEach(function (c) {
        var td = el("td", { "class": c.numeric ? "numeric" : "" }, c.text(r));
        if (c.title === "flags" && r.flags.length) td.className = "flags";
        row.appendChild(td);
      });
      body.appendChild(row);
    });
    table.appendChild(body);
  }
  function sortBy(i) {
    sortState.descending = sortState.column === i ? !sortState.descending : false;
    sortState.column = i;
    var c = columns[i], sign = sortState.descending ? -1 : 1;
    rows.sort(function (a, b) {
      var x = c.value(a), y = c.value(b);
      if (x === null || x === undefined) return 1; // nulls last either way
      if (y === null || y === undefined) return -1;
      if (typeof x === "number" && typeof y === "number") return sign * (x - y);
      return sign * String(x).localeCompare(String(y));
    });
    renderSummary();
  }
  renderSummary();

  // The charts: one line per run, on one grid of steps; the cursor and zoom shared.
  var series = data.series;
  var palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  var drawn = 0;
  // Where each relaunch resumed, drawn on the MFU chart: a dashed line at every attempt's first step.
  var relaunches = [];
  data.goodput.rows.forEach(function (r) {
    var name = r.keys.map(function (k) { return k === null ? "-" : k; }).join(" / ");
    (r.attempt_steps || []).forEach(function (s, i) { relaunches.push({ step: s, label: (data.goodput.rows.length > 1 ? name + ": " : "") + "attempt " + (i + 2) }); });
  });
  function markRelaunches(u) {
    var ctx = u.ctx, top = u.bbox.top, height = u.bbox.height;
    ctx.save();
    ctx.strokeStyle = "#57606a";
    ctx.fillStyle = "#57606a";
    ctx.setLineDash([4, 4]);
    ctx.lineWidth = 1;
    ctx.font = Math.round(10 * devicePixelRatio) + "px sans-serif";
    relaunches.forEach(function (m) {
      var x = Math.round(u.valToPos(m.step, "x", true));
      if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      ctx.fillText(m.label, x + 3, top + 12 * devicePixelRatio);
    });
    ctx.restore();
  }
  function chart(target, title, label, pick, scale, format, marks) {
    var node = document.getElementById(target);
    if (!series.steps.length) { node.textContent = "No rows to draw."; return null; }
    var opts = {
      title: title,
      width: Math.max(480, Math.min(1200, document.body.clientWidth - 40)),
      height: 280,
      cursor: { sync: { key: "mfu-report", setSeries: true }, drag: { x: true, y: false } },
      scales: { x: { time: false } },
      axes: [{ label: "step" }, { label: label, size: 70 }],
      series: [{ label: "step", value: function (u, v) { return v === null ? "-" : num(v); } }],
      legend: { live: true },
      hooks: marks ? { draw: [markRelaunches] } : {}
    };
    if (marks) node.setAttribute("data-relaunches", String(relaunches.length));
    var columnsOf = [series.steps];
    series.runs.forEach(function (run, i) {
      pick(run).forEach(function (line) {
        opts.series.push({
          label: line.label,
          stroke: palette[i % palette.length],
          dash: line.dash,
          width: 1.5,
          spanGaps: false,
          points: { show: false },
          value: function (u, v) { return v === null ? "-" : format(v); }
        });
        columnsOf.push(line.values.map(function (v) { return v === null ? null : v * scale; }));
        drawn += 1;
      });
    });
    return new uPlot(opts, columnsOf, node);
  }
  chart("chart-mfu", "MFU by step (wall-clock solid, fwd+bwd dashed)", "MFU %", function (run) {
    var lines = [{ label: run.name, values: run.mfu }];
    if (run.mfu_fwd_bwd) lines.push({ label: run.name + " fwd+bwd", values: run.mfu_fwd_bwd, dash: [6, 4] });
    return lines;
  }, 100, function (v) { return v.toFixed(1) + " %"; }, true);
  chart("chart-tps", "Tokens per second, all devices", "tokens/s", function (run) {
    return [{ label: run.name, values: run.tokens_per_second }];
  }, 1, function (v) { return num(v); });
  chart("chart-time", "Step time", "seconds", function (run) {
    return [{ label: run.name, values: run.step_time_s }];
  }, 1, function (v) { return num(v, 3) + " s"; });
  document.getElementById("sampling").textContent =
    series.runs.length + " run(s) on " + series.steps.length + " step position(s): each point is the run's " +
    "steps in that bucket (MFU time-weighted, tokens/s as total tokens over total time, step time the mean); " +
    "the table above uses every row.";

  // Devices: the entry that matched and its peaks, or why none is known.
  var devices = document.getElementById("devices");
  data.devices.forEach(function (d) {
    var box = el("div", { "class": d.resolved ? "device" : "device unknown" });
    box.appendChild(el("h3", {}, d.name + (d.resolved ? " \u2192 " + d.resolved : " (unknown)")));
    if (d.dtypes.length) box.appendChild(el("p", {}, "precision in the logs: " + d.dtypes.join(", ")));
    if (d.resolved) {
      box.appendChild(el("p", {}, d.vendor + ", " + d.form_factor + "; matched " + d.matched));
      var peaks = el("table", { "class": "peaks" });
      var head = el("tr");
      head.appendChild(el("th", {}, "precision"));
      head.appendChild(el("th", { "class": "numeric" }, "dense peak, TFLOP/s"));
      peaks.appendChild(head);
      d.peaks.forEach(function (p) {
        var tr = el("tr");
        tr.appendChild(el("td", {}, p[0]));
        tr.appendChild(el("td", { "class": "numeric" }, tflops(p[1])));
        peaks.appendChild(tr);
      });
      box.appendChild(peaks);
      box.appendChild(el("p", {}, "source: " + d.source));
      var docs = el("ul");
      d.documents.forEach(function (s) { docs.appendChild(el("li", {}, s.key + " [" + s.kind + "]: " + s.what + " (" + s.where + ")")); });
      box.appendChild(docs);
      if (d.note) box.appendChild(el("p", { "class": "note" }, d.note));
    }
    (d.warnings || []).forEach(function (w) { box.appendChild(el("p", { "class": "warning" }, w)); });
    devices.appendChild(box);
  });

  // FLOPs per token: the figure each run used and where it came from.
  var flops = document.getElementById("flops");
  var head = el("tr");
  ["run", "FLOPs per token", "from"].forEach(function (t) { head.appendChild(el("th", {}, t)); });
  flops.appendChild(head);
  data.flops.forEach(function (f) {
    var tr = el("tr");
    tr.appendChild(el("td", {}, f.run));
    tr.appendChild(el("td", { "class": "numeric" }, f.flops_per_token.length ? f.flops_per_token.map(function (v) { return v.toExponential(4); }).join("; ") : "-"));
    tr.appendChild(el("td", {}, f.from.join("; ")));
    flops.appendChild(tr);
  });

  document.body.setAttribute("data-series", String(drawn));
  document.body.setAttribute("data-ready", "true");
})();
