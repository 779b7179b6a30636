// The baseagent serve client: framework-free, no dependency, for a browser (or any
// runtime with fetch and ReadableStream). docs/SERVE.md, "The JavaScript client".
//
//   var client = new BaseagentClient({baseUrl: "http://127.0.0.1:8765", token: "..."});
//   var thread = await client.createThread({input: "fix the failing test"});
//   var chat = new BaseagentChat(client, thread.id, {onChange: function (state) {
//     render(state.messages, state.status);    // AgentB's useChat: messages and run status
//   }});
//   chat.start();                                // subscribes to the thread's events
//   await chat.send("now add a test");           // the next turn
//
// The page at / uses the same client. Events arrive as Server-Sent Events read with fetch
// (so a token can go in a header); a dropped connection reconnects and sends Last-Event-ID,
// so nothing is missed or repeated.
(function (root) {
  "use strict";

  function BaseagentClient(options) {
    options = options || {};
    this.baseUrl = (options.baseUrl || "").replace(/\/$/, "");
    this.token = options.token || null;  // else the page's login cookie is used
    this.retryMs = options.retryMs || 1000;
  }

  BaseagentClient.prototype.request = async function (method, path, body) {
    var headers = {"Accept": "application/json"};
    if (this.token) headers["Authorization"] = "Bearer " + this.token;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    var response = await fetch(this.baseUrl + path, {
      method: method, headers: headers, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body)
    });
    if (response.status === 204) return null;
    var data = await response.json().catch(function () { return null; });
    if (!response.ok) {
      var error = new Error((data && data.error && data.error.message) || ("HTTP " + response.status));
      error.status = response.status;
      throw error;
    }
    return data;
  };

  var enc = encodeURIComponent;
  var api = {
    info: function () { return this.request("GET", "/api/info"); },
    listThreads: function () { return this.request("GET", "/api/threads"); },
    // options: input (first instruction), model, api_base, cwd, sandbox, approval_policy, ...,
    // external_tools, approver ("api" or "requires_action")
    createThread: function (options) { return this.request("POST", "/api/threads", options || {}); },
    getThread: function (id) { return this.request("GET", "/api/threads/" + enc(id)); },
    transcript: function (id) { return this.request("GET", "/api/threads/" + enc(id) + "/transcript"); },
    startTurn: function (id, input) { return this.request("POST", "/api/threads/" + enc(id) + "/turns", {input: input}); },
    cancel: function (id) { return this.request("POST", "/api/threads/" + enc(id) + "/cancel", {}); },
    answerApproval: function (id, itemId, decision, note) {
      return this.request("POST", "/api/threads/" + enc(id) + "/approvals/" + enc(itemId), {decision: decision, note: note || ""});
    },
    submitToolOutputs: function (id, outputs) { return this.request("POST", "/api/threads/" + enc(id) + "/tool_outputs", {outputs: outputs}); },
    resume: function (id) { return this.request("POST", "/api/threads/" + enc(id) + "/resume", {}); },
    closeThread: function (id) { return this.request("DELETE", "/api/threads/" + enc(id)); },
    exportThread: function (id, format) { return this.request("GET", "/api/threads/" + enc(id) + "/export?format=" + enc(format || "atif")); }
  };
  Object.keys(api).forEach(function (name) { BaseagentClient.prototype[name] = api[name]; });

  // Subscribe to a thread's events: onEvent(event, id) for each, in order. format "codex"
  // (Codex items, the default) or "agentb" (AgentB's events). Returns {close()}.
  BaseagentClient.prototype.subscribe = function (threadId, handlers) {
    var self = this, lastId = handlers.lastEventId || null, stopped = false, controller = null;
    var format = handlers.format || "codex";
    async function connect() {
      while (!stopped) {
        controller = new AbortController();
        var headers = {"Accept": "text/event-stream"};
        if (self.token) headers["Authorization"] = "Bearer " + self.token;
        if (lastId) headers["Last-Event-ID"] = lastId;
        try {
          var response = await fetch(self.baseUrl + "/api/threads/" + enc(threadId) + "/events?format=" + format,
            {headers: headers, credentials: "same-origin", signal: controller.signal});
          if (!response.ok) {
            var data = await response.json().catch(function () { return null; });
            var error = new Error((data && data.error && data.error.message) || ("HTTP " + response.status));
            error.status = response.status;
            if (handlers.onError) handlers.onError(error);
            if (response.status < 500) return;  // no point in retrying a refusal
          } else {
            if (handlers.onOpen) handlers.onOpen();
            await read(response.body);
          }
        } catch (e) {
          if (stopped) return;
          if (handlers.onError) handlers.onError(e);
        }
        if (!stopped) await new Promise(function (r) { setTimeout(r, self.retryMs); });
      }
    }
    async function read(body) {
      var reader = body.getReader(), decoder = new TextDecoder(), buffer = "";
      var event = {data: [], name: "", id: null};
      for (;;) {
        var chunk = await reader.read();
        if (chunk.done) return;
        buffer += decoder.decode(chunk.value, {stream: true});
        var lines = buffer.split(/\r\n|\r|\n/);
        buffer = lines.pop();
        lines.forEach(function (line) {
          if (line === "") {
            if (event.data.length) {
              if (event.id !== null) lastId = event.id;
              var parsed = JSON.parse(event.data.join("\n"));
              if (handlers.onEvent && !stopped) handlers.onEvent(parsed, event.id);
            }
            event = {data: [], name: "", id: null};
          } else if (line[0] !== ":") {
            var at = line.indexOf(":");
            var field = at < 0 ? line : line.slice(0, at);
            var value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
            if (field === "data") event.data.push(value);
            else if (field === "event") event.name = value;
            else if (field === "id") event.id = value;
          }
        });
      }
    }
    connect();
    return {
      close: function () { stopped = true; if (controller) controller.abort(); },
      get lastEventId() { return lastId; }
    };
  };

  // AgentB's useChat, without React: keeps the message list and the run status from the
  // thread's AgentB events. state = {messages: [{id, role, content, toolCalls, inProgress}],
  // status: "idle"|"queued"|"in_progress"|"requires_action"|"completed"|"failed"|...,
  // requiredAction, error, usage, toolResults: {toolCallId: result}}.
  function BaseagentChat(client, threadId, options) {
    this.client = client;
    this.threadId = threadId;
    this.options = options || {};
    this.state = {messages: [], status: "idle", requiredAction: null, error: null, usage: null, toolResults: {}};
    this.subscription = null;
  }

  // AgentB event name -> what it does to the state (docs/SERVE.md has the table).
  BaseagentChat.HANDLERS = {
    "agent.run.created": function (s, d) { s.status = d.status; s.error = null; s.requiredAction = null; },
    "agent.run.status.changed": function (s, d) { s.status = d.currentStatus; },
    "thread.message.created": function (s, d) {
      var m = d.message;
      s.messages.push({id: m.id, role: m.role, content: typeof m.content === "string" ? m.content : JSON.stringify(m.content),
                       toolCalls: [], inProgress: !!(m.metadata && m.metadata.inProgress)});
    },
    "thread.message.delta": function (s, d) {
      var m = find(s, d.messageId);
      if (!m) return;
      if (d.delta.contentChunk) m.content += d.delta.contentChunk;
      (d.delta.toolCallsChunk || []).forEach(function (call) {
        var known = m.toolCalls.filter(function (c) { return c.id === call.id; })[0];
        if (known) known.function.arguments += call.function.arguments; else m.toolCalls.push(call);
      });
    },
    "thread.message.completed": function (s, d) {
      var m = find(s, d.message.id);
      if (m) { m.content = typeof d.message.content === "string" ? d.message.content : m.content; m.inProgress = false; }
    },
    "agent.tool.execution.started": function (s, d) { s.toolResults[d.toolCallId] = {running: true, toolName: d.toolName, input: d.input}; },
    "agent.tool.execution.completed": function (s, d) { s.toolResults[d.toolCallId] = d.result; },
    "thread.run.requires_action": function (s, d) { s.status = "requires_action"; s.requiredAction = d.required_action; },
    "thread.run.failed": function (s, d) { s.status = "failed"; s.error = d.error; },
    "thread.run.completed": function (s, d) { s.status = "completed"; s.usage = d.usage; }
  };

  function find(state, id) { return state.messages.filter(function (m) { return m.id === id; })[0]; }

  BaseagentChat.prototype.start = function () {
    var self = this;
    this.subscription = this.client.subscribe(this.threadId, {
      format: "agentb", lastEventId: this.options.lastEventId,
      onEvent: function (event) {
        var handle = BaseagentChat.HANDLERS[event.type];
        if (handle) handle(self.state, event.data || {});
        if (self.options.onEvent) self.options.onEvent(event);
        if (self.options.onChange) self.options.onChange(self.state);
      },
      onError: this.options.onError
    });
    return this;
  };
  BaseagentChat.prototype.send = function (text) { return this.client.startTurn(this.threadId, text); };
  BaseagentChat.prototype.cancel = function () { return this.client.cancel(this.threadId); };
  BaseagentChat.prototype.submitToolOutputs = function (outputs) { return this.client.submitToolOutputs(this.threadId, outputs); };
  BaseagentChat.prototype.stop = function () { if (this.subscription) this.subscription.close(); };

  root.BaseagentClient = BaseagentClient;
  root.BaseagentChat = BaseagentChat;
  if (typeof module !== "undefined" && module.exports) module.exports = {BaseagentClient: BaseagentClient, BaseagentChat: BaseagentChat};
})(typeof window !== "undefined" ? window : this);
