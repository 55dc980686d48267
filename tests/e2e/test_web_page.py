"""The web page in a real headless Chromium against the real API served by uvicorn.

A real user with a real token (``agent.library.accounts.add_user``) and a small real document
(chapters I and II of Alice in Wonderland) ingested in the test database; the server is a
``uvicorn api.app:app`` subprocess on a free loopback port sharing that database. One test
goes through the whole flow with the full book uploaded through the page (an ingest job
the page polls) and keeps its screenshot in ``$QUIRE_HOME/artifacts/``.

Chromium: ``QUIRE_CHROMIUM`` if set, else ``chromium`` (Debian package) or another Chrome on
PATH, else the browser ``playwright install chromium`` downloaded. The tests skip only when
none of these exists. ``QUIRE_WEB_SCREENSHOT=docs/screenshot.png`` makes the screenshot test
write there (else it writes to a temporary folder).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from tests.support.paths import ALICE
from tests.support.samples import alice_chapters

pytestmark = pytest.mark.browser

TOKEN_KEY = "quire.token"
ANSWER_TIMEOUT_MS = 120_000
QUESTION = "Who is Dinah?"
SHOWCASE_QUESTION = "What happened when Alice drank from the bottle marked DRINK ME?"
SYNC_INGEST_BYTES = 4096


# ------------------------------------------------------------------ Chromium


def find_chromium() -> str | None:
    """A Chromium/Chrome executable: $QUIRE_CHROMIUM, one on PATH, or Playwright's own."""
    explicit = os.environ.get("QUIRE_CHROMIUM")
    if explicit and Path(explicit).is_file():
        return explicit
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            managed = p.chromium.executable_path
    except Exception:
        return None
    return managed if managed and Path(managed).is_file() else None


@pytest.fixture(scope="module")
def chromium() -> str:
    path = find_chromium()
    if path is None:
        pytest.skip(
            "no Chromium found: install it (apt-get install -y chromium, or "
            "playwright install chromium) or set QUIRE_CHROMIUM=/path/to/chrome"
        )
    return path


