"""Record golden Claude Code transcripts (not a test): the real `claude` CLI, run in print mode against a fake
streaming Messages API on 127.0.0.1, types a few turns; the transcript it writes is copied to
tests/fixtures/claude_code/.

    npm install --prefix /tmp/cc @anthropic-ai/claude-code
    python tests/golden/record_claude_code.py /tmp/cc/node_modules/@anthropic-ai/claude-code-linux-x64/claude

The fake API answers every request with one streamed text reply (Claude Code asks it for titles too); nothing
leaves the machine (`CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

TURNS = [
    ("I moved to Lisbon in 2021 with my wife, and I teach chemistry at a high school.", "Lisbon is lovely."),
    ("My favourite drink is green tea.", "Noted: green tea."),
    ("<bee-recall>The user lives in Reykjavik.</bee-recall> I have two dogs named Rex and Kit.", "Two dogs!"),
]
OUT = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"


class FakeMessages(BaseHTTPRequestHandler):
    reply = "ok"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self._json(200, {"data": [], "has_more": False})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.end_headers()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if not self.path.startswith("/v1/messages") or self.path.endswith("count_tokens"):
            self._json(200, {"input_tokens": 10})
            return
        text = type(self).reply
        message = {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
                   "model": body.get("model", "claude"), "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 10, "output_tokens": 1}}
        if not body.get("stream"):
            message.update(content=[{"type": "text", "text": text}], stop_reason="end_turn")
            self._json(200, message)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        events = [("message_start", {"type": "message_start", "message": message}),
                  ("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}}),
                  ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": text}}),
                  ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                  ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                         "stop_sequence": None},
                                     "usage": {"output_tokens": 5}}),
                  ("message_stop", {"type": "message_stop"})]
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def _json(self, status: int, data: dict) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def main() -> None:
    claude = sys.argv[1]
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeMessages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    home = Path(tempfile.mkdtemp(prefix="cc-golden-"))
    work = home / "work" / "app"
    work.mkdir(parents=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
           "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.server_port}", "ANTHROPIC_API_KEY": "sk-ant-test",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
    session = str(uuid.uuid4())
    try:
        for number, (prompt, reply) in enumerate(TURNS):
            FakeMessages.reply = reply
            flags = ["--session-id", session] if number == 0 else ["--resume", session]
            done = subprocess.run([claude, "-p", prompt, *flags], cwd=work, env=env, capture_output=True,
                                  text=True, timeout=120)
            print(f"turn {number}: exit {done.returncode}: {done.stdout.strip()[:80]!r} {done.stderr.strip()[:200]}")
        found = sorted((home / ".claude" / "projects").rglob("*.jsonl"))
        OUT.mkdir(parents=True, exist_ok=True)
        for path in found:
            shutil.copyfile(path, OUT / path.name)
            print("kept", OUT / path.name)
    finally:
        server.shutdown()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
