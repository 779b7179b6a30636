// A thread's transcript as DOM, from its Codex events (the `baseagent serve` stream with
// its two additions, `turn.input` and `item.detail`; or a session record's events). No
// framework and no server: the page uses it, and a report file can embed it with
// markdown.js. Every string from the model, a command or a file is set as textContent
// (control characters made visible), never parsed as HTML.
//
//   var view = BaseagentRender.transcript(element, {root: "/the/workspace",
//       onApprove: function (itemId, decision, note) {...}});
//   events.forEach(view.apply);          // or view.apply(event) as each one arrives
//   view.usage                           // {input_tokens, cached_input_tokens, output_tokens, cost_usd}
(function (root) {
  "use strict";
  var md = root.BaseagentMarkdown;

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = md.inert(text);
    return node;
  }

  function costText(cost) {
    return cost === null || cost === undefined ? "cost unknown" : "cost $" + Number(cost).toFixed(4);
  }

  function diffView(text) {
    var pre = el("pre", "diff");
    String(text).split("\n").forEach(function (line) {
      var cls = line.startsWith("+++") || line.startsWith("---") ? "meta"
        : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "";
      pre.appendChild(el("span", "line " + cls, line + "\n"));
    });
    return pre;
  }

  function transcript(container, options) {
    options = options || {};
    var turn = 0, turnBox = null, nodes = {}, view;
    var usage = {input_tokens: 0, cached_input_tokens: 0, output_tokens: 0, cost_usd: null};

    // A path under the workspace (options.root) is shown relative to it.
    function relative(path) {
      var root = options.root ? String(options.root).replace(/\/$/, "") + "/" : "";
      return root && String(path).indexOf(root) === 0 ? String(path).slice(root.length) : path;
    }

    function box() {
      if (!turnBox) { turnBox = container.appendChild(el("section", "turn")); }
      return turnBox;
    }
    function key(id) { return turn + ":" + id; }

    function node(item, cls) {
      var k = key(item.id);
      if (!nodes[k]) {
        nodes[k] = box().appendChild(el("div", "item " + cls));
        nodes[k].setAttribute("data-item", item.id);
      }
      return nodes[k];
    }

    function status(parent, value) {
      var badge = parent.querySelector(".status") || parent.appendChild(el("span", "status"));
      badge.textContent = value || "";
      badge.className = "status " + (value || "");
    }

    var items = {
      agent_message: function (item, done) {
        var n = node(item, "message assistant");
        n.textContent = "";
        md.render(item.text || "", n);
        n.classList.toggle("streaming", !done);
      },
      reasoning: function (item) {
        var n = node(item, "reasoning");
        n.textContent = "";
        var d = n.appendChild(el("details"));
        d.appendChild(el("summary", null, "thinking"));
        d.appendChild(el("div", "text", item.text || ""));
      },
      command_execution: function (item) {
        var n = node(item, "command");
        if (!n.firstChild) {
          var head = n.appendChild(el("div", "head"));
          head.appendChild(el("code", "cmd", "$ " + item.command));
          n.appendChild(el("pre", "output"));
          n.appendChild(el("div", "exit"));
        }
        status(n.querySelector(".head"), item.status);
        n.querySelector(".output").textContent = md.inert(item.aggregated_output || "");
        n.querySelector(".exit").textContent = item.exit_code === null || item.exit_code === undefined
          ? "" : "exit code " + item.exit_code;
      },
      file_change: function (item) {
        var n = node(item, "files");
        var list = n.querySelector("ul") || n.appendChild(el("ul", "changes"));
        list.textContent = "";
        (item.changes || []).forEach(function (c) {
          var li = list.appendChild(el("li", "change " + c.kind));
          li.appendChild(el("span", "kind", c.kind));
          li.appendChild(el("span", "path", relative(c.path)));
        });
        status(n, item.status);
      },
      todo_list: function (item) {
        var n = node(item, "plan");
        n.textContent = "";
        n.appendChild(el("div", "label", "plan"));
        var ol = n.appendChild(el("ol"));
        (item.items || []).forEach(function (step) {
          ol.appendChild(el("li", step.completed ? "done" : "open", (step.completed ? "\u2611 " : "\u2610 ") + step.text));
        });
        if (options.onPlan) options.onPlan(item);
      },
      approval_request: function (item) {
        var n = node(item, "approval");
        n.textContent = "";
        n.appendChild(el("div", "label", item.kind === "escalation" ? "The agent asks to run outside the sandbox"
          : item.kind === "retry" ? "The command failed in the sandbox: run it again outside?" : "The agent asks to run"));
        n.appendChild(el("code", "cmd", "$ " + item.command));
        if (item.reason) n.appendChild(el("div", "reason", item.reason));
        if (item.status === "completed" || item.decision) {
          n.appendChild(el("div", "decision " + item.decision, item.decision.replace(/_/g, " ") + (item.note ? ": " + item.note : "")));
          return;
        }
        if (!options.onApprove) return;
        var note = el("input", "note");
        note.placeholder = "note to the agent (with decline)";
        var row = n.appendChild(el("div", "buttons"));
        var choices = [["approve", "approved", "Approve"]];
        if (item.prefix) choices.push(["approve-session", "approved_for_session", "Approve \u201c" + item.prefix + " \u2026\u201d for this session"]);
        choices.push(["decline", "denied", "Decline"]);
        choices.forEach(function (b) {
          var button = row.appendChild(el("button", b[0], b[2]));
          button.type = "button";
          button.addEventListener("click", function () {
            row.querySelectorAll("button").forEach(function (x) { x.disabled = true; });
            options.onApprove(item.id, b[1], b[1] === "denied" ? note.value : "");
          });
        });
        row.appendChild(note);
      },
      mcp_tool_call: function (item) {
        var n = node(item, "tool");
        n.textContent = "";
        var d = n.appendChild(el("details"));
        var s = d.appendChild(el("summary"));
        s.appendChild(el("code", "tool-name", item.tool));
        status(s, item.status);
        d.appendChild(el("pre", "args", JSON.stringify(item.arguments, null, 1)));
        var text = item.error ? item.error.message : item.result && item.result.content
          ? item.result.content.map(function (c) { return c.text || ""; }).join("\n") : "";
        if (text) d.appendChild(el("pre", "result", text));
      },
      collab_tool_call: function (item) {
        var n = node(item, "tool");
        n.textContent = "";
        n.appendChild(el("code", "tool-name", item.tool + (item.prompt ? ": " + item.prompt : "")));
        status(n, item.status);
      },
      error: function (item) { node(item, "notice").textContent = md.inert(item.message); }
    };

    function apply(event) {
      var t = event.type;
      if (t === "turn.started") {
        turn += 1;
        turnBox = container.appendChild(el("section", "turn running"));
      } else if (t === "turn.input") {
        box().appendChild(el("div", "item message user")).appendChild(el("div", "text", event.text));
      } else if (t === "item.started" || t === "item.updated" || t === "item.completed") {
        var render = items[event.item.type];
        if (render) render(event.item, t === "item.completed");
      } else if (t === "item.detail") {
        var target = nodes[key(event.item_id)];
        if (target) {
          var old = target.querySelector("pre.diff");
          if (old) old.remove();
          target.appendChild(diffView(event.text));
        }
      } else if (t === "turn.completed") {
        usage = Object.assign({}, event.usage, {cost_usd: event.cost_usd === undefined ? null : event.cost_usd});
        end("completed", "tokens: " + usage.input_tokens + " in (" + usage.cached_input_tokens
          + " cached), " + usage.output_tokens + " out \u00b7 " + costText(usage.cost_usd));
      } else if (t === "turn.failed") {
        end("failed", (event.error && event.error.message) || "the turn failed");
      } else if (t === "turn.requires_action") {
        end("requires_action", "waiting for the outputs of: " + (event.tool_calls || []).map(function (c) {
          return c.name + " (" + c.id + ")";
        }).join(", "));
      } else if (t === "error" || t === "stream.gap") {
        box().appendChild(el("div", "item notice", event.message));
      }
      if (options.onEvent) options.onEvent(event, view);
    }

    function end(state, text) {
      var b = box();
      b.classList.remove("running");
      b.classList.add(state);
      b.appendChild(el("div", "turn-end " + state, text));
      Object.keys(nodes).forEach(function (k) { nodes[k].classList.remove("streaming"); });
    }

    view = {
      apply: apply,
      reset: function () { container.textContent = ""; turn = 0; turnBox = null; nodes = {}; },
      get usage() { return usage; }
    };
    return view;
  }

  root.BaseagentRender = { transcript: transcript, diffView: diffView, costText: costText };
})(typeof window !== "undefined" ? window : this);
