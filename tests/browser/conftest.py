"""A real `ckeep serve` on real stores, and headless Chromium (Debian's chromium and
chromium-driver) driven by Selenium. Screenshots go to target/playground-screenshots/."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("CKEEP_DATA", REPO.parent / "shared" / "data"))
SCREENSHOTS = REPO / "target" / "playground-screenshots"
MODEL = "all-MiniLM-L6-v2"
MULTILINGUAL = "multilingual-e5-small"


def ckeep(*args: str) -> str:
    binary = os.environ.get("CKEEP_BIN", str(REPO / "target" / "debug" / "ckeep"))
    done = subprocess.run([binary, "--quiet", *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


class Server:
    """`ckeep serve` on a free port; `api()` calls it as the page does."""

    def __init__(self, store: Path, token: str | None) -> None:
        binary = os.environ.get("CKEEP_BIN", str(REPO / "target" / "debug" / "ckeep"))
        args = [binary, "--json", "--store", str(store), "serve", "--addr", "127.0.0.1:0"]
        self.token = token
        if token:
            token_file = store.parent / f"{store.name}.token"
            token_file.write_text(token + "\n")
            args += ["--token-file", str(token_file)]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # the first line says where it listens
        assert line, "ckeep serve exited before listening"
        self.url = json.loads(line)["listening"]

    def api(self, method: str, path: str, body: dict | None = None) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        with urllib.request.urlopen(req) as res:
            return json.loads(res.read())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


def jsonl(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def squad_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The 48 SQuAD v1.1 dev articles, paragraph chunks, MiniLM; the server needs a token."""
    store = tmp_path_factory.mktemp("squad") / "store"
    ckeep("--store", str(store), "add", str(DATA / "squad_dev" / "longdoc-v1.1.docs.jsonl"),
          "--model", MODEL, "--chunker", "paragraphs")
    server = Server(store, token="playground-t0ken")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def chinese_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """40 CMRC 2018 articles (Simplified Chinese), sentence chunks, multilingual-e5-small."""
    tmp = tmp_path_factory.mktemp("cmrc")
    with (DATA / "zh" / "retrieval" / "cmrc2018" / "dev" / "docs.jsonl").open(encoding="utf-8") as f:
        docs = [json.loads(line) for _, line in zip(range(40), f)]
    source = jsonl(tmp / "docs.jsonl", [{"id": d["doc_id"], "title": d["title"], "text": d["text"]} for d in docs])
    store = tmp / "store"
    ckeep("--store", str(store), "add", str(source), "--model", MULTILINGUAL, "--chunker", "sentences")
    server = Server(store, token=None)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def chinese_sentences_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The same 40 CMRC 2018 articles in sentence chunks, BM25 only, no token: a store whose
    evaluation has a confident winner that needs another chunker."""
    tmp = tmp_path_factory.mktemp("cmrc-sentences")
    with (DATA / "zh" / "retrieval" / "cmrc2018" / "dev" / "docs.jsonl").open(encoding="utf-8") as f:
        docs = [json.loads(line) for _, line in zip(range(40), f)]
    source = jsonl(tmp / "docs.jsonl", [{"id": d["doc_id"], "title": d["title"], "text": d["text"]} for d in docs])
    store = tmp / "store"
    ckeep("--store", str(store), "add", str(source), "--chunker", "sentences")
    server = Server(store, token=None)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def large_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """10,000 documents (QQP questions), BM25 only, no token."""
    tmp = tmp_path_factory.mktemp("large")
    docs = []
    with (DATA / "qqp" / "dev.tsv").open(encoding="utf-8", errors="replace") as f:
        for i, line in enumerate(f):
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 3:
                docs.append({"id": f"q{i:05d}a", "text": fields[1]})
                docs.append({"id": f"q{i:05d}b", "text": fields[2]})
            if len(docs) >= 10_000:
                break
    store = tmp / "store"
    ckeep("--store", str(store), "add", str(jsonl(tmp / "docs.jsonl", docs)))
    server = Server(store, token=None)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1440,1000", "--lang=en-US"]:
        options.add_argument(arg)
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(60)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()
