"""A local stand-in for the Hugging Face Hub's HTTP API, so that `huggingface_hub`'s own client fills its own cache
from local files in tests (no network): the calls `snapshot_download` makes (model info, file tree, file HEAD/GET),
with the Hub's error codes for an unknown repository or revision. `cut` repositories list their weights file but fail
to send it, so that a download stops after the small files, as an interrupted one does."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import threading
import urllib.parse

SHA = "0123456789abcdef0123456789abcdef01234567"


class HubServer:
    def __init__(self, repos: dict[str, str], cut: frozenset[str] = frozenset()):
        self.repos, self.cut = repos, cut
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self._answer(head=True)

            def do_GET(self):
                self._answer(head=False)

            def _send(self, code, body=b"", headers=(), length=None):
                self.send_response(code)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body) if length is None else length))
                self.end_headers()
                if not self.head:
                    self.wfile.write(body)

            def _answer(self, head):
                self.head = head
                path = urllib.parse.urlparse(self.path).path
                for repo, folder in hub.repos.items():
                    files = sorted(f for f in os.listdir(folder) if os.path.isfile(os.path.join(folder, f)))
                    if path.startswith(f"/api/models/{repo}/revision/"):
                        if path.rsplit("/", 1)[1] not in ("main", SHA):
                            return self._send(404, b"{}", [("X-Error-Code", "RevisionNotFound")])
                        info = {"id": repo, "sha": SHA, "siblings": [{"rfilename": f} for f in files]}
                        return self._send(200, json.dumps(info).encode(), [("Content-Type", "application/json")])
                    if path.startswith(f"/api/models/{repo}/tree/"):
                        tree = [
                            {"type": "file", "path": f, "size": os.path.getsize(os.path.join(folder, f)),
                             "oid": _sha1(os.path.join(folder, f))}
                            for f in files
                        ]  # fmt: skip
                        return self._send(200, json.dumps(tree).encode(), [("Content-Type", "application/json")])
                    if path.startswith(f"/{repo}/resolve/"):
                        name = path[len(f"/{repo}/resolve/") :].split("/", 1)[1]
                        file = os.path.join(folder, name)
                        if not os.path.isfile(file):
                            return self._send(404, b"", [("X-Error-Code", "EntryNotFound")])
                        with open(file, "rb") as f:
                            data = f.read()
                        headers = [("X-Repo-Commit", SHA), ("ETag", f'"{_sha1(file)}"')]
                        if repo in hub.cut and name.endswith(".safetensors"):
                            return self._send(404, b"", [("X-Error-Code", "EntryNotFound")])
                        return self._send(200, data, headers)
                return self._send(404, b"{}", [("X-Error-Code", "RepoNotFound")])

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _sha1(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()
