"""The playground in headless Chromium against a real `ckeep serve`: searches whose highlights
must cover exactly the bytes the API names (English and Chinese), every view, the token, the
Content-Security-Policy, and a 10,000-document store read a page at a time."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

from conftest import DATA, MODEL, SCREENSHOTS, Server, ckeep

WAIT = 120  # seconds: an upper bound on a busy machine, never a pause


def wait(driver: WebDriver):
    return WebDriverWait(driver, WAIT)


def status_says(driver: WebDriver, text: str) -> None:
    wait(driver).until(EC.text_to_be_present_in_element((By.ID, "status"), text))


def open_page(driver: WebDriver, server: Server, view: str = "search") -> None:
    """Loads the page; if it asks for the token (the tab does not hold it yet), gives it."""
    driver.get(f"{server.url}/#{view}")

    def ready_or_asking(d: WebDriver) -> str | None:
        if "documents" in d.find_element(By.ID, "store-name").text:
            return "ready"
        return "asking" if d.find_element(By.ID, "token-input").is_displayed() else None

    if wait(driver).until(ready_or_asking) == "asking":
        assert server.token, "only a server with a token asks for one"
        driver.find_element(By.ID, "token-input").send_keys(server.token)
        driver.find_element(By.CSS_SELECTOR, "#token-form button").click()
        wait(driver).until(lambda d: "documents" in d.find_element(By.ID, "store-name").text)


def search(driver: WebDriver, query: str, mode: str, level: str, agg: str = "max", expand: str = "none",
           diversify: str = "none") -> None:
    form = driver.find_element(By.ID, "search-form")
    Select(form.find_element(By.NAME, "mode")).select_by_value(mode)
    Select(form.find_element(By.NAME, "level")).select_by_value(level)
    Select(form.find_element(By.NAME, "agg")).select_by_value(agg)
    Select(form.find_element(By.NAME, "expand")).select_by_value(expand)
    Select(form.find_element(By.NAME, "diversify")).select_by_value(diversify)
    box = form.find_element(By.NAME, "query")
    box.clear()
    box.send_keys(query)
    driver.execute_script("document.getElementById('status').textContent = ''")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait(driver).until(lambda d: "result(s) for" in d.find_element(By.ID, "status").text
                       or "error" in d.find_element(By.ID, "status").get_attribute("class"))
    assert "result(s) for" in driver.find_element(By.ID, "status").text


def check_highlights(driver: WebDriver, server: Server, body: dict) -> int:
    """Opens the first result and checks every highlighted piece against the stored bytes."""
    expected = server.api("POST", "/search", {**body, "explain": True})["results"]
    shown = driver.find_elements(By.CSS_SELECTOR, "#search-results .result-open")
    assert [b.get_attribute("data-doc-id") for b in shown] == [r["doc_id"] for r in expected]
    if not expected:
        return 0
    first = expected[0]
    driver.execute_script("document.getElementById('doc-panel').replaceChildren()")
    shown[0].click()
    wait(driver).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#doc-panel .doc-text"))
    doc = server.api("GET", "/documents/" + first["doc_id"].replace("/", "%2F"))
    raw = doc["text"].encode("utf-8")
    pieces = driver.execute_script("""
        return [...document.querySelectorAll('#doc-panel .doc-text [data-start]')].map(e => ({
            cls: e.className, start: +e.dataset.start, end: +e.dataset.end,
            ps: +e.dataset.pieceStart, pe: +e.dataset.pieceEnd, text: e.textContent}));""")
    assert pieces, "the document view highlights something"
    for p in pieces:
        assert raw[p["ps"]:p["pe"]].decode("utf-8") == p["text"], p
    # Each matched chunk is highlighted whole, exactly its bytes.
    for c in first["chunks"]:
        start, end = c["span"]
        joined = "".join(p["text"] for p in pieces
                         if p["cls"] == "hit" and (p["start"], p["end"]) == (start, end))
        assert joined == raw[start:end].decode("utf-8"), (first["doc_id"], start, end)
    # The whole text is shown, byte for byte.
    shown_text = driver.execute_script(
        "return document.querySelector('#doc-panel .doc-text').textContent")
    assert shown_text == doc["text"]
    return len(first["chunks"])


def test_highlighted_spans_are_byte_exact_for_20_queries(browser: WebDriver, squad_server: Server) -> None:
    open_page(browser, squad_server)
    with (DATA / "squad_dev" / "longdoc-v1.1.queries.jsonl").open(encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f][::520][:20]
    assert len(questions) == 20
    # The menus offer what the server's GET /strategy lists.
    offered = squad_server.api("GET", "/strategy")["choices"]
    settings = [("bm25", "chunk", "max", "none", "none"), ("dense", "doc", "max", "none", "none"),
                ("hybrid", "chunk", "max", "window:1", "none"), ("bm25", "doc", "sum", "parent", "mmr:0.5")]
    for mode, level, agg, expand, diversify in settings:
        assert (mode in offered["mode"] and level in offered["level"] and agg in offered["agg"]
                and expand in offered["expand"] and diversify in offered["diversify"]), offered
    checked = 0
    for i, question in enumerate(questions):
        mode, level, agg, expand, diversify = settings[i % len(settings)]
        search(browser, question, mode, level, agg, expand, diversify)
        body = {"query": question, "mode": mode, "level": level, "agg": agg, "expand": expand,
                "diversify": diversify, "k": 10}
        checked += check_highlights(browser, squad_server, body)
        if i == 2:
            browser.save_screenshot(str(SCREENSHOTS / "search-document.png"))
    assert checked >= 20
    assert browser.find_elements(By.CSS_SELECTOR, "#doc-panel .explain"), "the breakdown is shown"
    # The last search diversified: the breakdown says what its first result paid.
    explain = browser.find_element(By.CSS_SELECTOR, "#doc-panel .explain").text
    assert "diversity" in explain and "first-stage rank 1" in explain, explain


def test_chinese_highlights_are_byte_exact(browser: WebDriver, chinese_server: Server) -> None:
    open_page(browser, chinese_server)
    with (DATA / "zh" / "retrieval" / "cmrc2018" / "dev" / "queries.jsonl").open(encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f][:40:8]
    for mode in ("bm25", "dense"):
        for question in questions:
            search(browser, question, mode, "chunk")
            assert check_highlights(browser, chinese_server,
                                    {"query": question, "mode": mode, "level": "chunk", "k": 10}) > 0
    browser.save_screenshot(str(SCREENSHOTS / "search-chinese.png"))


def ask(driver: WebDriver, server: Server, question: str) -> dict:
    """Asks `question` in the Ask view (best sentences, no model) and checks that every located
    citation opens its document with exactly the cited bytes highlighted; the API's answer."""
    form = driver.find_element(By.ID, "ask-form")
    box = form.find_element(By.NAME, "question")
    box.clear()
    box.send_keys(question)
    if not form.find_element(By.NAME, "extractive").is_selected():
        form.find_element(By.NAME, "extractive").click()
    driver.execute_script("document.getElementById('ask-form').dataset.state = ''")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait(driver).until(lambda d: d.find_element(By.ID, "ask-form").get_attribute("data-state") == "done")
    expected = server.api("POST", "/ask", {"question": question, "extractive": True})
    shown = driver.find_element(By.CSS_SELECTOR, "#answer .answer-text").text
    for s in expected["sentences"]:
        assert s["text"] in shown, (s["text"], shown)
    located = [c for s in expected["sentences"] for c in s["citations"] if c["verified"]]
    links = driver.find_elements(By.CSS_SELECTOR, "#answer .citation.verified")
    assert [(l.get_attribute("data-doc-id"), int(l.get_attribute("data-start")), int(l.get_attribute("data-end")))
            for l in links] == [(c["doc_id"], c["span"][0], c["span"][1]) for c in located]
    for link, c in zip(links, located):
        driver.execute_script("document.getElementById('ask-doc').replaceChildren()")
        link.click()
        wait(driver).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#ask-doc .doc-text mark.hit"))
        raw = server.api("GET", "/documents/" + c["doc_id"].replace("/", "%2F"))["text"].encode("utf-8")
        marked = "".join(m.get_attribute("textContent")
                         for m in driver.find_elements(By.CSS_SELECTOR, "#ask-doc .doc-text mark.hit"))
        assert marked == raw[c["span"][0]:c["span"][1]].decode("utf-8") == c["quote"]
    return expected


