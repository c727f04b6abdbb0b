"""Record a golden Codex CLI rollout (not a test): the real `codex exec` (then `codex exec resume`) against a fake
streaming Responses API on 127.0.0.1 (a custom model provider in config.toml); the rollout it writes is copied to
tests/fixtures/codex/.

    npm install --prefix /tmp/cx @openai/codex
    python tests/golden/record_codex.py /tmp/cx/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
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
]
OUT = Path(__file__).resolve().parent.parent / "fixtures" / "codex"


class FakeResponses(BaseHTTPRequestHandler):
    reply = "ok"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        payload = json.dumps({"object": "list", "data": [], "models": []}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        response_id = f"resp_{uuid.uuid4().hex[:16]}"
        item = {"type": "message", "role": "assistant", "id": f"msg_{uuid.uuid4().hex[:16]}",
                "content": [{"type": "output_text", "text": type(self).reply, "annotations": []}]}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
        events = [("response.created", {"type": "response.created", "response": {"id": response_id}}),
                  ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0,
                                                 "item": item}),
                  ("response.completed", {"type": "response.completed",
                                          "response": {"id": response_id, "usage": usage}})]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()


def main() -> None:
    codex = sys.argv[1]
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeResponses)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    home = Path(tempfile.mkdtemp(prefix="cx-golden-"))
    codex_home = home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model = "gpt-fake"\nmodel_provider = "fake"\n\n[model_providers.fake]\nname = "fake"\n'
        f'base_url = "http://127.0.0.1:{server.server_port}/v1"\nwire_api = "responses"\nenv_key = "FAKE_KEY"\n')
    work = home / "work"
    work.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "CODEX_HOME": str(codex_home), "FAKE_KEY": "test"}
    try:
        for number, (prompt, reply) in enumerate(TURNS):
            FakeResponses.reply = reply
            command = [codex, "exec", "--skip-git-repo-check"] + (["resume", "--last"] if number else []) + [prompt]
            done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=120)
            print(f"turn {number}: exit {done.returncode}: {done.stdout.strip()[-80:]!r} {done.stderr.strip()[-300:]}")
        OUT.mkdir(parents=True, exist_ok=True)
        for path in sorted((codex_home / "sessions").rglob("rollout-*.jsonl")):
            shutil.copyfile(path, OUT / path.name)
            print("kept", OUT / path.name)
    finally:
        server.shutdown()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