@pytest.fixture(scope="module")
async def browser(chromium):
    async with async_playwright() as p:
        b = await p.chromium.launch(
            executable_path=chromium,
            # root in a container: no user namespaces for the sandbox; small /dev/shm
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        yield b
        await b.close()


# ------------------------------------------------------------------ data and server


def small_book() -> bytes:
    """Title, author and chapters I-II of Alice in Wonderland (about 25 kB)."""
    head = "Alice’s Adventures in Wonderland\n\nby Lewis Carroll\n\n\n"
    return (head + alice_chapters("CHAPTER I.", "CHAPTER III.") + "\n").encode("utf-8")


async def make_reader(services) -> dict:
    """A new user with an API token and one small ingested book."""
    from agent.ingest.pipeline import ingest_bytes
    from agent.library.accounts import add_user

    user, token = await add_user(services, f"web-{uuid.uuid4().hex[:6]}")
    result = await ingest_bytes(
        services, user.id, small_book(), "alice-1-2.txt", title="Alice’s Adventures in Wonderland"
    )
    return {"user": user, "token": token, "document_id": str(result.document_id)}


@pytest.fixture(scope="module")
async def reader(services):
    return await make_reader(services)


@pytest.fixture(scope="module")
def server(services, api_server):
    """``uvicorn api.app:app`` on a free loopback port, the test database behind it."""
    # uploads over 4 kB become ingest jobs (202 + polling) instead of inline (201)
    url, _ = api_server(QUIRE_API_SYNC_INGEST_BYTES=str(SYNC_INGEST_BYTES))
    return url


def api_get(server: str, token: str, path: str) -> dict:
    r = httpx.get(f"{server}{path}", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


# ------------------------------------------------------------------ page helpers


async def new_page(
    browser: Browser, server: str, token: str | None, *, init_script: str = "", **viewport
) -> tuple[Page, list[str]]:
    """A fresh browser context on the page (signed in when ``token`` is given; running
    ``init_script`` before the page's own) and the list its uncaught JavaScript errors go to."""
    context = await browser.new_context(
        base_url=server, viewport=viewport or {"width": 1280, "height": 800}
    )
    if init_script:
        await context.add_init_script(init_script)
    if token:
        await context.add_init_script(
            f"window.localStorage.setItem({json.dumps(TOKEN_KEY)}, {json.dumps(token)});"
        )
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    await page.goto("/")
    return page, errors


RECORD_EVENT_STREAMS = """
window.__eventStreams = [];
const pageFetch = window.fetch;
window.fetch = async (...args) => {
  const res = await pageFetch(...args);
  if (!res.body || !(res.headers.get("content-type") || "").startsWith("text/event-stream")) {
    return res;
  }
  const [mine, theirs] = res.body.tee();
  const index = window.__eventStreams.push("") - 1;
  (async () => {
    const reader = theirs.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      window.__eventStreams[index] += decoder.decode(value, { stream: true });
    }
  })();
  return new Response(mine, { status: res.status, statusText: res.statusText, headers: res.headers });
};
"""
"""An init script: the page's ``text/event-stream`` responses, as received, are copied into
``window.__eventStreams`` (the browser keeps no body of a streamed fetch for Playwright)."""


async def ask(page: Page, question: str = QUESTION):
    """Ask through the composer; returns the finished answer's locator."""
    await page.fill("#question", question)
    await page.click("#ask-button")
    answer = page.locator(".msg.assistant").last
    await expect(answer).to_have_attribute(
        "data-state", re.compile("done|error"), timeout=ANSWER_TIMEOUT_MS
    )
    error = answer.locator(".form-error")
    assert await error.count() == 0, await error.inner_text()
    await expect(answer).to_have_attribute("data-state", "done")
    return answer


async def no_horizontal_scroll(page: Page) -> None:
    sizes = await page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth,"
        " document.body.scrollWidth]"
    )
    assert sizes[0] <= sizes[1] and sizes[2] <= sizes[1], sizes


# ------------------------------------------------------------------ tests


async def test_sign_in_refuses_a_bad_token_then_signs_in_and_out(browser, server, reader):
    page, js_errors = await new_page(browser, server, None)
    await expect(page.locator("#signin-form")).to_be_visible()
    await expect(page.locator("#app-view")).to_be_hidden()

    await page.fill("#token-input", "not-a-real-token")
    await page.click("#signin-button")
    error = page.locator("#signin-error")
    await expect(error).to_be_visible()
    await expect(error).to_contain_text("refused (401)")
    assert await page.evaluate(f"localStorage.getItem('{TOKEN_KEY}')") is None

    await page.fill("#token-input", reader["token"])
    await page.press("#token-input", "Enter")
    await expect(page.locator("#app-view")).to_be_visible()
    doc = page.locator(f'.doc[data-id="{reader["document_id"]}"]')
    await expect(doc).to_contain_text("Alice’s Adventures in Wonderland")
    await expect(doc.locator(".badge").first).to_contain_text("ingestion: ready")
    await expect(doc.locator(".badge").nth(1)).to_contain_text("summary:")
    assert await page.evaluate(f"localStorage.getItem('{TOKEN_KEY}')") == reader["token"]

    # the token survives a reload
    await page.reload()
    await expect(page.locator("#app-view")).to_be_visible()
    await expect(doc).to_be_visible()

    await page.click("#sign-out")
    await expect(page.locator("#signin-form")).to_be_visible()
    await expect(page.locator("#app-view")).to_be_hidden()
    assert await page.evaluate(f"localStorage.getItem('{TOKEN_KEY}')") is None
    assert js_errors == []
    await page.context.close()


async def test_upload_shows_progress_then_delete_asks_and_removes(browser, server, reader):
    page, js_errors = await new_page(browser, server, reader["token"])
    await expect(page.locator("#app-view")).to_be_visible()

    # an empty file: the API's message is shown
    await page.set_input_files(
        "#upload-file", {"name": "empty.txt", "mimeType": "text/plain", "buffer": b""}
    )
    await page.click("#upload-button")
    await expect(page.locator("#upload-error")).to_be_visible()
    await expect(page.locator("#upload-error")).to_contain_text("Upload failed:")

    note = "The lighthouse keeper of Carrow Point polished the great lens every night.\n" * 40
    await page.set_input_files(
        "#upload-file",
        {"name": "carrow-point.txt", "mimeType": "text/plain", "buffer": note.encode()},
    )
    await page.fill("#upload-title", "Carrow Point notes")
    await page.fill("#upload-tags", "test, web")
    await page.click("#upload-button")
    await expect(page.locator("#upload-text")).to_contain_text("Added", timeout=60_000)
    await expect(page.locator("#upload-error")).to_be_hidden()
    assert await page.eval_on_selector("#upload-progress", "p => p.value") == 100
    item = page.locator(".doc", has_text="Carrow Point notes")
    await expect(item).to_be_visible()
    doc_id = await item.get_attribute("data-id")
    docs = api_get(server, reader["token"], "/api/documents")["documents"]
    assert any(d["id"] == doc_id and d["title"] == "Carrow Point notes" for d in docs)

    # a larger file becomes a job (202): the page polls it until the document is there
    statuses: list[int] = []
    polled: list[str] = []
    page.on(
        "response",
        lambda r: statuses.append(r.status) if r.url.endswith("/api/documents") else None,
    )
    page.on("request", lambda r: polled.append(r.url) if "/api/jobs/" in r.url else None)
    log = "".join(f"Day {i}: the tide came in at {i % 12 + 1} o'clock.\n\n" for i in range(300))
    assert len(log) > SYNC_INGEST_BYTES
    await page.set_input_files(
        "#upload-file", {"name": "tide-log.txt", "mimeType": "text/plain", "buffer": log.encode()}
    )
    await page.fill("#upload-title", "Tide log")
    await page.click("#upload-button")
    await expect(page.locator("#upload-text")).to_contain_text("Added", timeout=120_000)
    assert 202 in statuses and polled, (statuses, polled)
    await expect(page.locator("#upload-text")).to_contain_text("Tide log")
    tide = page.locator(".doc", has_text="Tide log")
    await expect(tide).to_be_visible()
    r = httpx.delete(
        f"{server}/api/documents/{await tide.get_attribute('data-id')}",
        headers={"Authorization": f"Bearer {reader['token']}"},
    )
    assert r.status_code == 204, r.text

    # delete: a confirm dialog first; dismissing it keeps the document
    dialogs: list[str] = []

    async def dismiss(dialog):
        dialogs.append(dialog.message)
        await dialog.dismiss()

    page.once("dialog", dismiss)
    await item.locator(".doc-delete").click()
    await expect(item).to_be_visible()

    async def accept(dialog):
        dialogs.append(dialog.message)
        await dialog.accept()

    page.once("dialog", accept)
    await item.locator(".doc-delete").click()
    await expect(item).to_have_count(0)
    assert len(dialogs) == 2 and "Carrow Point notes" in dialogs[0]
    docs = api_get(server, reader["token"], "/api/documents")["documents"]
    assert all(d["id"] != doc_id for d in docs)
    assert js_errors == []
    await page.context.close()


async def test_ask_streams_cited_answer_preview_panel_and_correction(browser, server, reader):
    page, js_errors = await new_page(browser, server, reader["token"])
    await expect(page.locator("#app-view")).to_be_visible()
    answer = await ask(page)

    # streamed: token events arrived and became text
    assert int(await answer.get_attribute("data-tokens")) >= 1
    body = answer.locator(".answer-body")
    assert "Dinah" in await body.inner_text()

    # chips for #chk_ citations (the raw ids are not shown as text)
    chips = answer.locator('.answer-body button.cite[data-ref^="#chk_"]')
    await expect(chips.first).to_be_visible()
    assert "#chk_" not in await body.inner_text()
    ref = await chips.first.get_attribute("data-ref")
    assert re.fullmatch(r"#chk_[0-9a-f]{8}", ref)
    chunk = api_get(server, reader["token"], f"/api/chunks/{quote(ref, safe='')}")["chunk"]

    # route and sources under the answer
    await expect(answer.locator(".route")).to_contain_text("Route:")
    await expect(answer.locator(".sources li").first).to_be_visible()
    # why that route, the search settings, and how sure the answer is
    await expect(answer.locator(".route-reason")).to_have_text(
        "Why: specific question (specific search)"
    )
    confidence = await answer.locator(".confidence").get_attribute("data-confidence")
    assert confidence in ("high", "medium"), confidence
    await expect(answer.locator(".confidence")).to_have_text(f"Confidence: {confidence}")

    # hover: a ~200-character preview of the cited paragraph
    tip = page.locator("#cite-tip")
    await chips.first.hover()
    await expect(tip).to_be_visible()
    await expect(tip.locator(".tip-preview")).not_to_contain_text("Loading")
    preview = squash(await tip.locator(".tip-preview").inner_text())
    assert 20 <= len(preview) <= 230, preview
    assert squash(chunk["text"]).startswith(preview.rstrip("…")[:60])
    await expect(tip).to_contain_text("Alice")

    # keyboard focus shows it too; Escape hides it
    await page.mouse.move(1, 1)
    await expect(tip).to_be_hidden()
    await chips.first.focus()
    await expect(tip).to_be_visible()
    assert await chips.first.get_attribute("aria-describedby") == "cite-tip"
    await page.keyboard.press("Escape")
    await expect(tip).to_be_hidden()

    # click: the side panel with the book, chapter and the exact paragraph highlighted
    await chips.first.click()
    panel = page.locator("#chunk-panel")
    await expect(panel).to_be_visible()
    mark = panel.locator("mark.cited-paragraph")
    await expect(mark).to_be_visible()
    assert squash(await mark.inner_text()) == squash(chunk["text"])
    await expect(panel.locator(".chunk-book")).to_have_text(chunk["document_title"])
    if chunk.get("chapter"):
        await expect(panel.locator(".chunk-facts")).to_contain_text(chunk["chapter"])
    if chunk.get("parent_text") and squash(chunk["parent_text"]) != squash(chunk["text"]):
        context = squash(await panel.locator(".chunk-context").first.inner_text())
        assert context == squash(chunk["parent_text"])
    # Escape closes it and gives the focus back to the chip
    await page.keyboard.press("Escape")
    await expect(panel).to_be_hidden()
    await expect(chips.first).to_be_focused()

    # a correction of this answer, stored against its message id
    message_id = await answer.get_attribute("data-message-id")
    assert message_id
    await answer.locator(".correction-toggle").click()
    await answer.locator(".correction-form textarea").fill("Dinah is Alice's cat, not her sister.")
    await answer.locator(".correction-form button[type=submit]").click()
    await expect(answer.locator(".correction-status")).to_contain_text("Correction saved")
    corrections = api_get(server, reader["token"], "/api/corrections")["corrections"]
    assert any(message_id in json.dumps(c) for c in corrections), corrections

    # the chat is listed; reopened from history it renders the same chips
    chat_item = page.locator(".chat-item", has_text=QUESTION)
    await expect(chat_item).to_be_visible()
    await page.reload()
    await page.locator(".chat-item", has_text=QUESTION).first.click()
    history = page.locator(".msg.assistant").last
    await expect(history.locator(f'button.cite[data-ref="{ref}"]').first).to_be_visible()
    await expect(history.locator(".route")).to_contain_text("Route:")
    await expect(history.locator(".route-reason")).to_contain_text("specific question")
    await expect(history.locator(".confidence")).to_have_text(f"Confidence: {confidence}")
    assert js_errors == []
    await page.context.close()


async def test_sign_in_upload_the_book_ask_hover_and_open_the_cited_passage(
    browser, server, services, settings
):
    """The whole flow in one page: sign in with a token, upload the full Alice in Wonderland
    through the upload control (over the sync limit: a job the page polls until the book is
    ready), ask about it, watch the answer stream in, hover a citation for its preview, click
    it for the panel with the paragraph; the screenshot is kept as a test artifact."""
    from agent.library.accounts import add_user

    assert ALICE.stat().st_size > SYNC_INGEST_BYTES
    _, token = await add_user(services, f"web-book-{uuid.uuid4().hex[:6]}")
    page, js_errors = await new_page(browser, server, None, init_script=RECORD_EVENT_STREAMS)

    # sign in
    await expect(page.locator("#signin-form")).to_be_visible()
    await page.fill("#token-input", token)
    await page.click("#signin-button")
    await expect(page.locator("#app-view")).to_be_visible()
    await expect(page.locator(".doc")).to_have_count(0)

    # upload the real file: 202 + a job, polled by the page until the document is there
    statuses: list[int] = []
    polled: list[str] = []
    page.on(
        "response",
        lambda r: statuses.append(r.status) if r.url.endswith("/api/documents") else None,
    )
    page.on("request", lambda r: polled.append(r.url) if "/api/jobs/" in r.url else None)
    await page.set_input_files("#upload-file", str(ALICE))
    await page.click("#upload-button")
    await expect(page.locator("#upload-text")).to_contain_text("Added", timeout=240_000)
    await expect(page.locator("#upload-error")).to_be_hidden()
    assert 202 in statuses and polled, (statuses, polled)
    doc = page.locator(".doc")
    await expect(doc).to_have_count(1)
    await expect(doc).to_contain_text("Alice")
    await expect(doc.locator(".badge").first).to_contain_text("ingestion: ready")
    document_id = await doc.get_attribute("data-id")
    (listed,) = api_get(server, token, "/api/documents")["documents"]
    assert listed["id"] == document_id

    # ask: the answer arrives as a stream of token events (text/event-stream)
    answer = await ask(page, QUESTION)
    (raw,) = await page.evaluate("window.__eventStreams")
    events = [
        json.loads(line[len("data:") :])
        for block in raw.replace("\r\n", "\n").split("\n\n")
        if block.startswith("event: token")
        for line in block.splitlines()
        if line.startswith("data:")
    ]
    streamed = "".join(e["text"] for e in events)
    assert len(events) >= 2 and int(await answer.get_attribute("data-tokens")) == len(events)
    assert "Dinah" in streamed
    body = answer.locator(".answer-body")
    assert "Dinah" in await body.inner_text()

    # a citation chip of the uploaded book; hover: its preview
    chips = answer.locator('.answer-body button.cite[data-ref^="#chk_"]')
    await expect(chips.first).to_be_visible()
    ref = await chips.first.get_attribute("data-ref")
    assert ref in streamed.lower()
    chunk = api_get(server, token, f"/api/chunks/{quote(ref, safe='')}")["chunk"]
    assert chunk["document_id"] == document_id
    assert "Dinah" in chunk["text"] or "Dinah" in (chunk.get("parent_text") or "")
    tip = page.locator("#cite-tip")
    await chips.first.hover()
    await expect(tip).to_be_visible()
    await expect(tip.locator(".tip-preview")).not_to_contain_text("Loading")
    preview = squash(await tip.locator(".tip-preview").inner_text())
    assert 20 <= len(preview) <= 230, preview
    assert squash(chunk["text"]).startswith(preview.rstrip("…")[:60])

    # click: the side panel with the book and the cited paragraph highlighted
    await chips.first.click()
    panel = page.locator("#chunk-panel")
    await expect(panel).to_be_visible()
    mark = panel.locator("mark.cited-paragraph")
    await expect(mark).to_be_visible()
    assert squash(await mark.inner_text()) == squash(chunk["text"])
    await expect(panel.locator(".chunk-book")).to_have_text(chunk["document_title"])

    # the screenshot, kept under $QUIRE_HOME as the test's artifact
    await page.mouse.move(640, 790)
    await expect(tip).to_be_hidden()
    artifact = settings.home.expanduser().resolve() / "artifacts" / "web-alice-upload-ask.png"
    artifact.parent.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(artifact))
    assert artifact.stat().st_size > 10_000
    print(f"screenshot: {artifact}")
    assert js_errors == []
    await page.context.close()


