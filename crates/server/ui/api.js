// The server's JSON API, with the bearer token when the server asks for one. The token is kept
// in sessionStorage (this tab only) and asked for again if the server refuses it.

const TOKEN_KEY = "ckeep-token";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let asking = null;

/** Shows the token dialog once, however many requests are waiting for it. */
function askForToken() {
  if (!asking) {
    asking = new Promise((resolve) => {
      const dialog = document.getElementById("token-dialog");
      const input = document.getElementById("token-input");
      input.value = "";
      dialog.addEventListener("close", () => {
        sessionStorage.setItem(TOKEN_KEY, input.value.trim());
        asking = null;
        resolve();
      }, { once: true });
      dialog.showModal();
      input.focus();
    });
  }
  return asking;
}

/** `method path` with an optional JSON body; resolves to the parsed answer. */
export async function api(method, path, body) {
  for (let attempt = 0; attempt < 3; attempt++) {
    const headers = { Accept: "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let res;
    try {
      res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (e) {
      throw new ApiError(0, "network", `the server did not answer (${e.message})`);
    }
    if (res.status === 401) {
      await askForToken();
      continue;
    }
    const text = await res.text();
    let value;
    try {
      value = text ? JSON.parse(text) : null;
    } catch {
      throw new ApiError(res.status, "bad_response", `the server answered ${res.status} with something that is not JSON`);
    }
    if (!res.ok) {
      const err = value && value.error ? value.error : {};
      throw new ApiError(res.status, err.code || "error", err.message || `HTTP ${res.status}`);
    }
    return value;
  }
  throw new ApiError(401, "unauthorized", "the server refused the token");
}

/**
 * POSTs `body` and reads the answer as server-sent events, calling `onEvent(name, data)` for
 * each (data parsed as JSON) as it arrives. An answer that is not a stream (an error) is thrown.
 */
export async function stream(path, body, onEvent) {
  for (let attempt = 0; attempt < 3; attempt++) {
    const headers = { Accept: "text/event-stream", "Content-Type": "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    let res;
    try {
      res = await fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
    } catch (e) {
      throw new ApiError(0, "network", `the server did not answer (${e.message})`);
    }
    if (res.status === 401) {
      await askForToken();
      continue;
    }
    if (!res.ok) {
      let err = {};
      try { err = (await res.json()).error || {}; } catch { /* not JSON */ }
      throw new ApiError(res.status, err.code || "error", err.message || `HTTP ${res.status}`);
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) onEvent(name, JSON.parse(data.join("\n")));
      }
    }
    return;
  }
  throw new ApiError(401, "unauthorized", "the server refused the token");
}

export const get = (path) => api("GET", path);
export const post = (path, body) => api("POST", path, body);

/** A stored document with its whole text. */
export const fetchDocument = (id) => get(`/documents/${encodeURIComponent(id)}`);

/** A stored document's chunks (spans, heading paths, text). */
export const fetchChunks = (id) => get(`/documents/${encodeURIComponent(id)}?chunks=true`);
