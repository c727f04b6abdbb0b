"""Record a golden Gemini CLI chat recording (not a test): the real `gemini -p` (then `--resume latest`) against a
fake Gemini API on 127.0.0.1 (`GOOGLE_GEMINI_BASE_URL`); the recording it writes is copied to
tests/fixtures/gemini/.

    npm install --prefix /tmp/gm @google/gemini-cli
    python tests/golden/record_gemini.py /tmp/gm/node_modules/.bin/gemini
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

TURNS = [
    ("I moved to Lisbon in 2021 with my wife, and I teach chemistry at a high school.", "Lisbon is lovely."),
    ("My favourite drink is green tea.", "Noted: green tea."),
]
OUT = Path(__file__).resolve().parent.parent / "fixtures" / "gemini"


class FakeGemini(BaseHTTPRequestHandler):
    reply = "ok"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self._json({"models": []})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        wants_json = (body.get("generationConfig") or {}).get("responseMimeType") == "application/json"
        text = json.dumps({"next_speaker": "user", "reasoning": "done", "model_choice": "flash"}) if wants_json \
            else type(self).reply
        chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP",
                                 "index": 0}],
                 "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}
        if ":countTokens" in self.path:
            self._json({"totalTokens": 10})
        elif "streamGenerateContent" in self.path:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        else:
            self._json(chunk)

    def _json(self, data: dict) -> None:
        payload = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def main() -> None:
    gemini = sys.argv[1]
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeGemini)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    home = Path(tempfile.mkdtemp(prefix="gm-golden-"))
    work = home / "work"
    work.mkdir()
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}},
                                                                "privacy": {"usageStatisticsEnabled": False}}))
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GEMINI_API_KEY": "test",
           "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{server.server_port}", "GEMINI_CLI_NO_RELAUNCH": "true",
           "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    try:
        for number, (prompt, reply) in enumerate(TURNS):
            FakeGemini.reply = reply
            command = [gemini, *(["--resume", "latest"] if number else []), "-p", prompt]
            done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=180)
            print(f"turn {number}: exit {done.returncode}: {done.stdout.strip()[-80:]!r} {done.stderr.strip()[-400:]}")
        OUT.mkdir(parents=True, exist_ok=True)
        for path in sorted((home / ".gemini" / "tmp").rglob("session-*.jsonl")):
            shutil.copyfile(path, OUT / path.name)
            print("kept", OUT / path.name)
    finally:
        server.shutdown()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