async def test_narrow_screen_stacks_without_horizontal_scroll(browser, server, reader):
    page, js_errors = await new_page(browser, server, reader["token"], width=390, height=844)
    await expect(page.locator("#app-view")).to_be_visible()
    await no_horizontal_scroll(page)
    answer = await ask(page)
    await no_horizontal_scroll(page)

    # the library is behind the menu button; opened, it stacks above the chat
    await expect(page.locator("#sidebar")).to_be_hidden()
    await page.click("#menu-toggle")
    await expect(page.locator("#sidebar")).to_be_visible()
    await expect(page.locator(f'.doc[data-id="{reader["document_id"]}"]')).to_be_visible()
    await no_horizontal_scroll(page)
    await page.click("#menu-toggle")

    # the passage panel is a full-width sheet
    await answer.locator("button.cite").first.click()
    panel = page.locator("#chunk-panel")
    await expect(panel.locator("mark.cited-paragraph")).to_be_visible()
    box = await panel.bounding_box()
    width = await page.evaluate("document.documentElement.clientWidth")
    assert box["x"] == 0 and box["width"] == width and width >= 375, (box, width)
    await no_horizontal_scroll(page)
    await page.click("#chunk-close")
    await expect(panel).to_be_hidden()
    assert js_errors == []
    await page.context.close()


