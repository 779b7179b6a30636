// The batch report page (`baseagent batch report DIR`, `baseagent serve --batch DIR`): the
// task list with status filters, a summary, and per task why it did not pass, its figures,
// its check output, workspace diff and transcript (render.js, as the serve page draws a
// thread). The data is the JSON block #report-data; every string of it is set as text.
(function (root) {
  "use strict";
  var R = root.BaseagentRender, md = root.BaseagentMarkdown;
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var tasks = data.tasks || [];
  var filter = "all", openId = null;
  var STATUSES = ["all", "passed", "failed", "error", "interrupted"];

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = md.inert(String(text));
    return node;
  }
  function tokens(usage) {
    if (!usage) return 0;
    return (usage.input_tokens || 0) + (usage.output_tokens || 0);
  }
  function seconds(s) { return s === null || s === undefined ? "?" : Number(s).toFixed(1) + " s"; }

  function count(status) {
    return status === "all" ? tasks.length : tasks.filter(function (t) { return t.status === status; }).length;
  }

  function drawFilters() {
    var box = document.getElementById("filters");
    box.textContent = "";
    STATUSES.forEach(function (status) {
      var n = count(status);
      if (status !== "all" && n === 0) return;
      var b = box.appendChild(el("button", status === filter ? "on" : "", status + " (" + n + ")"));
      b.type = "button";
      b.setAttribute("data-filter", status);
      b.addEventListener("click", function () { filter = status; drawFilters(); drawList(); });
    });
  }

  function drawList() {
    var list = document.getElementById("tasks");
    list.textContent = "";
    tasks.forEach(function (task) {
      if (filter !== "all" && task.status !== filter) return;
      var li = list.appendChild(el("li", task.id === openId ? "open" : ""));
      li.setAttribute("data-task", task.id);
      li.appendChild(el("span", "t-id", task.id));
      li.appendChild(el("span", "status " + task.status, task.status));
      li.addEventListener("click", function () { open(task.id); });
    });
  }

  function drawTotals() {
    var box = document.getElementById("totals");
    var s = data.summary || {};
    var parts = [];
    STATUSES.slice(1).forEach(function (status) { parts.push(status + " " + count(status)); });
    var sumTokens = 0, sumCost = 0, costKnown = true;
    tasks.forEach(function (t) {
      sumTokens += tokens(t.usage);
      if (t.cost_usd === null || t.cost_usd === undefined) { if (t.usage) costKnown = false; } else sumCost += t.cost_usd;
    });
    parts.push(sumTokens + " tokens");
    parts.push(costKnown ? "$" + sumCost.toFixed(4) : "cost unknown");
    if (s.wall_time_s !== undefined) parts.push("wall time " + seconds(s.wall_time_s));
    if (s.task_time_p50_s !== undefined && s.task_time_p50_s !== null) parts.push("p50 " + seconds(s.task_time_p50_s));
    if (s.task_time_p95_s !== undefined && s.task_time_p95_s !== null) parts.push("p95 " + seconds(s.task_time_p95_s));
    parts.forEach(function (p) { box.appendChild(el("span", null, p)); });
  }

  function section(parent, title, openNow) {
    var d = parent.appendChild(el("details", "section"));
    d.appendChild(el("summary", null, title));
    if (openNow) d.open = true;
    return d;
  }

  function open(id) {
    var task = tasks.filter(function (t) { return t.id === id; })[0];
    if (!task) return;
    openId = id;
    drawList();
    document.getElementById("summary").hidden = true;
    document.getElementById("to-summary").hidden = false;
    document.getElementById("title").textContent = md.inert(String(task.id));
    var badge = document.getElementById("status");
    badge.textContent = task.status;
    badge.className = "status " + task.status;
    document.getElementById("usage").textContent = tokens(task.usage) + " tokens, " + R.costText(task.cost_usd);
    var box = document.getElementById("detail");
    box.hidden = false;
    box.textContent = "";
    if (task.why) box.appendChild(el("div", "why", task.why));
    var m = box.appendChild(el("div", "metrics"));
    m.appendChild(el("span", null, "wall time " + seconds(task.duration_s)));
    m.appendChild(el("span", null, "model calls " + (task.model_calls === null || task.model_calls === undefined ? "?" : task.model_calls)));
    if (task.usage) {
      m.appendChild(el("span", null, "input " + (task.usage.input_tokens || 0) + " (cached " + (task.usage.cached_input_tokens || 0) + ")"));
      m.appendChild(el("span", null, "output " + (task.usage.output_tokens || 0)));
    }
    m.appendChild(el("span", null, R.costText(task.cost_usd)));
    if (task.agent_status) m.appendChild(el("span", null, "agent " + task.agent_status));
    var failed = task.status !== "passed";
    if (task.check) {
      var c = section(box, "check: exit code " + task.check.exit_code, failed);
      c.appendChild(el("pre", "check-output", task.check.output || "(no output)"));
    }
    if (task.setup) {
      var st = section(box, "setup: exit code " + task.setup.exit_code, failed);
      st.appendChild(el("pre", "setup-output", task.setup.output || "(no output)"));
    }
    if (task.traceback) section(box, "traceback", false).appendChild(el("pre", null, task.traceback));
    if (task.diff !== null && task.diff !== undefined) {
      var d = section(box, "workspace diff", false);
      if (task.diff) d.appendChild(R.diffView(task.diff)); else d.appendChild(el("div", "notice", "no change to the template"));
    }
    var t = section(box, "transcript", true);
    var holder = t.appendChild(el("div", "transcript"));
    holder.id = "transcript";
    var view = R.transcript(holder, {root: task.workspace});
    (task.events || []).forEach(function (event) {
      try { view.apply(event); } catch (err) { holder.appendChild(el("div", "notice", "event not drawn: " + err)); }
    });
    if (!(task.events || []).length) holder.appendChild(el("div", "notice", "no transcript recorded"));
  }

  function summary() {
    openId = null;
    drawList();
    document.getElementById("summary").hidden = false;
    document.getElementById("detail").hidden = true;
    document.getElementById("to-summary").hidden = true;
    document.getElementById("title").textContent = "summary";
    document.getElementById("status").textContent = "";
    document.getElementById("usage").textContent = "";
  }

  document.getElementById("to-summary").addEventListener("click", summary);
  drawFilters();
  drawList();
  drawTotals();
})(typeof window !== "undefined" ? window : this);
