// @ts-check
// The lists the views show: the watched ones kept current by the API's
// watch streams (one stream per list, no polling), the others read when a
// view opens or after an action.
import { APIError, call, nsPath, watch } from "./api.js";

/**
 * An item of a list: a record of the API, named.
 * @typedef {{name: string} & Record<string, any>} Item
 */

/** The lists with a watch stream. */
export const WATCHED = ["vms", "nodes", "images", "jobs"];

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const lists = {
  /** @type {AbortController|null} the streams' */
  watches: null,
  /** @type {Record<string, Item[]>} watched lists, as the streams left them */
  cache: {},
  /** @type {Record<string, Item[]>} lists without a stream, read when needed */
  extra: {},
  /** @type {Record<string, Array<() => void>>} views waiting for a first list */
  waiting: {},
};

/**
 * follow keeps the cache of kind current from the API's watch of the list,
 * resuming from the last version it saw when the stream ends (a new list
 * when the version is too old), until signal aborts.
 * @param {string} kind
 * @param {AbortSignal} signal
 * @param {() => void} changed called after each change
 * @param {(e: APIError) => void} refused called when the token may not watch (the stream ends)
 */
async function follow(kind, signal, changed, refused) {
  let rv = "", backoff = 500;
  /** @type {Map<string, Item>} */
  const items = new Map();
  while (!signal.aborted) {
    try {
      if (!rv) items.clear(); // a list comes first
      await watch(nsPath(kind), rv, signal, (events) => {
        backoff = 500;
        for (const ev of events) {
          if (ev.type === "ERROR") { rv = ""; throw new Error(ev.object ? ev.object.message : "the watch ended"); }
          rv = ev.resourceVersion;
          if (ev.type === "ADDED" || ev.type === "MODIFIED") items.set(ev.object.name, ev.object);
          else if (ev.type === "DELETED") items.delete(ev.object.name);
        }
        lists.cache[kind] = [...items.values()].sort((a, b) => a.name.localeCompare(b.name));
        for (const resolve of lists.waiting[kind] || []) resolve();
        delete lists.waiting[kind];
        changed();
      });
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof APIError && e.code === 410) { rv = ""; continue; }
      if (e instanceof APIError && (e.code === 401 || e.code === 403)) { refused(e); return; }
    }
    await sleep(backoff);
    backoff = Math.min(2 * backoff, 10000);
  }
}

/**
 * startWatches follows every watched list of the tab's namespace, anew.
 * @param {() => void} changed
 * @param {(e: APIError) => void} refused
 */
export function startWatches(changed, refused) {
  stopWatches();
  const ctl = new AbortController();
  lists.watches = ctl;
  for (const kind of WATCHED) follow(kind, ctl.signal, changed, refused);
}

/** stopWatches ends the streams and forgets every list. */
export function stopWatches() {
  if (lists.watches) lists.watches.abort();
  lists.watches = null;
  lists.cache = {};
  lists.extra = {};
}

/**
 * list returns a view's list: a watched one as its stream has it (waiting
 * for the first), another read through the API when fresh is asked or it
 * was never read.
 * @param {string} kind
 * @param {boolean} [fresh]
 * @returns {Promise<Item[]>}
 */
export async function list(kind, fresh) {
  if (WATCHED.includes(kind)) {
    // A namespace change empties the cache while a view waits: wait again.
    while (!lists.cache[kind]) await new Promise((resolve) => (lists.waiting[kind] = lists.waiting[kind] || []).push(() => resolve(undefined)));
    return lists.cache[kind];
  }
  if (fresh || !lists.extra[kind]) {
    // Read into a local first: a namespace change replaces lists.extra
    // while the call is out, and the list belongs to the view that asked.
    /** @type {Item[]} */
    const items = (await call("GET", nsPath(kind))).items;
    lists.extra[kind] = items;
    return items;
  }
  return lists.extra[kind];
}
