// @ts-check
// Transport: the public API's calls and watch streams, with the tab's
// token (kept in session storage) and namespace.

/**
 * An event of a watch stream.
 * @typedef {object} WatchEvent
 * @property {"ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK"|"ERROR"} type
 * @property {string} resourceVersion
 * @property {any} object
 */

/** The tab's session: its token (null: signed out) and namespace. */
export const session = {
  /** @type {string|null} */
  token: sessionStorage.getItem("svc-token"),
  ns: sessionStorage.getItem("svc-ns") || "svc-default",
};

/** A refusal by the API: its Status message and HTTP code. */
export class APIError extends Error {
  /**
   * @param {string} message
   * @param {number} code
   */
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

/**
 * call sends one request and returns the decoded answer (null when empty).
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body] JSON unless FormData or a Blob
 * @param {Record<string, string>} [headers]
 * @returns {Promise<any>}
 */
export async function call(method, path, body, headers = {}) {
  /** @type {RequestInit & {headers: Record<string, string>}} */
  const opts = { method, headers: { Authorization: "Bearer " + session.token, Accept: "application/json", ...headers } };
  if (body instanceof FormData || body instanceof Blob) {
    opts.body = body;
  } else if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(path, opts);
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (!res.ok) throw new APIError((data && data.message) || res.statusText, res.status);
  return data;
}

/**
 * nsPath is the API path of parts in the tab's namespace.
 * @param {...string} parts
 */
export const nsPath = (...parts) => "/api/v1/namespaces/" + encodeURIComponent(session.ns) + "/" + parts.map(encodeURIComponent).join("/");

/**
 * watch opens the watch of the list at path from version rv ("": the list
 * first) and hands onEvents the events of each chunk received, until the
 * stream ends or signal aborts. A refusal throws an APIError (410: the
 * version is too old).
 * @param {string} path
 * @param {string} rv
 * @param {AbortSignal} signal
 * @param {(events: WatchEvent[]) => void} onEvents
 */
export async function watch(path, rv, signal, onEvents) {
  const res = await fetch(path + "?watch=true" + (rv ? "&resourceVersion=" + rv : ""), { headers: { Authorization: "Bearer " + session.token }, signal });
  if (!res.ok) {
    const d = await res.json().catch(() => ({}));
    throw new APIError(d.message || res.statusText, res.status);
  }
  if (!res.body) throw new Error("the watch answered without a body");
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    /** @type {WatchEvent[]} */
    const events = [];
    for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line) events.push(JSON.parse(line));
    }
    onEvents(events);
  }
}