async def test_screenshot_of_a_cited_answer(browser, server, services, tmp_path):
    """docs/screenshot.png: a fresh user (one book, one chat) at 1280x800, passage open."""
    target = Path(os.environ.get("QUIRE_WEB_SCREENSHOT") or tmp_path / "screenshot.png")
    showcase = await make_reader(services)
    page, js_errors = await new_page(browser, server, showcase["token"], width=1280, height=800)
    await expect(page.locator("#app-view")).to_be_visible()
    answer = await ask(page, SHOWCASE_QUESTION)
    await answer.locator("button.cite").first.click()
    await expect(page.locator("#chunk-panel mark.cited-paragraph")).to_be_visible()
    await page.mouse.move(640, 790)
    await expect(page.locator("#cite-tip")).to_be_hidden()
    target.parent.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(target))
    assert target.stat().st_size > 10_000
    assert js_errors == []
    await page.context.close()


async def test_model_output_is_rendered_as_text_never_as_html(browser, server):
    page, js_errors = await new_page(browser, server, None)
    result = await page.evaluate(
        """async () => {
          const m = await import('/render.js');
          const cites = {'#web_1': {id: '#web_1', url: 'javascript:alert(1)', title: 'x'}};
          const ctx = {number: () => 1, citation: (id) => cites[id]};
          const box = document.createElement('div');
          box.append(m.renderMarkdown(
            '<img src=x onerror="window.pwned=1"> **bold** #chk_DEADBEEF and [#web_1]\\n' +
            '- <script>window.pwned=1</script>\\n\\n`<b>code</b>` https://example.org/a.', ctx));
          return {
            html: box.innerHTML,
            imgs: box.querySelectorAll('img, script, b').length,
            strong: box.querySelector('strong')?.textContent,
            chip: box.querySelector('button.cite')?.dataset.ref,
            webLink: box.querySelectorAll('a.cite').length,
            link: box.querySelector('a:not(.cite)')?.href,
            text: box.textContent,
          };
        }"""
    )
    assert result["imgs"] == 0, result["html"]
    assert result["strong"] == "bold"
    assert result["chip"] == "#chk_deadbeef"
    assert result["webLink"] == 0  # a javascript: URL never becomes a link
    assert result["link"] == "https://example.org/a"
    assert "<img src=x" in result["text"] and "<script>" in result["text"]
    assert await page.evaluate("window.pwned") is None
    assert js_errors == []
    await page.context.close()


