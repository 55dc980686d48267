// Quire web page: sign in, documents (upload, status, delete), chats with streamed answers,
// citation chips (preview on hover/focus, passage panel on click) and corrections.

import {
  ApiError,
  api,
  askStream,
  clearChunkCache,
  clearToken,
  getChunk,
  getToken,
  setToken,
  setUnauthorizedHandler,
  uploadFile,
} from "./client.js";
import {
  citedIds,
  el,
  locateParagraph,
  previewText,
  renderMarkdown,
  routeLabel,
  safeUrl,
} from "./render.js";

const $ = (id) => document.getElementById(id);

const state = {
  signedIn: false,
  documents: [],
  chats: [],
  chatId: null,
  busy: false,
  docTimer: null,
  /** citation id ("#chk_…" / "#web_N") -> citation object from the `citations` events */
  citations: new Map(),
  controller: null,
};

/* ---------------------------------------------------------------- helpers */

let toastTimer = null;
function toast(message, kind = "info") {
  const node = $("toast");
  node.textContent = message;
  node.dataset.kind = kind;
  node.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (node.hidden = true), kind === "error" ? 8000 : 4000);
}

/** Tell screen readers (the streamed text itself is not announced token by token). */
function announce(message) {
  const node = $("sr-status");
  node.textContent = "";
  setTimeout(() => (node.textContent = message), 50);
}

function errorText(err) {
  if (err instanceof ApiError) return err.message;
  return (err && err.message) || String(err);
}

function showError(node, err) {
  node.textContent = typeof err === "string" ? err : errorText(err);
  node.hidden = false;
}

function formatDate(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const today = new Date();
  return d.toDateString() === today.toDateString()
    ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : d.toLocaleDateString([], { month: "short", day: "numeric" });
}

function rememberCitations(list) {
  for (const c of list || []) {
    if (c && typeof c.id === "string") {
      const id = c.id.startsWith("#") ? c.id : `#${c.id}`;
      state.citations.set(id.toLowerCase(), c);
    }
  }
}

/* ---------------------------------------------------------------- sign in / out */

function showSignIn(message) {
  state.signedIn = false;
  $("app-view").hidden = true;
  $("session-bar").hidden = true;
  $("menu-toggle").hidden = true;
  $("signin-view").hidden = false;
  const err = $("signin-error");
  err.hidden = !message;
  err.textContent = message || "";
  $("token-input").value = "";
  $("token-input").focus();
}

function showApp() {
  state.signedIn = true;
  $("signin-view").hidden = true;
  $("app-view").hidden = false;
  $("session-bar").hidden = false;
  $("menu-toggle").hidden = false;
}

async function enter(token) {
  // the document list doubles as the token check: 401 means the token is refused
  const body = await api("/api/documents", { token });
  setToken(token);
  showApp();
  setDocuments(body.documents || []);
  newChat({ focus: false });
  loadChats();
  loadUsage();
  $("question").focus();
}

async function onSignIn(ev) {
  ev.preventDefault();
  const token = $("token-input").value.trim();
  const err = $("signin-error");
  err.hidden = true;
  if (!token) {
    showError(err, "Enter your API token.");
    return;
  }
  const button = $("signin-button");
  button.disabled = true;
  button.textContent = "Signing in\u2026";
  try {
    await enter(token);
  } catch (e) {
    const msg =
      e instanceof ApiError && e.status === 401
        ? `This token was refused (401): ${e.message}`
        : `Could not sign in: ${errorText(e)}`;
    showError(err, msg);
    $("token-input").select();
  } finally {
    button.disabled = false;
    button.textContent = "Sign in";
  }
}

function signOut(message) {
  if (state.controller) state.controller.abort();
  clearToken();
  clearTimeout(state.docTimer);
  clearChunkCache();
  state.citations.clear();
  state.documents = [];
  state.chats = [];
  state.chatId = null;
  $("doc-list").replaceChildren();
  $("chat-list").replaceChildren();
  resetMessages();
  closePanel();
  hideTip();
  showSignIn(message);
}

setUnauthorizedHandler((err) => {
  if (state.signedIn) signOut(`Your token was refused (401): ${err.message} Sign in again.`);
});

/* ---------------------------------------------------------------- usage */