def test_ask_links_every_citation_to_its_bytes(browser: WebDriver, squad_server: Server,
                                                chinese_server: Server) -> None:
    open_page(browser, squad_server, "ask")
    answer = ask(browser, squad_server, "Which NFL team represented the AFC at Super Bowl 50?")
    assert not answer["abstained"] and answer["sentences"], answer
    browser.save_screenshot(str(SCREENSHOTS / "ask.png"))
    open_page(browser, chinese_server, "ask")
    with (DATA / "zh" / "retrieval" / "cmrc2018" / "dev" / "queries.jsonl").open(encoding="utf-8") as f:
        question = json.loads(f.readline())["question"]
    answer = ask(browser, chinese_server, question)
    assert answer["sentences"], answer


def test_compare_similar_and_store_views(browser: WebDriver, squad_server: Server) -> None:
    open_page(browser, squad_server, "compare")
    form = browser.find_element(By.ID, "compare-form")
    form.find_element(By.NAME, "query").send_keys("Who won Super Bowl 50?")
    form.find_element(By.CSS_SELECTOR, "button").click()
    status_says(browser, "in both lists")
    left = browser.find_elements(By.CSS_SELECTOR, "#compare-left .result")
    right = browser.find_elements(By.CSS_SELECTOR, "#compare-right .result")
    assert left and right
    both = {e.find_element(By.CSS_SELECTOR, "button").get_attribute("data-doc-id")
            for e in browser.find_elements(By.CSS_SELECTOR, "#compare-left .result.both")}
    right_ids = {e.find_element(By.CSS_SELECTOR, "button").get_attribute("data-doc-id") for e in right}
    assert both and both <= right_ids
    browser.save_screenshot(str(SCREENSHOTS / "compare.png"))

    ids = squad_server.api("GET", "/documents?limit=2")["ids"]
    browser.get(f"{squad_server.url}/#similar")
    form = wait(browser).until(EC.visibility_of_element_located((By.ID, "similar-form")))
    form.find_element(By.NAME, "doc_a").send_keys(ids[0])
    form.find_element(By.NAME, "doc_b").send_keys(ids[1])
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    status_says(browser, "Chunk-pair score")
    wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".pair-lines line"))
    texts = [squad_server.api("GET", "/documents/" + i)["text"] for i in ids]
    pairs = squad_server.api("POST", "/similar", {"a": texts[0], "b": texts[1], "top_k": 3,
                                                   "explain": True})["top"]
    lines = browser.find_elements(By.CSS_SELECTOR, ".pair-lines line")
    assert len(lines) == len(pairs) == 3
    for side, pane in (("a", ".pane-a"), ("b", ".pane-b")):
        for p in pairs:
            marked = browser.find_elements(By.CSS_SELECTOR, f'{pane} mark[data-chunk="{p[side]["chunk"]}"]')
            assert "".join(m.get_attribute("textContent") for m in marked) == p[side]["text"]
    browser.save_screenshot(str(SCREENSHOTS / "similar.png"))

    browser.get(f"{squad_server.url}/#store")
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "page-info"), "of 48"))
    docs = browser.find_elements(By.CSS_SELECTOR, "#doc-list .doc-open")
    assert len(docs) == 48
    docs[0].click()
    wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#chunk-panel .chunk-text"))
    chunks = squad_server.api("GET", "/documents/" + docs[0].text.replace("/", "%2F") + "?chunks=true")["chunks"]
    shown = browser.find_elements(By.CSS_SELECTOR, "#chunk-panel .chunk-text")
    assert [e.get_attribute("textContent") for e in shown] == [c["text"] for c in chunks]
    browser.save_screenshot(str(SCREENSHOTS / "store.png"))