async def test_a_failed_question_shows_its_error_and_retry_asks_it_again(browser, server, services):
    from agent.chat.turn_log import ANSWER_FAILED, save_failed_question

    person = await make_reader(services)
    # a turn that failed earlier, as the server keeps it: the question with its error
    kept_chat = uuid.uuid4()
    await save_failed_question(
        services, person["user"].id, kept_chat, QUESTION, ANSWER_FAILED, book_id=None
    )
    page, js_errors = await new_page(browser, server, person["token"])
    await expect(page.locator("#app-view")).to_be_visible()

    # live: the first stream fails the way the server reports a failed turn
    streams: list[str] = []

    async def fail_the_first(route):
        streams.append(route.request.url)
        if len(streams) > 1:
            await route.continue_()
            return
        error = {"code": "answer_failed", "message": ANSWER_FAILED.message}
        await route.fulfill(
            status=200,
            headers={"content-type": "text/event-stream"},
            body=f"event: error\ndata: {json.dumps(error)}\n\n",
        )

    await page.route("**/ask/stream", fail_the_first)
    await page.fill("#question", QUESTION)
    await page.click("#ask-button")
    failed = page.locator(".msg.user.failed")
    await expect(failed).to_have_count(1)
    await expect(failed.locator(".form-error")).to_have_text(ANSWER_FAILED.message)
    await expect(page.locator(".msg.assistant")).to_have_count(0)  # no empty answer left

    await failed.locator("button.retry").click()  # asks the same question again
    answer = page.locator(".msg.assistant").last
    await expect(answer).to_have_attribute("data-state", "done", timeout=ANSWER_TIMEOUT_MS)
    assert "Dinah" in await answer.locator(".answer-body").inner_text()
    assert len(streams) == 2
    await expect(failed.locator("button.retry")).to_be_disabled()
    assert [squash(t) for t in await page.locator(".msg.user .bubble").all_inner_texts()] == [
        QUESTION,
        QUESTION,
    ]

    # history: the kept question of the earlier chat, with its error and Retry
    await page.locator(f'.chat-item[data-id="{kept_chat}"]').click()
    kept = page.locator(".msg.user.failed")
    await expect(kept).to_have_count(1)
    await expect(kept.locator(".form-error")).to_have_text(ANSWER_FAILED.message)
    await kept.locator("button.retry").click()
    answer = page.locator(".msg.assistant").last
    await expect(answer).to_have_attribute("data-state", "done", timeout=ANSWER_TIMEOUT_MS)
    messages = api_get(server, person["token"], f"/api/chats/{kept_chat}/messages")["messages"]
    assert [(m["role"], bool(m["error"])) for m in messages] == [
        ("user", True),
        ("user", False),
        ("assistant", False),
    ]
    assert js_errors == []
