// The page: a thread list, one open thread's transcript (render.js) streamed live through
// the client (client.js), and the controls (start, send, cancel, approve, resume).
(function () {
  "use strict";
  var client = new BaseagentClient({});
  var $ = function (id) { return document.getElementById(id); };
  var current = null;  // {id, live, subscription, view}
  var threads = [];

  function problem(error) {
    var box = $("problem");
    box.hidden = !error;
    box.textContent = error ? String(error.message || error) : "";
  }

  function usageText(u, cost) {
    if (!u) return "";
    return "tokens " + u.input_tokens + " in (" + u.cached_input_tokens + " cached) \u00b7 "
      + u.output_tokens + " out \u00b7 " + BaseagentRender.costText(cost);
  }

  function setStatus(status) {
    var s = $("status");
    s.textContent = status || "";
    s.className = "status " + (status || "");
    var running = status === "running";
    $("cancel").hidden = !current || !current.live || !running;
    $("send").disabled = running;
  }

  async function loadThreads() {
    try {
      var data = await client.listThreads();
      threads = data.threads;
      drawThreads();
    } catch (e) { problem(e); }
  }

  function drawThreads() {
    var list = $("threads");
    list.textContent = "";
    threads.forEach(function (t) {
      var li = list.appendChild(document.createElement("li"));
      li.setAttribute("data-thread", t.id);
      if (current && current.id === t.id) li.className = "open";
      var title = li.appendChild(document.createElement("span"));
      title.className = "t-title";
      title.textContent = BaseagentMarkdown.inert(t.title || t.id);
      var meta = li.appendChild(document.createElement("span"));
      meta.className = "t-meta";
      meta.textContent = (t.live ? "live \u00b7 " : "") + (t.status || "") + " \u00b7 " + t.id.slice(0, 8);
      li.addEventListener("click", function () { open(t.id); });
    });
  }

  function close() {
    if (current && current.subscription) current.subscription.close();
    current = null;
  }

  async function open(id) {
    close();
    problem(null);
    var info;
    try { info = await client.getThread(id); } catch (e) { problem(e); return; }
    var view = BaseagentRender.transcript($("transcript"), {
      root: info.cwd,
      onApprove: function (itemId, decision, note) {
        client.answerApproval(id, itemId, decision, note).catch(problem);
      },
      onPlan: function (item) { drawPlan(item); },
      onEvent: function (event, v) {
        if (event.type === "turn.started") setStatus("running");
        else if (event.type === "turn.completed") { setStatus("completed"); $("usage").textContent = usageText(event.usage, event.cost_usd); refreshSoon(); }
        else if (event.type === "turn.failed") { setStatus("failed"); refreshSoon(); }
        else if (event.type === "turn.requires_action") { setStatus("requires_action"); refreshSoon(); }
        else if (event.type === "turn.input" && !$("title").textContent) $("title").textContent = event.text;
        var t = $("transcript");
        t.scrollTop = t.scrollHeight;
      }
    });
    view.reset();
    $("plan").hidden = true;
    current = {id: id, live: info.live, view: view};
    $("title").textContent = "";
    $("usage").textContent = usageText(info.usage, info.cost_usd);
    $("composer").hidden = !info.live;
    $("resume").hidden = info.live;
    setStatus(info.status);
    drawThreads();
    if (info.live) {
      current.subscription = client.subscribe(id, {
        onEvent: function (event) { if (current && current.id === id) view.apply(event); },
        onError: function (e) { if (e.status) problem(e); }
      });
    } else {
      try {
        var data = await client.transcript(id);
        data.events.forEach(view.apply);
        setStatus(info.status);
      } catch (e) { problem(e); }
    }
    if (!$("title").textContent) $("title").textContent = info.title || id;
  }

  function drawPlan(item) {
    var box = $("plan");
    box.hidden = false;
    box.textContent = "";
    var ol = box.appendChild(document.createElement("ol"));
    (item.items || []).forEach(function (step) {
      var li = ol.appendChild(document.createElement("li"));
      li.className = step.completed ? "done" : "open";
      li.textContent = BaseagentMarkdown.inert(step.text);
    });
  }

  var refreshTimer = null;
  function refreshSoon() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(loadThreads, 300);
  }

  $("new-thread").addEventListener("submit", async function (e) {
    e.preventDefault();
    var body = {input: $("new-input").value};
    [["model", "new-model"], ["cwd", "new-cwd"], ["approval_policy", "new-policy"], ["sandbox", "new-sandbox"]]
      .forEach(function (p) { var v = $(p[1]).value.trim(); if (v) body[p[0]] = v; });
    try {
      var thread = await client.createThread(body);
      $("new-input").value = "";
      await loadThreads();
      await open(thread.id);
    } catch (err) { problem(err); }
  });

  $("composer").addEventListener("submit", async function (e) {
    e.preventDefault();
    if (!current) return;
    try {
      await client.startTurn(current.id, $("input").value);
      $("input").value = "";
      problem(null);
    } catch (err) { problem(err); }
  });

  // Ctrl+Enter (Cmd+Enter) sends, in either box.
  [["input", "composer"], ["new-input", "new-thread"]].forEach(function (pair) {
    $(pair[0]).addEventListener("keydown", function (e) {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        $(pair[1]).requestSubmit();
      }
    });
  });

  $("cancel").addEventListener("click", function () {
    if (current) client.cancel(current.id).catch(problem);
  });

  $("resume").addEventListener("click", async function () {
    if (!current) return;
    try {
      var thread = await client.resume(current.id);
      await loadThreads();
      await open(thread.id);
    } catch (err) { problem(err); }
  });

  client.info().then(function (info) {
    if (info.defaults.model) $("new-model").placeholder = info.defaults.model;
    if (info.defaults.cwd) $("new-cwd").placeholder = info.defaults.cwd;
  }).catch(problem);
  loadThreads();
  setInterval(loadThreads, 5000);
})();