def test_evaluate_opens_a_report(browser: WebDriver, squad_server: Server, tmp_path: Path) -> None:
    report = tmp_path / "report"
    ckeep("eval", "run", "--dataset", str(DATA / "fastbook_benchmark"), "--split", "ch1",
          "--strategy", "chunker=paragraphs", "--strategy", "chunker=paragraphs:3",
          "--metrics", "contain@1,contain@3,contain@5", "--report", str(report))
    open_page(browser, squad_server, "evaluate")
    files = [str(report / "results.json"), str(report / "metrics.svg"), str(report / "recall.svg")]
    browser.find_element(By.ID, "report-files").send_keys("\n".join(files))
    status_says(browser, "Opened the report")
    rows = browser.find_elements(By.CSS_SELECTOR, "#report table.metrics tr")
    assert len(rows) == 3  # a header and two strategies
    results = json.loads((report / "results.json").read_text())
    first_mean = results["strategies"][1]["evaluation"]["means"][1]
    assert f"{first_mean:.4f}" in rows[2].text
    wait(browser).until(lambda d: d.execute_script(
        "return [...document.querySelectorAll('#report .plots img')].every(i => i.complete && i.naturalWidth > 0)"))
    assert "win(s)" in browser.find_element(By.CSS_SELECTOR, "#report .wins").text
    browser.save_screenshot(str(SCREENSHOTS / "evaluate.png"))


