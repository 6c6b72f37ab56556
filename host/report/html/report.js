// paraplan HTML report: draws the report embedded in this file (the JSON the command prints with
// --json) with d3 (Debian's libjs-d3, embedded beside this script). Every chart marks its container
// with data-drawn="<marks drawn>", and any script error is written into #paraplan-errors, so a
// headless browser's DOM says whether the report drew (tests/cli/html_report_test.py).
(function () {
  "use strict";

  var errors = document.getElementById("paraplan-errors");
  window.addEventListener("error", function (event) {
    errors.appendChild(document.createTextNode("script error: " + event.message + "\n"));
  });

  var documentData = JSON.parse(document.getElementById("paraplan-data").textContent);
  var root = d3.select("#paraplan-report");
  var colors = d3.scale.category10();

  // ---- units: GB and seconds, as the text reports print them ----
  function gigabytes(bytes) { return (bytes / 1e9).toFixed(2) + " GB"; }
  function seconds(value) {
    if (value === 0) return "0 s";
    if (Math.abs(value) >= 100) return value.toFixed(1) + " s";
    if (Math.abs(value) >= 1) return value.toFixed(3) + " s";
    if (Math.abs(value) >= 1e-3) return (value * 1e3).toFixed(3) + " ms";
    return (value * 1e6).toFixed(1) + " µs";
  }
  function percent(fraction) { return (fraction * 100).toFixed(1) + " %"; }
  function get(object, path) {
    return path.split(".").reduce(function (node, key) { return node == null ? undefined : node[key]; }, object);
  }
  function flatten(object, prefix, rows) {
    Object.keys(object || {}).forEach(function (key) {
      var value = object[key];
      if (value !== null && typeof value === "object" && !Array.isArray(value)) flatten(value, prefix + key + ".", rows);
      else rows.push([prefix + key, Array.isArray(value) ? value.join(", ") : String(value)]);
    });
    return rows;
  }

  function section(parent, title, note) {
    var div = parent.append("div").attr("class", "section");
    div.append("h2").text(title);
    if (note) div.append("p").attr("class", "note").text(note);
    return div;
  }
  function chart(parent, name, width, height, margin) {
    var container = parent.append("div").attr("class", "chart").attr("data-chart", name);
    var svg = container.append("svg").attr("width", width).attr("height", height);
    return { container: container, svg: svg, body: svg.append("g").attr("transform", "translate(" + margin.left + "," + margin.top + ")"),
             width: width - margin.left - margin.right, height: height - margin.top - margin.bottom, left: margin.left };
  }
  // The axes' titles: below the x axis, and turned along the y axis 18 px from the chart's left edge.
  function axisTitles(target, xTitle, yTitle) {
    target.body.append("text").attr("x", target.width / 2).attr("y", target.height + 40).attr("text-anchor", "middle").text(xTitle);
    target.body.append("text").attr("transform", "rotate(-90)").attr("x", -target.height / 2).attr("y", 18 - target.left)
        .attr("text-anchor", "middle").text(yTitle);
  }
  function drawn(target, marks) { target.container.attr("data-drawn", marks); }
  function legend(parent, entries) {
    var list = parent.append("div").attr("class", "legend");
    entries.forEach(function (entry) {
      var item = list.append("span").style("margin-right", "14px");
      item.append("span").style("display", "inline-block").style("width", "10px").style("height", "10px")
          .style("margin-right", "4px").style("background", entry.color);
      item.append("span").text(entry.label);
    });
  }

  // ---- the plan and its headline figures ----
  function header(root) {
    root.append("h1").text(documentData.title);
    root.append("div").attr("class", "subtitle").text(documentData.generated_by);
    (documentData.warnings || []).forEach(function (text) { root.append("div").attr("class", "warning").text(text); });
  }

  function headline(parent, report) {
    var figures = [
      ["step time", report.time && seconds(report.time.step_s),
       get(report, "uncertainty.step_s") && seconds(report.uncertainty.step_s.low) + " – " + seconds(report.uncertainty.step_s.high)],
      ["MFU", report.throughput && percent(report.throughput.mfu),
       get(report, "uncertainty.mfu") && percent(report.uncertainty.mfu.low) + " – " + percent(report.uncertainty.mfu.high)],
      ["tokens/s per GPU", report.throughput && Math.round(report.throughput.tokens_per_s_per_gpu).toLocaleString("en-US"), null],
      ["memory per GPU", report.memory && gigabytes(report.memory.per_gpu_bytes),
       report.memory && (report.memory.fits ? "fits, " + gigabytes(report.memory.headroom_bytes) + " to spare"
                                            : "does not fit: " + gigabytes(-report.memory.headroom_bytes) + " short")]];
    var row = parent.append("div").attr("class", "headline");
    figures.forEach(function (figure) {
      if (!figure[1]) return;
      var box = row.append("div");
      box.append("span").text(figure[0]);
      box.append("b").text(figure[1]);
      if (figure[2]) box.append("span").attr("class", "note").text(figure[2]);
    });
    if (get(report, "uncertainty.step_s"))
      parent.append("p").attr("class", "note").text(
          "Ranges: where " + percent(report.uncertainty.coverage_fraction) + " of " + report.uncertainty.comparable_runs +
          " measured runs of the class '" + report.uncertainty.comparable_class + "' fell against their prediction.");
  }

  function settings(parent, report) {
    var div = section(parent, "Plan and settings");
    var table = div.append("table").attr("class", "settings");
    flatten(report.plan, "", []).forEach(function (row) {
      var tr = table.append("tr");
      tr.append("td").text(row[0]);
      tr.append("td").text(row[1]);
    });
  }

  // ---- memory per stage against capacity ----
  var memoryParts = ["parameters", "gradients", "optimizer", "activations", "other"];

  function memoryRows(report) {
    if (report.stages)
      return Object.keys(report.stages).map(function (index) {
        var stage = report.stages[index];
        return { label: "stage " + index, detail: stage.layers,
                 parts: memoryParts.map(function (part) { return { name: part, bytes: stage[part + "_bytes"] || 0 }; }) };
      });
    if (get(report, "memory.peak_bytes"))
      return Object.keys(report.memory.peak_bytes).map(function (stage) {
        return { label: stage.replace("_", " "), parts: [{ name: "peak", bytes: report.memory.peak_bytes[stage] }] };
      });
    return [{ label: "fullest stage",
              parts: memoryParts.map(function (part) { return { name: part, bytes: report.memory[part + "_bytes"] || 0 }; }) }];
  }

  function memoryChart(parent, report) {
    if (!report.memory) return;
    var rows = memoryRows(report);
    var capacity = report.memory.capacity_bytes;
    var div = section(parent, "Memory per GPU, by pipeline stage",
        "Stacked by what holds it; the red line is the GPU's capacity (" + gigabytes(capacity) + "). " +
        (report.stages || get(report, "memory.peak_bytes") ? "" : "This report breaks down only the fullest stage. ") +
        (report.memory.fits ? "Margin: " + gigabytes(report.memory.headroom_bytes) + "."
                            : "Short by " + gigabytes(-report.memory.headroom_bytes) + ": the plan does not fit."));
    var target = chart(div, "memory", 1100, 40 + rows.length * 34, { top: 10, right: 120, bottom: 30, left: 170 });
    var totals = rows.map(function (row) { return d3.sum(row.parts, function (part) { return part.bytes; }); });
    var x = d3.scale.linear().domain([0, Math.max(capacity, d3.max(totals)) * 1.05]).range([0, target.width]);
    var y = d3.scale.ordinal().domain(rows.map(function (row) { return row.label; })).rangeRoundBands([0, target.height], 0.25);
    var names = [];
    var marks = 0;
    rows.forEach(function (row, index) {
      var start = 0;
      row.parts.forEach(function (part) {
        if (names.indexOf(part.name) < 0) names.push(part.name);
        target.body.append("rect").attr("x", x(start)).attr("y", y(row.label)).attr("height", y.rangeBand())
            .attr("width", Math.max(0, x(start + part.bytes) - x(start))).attr("fill", colors(part.name))
            .append("title").text(row.label + ": " + part.name + " " + gigabytes(part.bytes));
        start += part.bytes;
        marks++;
      });
      target.body.append("text").attr("x", x(totals[index]) + 4).attr("y", y(row.label) + y.rangeBand() / 2 + 4)
          .text(gigabytes(totals[index]) + (row.detail ? "  " + row.detail : ""));
    });
    target.body.append("line").attr("x1", x(capacity)).attr("x2", x(capacity)).attr("y1", 0).attr("y2", target.height)
        .attr("stroke", "#d62728").attr("stroke-width", 2);
    target.body.append("g").attr("class", "axis").attr("transform", "translate(0," + target.height + ")")
        .call(d3.svg.axis().scale(x).orient("bottom").ticks(8).tickFormat(function (v) { return v / 1e9 + " GB"; }));
    target.body.append("g").attr("class", "axis").call(d3.svg.axis().scale(y).orient("left"));
    legend(div, names.map(function (name) { return { label: name, color: colors(name) }; }));
    drawn(target, marks);
  }

  // ---- where the step time goes ----
  function timeParts(report) {
    var time = report.time;
    var parts = [{ name: "compute", seconds: time.compute_s }];
    Object.keys(time.exposed_comm_s || {}).forEach(function (owner) {
      if (time.exposed_comm_s[owner] > 0) parts.push({ name: "exposed " + owner + " communication", seconds: time.exposed_comm_s[owner] });
    });
    [["bubble_s", "pipeline bubble"], ["optimizer_s", "optimizer step"], ["host_wait_s", "host wait"],
     ["overlap_contention_s", "overlap contention"]].forEach(function (key) {
      if (time[key[0]] > 0) parts.push({ name: key[1], seconds: time[key[0]] });
    });
    var rest = time.step_s - d3.sum(parts, function (part) { return part.seconds; });
    if (Math.abs(rest) > 0.005 * time.step_s) parts.push({ name: rest > 0 ? "not broken down" : "counted twice (overlap)", seconds: Math.abs(rest) });
    return parts;
  }

  function timeChart(parent, report) {
    if (!report.time) return;
    var parts = timeParts(report);
    var band = get(report, "uncertainty.step_s");
    var div = section(parent, "Where the step time goes",
        "One optimizer step of " + seconds(report.time.step_s) + ", stacked." +
        (band ? " The whisker is the step time's range (" + seconds(band.low) + " – " + seconds(band.high) + ")." : ""));
    var target = chart(div, "step-time", 1100, 110, { top: 10, right: 40, bottom: 30, left: 20 });
    var x = d3.scale.linear().domain([0, Math.max(report.time.step_s, band ? band.high : 0) * 1.05]).range([0, target.width]);
    var start = 0;
    parts.forEach(function (part) {
      target.body.append("rect").attr("x", x(start)).attr("y", 10).attr("height", 40)
          .attr("width", Math.max(0, x(start + part.seconds) - x(start))).attr("fill", colors(part.name))
          .append("title").text(part.name + ": " + seconds(part.seconds) + " (" + percent(part.seconds / report.time.step_s) + ")");
      start += part.seconds;
    });
    if (band) {
      target.body.append("line").attr("class", "whisker").attr("x1", x(band.low)).attr("x2", x(band.high)).attr("y1", 60).attr("y2", 60)
          .attr("stroke", "#333");
      [band.low, band.high].forEach(function (end) {
        target.body.append("line").attr("x1", x(end)).attr("x2", x(end)).attr("y1", 54).attr("y2", 66).attr("stroke", "#333");
      });
    }
    target.body.append("g").attr("class", "axis").attr("transform", "translate(0," + target.height + ")")
        .call(d3.svg.axis().scale(x).orient("bottom").ticks(10).tickFormat(function (v) { return seconds(v); }));
    legend(div, parts.map(function (part) {
      return { label: part.name + " " + seconds(part.seconds) + " (" + percent(part.seconds / report.time.step_s) + ")", color: colors(part.name) };
    }));
    drawn(target, parts.length);
  }

  // ---- the simulated step, event by event ----
  function timelineChart(parent, trace) {
    if (!trace) return;
    var events = trace.events.filter(function (event) { return event.ph === "X"; });
    var names = {};
    trace.events.forEach(function (event) {
      if (event.ph !== "M") return;
      if (event.name === "process_name") names[event.pid] = event.args.name;
      if (event.name === "thread_name") names[event.pid + "/" + event.tid] = event.args.name;
    });
    var lanes = d3.set(events.map(function (event) { return event.pid + "/" + event.tid; })).values().sort(function (a, b) {
      var pa = a.split("/").map(Number), pb = b.split("/").map(Number);
      return pa[0] - pb[0] || pa[1] - pb[1];
    });
    var div = section(parent, "Timeline of one simulated step",
        "Each row is one stream of one rank (a pipeline stage's representative unless --ranks all). Drag to pan, " +
        "scroll to zoom; hover a bar for its op. " + (trace.note || ""));
    var laneHeight = 16;
    var target = chart(div, "timeline", 1160, 50 + lanes.length * laneHeight, { top: 10, right: 20, bottom: 30, left: 260 });
    var end = d3.max(events, function (event) { return event.ts + event.dur; }) || 1;
    var x = d3.scale.linear().domain([0, end]).range([0, target.width]);
    var y = d3.scale.ordinal().domain(lanes).rangeBands([0, target.height], 0.15);
    target.svg.append("defs").append("clipPath").attr("id", "timeline-clip").append("rect")
        .attr("width", target.width).attr("height", target.height);
    var plot = target.body.append("g").attr("clip-path", "url(#timeline-clip)");
    var category = d3.scale.ordinal().domain(["step", "compute", "communication"]).range(["#c7c7c7", "#1f77b4", "#ff7f0e"]);
    var bars = plot.selectAll("rect").data(events).enter().append("rect")
        .attr("y", function (event) { return y(event.pid + "/" + event.tid); }).attr("height", y.rangeBand())
        .attr("fill", function (event) { return category(event.cat); });
    bars.append("title").text(function (event) { return event.name + " — " + seconds(event.dur / 1e6); });
    var axis = d3.svg.axis().scale(x).orient("bottom").ticks(10).tickFormat(function (us) { return seconds(us / 1e6); });
    var axisGroup = target.body.append("g").attr("class", "axis").attr("transform", "translate(0," + target.height + ")");
    function redraw() {
      bars.attr("x", function (event) { return x(event.ts); })
          .attr("width", function (event) { return Math.max(0.5, x(event.ts + event.dur) - x(event.ts)); });
      axisGroup.call(axis);
    }
    target.svg.call(d3.behavior.zoom().x(x).scaleExtent([1, 1e6]).on("zoom", redraw));
    redraw();
    target.body.append("g").attr("class", "axis").call(d3.svg.axis().scale(y).orient("left").tickFormat(function (lane) {
      var pid = lane.split("/")[0];
      return (names[pid] || "rank " + pid).replace(/ \(.*$/, "") + " · " + (names[lane] || lane);
    }));
    legend(div, category.domain().map(function (name) { return { label: name, color: category(name) }; }));
    drawn(target, events.length);
  }

  // ---- validate: predicted against measured ----
  function validateCharts(parent, report) {
    var rows = (report.rows || []).filter(function (row) { return row.predicted != null && row.measured != null; });
    var metrics = d3.set(rows.map(function (row) { return row.metric; })).values();
    var sources = d3.set(rows.map(function (row) { return row.source; })).values();
    var div = section(parent, "Predicted against measured",
        report.evaluated + " runs evaluated, " + report.unevaluable + " could not be; MAPE " + report.mape_pct.toFixed(1) +
        " %, Spearman " + (report.spearman == null ? "n/a" : report.spearman.toFixed(3)) +
        ". The diagonal is a perfect prediction, the band ±10 %. Hover a point for its run.");
    metrics.forEach(function (metric) {
      var points = rows.filter(function (row) { return row.metric === metric; });
      var target = chart(div, "validate-" + metric, 560, 460, { top: 20, right: 20, bottom: 50, left: 80 });
      var low = d3.min(points, function (row) { return Math.min(row.measured, row.predicted); }) * 0.8;
      var high = d3.max(points, function (row) { return Math.max(row.measured, row.predicted); }) * 1.25;
      var x = d3.scale.log().domain([low, high]).range([0, target.width]);
      var y = d3.scale.log().domain([low, high]).range([target.height, 0]);
      var band = d3.svg.area().x(function (v) { return x(v); }).y0(function (v) { return y(Math.min(high, v * 1.1)); })
          .y1(function (v) { return y(Math.max(low, v / 1.1)); });
      var steps = d3.range(0, 101).map(function (i) { return low * Math.pow(high / low, i / 100); });
      target.body.append("path").attr("d", band(steps)).attr("fill", "#e8e8e8");
      target.body.append("line").attr("x1", x(low)).attr("y1", y(low)).attr("x2", x(high)).attr("y2", y(high)).attr("stroke", "#999");
      points.forEach(function (row) {
        target.body.append("circle").attr("cx", x(row.measured)).attr("cy", y(row.predicted)).attr("r", 4)
            .attr("fill", colors(row.source)).attr("fill-opacity", 0.8)
            .append("title").text(row.id + ": measured " + row.measured.toPrecision(4) + ", predicted " + row.predicted.toPrecision(4) +
                                  " (" + (row.error_pct > 0 ? "+" : "") + row.error_pct.toFixed(1) + " %)\n" + (row.plan || ""));
      });
      target.body.append("g").attr("class", "axis").attr("transform", "translate(0," + target.height + ")")
          .call(d3.svg.axis().scale(x).orient("bottom").ticks(5, ",.3r"));
      target.body.append("g").attr("class", "axis").call(d3.svg.axis().scale(y).orient("left").ticks(5, ",.3r"));
      axisTitles(target, "measured " + metric, "predicted " + metric);
      drawn(target, points.length);
    });
    legend(div, sources.map(function (source) { return { label: source, color: colors(source) }; }));
  }

  // A plan's report: its headline figures, settings, memory per stage and step time.
  function planReport(parent, report) {
    headline(parent, report);
    settings(parent, report);
    memoryChart(parent, report);
    timeChart(parent, report);
  }

  // ---- search: every timed plan, step time against memory ----
  function searchCharts(parent, report) {
    var cells = documentData.cells || [], front = documentData.front || [];
    var rejected = Object.keys(report.rejected || {}).map(function (reason) {
      return reason + " " + report.rejected[reason].plans.toLocaleString("en-US");
    });
    var div = section(parent, "Every timed plan: step time against memory per GPU",
        report.plans.toLocaleString("en-US") + " candidate plans; " + report.priced_plans.toLocaleString("en-US") +
        " priced, " + report.valid_plans.toLocaleString("en-US") + " fit and were timed (rejected: " + rejected.join(", ") +
        "). Grey: one point per cell of 3 % in step time by 2 % in memory, its area growing with the plans in the cell; " +
        "red: the Pareto front (no timed plan is both faster and smaller); blue rings: the top " + report.top.length +
        ". The dashed line is the usable memory (capacity less the headroom). Hover a point for its plan; click it for its report below.");
    var target = chart(div, "search", 1100, 560, { top: 20, right: 30, bottom: 50, left: 90 });
    var points = cells.concat(front);
    var x = d3.scale.linear().domain([0, Math.max(report.usable_memory_bytes, d3.max(points, function (p) { return p.memory_per_gpu_bytes; })) * 1.05])
        .range([0, target.width]);
    var y = d3.scale.log().domain([d3.min(points, function (p) { return p.step_s; }) * 0.9, d3.max(points, function (p) { return p.step_s; }) * 1.1])
        .range([target.height, 0]);
    var most = d3.max(cells, function (cell) { return cell.plans; }) || 1;
    var selected = d3.select(null);
    function describe(point) {
      return point.plan + "\nstep " + seconds(point.step_s) + ", " + gigabytes(point.memory_per_gpu_bytes) + " per GPU, MFU " +
             percent(point.mfu) + (point.plans > 1 ? "\n(" + point.plans.toLocaleString("en-US") + " plans in this cell)" : "");
    }
    function show(point, mark) {
      selected.attr("stroke", null);
      selected = d3.select(mark).attr("stroke", "#000").attr("stroke-width", 2);
      detail.selectAll("*").remove();
      detail.append("h2").text(point.report ? "The selected plan's report" : "The selected plan");
      detail.append("p").attr("class", "note").text(describe(point));
      if (point.report) planReport(detail, point.report);
      else detail.append("p").attr("class", "note").text("Plans of the Pareto front and the winner carry their full report; this one is a cell's representative.");
    }
    target.body.append("line").attr("x1", x(report.usable_memory_bytes)).attr("x2", x(report.usable_memory_bytes))
        .attr("y1", 0).attr("y2", target.height).attr("stroke", "#d62728").attr("stroke-dasharray", "6,4");
    var marks = 0;
    cells.forEach(function (cell) {
      target.body.append("circle").attr("class", "cell").attr("cx", x(cell.memory_per_gpu_bytes)).attr("cy", y(cell.step_s))
          .attr("r", 1.5 + 5 * Math.sqrt(cell.plans / most)).attr("fill", "#9e9e9e").attr("fill-opacity", 0.5)
          .on("click", function () { show(cell, this); })
          .append("title").text(describe(cell));
      marks++;
    });
    target.body.append("path").attr("fill", "none").attr("stroke", "#d62728").attr("stroke-width", 1.5)
        .attr("d", d3.svg.line().interpolate("step-after").x(function (p) { return x(p.memory_per_gpu_bytes); })
                                 .y(function (p) { return y(p.step_s); })(front));
    var frontMarks = [];
    front.forEach(function (plan) {
      frontMarks.push(target.body.append("circle").attr("class", "front").attr("cx", x(plan.memory_per_gpu_bytes)).attr("cy", y(plan.step_s))
          .attr("r", 4).attr("fill", "#d62728").style("cursor", "pointer")
          .on("click", function () { show(plan, this); }));
      frontMarks[frontMarks.length - 1].append("title").text(describe(plan));
      marks++;
    });
    report.top.forEach(function (plan) {
      target.body.append("circle").attr("class", "top").attr("cx", x(plan.memory_per_gpu_bytes)).attr("cy", y(plan.step_s))
          .attr("r", 7).attr("fill", "none").attr("stroke", "#1f77b4").attr("stroke-width", 1.5).style("pointer-events", "none");
    });
    target.body.append("g").attr("class", "axis").attr("transform", "translate(0," + target.height + ")")
        .call(d3.svg.axis().scale(x).orient("bottom").ticks(10).tickFormat(function (v) { return v / 1e9 + " GB"; }));
    target.body.append("g").attr("class", "axis").call(d3.svg.axis().scale(y).orient("left").ticks(8, function (v) { return seconds(v); }));
    axisTitles(target, "memory per GPU", "step time (log)");
    drawn(target, marks);

    var top = section(parent, "The top " + report.top.length + " (objective: " + report.objective + ")");
    var table = top.append("table").attr("class", "settings");
    report.top.forEach(function (plan) {
      var row = table.append("tr");
      row.append("td").text(plan.rank);
      row.append("td").text(seconds(plan.step_s) + "  " + percent(plan.mfu) + "  " + gigabytes(plan.memory_per_gpu_bytes));
      row.append("td").text(plan.plan);
    });
    var detail = parent.append("div").attr("id", "selected-plan");
    // "#front-3" in the address opens with the front's fourth plan selected, as a click would.
    var asked = /^#front-(\d+)$/.exec(window.location.hash);
    if (asked && front[+asked[1]]) {
      show(front[+asked[1]], frontMarks[+asked[1]].node());
    } else if (report.winner) {
      detail.append("h2").text("The winner's report");
      detail.append("p").attr("class", "note").text(report.top[0].plan);
      planReport(detail, report.winner);
    }
  }

  // ---- a sweep of one recipe key: throughput and MFU against its value ----
  function sweepCharts(parent, sweep) {
    var points = sweep.points.filter(function (point) { return point.report; });
    var numeric = points.every(function (point) { return isFinite(+point.value); });
    var div = section(parent, "Sweep of " + sweep.key,
        "The recipe's plan evaluated once per value of " + sweep.key + " (each as --set " + sweep.key + "=VALUE). " +
        "Hollow points do not fit in memory; values without a plan are listed at the top. Whiskers: the figure's range.");
    var figures = [
      { name: "throughput", label: "tokens/s (all GPUs)", value: function (r) { return r.throughput.tokens_per_s; },
        band: function (r) {
          var low = get(r, "uncertainty.tokens_per_s_per_gpu.low"), high = get(r, "uncertainty.tokens_per_s_per_gpu.high");
          return low == null ? null : [low * r.plan.num_gpus, high * r.plan.num_gpus];
        }, format: function (v) { return Math.round(v).toLocaleString("en-US"); } },
      { name: "mfu", label: "MFU", value: function (r) { return r.throughput.mfu; },
        band: function (r) { var u = get(r, "uncertainty.mfu"); return u ? [u.low, u.high] : null; }, format: percent }];
    figures.forEach(function (figure) {
      var target = chart(div, "sweep-" + figure.name, 540, 380, { top: 20, right: 20, bottom: 50, left: 90 });
      var values = points.map(function (point) { return numeric ? +point.value : point.value; });
      var positive = numeric && values.every(function (v) { return v > 0; });
      var x = !numeric ? d3.scale.ordinal().domain(values).rangePoints([0, target.width], 0.5)
            : (positive && d3.max(values) / d3.min(values) >= 8 ? d3.scale.log().base(2) : d3.scale.linear())
                .domain(d3.extent(values)).range([0, target.width]).nice();
      var highest = d3.max(points, function (p) { var b = figure.band(p.report); return b ? b[1] : figure.value(p.report); });
      var y = d3.scale.linear().domain([0, highest * 1.1]).range([target.height, 0]);
      var at = function (point) { return x(numeric ? +point.value : point.value); };
      target.body.append("path").attr("fill", "none").attr("stroke", "#1f77b4").attr("stroke-width", 2)
          .attr("d", d3.svg.line().x(at).y(function (p) { return y(figure.value(p.report)); })(points));
      points.forEach(function (point) {
        var band = figure.band(point.report);
        if (band) target.body.append("line").attr("x1", at(point)).attr("x2", at(point)).attr("y1", y(band[0])).attr("y2", y(band[1]))
            .attr("stroke", "#1f77b4").attr("stroke-opacity", 0.5);
        target.body.append("circle").attr("cx", at(point)).attr("cy", y(figure.value(point.report))).attr("r", 4.5)
            .attr("fill", point.fits ? "#1f77b4" : "#fff").attr("stroke", point.fits ? "#1f77b4" : "#d62728").attr("stroke-width", 2)
            .append("title").text(sweep.key + " = " + point.value + ": " + figure.label + " " + figure.format(figure.value(point.report)) +
                                  (point.fits ? "" : " (does not fit)"));
      });
      var axis = d3.svg.axis().scale(x).orient("bottom");
      if (numeric) axis.ticks(8, ",");
      if (numeric && x.base) axis.tickValues(values);
      target.body.append("g").attr("class", "axis").attr("transform", "translate(0," + target.height + ")").call(axis);
      target.body.append("g").attr("class", "axis").call(d3.svg.axis().scale(y).orient("left").ticks(8).tickFormat(figure.format));
      axisTitles(target, sweep.key, figure.label);
      drawn(target, points.length);
    });
    var table = section(parent, "Each value").append("table").attr("class", "settings");
    sweep.points.forEach(function (point) {
      var row = table.append("tr");
      row.append("td").text(sweep.key + " = " + point.value);
      row.append("td").text(point.report
          ? seconds(point.report.time.step_s) + " per step, " + Math.round(point.report.throughput.tokens_per_s_per_gpu).toLocaleString("en-US") +
            " tokens/s per GPU, MFU " + percent(point.report.throughput.mfu) + ", " + gigabytes(point.report.memory.per_gpu_bytes) +
            " per GPU" + (point.fits ? "" : " (does not fit)")
          : point.error);
    });
  }

  header(root);
  if (documentData.kind === "sweep") {
    sweepCharts(root, documentData.report);
  } else if (documentData.kind === "validate") {
    validateCharts(root, documentData.report);
  } else if (documentData.kind === "search") {
    searchCharts(root, documentData.report);
  } else {
    planReport(root, documentData.report);
    timelineChart(root, documentData.trace);
  }
  document.body.setAttribute("data-report-drawn", "true");
})();
