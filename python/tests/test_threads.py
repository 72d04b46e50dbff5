"""The GIL is released while the engine works: searches from several Python threads are in
the engine at the same time. Shown without clocks: the embedding model is an OpenAI-compatible
server running in this Python process, whose handler lets query embeddings through only once
THREADS of them are waiting at once. Were the GIL held during a search, the server could not run
at all; were searches serialised, the barrier would never fill."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import ckeep

THREADS = 4
DIM = 16


def vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [b / 255.0 - 0.5 for b in digest[:DIM]]


class Embeddings(BaseHTTPRequestHandler):
    barrier: threading.Barrier | None = None
    passed: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        if Embeddings.barrier is not None and inputs[0].startswith("query "):
            Embeddings.barrier.wait()
            Embeddings.passed.append(inputs[0])
        data = [{"index": i, "embedding": vector(t)} for i, t in enumerate(inputs)]
        answer = json.dumps({"data": data, "model": body.get("model", "")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Embeddings)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1#test"
    Embeddings.barrier = None
    httpd.shutdown()


def test_searches_from_threads_run_at_once(tmp_path: Path, server: str) -> None:
    store = ckeep.Store(tmp_path / "s", model=server, cache=False)
    docs = [{"id": f"d{i}", "text": f"document number {i} about topic {i % 3}"} for i in range(30)]
    store.add_documents(docs)
    # A generous bound so a deadlock fails the test instead of hanging it; a pass never waits it.
    Embeddings.barrier = threading.Barrier(THREADS, timeout=120)
    results: dict[int, list] = {}
    errors: list[BaseException] = []

    def search(i: int) -> None:
        try:
            results[i] = store.search(f"query {i}", mode="dense", k=3)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=search, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(Embeddings.passed) == sorted(f"query {i}" for i in range(THREADS))
    assert all(len(results[i]) == 3 for i in range(THREADS))