def test_evaluate_this_store_follows_progress_charts_intervals_and_explains_a_refusal(
        browser: WebDriver, chinese_sentences_server: Server) -> None:
    server = chinese_sentences_server
    open_page(browser, server, "evaluate")
    form = browser.find_element(By.ID, "recommend-form")
    count = form.find_element(By.NAME, "count")
    count.clear()
    count.send_keys("60")
    form.find_element(By.NAME, "strategies").send_keys("mode=bm25,level=doc\nchunker=paragraphs,mode=bm25")
    form.find_element(By.CSS_SELECTOR, "button").click()
    status_says(browser, "Evaluated 3 strategies on 60 queries")
    job = server.api("GET", "/evaluate/1")
    rec = job["recommendation"]
    # The chart: one row per candidate, the winner marked, each interval drawn from its ends.
    rows = browser.find_elements(By.CSS_SELECTOR, "#recommendation svg.margin-chart g.candidate")
    assert [r.get_attribute("data-strategy") for r in rows] == [c["strategy"] for c in rec["candidates"]]
    winner = browser.find_element(By.CSS_SELECTOR, "#recommendation svg.margin-chart g.winner")
    assert winner.get_attribute("data-strategy") == rec["candidates"][rec["winner"]]["strategy"]
    table = browser.find_elements(By.CSS_SELECTOR, "#recommendation table.metrics tr")
    for row, c in zip(table[1:], rec["candidates"]):
        assert f"{c['mean']:.4f}" in row.text and f"{c['margin_ci'][0]:.4f}" in row.text
    # Sentence chunks lose to whole paragraphs with confidence (a seeded set), and that winner
    # needs the store re-chunked: the page says how, and the default stays.
    assert rec["confident"] and "chunker=paragraphs" in rec["candidates"][rec["winner"]]["strategy"]
    browser.save_screenshot(str(SCREENSHOTS / "evaluate-store.png"))
    browser.find_element(By.CSS_SELECTOR, "#recommendation button").click()
    wait(browser).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#recommendation .applied-outcome"), "--apply --rechunk"))
    assert server.api("GET", "/stats")["default_strategy"]["from"] == "built-in"


def test_a_large_store_is_read_a_page_at_a_time(browser: WebDriver, large_server: Server) -> None:
    open_page(browser, large_server, "store")
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "page-info"), "1–50 of 10000"))
    assert len(browser.find_elements(By.CSS_SELECTOR, "#doc-list .doc-open")) == 50
    browser.find_element(By.ID, "page-next").click()
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "page-info"), "51–100 of 10000"))
    browser.find_element(By.ID, "page-prev").click()
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "page-info"), "1–50 of 10000"))
    browser.get(f"{large_server.url}/#search")
    wait(browser).until(lambda d: "documents" in d.find_element(By.ID, "store-name").text)
    search(browser, "how do I learn programming", "bm25", "chunk")
    assert browser.find_elements(By.CSS_SELECTOR, "#search-results .result-open")


def test_the_page_asks_for_the_token_and_refuses_a_wrong_one(browser: WebDriver, squad_server: Server) -> None:
    browser.get(f"{squad_server.url}/#store")
    browser.execute_script("sessionStorage.clear()")
    browser.refresh()
    token = wait(browser).until(EC.visibility_of_element_located((By.ID, "token-input")))
    token.send_keys("wrong")
    browser.find_element(By.CSS_SELECTOR, "#token-form button").click()
    # Refused: the page asks again (a fresh, empty field) and shows no data.
    token = wait(browser).until(lambda d: d.find_element(By.ID, "token-input").is_displayed()
                                and d.find_element(By.ID, "token-input").get_attribute("value") == ""
                                and d.find_element(By.ID, "token-input"))
    assert browser.find_element(By.ID, "store-name").text == ""
    token.send_keys(squad_server.token)
    browser.find_element(By.CSS_SELECTOR, "#token-form button").click()
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "page-info"), "of 48"))


def test_the_page_runs_under_its_policy_without_errors(browser: WebDriver, squad_server: Server) -> None:
    import urllib.request

    with urllib.request.urlopen(squad_server.url + "/") as res:
        policy = res.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    with urllib.request.urlopen(squad_server.url + "/ui/app.js") as res:
        assert res.headers["content-type"].startswith("text/javascript")
    open_page(browser, squad_server)
    browser.get_log("browser")  # drained: only what follows counts
    browser.refresh()
    wait(browser).until(lambda d: "documents" in d.find_element(By.ID, "store-name").text)
    search(browser, "Super Bowl", "bm25", "chunk")
    problems = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not problems, problems
    index = (Path(__file__).resolve().parents[2] / "crates" / "server" / "ui" / "index.html").read_text()
    assert "<script>" not in index and " style=" not in index and "onclick" not in index