async function loadUsage() {
  try {
    const { usage } = await api("/api/usage");
    const limit = usage.monthly_limit ? ` of ${usage.monthly_limit}` : "";
    const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
    $("usage").textContent =
      `${usage.chat_messages}${limit} message${usage.chat_messages === 1 && !limit ? "" : "s"}` +
      ` \u00b7 ${plural(usage.tokens, "token")} this month`;
  } catch {
    $("usage").textContent = "";
  }
}

/* ---------------------------------------------------------------- documents */

const BUSY_STATUSES = new Set(["queued", "pending", "running", "processing", "ingesting"]);

function statusBadge(label, value, extra = "") {
  const v = value || "none";
  return el("span", { class: `badge status-${v.replace(/[^a-z_]/gi, "")}` }, `${label}: ${v}${extra}`);
}

function setDocuments(docs) {
  state.documents = docs;
  renderDocuments();
  renderScope();
  clearTimeout(state.docTimer);
  const busy = docs.some((d) => BUSY_STATUSES.has(d.status) || BUSY_STATUSES.has(d.summary_status));
  if (busy) state.docTimer = setTimeout(loadDocuments, 5000);
}

async function loadDocuments() {
  try {
    const body = await api("/api/documents");
    setDocuments(body.documents || []);
  } catch (e) {
    if (state.signedIn) toast(`Could not load documents: ${errorText(e)}`, "error");
  }
}

function renderDocuments() {
  const list = $("doc-list");
  list.replaceChildren(
    ...state.documents.map((d) => {
      const meta = [
        d.author,
        d.file_type,
        d.chunk_count != null ? `${d.chunk_count} chunks` : null,
        d.page_count ? `${d.page_count} pages` : null,
      ].filter(Boolean);
      const summaryCount =
        d.summary_total ? ` (${d.summary_done ?? 0}/${d.summary_total})` : "";
      const item = el(
        "li",
        { class: "doc", dataset: { id: d.id } },
        el("div", { class: "doc-title", text: d.title || "Untitled" }),
        meta.length ? el("div", { class: "doc-meta muted small", text: meta.join(" \u00b7 ") }) : null,
        el(
          "div",
          { class: "doc-badges" },
          statusBadge("ingestion", d.status),
          statusBadge("summary", d.summary_status, summaryCount),
          d.shared ? el("span", { class: "badge shared", text: `shared by ${d.owner}` }) : null
        )
      );
      if (!d.shared) {
        item.append(
          el("button", {
            type: "button",
            class: "button ghost small danger doc-delete",
            "aria-label": `Delete ${d.title || "this document"}`,
            text: "Delete",
            onclick: () => deleteDocument(d),
          })
        );
      }
      return item;
    })
  );
  $("doc-empty").hidden = state.documents.length > 0;
}

function renderScope() {
  const select = $("scope");
  const current = select.value;
  const options = [el("option", { value: "", text: "All documents" })];
  for (const d of state.documents) {
    if (d.status && d.status !== "ready" && d.status !== "done") continue;
    options.push(el("option", { value: d.id, text: d.title || "Untitled" }));
  }
  select.replaceChildren(...options);
  select.value = [...select.options].some((o) => o.value === current) ? current : "";
}

async function deleteDocument(doc) {
  const title = doc.title || "this document";
  if (!window.confirm(`Delete \u201c${title}\u201d and its chunks and summaries? This cannot be undone.`)) return;
  try {
    await api(`/api/documents/${encodeURIComponent(doc.id)}`, { method: "DELETE" });
    toast(`Deleted \u201c${title}\u201d.`);
    clearChunkCache();
    await loadDocuments();
  } catch (e) {
    toast(`Could not delete \u201c${title}\u201d: ${errorText(e)}`, "error");
  }
}

