// @ts-check
// The svc web UI: the public API only (and the console websocket), a token
// in session storage, views kept current by the API's watch streams (no
// polling). This module wires the page: signing in and out, the namespace,
// the route (#view or #console/VM) and the rendering of the view.
import { call, session } from "./api.js";
import { showConsole, stopConsole } from "./console.js";
import { $, $field, h } from "./dom.js";
import { CALLBACK, finishProvider, showProviders, signInWithToken } from "./signin.js";
import { startWatches, stopWatches } from "./store.js";
import { views } from "./views.js";

let pending = false; // a render is scheduled

/**
 * showError shows e (nothing: clears); a 401 signs the tab out.
 * @param {unknown} e
 */
function showError(e) {
  $("#error").textContent = e ? String(e instanceof Error ? e.message : e) : "";
  if (e && typeof e === "object" && "code" in e && e.code === 401) signOut();
}

/**
 * run does an action, shows its error (or clears the last), and reads the
 * view again.
 * @param {() => Promise<unknown>} fn
 */
async function run(fn) {
  try { await fn(); showError(null); } catch (e) { showError(e); }
  refresh(true);
}

/** @type {import("./views.js").Actions} */
const actions = { run, showError, refresh: (fresh) => { refresh(fresh); } };

/** schedule renders the view once for a burst of events. */
function schedule() {
  if (pending) return;
  pending = true;
  setTimeout(() => { pending = false; refresh(false); }, 0);
}

function signOut() {
  sessionStorage.removeItem("svc-token");
  sessionStorage.removeItem("svc-user");
  session.token = null;
  $field("#token").value = ""; // the token leaves the page too, and what it showed
  $("#view").replaceChildren();
  delete $("#view").dataset.view;
  $("#error").textContent = "";
  stopConsole();
  start();
}

async function fillNamespaces() {
  $field("#namespace").value = session.ns;
  let names = [session.ns];
  try {
    names = (await call("GET", "/api/v1/namespaces")).items.map((/** @type {{name: string}} */ n) => n.name);
  } catch { /* not an admin: type the namespace a token is bound to */ }
  $("#namespaces").replaceChildren(...names.map((n) => h("option", { value: n })));
}

/**
 * refresh renders the view from the lists; fresh reads again the lists no
 * stream keeps (a view opened, an action done).
 * @param {boolean} fresh
 */
async function refresh(fresh) {
  const hash = location.hash.slice(1) || "vms";
  for (const a of document.querySelectorAll("#tabs a")) a.classList.toggle("active", a.getAttribute("href") === "#" + hash);
  if (hash.startsWith("console/")) return;
  const view = views[hash] || views.vms;
  try {
    const content = await view(fresh, actions);
    if ((location.hash.slice(1) || "vms") !== hash) return;
    // A view that is already shown keeps its forms (what the user typed):
    // only its tables are replaced, and only those whose content changed,
    // so that a button under the pointer is not swapped mid-click.
    const shown = $("#view");
    const tables = [content].flat().filter((n) => n instanceof HTMLTableElement);
    const old = shown.querySelectorAll("table");
    if (shown.dataset.view === hash && old.length === tables.length) {
      old.forEach((t, i) => { if (!t.isEqualNode(tables[i])) t.replaceWith(tables[i]); });
    } else {
      shown.replaceChildren(...[content].flat());
      shown.dataset.view = hash;
    }
  } catch (e) {
    $("#view").replaceChildren(); // nothing stale under a refusal
    delete $("#view").dataset.view;
    showError(e);
  }
}

function route() {
  const hash = location.hash.slice(1);
  if (hash.startsWith("console/")) showConsole(decodeURIComponent(hash.slice(8)));
  else { stopConsole(); refresh(true); }
}

function start() {
  stopWatches();
  const signedIn = !!session.token;
  $("#signin").hidden = signedIn;
  $("#app").hidden = !signedIn;
  $("#whoami").textContent = sessionStorage.getItem("svc-user") || "";
  if (!signedIn) { showProviders(); return; }
  fillNamespaces();
  startWatches(schedule, showError);
  route();
}

$("#signin-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  if (await signInWithToken()) start();
});
$("#signout").addEventListener("click", signOut);
$("#namespace").addEventListener("change", () => {
  session.ns = $field("#namespace").value;
  sessionStorage.setItem("svc-ns", session.ns);
  startWatches(schedule, showError);
  route();
});
window.addEventListener("hashchange", route);
if (location.pathname === CALLBACK) {
  finishProvider().catch((e) => { session.token = null; $("#provider-error").textContent = "Sign-in failed: " + e.message; }).finally(start);
} else {
  start();
}
