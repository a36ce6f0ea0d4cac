#!/usr/bin/env python3
"""A stand-in for a model, to check the measurement's plumbing before a real model is spent on it:
an OpenAI-compatible server (`POST .../chat/completions`) whose every reply is the same fixed
reproduction test. It writes nothing a model would; it shows that `exec_lite.py --exec-llm-repro`
runs end to end over real issues, and what the ranking does with tests of a known kind.

  python3 crates/dei-bench/scripts/stub_llm.py --reply other --port-file PORT &
  python3 crates/dei-bench/scripts/exec_lite.py ... --exec-llm-repro openai-compatible:stub \\
      --llm-arg=--base-url=http://127.0.0.1:$(cat PORT)/v1

--reply other: the test prints `Other issues`, so it is discarded at every base commit, and the
  exec-llm ranking must equal the exec one.
--reply reproduced: it prints `Issue reproduced` whatever the code, so it is kept at every base
  commit and says every candidate still reproduces the issue. No candidate resolves it, so no
  candidate's own parts move; but a candidate nothing else ran for (no test file reached, no
  reproduction) has now run, healthy, so its agent's record (`exec_record`) counts that issue too,
  and scores move by that part alone.
--reply none: the reply holds no code block, so no test is written.

Every request is appended to --log (one JSON object a line: the model and the prompt's length),
so a check can count the calls and tell a prompt asked twice (its SHA-256) from two prompts. The task records the prompts are
built from are exec_lite.py's, stripped of the evaluation's answers.
"""
import argparse
import hashlib
import http.server
import json
import threading

SCRIPTS = {
    "other": "print('Other issues')\n",
    "reproduced": "print('Issue reproduced')\n",
}


def reply_text(kind):
    if kind == "none":
        return "I cannot write a test for this issue."
    return "```python\n" + SCRIPTS[kind] + "```\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reply", choices=["other", "reproduced", "none"], required=True)
    ap.add_argument("--port", type=int, default=0, help="0: any free port (see --port-file)")
    ap.add_argument("--port-file", default=None, help="where to write the port once listening")
    ap.add_argument("--log", default=None, help="append one JSON line per request")
    a = ap.parse_args()
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if not self.path.endswith("/chat/completions"):
                return self.send(404, {"error": {"message": f"no such path: {self.path}"}})
            try:
                req = json.loads(body)
            except ValueError:
                return self.send(400, {"error": {"message": "the body is not JSON"}})
            prompt = "".join(m.get("content", "") if isinstance(m.get("content"), str) else
                             json.dumps(m.get("content")) for m in req.get("messages", []))
            if a.log:
                with lock, open(a.log, "a") as f:
                    f.write(json.dumps({"model": req.get("model"), "prompt_chars": len(prompt),
                                        "temperature": req.get("temperature"),
                                        "sha256": hashlib.sha256(prompt.encode()).hexdigest()[:16],
                                        }) + "\n")
            text = reply_text(a.reply)
            self.send(200, {
                "id": "stub", "object": "chat.completion", "model": req.get("model", "stub"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4,
                          "total_tokens": (len(prompt) + len(text)) // 4},
            })

        def send(self, code, obj):
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    if a.port_file:
        with open(a.port_file, "w") as f:
            f.write(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