function setUploadProgress(value, text) {
  $("upload-status").hidden = false;
  const bar = $("upload-progress");
  if (value == null) bar.removeAttribute("value");
  else bar.value = Math.max(0, Math.min(100, value));
  $("upload-text").textContent = text;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function pollJob(job) {
  let current = job;
  for (;;) {
    const pct = current.total ? Math.round((100 * (current.done || 0)) / current.total) : null;
    const stage = current.stage ? `${current.stage}` : current.status;
    setUploadProgress(pct, `Processing: ${stage}${pct != null ? ` (${pct}%)` : "\u2026"}`);
    if (current.status === "done") return current;
    if (current.status === "failed") {
      const e = current.error || {};
      throw new ApiError(200, e.code || "failed", e.message || "Processing failed.");
    }
    await sleep(1000);
    current = (await api(`/api/jobs/${encodeURIComponent(current.id)}`)).job;
  }
}

async function onUpload(ev) {
  ev.preventDefault();
  const form = $("upload-form");
  const err = $("upload-error");
  err.hidden = true;
  const file = $("upload-file").files[0];
  if (!file) {
    showError(err, "Choose a file to upload.");
    $("upload-file").focus();
    return;
  }
  const data = new FormData();
  data.append("file", file, file.name);
  const title = $("upload-title").value.trim();
  const tags = $("upload-tags").value.trim();
  if (title) data.append("title", title);
  if (tags) data.append("tags", tags);
  const button = $("upload-button");
  button.disabled = true;
  setUploadProgress(0, `Uploading ${file.name}\u2026`);
  try {
    const res = await uploadFile(data, (loaded, total) => {
      const pct = Math.round((100 * loaded) / total);
      setUploadProgress(pct, `Uploading ${file.name}: ${pct}%`);
    });
    let doc = res.body && res.body.document;
    let outcome = res.body && res.body.status;
    if (res.status === 202 && res.body && res.body.job) {
      setUploadProgress(null, "Uploaded; processing\u2026");
      const job = await pollJob(res.body.job);
      await loadDocuments();
      doc = state.documents.find((d) => d.id === job.document_id) || { title: title || file.name };
      outcome = null;
    } else {
      await loadDocuments();
    }
    const name = (doc && doc.title) || file.name;
    const message =
      outcome === "duplicate"
        ? `Already in your library: \u201c${name}\u201d.`
        : outcome === "replaced"
          ? `Updated \u201c${name}\u201d: it was read again.`
          : `Added \u201c${name}\u201d.`;
    setUploadProgress(100, message);
    toast(message);
    form.reset();
  } catch (e) {
    $("upload-status").hidden = true;
    showError(err, `Upload failed: ${errorText(e)}`);
  } finally {
    button.disabled = false;
  }
}

/* ---------------------------------------------------------------- chats */

async function loadChats() {
  try {
    const body = await api("/api/chats");
    state.chats = body.chats || [];
  } catch (e) {
    if (state.signedIn) toast(`Could not load chats: ${errorText(e)}`, "error");
  }
  renderChats();
}

function renderChats() {
  const list = $("chat-list");
  list.replaceChildren(
    ...state.chats.map((c) =>
      el(
        "li",
        {},
        el(
          "button",
          {
            type: "button",
            class: "chat-item",
            "aria-current": c.id === state.chatId ? "true" : null,
            dataset: { id: c.id },
            onclick: () => openChat(c.id),
          },
          el("span", { class: "chat-item-title", text: c.title || "Untitled chat" }),
          el("span", { class: "muted small", text: formatDate(c.updated_at || c.created_at) })
        )
      )
    )
  );
  $("chat-empty").hidden = state.chats.length > 0;
}

function resetMessages() {
  const welcome = $("welcome");
  $("messages").replaceChildren(welcome);
  welcome.hidden = false;
}

function setChatTitle(title) {
  $("chat-title").textContent = title || "New chat";
}

function closeSidebarOnMobile() {
  if (window.matchMedia("(max-width: 800px)").matches) toggleSidebar(false);
}

function newChat({ focus = true } = {}) {
  if (state.busy) return;
  state.chatId = null;
  resetMessages();
  setChatTitle("New chat");
  renderChats();
  closeSidebarOnMobile();
  if (focus) $("question").focus();
}

async function openChat(id) {
  if (state.busy) return;
  state.chatId = id;
  const chat = state.chats.find((c) => c.id === id);
  setChatTitle(chat && chat.title);
  renderChats();
  closeSidebarOnMobile();
  resetMessages();
  $("welcome").hidden = true;
  try {
    const { messages } = await api(`/api/chats/${encodeURIComponent(id)}/messages`);
    if (state.chatId !== id) return;
    resetMessages();
    $("welcome").hidden = messages.length > 0;
    for (const m of messages) {
      if (m.role === "user") {
        const node = addUserMessage(m.content);
        if (m.error) markFailed(node, m.content, m.error.message, m.book_id);
      }
      else if (m.role === "assistant") {
        const view = createAnswer();
        view.text = m.content || "";
        view.messageId = m.id;
        view.route = m.route;
        view.routing = m.routing || null;
        view.model = m.model_used;
        view.tokens = m.tokens_used;
        view.sources = m.sources || [];
        rememberCitations(m.citations);
        finishAnswer(view);
      }
    }
    $("messages").lastElementChild?.scrollIntoView({ block: "end" });
  } catch (e) {
    toast(`Could not open the chat: ${errorText(e)}`, "error");
  }
}

function addUserMessage(text) {
  $("welcome").hidden = true;
  const node = el(
    "article",
    { class: "msg user", "aria-label": "Your question" },
    el("div", { class: "bubble", text })
  );
  $("messages").append(node);
  return node;
}

/** Failures after which the server keeps the question with its error (CONTRACT.md). */
const KEPT_FAILURES = new Set(["answer_failed", "model_timeout", "model_unavailable"]);

/** A question whose turn failed or timed out (saved with its error): show the error and a
 * Retry button that asks the question again, in the book scope it was asked in. */
function markFailed(node, question, message, bookId, live = false) {
  node.classList.add("failed");
  node.dataset.state = "failed";
  const retry = el("button", {
    type: "button",
    class: "button ghost small retry",
    text: "Retry",
    "aria-label": "Ask this question again",
    onclick: () => {
      if (state.busy) return;
      retry.disabled = true;
      const scope = $("scope");
      const wanted = bookId || "";
      if ([...scope.options].some((o) => o.value === wanted)) scope.value = wanted;
      $("question").value = question;
      $("ask-form").requestSubmit();
    },
  });
  node.append(
    el(
      "div",
      { class: "msg-error small", role: live ? "alert" : null },
      el("span", { class: "form-error", text: message || "The answer failed." }),
      retry
    )
  );
}

/** The view of one assistant answer (streamed or from history). */
function createAnswer() {
  $("welcome").hidden = true;
  const view = {
    text: "",
    messageId: null,
    route: null,
    routing: null,
    model: null,
    tokens: null,
    sources: [],
    tokenEvents: 0,
    error: null,
    frame: 0,
  };
  view.body = el("div", { class: "answer-body" });
  view.meta = el("div", { class: "answer-meta" });
  view.root = el(
    "article",
    { class: "msg assistant", "aria-label": "Answer", "aria-busy": "true", dataset: { state: "streaming" } },
    el("div", { class: "bubble" }, view.body, view.meta)
  );
  $("messages").append(view.root);
  return view;
}

function renderAnswerBody(view) {
  const numbers = new Map();
  const ctx = {
    number(id) {
      if (!numbers.has(id)) numbers.set(id, numbers.size + 1);
      return numbers.get(id);
    },
    citation: (id) => state.citations.get(id.toLowerCase()),
  };
  const frag = renderMarkdown(view.text, ctx);
  if (!view.text && view.root.dataset.state === "streaming") {
    frag.append(el("p", { class: "typing muted", text: "Thinking\u2026" }));
  }
  view.body.replaceChildren(frag);
  if (view.error) {
    view.body.append(el("p", { class: "form-error", role: "alert", text: view.error }));
  }
}

function scheduleRender(view) {
  if (view.frame) return;
  view.frame = requestAnimationFrame(() => {
    view.frame = 0;
    renderAnswerBody(view);
    keepScrolled();
  });
}

function keepScrolled() {
  const box = $("messages");
  if (box.scrollHeight - box.scrollTop - box.clientHeight < 160) box.scrollTop = box.scrollHeight;
}

/** Render the answer whole; `final` marks it done (data-state) for readers and tests. */
function finishAnswer(view, final = true) {
  if (view.frame) cancelAnimationFrame(view.frame);
  view.frame = 0;
  if (final || view.error) {
    view.root.dataset.state = view.error ? "error" : "done";
    view.root.removeAttribute("aria-busy");
  } else view.root.dataset.state = "saving";
  view.root.dataset.tokens = String(view.tokenEvents);
  if (view.messageId) view.root.dataset.messageId = view.messageId;
  renderAnswerBody(view);
  renderAnswerMeta(view);
}

const CONFIDENCE_HELP =
  "high: passages well above the relevance threshold (or the stored book summary); " +
  "medium: passages just above it, a fallback, or web results; low: the documents do not " +
  "cover it; n/a: fixed replies and small talk";

function renderAnswerMeta(view) {
  const parts = [];
  if (view.route) {
    const facts = [
      el("span", { class: "route", dataset: { route: view.route } }, `Route: ${routeLabel(view.route)}`),
    ];
    const confidence = view.routing && view.routing.confidence;
    if (confidence) {
      facts.push(
        el("span", { class: "confidence", dataset: { confidence }, title: CONFIDENCE_HELP }, `Confidence: ${confidence}`)
      );
    }
    if (view.model) facts.push(el("span", { class: "muted", text: `model ${view.model}` }));
    if (view.tokens) facts.push(el("span", { class: "muted", text: `${view.tokens} tokens` }));
    parts.push(el("div", { class: "facts small" }, facts));
    if (view.routing && view.routing.reason) {
      const mode = view.routing.mode ? ` (${view.routing.mode} search)` : "";
      parts.push(el("p", { class: "route-reason small muted", text: `Why: ${view.routing.reason}${mode}` }));
    }
  }
  const cited = citedIds(view.text);
  const sources = view.sources && view.sources.length ? view.sources : [];
  if (sources.length || cited.length) {
    const items = sources.map((s) => el("li", { text: typeof s === "string" ? s : JSON.stringify(s) }));
    // web sources cited in the answer, linked
    for (const id of cited.filter((c) => c.startsWith("#web_"))) {
      const c = state.citations.get(id);
      const href = safeUrl(c && c.url);
      if (href && !sources.some((s) => s === c.title || s === c.url)) {
        items.push(el("li", {}, el("a", { href, target: "_blank", rel: "noopener noreferrer", text: c.title || c.url })));
      }
    }
    if (items.length) {
      parts.push(el("div", { class: "sources small" }, el("h3", { text: "Sources" }), el("ol", {}, items)));
    }
  }
  if (view.messageId) parts.push(correctionBox(view));
  view.meta.replaceChildren(...parts);
}

function correctionBox(view) {
  const id = `corr-${view.messageId}`;
  const status = el("p", { class: "small correction-status", role: "status", "aria-live": "polite" });
  const textarea = el("textarea", { id: `${id}-text`, rows: "3", required: true });
  const form = el(
    "form",
    { class: "correction-form", id, hidden: true },
    el("label", { for: `${id}-text`, text: "What should the answer have said?" }),
    textarea,
    el(
      "div",
      { class: "row" },
      el("button", { type: "submit", class: "button primary small", text: "Send correction" }),
      el("button", {
        type: "button",
        class: "button ghost small",
        text: "Cancel",
        onclick: () => {
          form.hidden = true;
          toggle.setAttribute("aria-expanded", "false");
          toggle.focus();
        },
      })
    )
  );
  const toggle = el("button", {
    type: "button",
    class: "button ghost small correction-toggle",
    "aria-expanded": "false",
    "aria-controls": id,
    text: "Suggest a correction",
    onclick: () => {
      form.hidden = !form.hidden;
      toggle.setAttribute("aria-expanded", String(!form.hidden));
      if (!form.hidden) textarea.focus();
    },
  });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const correction = textarea.value.trim();
    if (!correction) {
      status.textContent = "Write the correction first.";
      status.className = "small correction-status form-error";
      textarea.focus();
      return;
    }
    const submit = form.querySelector("button[type=submit]");
    submit.disabled = true;
    try {
      await api("/api/corrections", {
        method: "POST",
        body: { message_id: view.messageId, correction },
      });
      status.textContent = "Correction saved: future answers will take it into account.";
      status.className = "small correction-status ok";
      form.hidden = true;
      textarea.value = "";
      toggle.setAttribute("aria-expanded", "false");
      toggle.textContent = "Suggest another correction";
    } catch (e) {
      status.textContent = `Could not save the correction: ${errorText(e)}`;
      status.className = "small correction-status form-error";
    } finally {
      submit.disabled = false;
    }
  });
  return el("div", { class: "correction" }, toggle, form, status);
}

