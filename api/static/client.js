// The HTTP API (api/CONTRACT.md): bearer token, JSON errors, uploads with progress, and
// Server-Sent Events over fetch (EventSource can neither POST nor send headers).

const TOKEN_KEY = "quire.token";

export function getToken() {
  try {
    return localStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

export function setToken(token) {
  localStorage.setItem(TOKEN_KEY, token);
}

export function clearToken() {
  localStorage.removeItem(TOKEN_KEY);
}

/** An API failure: HTTP status, the contract's stable code and its human message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || `Request failed (${status})`);
    this.name = "ApiError";
    this.status = status;
    this.code = code || "error";
  }
}

let onUnauthorized = () => {};

/** Called with the ApiError whenever the server refuses the token (401). */
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

function authHeaders(token = getToken()) {
  return token ? { Authorization: `Bearer ${token}` } : {};
}

function errorFrom(status, body, fallback) {
  const err = body && typeof body === "object" ? body.error : null;
  if (err && typeof err === "object") {
    return new ApiError(status, err.code, err.message || fallback);
  }
  if (body && typeof body.detail === "string") return new ApiError(status, "error", body.detail);
  return new ApiError(status, status === 0 ? "network" : "error", fallback);
}

async function readError(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    /* not JSON */
  }
  return errorFrom(res.status, body, `${res.status} ${res.statusText || "error"}`.trim());
}

/** JSON request to /api...; resolves to the parsed body (null for 204). */
export async function api(path, { method = "GET", body, token, signal } = {}) {
  const headers = { Accept: "application/json", ...authHeaders(token) };
  const init = { method, headers, signal };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    if (e && e.name === "AbortError") throw e;
    throw new ApiError(0, "network", "The server could not be reached.");
  }
  if (!res.ok) {
    const err = await readError(res);
    if (res.status === 401) onUnauthorized(err);
    throw err;
  }
  if (res.status === 204) return null;
  const type = res.headers.get("content-type") || "";
  return type.includes("json") ? res.json() : null;
}

/**
 * Upload a file with progress (fetch has no upload progress, XMLHttpRequest has).
 * Resolves to {status, body, location}; rejects with ApiError.
 */
export function uploadFile(formData, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/documents");
    const headers = authHeaders();
    for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, v);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.responseType = "text";
    xhr.upload.addEventListener("progress", (ev) => {
      if (ev.lengthComputable) onProgress(ev.loaded, ev.total);
    });
    xhr.addEventListener("load", () => {
      let body = null;
      try {
        body = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        /* not JSON */
      }
      if (xhr.status >= 200 && xhr.status < 300) {
        resolve({ status: xhr.status, body, location: xhr.getResponseHeader("Location") });
        return;
      }
      const err = errorFrom(xhr.status, body, `Upload failed (${xhr.status})`);
      if (xhr.status === 401) onUnauthorized(err);
      if (xhr.status === 413 && !body) err.message = "The file is too large.";
      reject(err);
    });
    xhr.addEventListener("error", () =>
      reject(new ApiError(0, "network", "The upload was interrupted (network error)."))
    );
    xhr.addEventListener("abort", () => reject(new ApiError(0, "aborted", "The upload was cancelled.")));
    xhr.send(formData);
  });
}

/**
 * Parse a text/event-stream body. Calls onEvent(name, data) per event, data JSON-decoded
 * when it is JSON. Handles chunks split anywhere, CRLF, comments and multi-line data.
 */
export async function readEventStream(body, onEvent) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const dispatch = (block) => {
    let event = "message";
    const data = [];
    for (const raw of block.split("\n")) {
      const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (!data.length) return;
    const text = data.join("\n");
    let parsed = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* plain text data */
    }
    onEvent(event, parsed);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) !== -1) {
      dispatch(buffer.slice(0, cut));
      buffer = buffer.slice(cut + 2);
    }
  }
  buffer += decoder.decode();
  if (buffer.trim()) dispatch(buffer);
}

/** POST a question and stream the answer's events (token, citations, route, usage, done, error). */
export async function askStream(chatId, payload, onEvent, signal) {
  const path = chatId ? `/api/chats/${encodeURIComponent(chatId)}/ask/stream` : "/api/ask/stream";
  let res;
  try {
    res = await fetch(path, {
      method: "POST",
      headers: {
        ...authHeaders(),
        Accept: "text/event-stream",
        "Content-Type": "application/json",
      },
      body: JSON.stringify(payload),
      signal,
    });
  } catch (e) {
    if (e && e.name === "AbortError") throw e;
    throw new ApiError(0, "network", "The server could not be reached.");
  }
  if (!res.ok) {
    const err = await readError(res);
    if (res.status === 401) onUnauthorized(err);
    throw err;
  }
  if (!res.body) throw new ApiError(res.status, "no_stream", "The answer could not be streamed.");
  await readEventStream(res.body, onEvent);
}

const chunkCache = new Map();

/** GET /api/chunks/{ref} (a chunk uuid or citation id, '#' URL-encoded), cached per ref. */
export function getChunk(ref) {
  const key = ref.startsWith("#") ? ref : ref.startsWith("chk_") ? `#${ref}` : ref;
  if (!chunkCache.has(key)) {
    const promise = api(`/api/chunks/${encodeURIComponent(key)}`).then((r) => r.chunk);
    promise.catch(() => chunkCache.delete(key));
    chunkCache.set(key, promise);
  }
  return chunkCache.get(key);
}

export function clearChunkCache() {
  chunkCache.clear();
}
