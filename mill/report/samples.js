// samples.html: every sample of a run, read from the JSON embedded in the page (no fetch, no
// server: it works from file://). Filters, search and sort work on an array of row indices;
// only the rows of the current page are rendered (PAGE at a time), so a run of any size
// opens at once. Written by mill/report/samples.py, which documents the data layout.
(function () {
  "use strict";
  var PAGE = 50;
  var data = JSON.parse(document.getElementById("mill-samples").textContent);
  var rows = data.rows, prefixes = data.prefixes;
  var $ = function (id) { return document.getElementById(id); };
  var state = { order: null, page: 0, hay: null, prefixHay: null };

  function esc(value) {
    var text = value === null || value === undefined ? "" : String(value);
    return text.replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }
  function shown(value) {
    return typeof value === "string" ? value : JSON.stringify(value);
  }
  function prompt(row) { return prefixes[row.q[0]] + row.q[1]; }

  // --- what each filter reads -----------------------------------------------------------
  function verdict(row, metric) {
    var v = row.m[metric];
    if (v === true || v === 1) { return "right"; }
    if (v === false || v === 0) { return "wrong"; }
    return null;
  }
  function truncated(row) {
    return !!row.h && row.h.some(function (hit) { return hit === true; });
  }
  function extractionFailed(row) {
    if (!row.x || typeof row.x !== "object") { return false; }
    return Object.keys(row.x).some(function (k) {
      var v = row.x[k];
      return v === null || v === "" || v === "[invalid]" || (Array.isArray(v) && !v.length);
    });
  }
  function repeatsDisagree(row) {
    var answers = row.pp || row.o || [];
    return answers.length > 1 && answers.some(function (a) { return a !== answers[0]; });
  }
  var FLAGS = { truncated: truncated, extraction: extractionFailed, repeats: repeatsDisagree,
    cut: function (row) { return row.tc > 0; } };

  // --- search: every word typed, in any field (the haystacks are built on first use) -----
  function haystacks() {
    if (state.hay) { return; }
    state.hay = rows.map(function (row) {
      return [row.q[1], row.s, row.d, shown(row.g), (row.c || []).join("\n"),
        (row.o || []).join("\n"), (row.pp || []).join("\n"), shown(row.x || ""),
        shown(row.j || "")].join("\n").toLowerCase();
    });
    state.prefixHay = prefixes.map(function (p) { return p.toLowerCase(); });
  }
  function matcher(words) {
    if (!words.length) { return null; }
    haystacks();
    var inPrefix = state.prefixHay.map(function (p) {
      return words.map(function (w) { return p.indexOf(w) >= 0; });
    });
    return function (i) {
      var hay = state.hay[i], pre = inPrefix[rows[i].q[0]];
      return words.every(function (w, k) { return pre[k] || hay.indexOf(w) >= 0; });
    };
  }

  // --- sort keys ------------------------------------------------------------------------
  function margin(row) {  // the gold's log-likelihood minus the best other choice's
    if (!row.l || typeof row.g !== "number") { return 0; }
    var best = -Infinity;
    row.l.forEach(function (ll, k) { if (k !== row.g && ll > best) { best = ll; } });
    return row.l[row.g] - best;
  }
  var SORTS = {
    doc: null,
    prompt: function (row) { return -(prefixes[row.q[0]].length + row.q[1].length); },
    answer: function (row) {
      return -(row.o || []).reduce(function (n, o) { return n + o.length; }, 0);
    },
    margin: margin
  };

  function select() {
    var task = $("task").value, subject = $("subject").value, metric = $("metric").value;
    var want = $("verdict").value, flag = FLAGS[$("flag").value];
    var words = $("q").value.toLowerCase().split(/\s+/).filter(Boolean);
    var match = matcher(words), out = [];
    for (var i = 0; i < rows.length; i += 1) {
      var row = rows[i];
      if (task && data.tasks[row.t] !== task) { continue; }
      if (subject && row.s !== subject) { continue; }
      if (want && verdict(row, metric) !== want) { continue; }
      if (flag && !flag(row)) { continue; }
      if (match && !match(i)) { continue; }
      out.push(i);
    }
    var key = SORTS[$("sort").value];
    if (key) {
      var keys = out.map(function (i) { return key(rows[i]); });
      var at = out.map(function (_, k) { return k; });
      at.sort(function (a, b) { return keys[a] - keys[b] || a - b; });
      out = at.map(function (k) { return out[k]; });
    }
    state.order = out;
    state.page = 0;
    render();
  }

  // --- one sample -----------------------------------------------------------------------
  var TURN_FORMS = [  // chat templates rendered into the prompt, shown as turns
    /<\|im_start\|>(\w+)\n([\s\S]*?)(?:<\|im_end\|>\n?|$)/g,
    /<\|start_header_id\|>(\w+)<\|end_header_id\|>\n\n([\s\S]*?)(?:<\|eot_id\|>|$)/g
  ];
  function turns(text) {
    for (var f = 0; f < TURN_FORMS.length; f += 1) {
      var form = new RegExp(TURN_FORMS[f].source, "g"), found = [], m;
      while ((m = form.exec(text)) !== null) {
        if (!m[0]) { break; }
        found.push("<div class='turn'><span class='role'>" + esc(m[1]) + "</span><pre>" +
          esc(m[2]) + "</pre></div>");
      }
      if (found.length) { return found.join(""); }
    }
    return null;
  }
  function sentTurns(row) {  // the chat messages a server was sent, as they were sent
    return row.ms ? row.ms.map(function (m) {
      return "<div class='turn'><span class='role'>" + esc(m[0]) + "</span><pre>" +
        esc(m[1]) + "</pre></div>";
    }).join("") : null;
  }
  function promptHtml(row) {
    var text = prompt(row), asTurns = sentTurns(row) || turns(text);
    var raw = "<pre class='prompt'>" + esc(text) + "</pre>";
    var body = asTurns ? asTurns + "<details><summary>as one string</summary>" + raw +
      "</details>" : raw;
    var cut = row.tc > 0 ? " · " + row.tc + " tokens cut from the left" : "";
    return "<details class='p'><summary>prompt (" + text.length + " characters" + cut +
      ")</summary>" + body + "</details>" +
      "<pre class='tail'>" + esc(text.slice(-400)) + "</pre>";
  }
  function choicesHtml(row) {
    var picks = row.p || {}, body = row.c.map(function (choice, k) {
      var who = Object.keys(picks).filter(function (m) { return picks[m] === k; });
      var gold = Array.isArray(row.g) ? row.g.indexOf(k) >= 0 : row.g === k;
      return "<tr class='" + (gold ? "gold" : "") + "'><td>" + k + "</td><td>" + esc(choice) +
        (gold ? " <b>(gold)</b>" : "") + "</td><td class='num'>" +
        (row.l ? row.l[k].toFixed(4) : "") + "</td>" +
        (row.u ? "<td class='num'>" + row.u[k].toFixed(4) + "</td>" : "") +
        "<td>" + esc(who.join(", ")) + "</td></tr>";
    });
    return "<table class='choices'><thead><tr><th>#</th><th>choice</th>" +
      "<th class='num'>log-likelihood</th>" + (row.u ? "<th class='num'>unconditioned</th>" : "") +
      "<th>picked by</th></tr></thead><tbody>" + body.join("") + "</tbody></table>";
  }
  function generationsHtml(row) {
    var out = (row.o || []).map(function (text, k) {
      var post = row.pp ? row.pp[k] : null, verdictOf = row.e ? row.e[k] : null;
      var notes = [];
      if (row.h && row.h[k]) { notes.push("stopped at max_gen_toks"); }
      if (row.r && row.r[k]) { notes.push("reasoning never closed"); }
      return "<div class='gen'><span class='small'>" +
        (row.o.length > 1 ? "repeat " + (k + 1) + " · " : "") + "generation" +
        (notes.length ? " · <b>" + esc(notes.join(", ")) + "</b>" : "") + "</span><pre>" +
        esc(text) + "</pre>" + (post !== null && post !== undefined && post !== text ?
          "<span class='small'>post-processed (text_post_processed)</span><pre>" + esc(post) +
          "</pre>" : "") + (verdictOf ? "<div class='small'>execution: <b>" +
          esc(verdictOf.status) + "</b> " + esc(verdictOf.message || "") + "</div>" : "") +
        "</div>";
    });
    if (row.x !== undefined) {
      out.push("<div><span class='small'>extracted answer</span> <code>" + esc(shown(row.x)) +
        "</code></div>");
    }
    (row.tu || []).slice(1).forEach(function (answer, k) {
      out.push("<div class='gen'><span class='small'>turn " + (k + 2) + "</span><pre>" +
        esc(answer) + "</pre></div>");
    });
    return out.join("");
  }
  function judgmentsHtml(row) {
    if (!row.j) { return ""; }
    return Object.keys(row.j).map(function (metric) {
      return row.j[metric].map(function (call) {
        return "<div class='judge'><span class='small'>" + esc(metric) + " judge: <b>" +
          esc(shown(call.judgment)) + "</b></span><pre>" + esc(call.reply) + "</pre></div>";
      }).join("");
    }).join("");
  }
  function verdictChips(row) {
    return Object.keys(row.m).map(function (name) {
      var v = verdict(row, name), value = row.m[name];
      var text = typeof value === "number" ? +value.toFixed(4) : shown(value);
      return "<span class='chip " + (v === "right" ? "ok" : v === "wrong" ? "fail" : "") +
        "'>" + esc(name) + " " + esc(v || text) + "</span>";
    }).join("") + (truncated(row) ? "<span class='chip fail'>truncated</span>" : "") +
      (extractionFailed(row) ? "<span class='chip fail'>extraction failed</span>" : "");
  }
  function sampleHtml(i) {
    var row = rows[i], task = data.tasks[row.t];
    var where = task + (row.s && row.s !== task && row.s !== "default" ? " · " + row.s : "");
    return "<article class='sample' data-key='" + esc(task + "/" + row.s + "/" + row.d) +
      "'><header><b>" + esc(where) + "</b> · doc " + esc(row.d) + " " + verdictChips(row) +
      "</header>" + promptHtml(row) + (row.c && row.c.length ? choicesHtml(row) : "") +
      "<div><span class='small'>gold</span> <code>" + esc(shown(row.g)) + "</code></div>" +
      generationsHtml(row) + judgmentsHtml(row) + "</article>";
  }

  function render() {
    var order = state.order, pages = Math.max(1, Math.ceil(order.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    var start = state.page * PAGE, end = Math.min(order.length, start + PAGE);
    $("list").innerHTML = order.slice(start, end).map(sampleHtml).join("");
    $("count").textContent = order.length + " of " + rows.length + " samples" +
      (order.length ? " · " + (start + 1) + "–" + end : "") + " · page " + (state.page + 1) +
      " of " + pages;
    $("prev").disabled = state.page === 0;
    $("next").disabled = state.page >= pages - 1;
  }

  // --- controls -------------------------------------------------------------------------
  function options(id, values, label) {
    $(id).innerHTML = "<option value=''>" + esc(label) + "</option>" +
      values.map(function (v) { return "<option>" + esc(v) + "</option>"; }).join("");
  }
  function subjects() {
    var task = $("task").value, seen = {};
    rows.forEach(function (row) {
      if (!task || data.tasks[row.t] === task) { seen[row.s] = true; }
    });
    var list = Object.keys(seen).sort();
    options("subject", list.length > 1 ? list : [], "every subject");
    $("subject").disabled = list.length < 2;
  }
  function metrics() {  // the 0/1 metrics of the task chosen (of every task: their union)
    var task = $("task").value, seen = {}, keep = $("metric").value;
    data.tasks.forEach(function (name) {
      if (!task || name === task) { data.binary[name].forEach(function (m) { seen[m] = 1; }); }
    });
    var list = Object.keys(seen);
    $("metric").innerHTML = list.map(function (m) {
      return "<option" + (m === keep ? " selected" : "") + ">" + esc(m) + "</option>";
    }).join("");
    $("verdict").disabled = $("metric").disabled = !list.length;
  }
  options("task", data.tasks, "every task");
  subjects();
  metrics();
  var timer = null;
  $("q").addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(select, 150);
  });
  $("task").addEventListener("change", function () { subjects(); metrics(); select(); });
  ["subject", "metric", "verdict", "flag", "sort"].forEach(function (id) {
    $(id).addEventListener("change", select);
  });
  $("prev").addEventListener("click", function () { state.page -= 1; render(); });
  $("next").addEventListener("click", function () { state.page += 1; render(); });
  select();
  document.body.setAttribute("data-ready", "1");
})();