async function syncWithSaved(view, chatId) {
  // the saved answer is canonical (the server's citation guard may have tidied the stream)
  try {
    const { messages } = await api(`/api/chats/${encodeURIComponent(chatId)}/messages`);
    const saved = messages.find((m) => m.id === view.messageId);
    if (!saved) return;
    rememberCitations(saved.citations);
    let changed = false;
    if (saved.content && saved.content !== view.text) {
      view.text = saved.content;
      changed = true;
    }
    if (!view.sources.length && saved.sources && saved.sources.length) {
      view.sources = saved.sources;
      changed = true;
    }
    if (!view.routing && saved.routing) {
      view.routing = saved.routing;
      changed = true;
    }
    if (changed) finishAnswer(view, false);
  } catch {
    /* the streamed text stays */
  }
}

async function onAsk(ev) {
  ev.preventDefault();
  if (state.busy) return;
  const input = $("question");
  const question = input.value.trim();
  if (!question) {
    input.focus();
    return;
  }
  state.busy = true;
  const button = $("ask-button");
  button.textContent = "Stop";
  button.setAttribute("aria-label", "Stop the answer");
  input.value = "";
  const asked = addUserMessage(question);
  const view = createAnswer();
  renderAnswerBody(view);
  keepScrolled();
  announce("Answering\u2026");
  const payload = { question };
  const bookId = $("scope").value;
  if (bookId) payload.book_id = bookId;
  state.controller = new AbortController();
  try {
    if (!state.chatId) {
      const { chat } = await api("/api/chats", {
        method: "POST",
        body: { title: question.length > 60 ? `${question.slice(0, 57)}\u2026` : question },
      });
      state.chatId = chat.id;
      state.chats = [chat, ...state.chats.filter((c) => c.id !== chat.id)];
      setChatTitle(chat.title);
      renderChats();
    }
    const chatId = state.chatId;
    await askStream(
      chatId,
      payload,
      (event, data) => {
        switch (event) {
          case "token":
            view.tokenEvents += 1;
            view.text += data && typeof data === "object" ? data.text || "" : String(data);
            scheduleRender(view);
            break;
          case "citations":
            rememberCitations(data.citations);
            view.sources = data.sources || [];
            scheduleRender(view);
            break;
          case "route":
            view.route = data.route;
            view.routing = data.routing || null;
            view.model = data.model_used;
            break;
          case "usage":
            view.tokens = data.tokens;
            break;
          case "done":
            view.messageId = data.message_id;
            if (data.chat_id) state.chatId = data.chat_id;
            break;
          case "error":
            view.error = `The answer failed: ${(data && data.message) || "unknown error"}`;
            if (data && KEPT_FAILURES.has(data.code)) view.failure = data.message || data.code;
            break;
          default:
            break;
        }
      },
      state.controller.signal
    );
    if (!view.messageId && !view.error && !view.text) view.error = "The answer ended without any text.";
    finishAnswer(view, false);
    if (view.messageId && !view.error) await syncWithSaved(view, chatId);
    if (view.failure) {
      // the server kept the question with this error: show it there, with Retry
      view.root.remove();
      markFailed(asked, question, view.failure, bookId, true);
      announce(`The answer failed: ${view.failure}`);
      return;
    }
    finishAnswer(view);
    const spoken = view.text.replace(/\[?#?\b(chk_[0-9a-f]{8}|web_\d+)\b\]?/gi, "");
    announce(view.error || `Answer ready: ${previewText(spoken, 300)}`);
  } catch (e) {
    if (e && e.name === "AbortError") {
      view.root.remove();
      markFailed(asked, question, "Stopped.", bookId, true);
      announce("Stopped.");
      return;
    }
    view.error = `The answer failed: ${errorText(e)}`;
    finishAnswer(view);
    announce(view.error);
  } finally {
    state.busy = false;
    state.controller = null;
    button.textContent = "Ask";
    button.removeAttribute("aria-label");
    keepScrolled();
    if (state.signedIn) {
      loadChats();
      loadUsage();
    }
  }
}

/* ---------------------------------------------------------------- citation tooltip */

let tipFor = null;

function sourceLine(c) {
  return [
    c.document || c.document_title,
    c.chapter,
    c.section,
    c.page != null && c.page !== "" ? `p. ${c.page}` : null,
  ]
    .filter(Boolean)
    .join(" \u00b7 ");
}

function fillTip(chip, c) {
  const tip = $("cite-tip");
  const ref = chip.dataset.ref;
  if (ref.startsWith("#web_")) {
    const url = c && safeUrl(c.url);
    tip.replaceChildren(
      el("strong", { class: "tip-source", text: (c && c.title) || "Web source" }),
      c && c.snippet ? el("span", { class: "tip-preview", text: previewText(c.snippet) }) : null,
      url ? el("span", { class: "tip-hint", text: new URL(url).host }) : null
    );
    return;
  }
  if (!c) {
    tip.replaceChildren(el("span", { class: "tip-preview muted", text: "Loading preview\u2026" }));
    return;
  }
  // ~200 characters cut at a word; the server's preview when the text itself is missing
  let preview = c.text ? previewText(c.text, 200) : previewText(c.preview, 220);
  if (!c.text && c.preview && c.preview.length >= 190 && !preview.endsWith("\u2026")) preview += "\u2026";
  tip.replaceChildren(
    el("strong", { class: "tip-source", text: sourceLine(c) || ref }),
    el("span", { class: "tip-preview", text: preview }),
    el("span", { class: "tip-hint", text: "Click to view the full passage \u2192" })
  );
}

function placeTip(chip) {
  const tip = $("cite-tip");
  const r = chip.getBoundingClientRect();
  const margin = 8;
  const width = Math.min(340, window.innerWidth - 2 * margin);
  tip.style.maxWidth = `${width}px`;
  const tr = tip.getBoundingClientRect();
  let left = r.left + r.width / 2 - tr.width / 2;
  left = Math.max(margin, Math.min(left, window.innerWidth - tr.width - margin));
  let top = r.bottom + 6;
  if (top + tr.height > window.innerHeight - margin && r.top - tr.height - 6 > margin) {
    top = r.top - tr.height - 6;
  }
  tip.style.left = `${Math.round(left)}px`;
  tip.style.top = `${Math.round(top)}px`;
}

function showTip(chip) {
  const tip = $("cite-tip");
  tipFor = chip;
  const ref = chip.dataset.ref;
  const known = state.citations.get(ref.toLowerCase());
  fillTip(chip, known);
  tip.hidden = false;
  chip.setAttribute("aria-describedby", "cite-tip");
  placeTip(chip);
  if (!known && ref.startsWith("#chk_")) {
    getChunk(ref)
      .then((chunk) => {
        if (tipFor !== chip) return;
        fillTip(chip, {
          document: chunk.document_title,
          chapter: chunk.chapter,
          section: chunk.section,
          page: chunk.page,
          preview: chunk.preview,
          text: chunk.text,
        });
        placeTip(chip);
      })
      .catch((e) => {
        if (tipFor !== chip) return;
        tip.replaceChildren(el("span", { class: "tip-preview", text: `No preview: ${errorText(e)}` }));
      });
  }
}

function hideTip() {
  const tip = $("cite-tip");
  if (tipFor) tipFor.removeAttribute("aria-describedby");
  tipFor = null;
  tip.hidden = true;
}

/* ---------------------------------------------------------------- chunk panel */

let panelOpener = null;
let panelRef = null;

function field(label, value) {
  if (value === null || value === undefined || value === "") return [];
  return [el("dt", { text: label }), el("dd", { text: String(value) })];
}

function renderChunk(chunk) {
  const parts = [];
  parts.push(el("h3", { class: "chunk-book", text: chunk.document_title || "Untitled document" }));
  if (chunk.author) parts.push(el("p", { class: "chunk-author muted", text: `by ${chunk.author}` }));
  parts.push(
    el(
      "dl",
      { class: "chunk-facts" },
      field("Chapter", chunk.chapter),
      field("Section", chunk.section),
      field("Page", chunk.page),
      field("Citation", chunk.citation_id)
    )
  );
  const labels = chunk.topic_labels || [];
  if (labels.length) {
    parts.push(
      el(
        "ul",
        { class: "topic-labels", "aria-label": "Topics" },
        labels.map((t) => el("li", { class: "badge", text: String(t) }))
      )
    );
  }
  if (chunk.summary) {
    parts.push(el("h4", { text: "Section summary" }), el("p", { class: "chunk-summary", text: chunk.summary }));
  }
  parts.push(el("h4", { text: "Passage in context" }));
  const context = el("div", { class: "chunk-context" });
  const parent = chunk.parent_text || "";
  const span = locateParagraph(parent, chunk.text);
  if (span) {
    context.append(
      parent.slice(0, span[0]),
      el("mark", { class: "cited-paragraph", text: parent.slice(span[0], span[1]) }),
      parent.slice(span[1])
    );
  } else if (parent && parent.trim() !== (chunk.text || "").trim()) {
    context.append(parent);
    parts.push(context, el("h4", { text: "Cited paragraph" }));
    parts.push(el("div", { class: "chunk-context" }, el("mark", { class: "cited-paragraph", text: chunk.text || "" })));
    return parts;
  } else {
    context.append(el("mark", { class: "cited-paragraph", text: chunk.text || parent }));
  }
  parts.push(context);
  return parts;
}

async function openPanel(ref, opener) {
  hideTip();
  panelOpener = opener || null;
  panelRef = ref;
  const panel = $("chunk-panel");
  const body = $("chunk-body");
  body.replaceChildren(el("p", { class: "muted", text: "Loading the passage\u2026" }));
  panel.hidden = false;
  panel.dataset.ref = ref;
  document.body.classList.add("panel-open");
  $("chunk-close").focus();
  try {
    const chunk = await getChunk(ref);
    if (panelRef !== ref) return;
    body.replaceChildren(...renderChunk(chunk));
    body.scrollTop = 0;
    // keep the book and chapter in view unless the paragraph sits below the fold
    const mark = body.querySelector("mark.cited-paragraph");
    if (mark) {
      const top = mark.getBoundingClientRect().top - body.getBoundingClientRect().top;
      if (top + Math.min(mark.offsetHeight, body.clientHeight * 0.6) > body.clientHeight) {
        body.scrollTop = Math.max(0, top - body.clientHeight * 0.2);
      }
    }
  } catch (e) {
    if (panelRef !== ref) return;
    body.replaceChildren(el("p", { class: "form-error", role: "alert", text: `Could not load ${ref}: ${errorText(e)}` }));
  }
}

function closePanel() {
  const panel = $("chunk-panel");
  if (panel.hidden) return;
  panel.hidden = true;
  panelRef = null;
  document.body.classList.remove("panel-open");
  if (panelOpener && panelOpener.isConnected) panelOpener.focus();
  panelOpener = null;
}

/* ---------------------------------------------------------------- sidebar (narrow screens) */

function toggleSidebar(open) {
  const sidebar = $("sidebar");
  const show = open ?? !sidebar.classList.contains("open");
  sidebar.classList.toggle("open", show);
  $("menu-toggle").setAttribute("aria-expanded", String(show));
}

/* ---------------------------------------------------------------- wiring */

function chipFrom(target) {
  return target instanceof Element ? target.closest(".cite") : null;
}

function wire() {
  $("signin-form").addEventListener("submit", onSignIn);
  $("sign-out").addEventListener("click", () => signOut());
  $("upload-form").addEventListener("submit", onUpload);
  $("docs-refresh").addEventListener("click", loadDocuments);
  $("new-chat").addEventListener("click", () => newChat());
  $("ask-form").addEventListener("submit", onAsk);
  $("ask-button").addEventListener("click", (ev) => {
    // the Ask button is a Stop button while an answer streams
    if (!state.busy) return;
    ev.preventDefault();
    if (state.controller) state.controller.abort();
  });
  $("menu-toggle").addEventListener("click", () => toggleSidebar());
  $("chunk-close").addEventListener("click", closePanel);
  $("question").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      if (!state.busy) $("ask-form").requestSubmit();
    }
  });

  const messages = $("messages");
  messages.addEventListener("mouseover", (ev) => {
    const chip = chipFrom(ev.target);
    if (chip && chip !== tipFor) showTip(chip);
  });
  messages.addEventListener("mouseout", (ev) => {
    const chip = chipFrom(ev.target);
    if (chip && !chip.contains(ev.relatedTarget) && chip !== document.activeElement) hideTip();
  });
  messages.addEventListener("focusin", (ev) => {
    const chip = chipFrom(ev.target);
    if (chip) showTip(chip);
  });
  messages.addEventListener("focusout", (ev) => {
    if (chipFrom(ev.target)) hideTip();
  });
  messages.addEventListener("click", (ev) => {
    const chip = chipFrom(ev.target);
    if (!chip || chip.tagName === "A") return;
    ev.preventDefault();
    if (chip.dataset.ref.startsWith("#chk_")) openPanel(chip.dataset.ref, chip);
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key !== "Escape") return;
    if (!$("cite-tip").hidden) hideTip();
    else if (!$("chunk-panel").hidden) closePanel();
    else if ($("sidebar").classList.contains("open")) toggleSidebar(false);
  });
  window.addEventListener("resize", () => tipFor && placeTip(tipFor));
  messages.addEventListener("scroll", () => tipFor && placeTip(tipFor), { passive: true });
}

async function start() {
  wire();
  const token = getToken();
  if (!token) {
    showSignIn();
    return;
  }
  try {
    await enter(token);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      clearToken();
      showSignIn(`Your saved token was refused (401): ${e.message} Sign in again.`);
    } else {
      showSignIn(`Could not reach Quire: ${errorText(e)}`);
      $("token-input").value = token;
    }
  }
}

start();
