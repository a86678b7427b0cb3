// The svc web UI: the public API only (and the console websocket), a token
// in session storage, views kept current by the API's watch streams (no
// polling): one stream per watched list, the rest read when a view opens
// or after an action.
import RFB from "./novnc/core/rfb.js";

const WATCHED = ["vms", "nodes", "images", "jobs"];
const $ = (sel) => document.querySelector(sel);
const h = (tag, attrs = {}, ...kids) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) el.append(kid instanceof Node ? kid : document.createTextNode(kid ?? ""));
  return el;
};

const state = {
  token: sessionStorage.getItem("svc-token"), ns: sessionStorage.getItem("svc-ns") || "svc-default", rfb: null,
  watches: null, // the AbortController of the streams
  cache: {}, // watched lists, by kind, as the streams left them
  extra: {}, // lists without a stream (vmconfigs, isos), read when needed
  waiting: {}, // kind -> resolvers of views waiting for a first list
  pending: false, // a render is scheduled
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// follow keeps state.cache[kind] current from the API's watch of the list,
// resuming from the last version it saw when the stream ends (a new list
// when the version is too old), until signal aborts.
async function follow(kind, signal) {
  let rv = "", backoff = 500;
  const items = new Map();
  while (!signal.aborted) {
    try {
      const res = await fetch(nsPath(kind) + "?watch=true" + (rv ? "&resourceVersion=" + rv : ""), { headers: { Authorization: "Bearer " + state.token }, signal });
      if (res.status === 410) { rv = ""; continue; }
      if (!res.ok) {
        const d = await res.json().catch(() => ({}));
        const err = new Error(d.message || res.statusText);
        err.code = res.status;
        throw err;
      }
      if (!rv) items.clear(); // a list comes first
      backoff = 500;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (!line) continue;
          const ev = JSON.parse(line);
          if (ev.type === "ERROR") { rv = ""; throw new Error(ev.object ? ev.object.message : "the watch ended"); }
          rv = ev.resourceVersion;
          if (ev.type === "ADDED" || ev.type === "MODIFIED") items.set(ev.object.name, ev.object);
          else if (ev.type === "DELETED") items.delete(ev.object.name);
        }
        state.cache[kind] = [...items.values()].sort((a, b) => a.name.localeCompare(b.name));
        for (const resolve of state.waiting[kind] || []) resolve();
        delete state.waiting[kind];
        schedule();
      }
    } catch (e) {
      if (signal.aborted) return;
      if (e.code === 401 || e.code === 403) { showError(e); return; }
    }
    await sleep(backoff);
    backoff = Math.min(2 * backoff, 10000);
  }
}

function startWatches() {
  stopWatches();
  state.watches = new AbortController();
  for (const kind of WATCHED) follow(kind, state.watches.signal);
}

function stopWatches() {
  if (state.watches) state.watches.abort();
  state.watches = null;
  state.cache = {};
  state.extra = {};
}

// list returns a view's list: a watched one as its stream has it (waiting
// for the first), another read through the API when fresh is asked or it
// was never read.
async function list(kind, fresh) {
  if (WATCHED.includes(kind)) {
    // A namespace change empties the cache while a view waits: wait again.
    while (!state.cache[kind]) await new Promise((resolve) => (state.waiting[kind] = state.waiting[kind] || []).push(resolve));
    return state.cache[kind];
  }
  if (fresh || !state.extra[kind]) {
    // Read into a local first: a namespace change replaces state.extra
    // while the call is out, and the list belongs to the view that asked.
    const items = (await call("GET", nsPath(kind))).items;
    state.extra[kind] = items;
    return items;
  }
  return state.extra[kind];
}

// schedule renders the view once for a burst of events.
function schedule() {
  if (state.pending) return;
  state.pending = true;
  setTimeout(() => { state.pending = false; refresh(false); }, 0);
}

async function call(method, path, body, headers = {}) {
  const opts = { method, headers: { Authorization: "Bearer " + state.token, Accept: "application/json", ...headers } };
  if (body !== undefined && !(body instanceof FormData) && !(body instanceof Blob)) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  } else if (body !== undefined) {
    opts.body = body;
  }
  const res = await fetch(path, opts);
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (!res.ok) {
    const err = new Error((data && data.message) || res.statusText);
    err.code = res.status;
    throw err;
  }
  return data;
}
const nsPath = (...parts) => "/api/v1/namespaces/" + encodeURIComponent(state.ns) + "/" + parts.map(encodeURIComponent).join("/");
const showError = (e) => { $("#error").textContent = e ? String(e.message || e) : ""; if (e && e.code === 401) signOut(); };

function signOut() {
  sessionStorage.removeItem("svc-token");
  sessionStorage.removeItem("svc-user");
  state.token = null;
  $("#token").value = ""; // the token leaves the page too, and what it showed
  $("#view").replaceChildren();
  delete $("#view").dataset.view;
  $("#error").textContent = "";
  stopConsole();
  start();
}

async function signIn(ev) {
  ev.preventDefault();
  state.token = $("#token").value.trim().replace(/^Bearer\s+/i, "");
  try {
    await call("GET", "/api/v1/namespaces/" + encodeURIComponent(state.ns) + "/vms");
  } catch (e) {
    if (e.code === 401) { $("#signin-error").textContent = "This token is not valid: " + e.message; state.token = null; return; }
  }
  sessionStorage.setItem("svc-token", state.token);
  $("#token").value = "";
  start();
}

// Sign-in through an OpenID Connect provider: the provider sends the
// browser back to /ui/callback with the code and the state the cluster
// sealed; the state must be the one this tab started (kept in session
// storage), so another site cannot sign the tab in as somebody else.
const CALLBACK = "/ui/callback";

async function showProviders() {
  let items = [];
  try {
    items = (await call("GET", "/api/v1/auth/signin")).items;
  } catch { /* an older cluster: paste a token */ }
  $("#providers").replaceChildren(...items.map((p) =>
    h("button", { type: "button", class: "provider", "data-provider": p.name, onclick: () => startProvider(p.name) }, "Sign in with " + p.name)));
  if (items.length) $("#providers").append(h("p", { class: "hint" }, "or paste a token:"));
}

async function startProvider(name) {
  $("#provider-error").textContent = "";
  try {
    const st = await call("POST", "/api/v1/auth/oidc/" + encodeURIComponent(name) + "/start", { redirectUri: location.origin + CALLBACK });
    sessionStorage.setItem("svc-signin", JSON.stringify({ provider: name, state: st.state }));
    location.assign(st.authUrl);
  } catch (e) {
    $("#provider-error").textContent = "Sign-in with " + name + " failed: " + e.message;
  }
}

// finishProvider handles the provider's answer, once, and leaves the
// address bar without the code.
async function finishProvider() {
  const q = new URLSearchParams(location.search);
  const started = JSON.parse(sessionStorage.getItem("svc-signin") || "null");
  sessionStorage.removeItem("svc-signin");
  history.replaceState(null, "", "/ui");
  if (q.get("error")) throw new Error("the provider refused: " + q.get("error") + " " + (q.get("error_description") || ""));
  if (!started || started.state !== q.get("state")) throw new Error("this answer is not of a sign-in this tab started; sign in again");
  const got = await call("POST", "/api/v1/auth/oidc/" + encodeURIComponent(started.provider) + "/callback", { state: q.get("state"), code: q.get("code") });
  state.token = got.token;
  sessionStorage.setItem("svc-token", got.token);
  sessionStorage.setItem("svc-user", got.user + " (" + got.role + ")");
}

async function fillNamespaces() {
  $("#namespace").value = state.ns;
  let names = [state.ns];
  try {
    names = (await call("GET", "/api/v1/namespaces")).items.map((n) => n.name);
  } catch { /* not an admin: type the namespace a token is bound to */ }
  $("#namespaces").replaceChildren(...names.map((n) => h("option", { value: n })));
}

const bar = (free, total) => {
  const fill = h("span");
  fill.style.width = `${total ? Math.round(100 * (total - free) / total) : 0}%`; // CSSOM: allowed by the page's CSP
  return h("span", {}, h("span", { class: "bar" }, fill), `${total - free} / ${total}`);
};
const table = (head, rows) => h("table", {}, h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))), h("tbody", {}, rows));
const copyable = (text) => h("code", { class: "copy", title: "click to copy", onclick: () => navigator.clipboard && navigator.clipboard.writeText(text) }, text);

const views = {
  async nodes() {
    const nodes = await list("nodes");
    return table(["Node", "Phase", "Scheduling", "CPU used", "Memory", "GPU", "Tags"], nodes.map((n) => h("tr", { "data-node": n.name },
      h("td", {}, n.name), h("td", {}, n.phase), h("td", { "data-scheduling": n.schedulable ? "on" : "cordoned" }, n.schedulable ? "on" : "cordoned"),
      h("td", {}, bar(n.availableCpu, n.allocatableCpu)),
      h("td", {}, `${n.availableMemory} free of ${n.allocatableMemory}`), h("td", {}, `${n.availableGpu}/${n.allocatableGpu}`), h("td", {}, (n.svcTags || []).join(", ")))));
  },
  async vms(fresh) {
    const [vms, images, configs] = await Promise.all([list("vms"), list("images"), list("vmconfigs", fresh)]);
    const act = (vm, action) => h("button", { type: "button", "data-action": action, onclick: () => run(() => call("POST", nsPath("vms", vm.name, "exec"), { action })) }, action);
    const rows = vms.map((vm) => h("tr", { "data-vm": vm.name },
      h("td", {}, vm.name), h("td", { class: "status-" + vm.status, "data-status": vm.status }, vm.status), h("td", {}, vm.node), h("td", {}, vm.image),
      h("td", {}, copyable(`ssh -p ${vm.ssh} admin@${vm.ip}`), " ", copyable(`vnc://${vm.ip}:${vm.vnc}`)),
      h("td", {}, ["start", "stop", "suspend", "resume", "revert"].map((a) => act(vm, a)),
        h("button", { type: "button", "data-action": "commit", onclick: () => run(() => call("POST", nsPath("vms", vm.name, "commit"), {})) }, "commit"),
        h("button", { type: "button", "data-action": "save", onclick: () => {
          const imageName = prompt(`Save ${vm.name}'s disk as a new image named:`);
          if (imageName) run(() => call("POST", nsPath("vms", vm.name, "save"), { imageName }));
        } }, "save"),
        h("button", { type: "button", "data-action": "console", onclick: () => openConsole(vm.name) }, "console"),
        h("button", { type: "button", "data-action": "delete", onclick: () => confirm(`Delete ${vm.name}?`) && run(() => call("DELETE", nsPath("vms", vm.name))) }, "delete"))));
    return [deployForm(images, configs), table(["VM", "Status", "Node", "Image", "Connect", ""], rows)];
  },
  async images(fresh) { return artifactView("images", "image", fresh); },
  async isos(fresh) { return artifactView("isos", "iso", fresh); },
  async vmconfigs(fresh) {
    const cfgs = await list("vmconfigs", fresh);
    return table(["Config", "Image", "CPU", "Memory", "Tag", ""], cfgs.map((c) => h("tr", {},
      h("td", {}, c.name), h("td", {}, c.image), h("td", {}, c.cpu), h("td", {}, c.memory), h("td", {}, c.tag),
      h("td", {}, h("button", { type: "button", onclick: () => run(() => call("DELETE", nsPath("vmconfigs", c.name))) }, "delete")))));
  },
  async jobs() {
    const jobs = await list("jobs");
    return table(["Job", "Type", "State", "Progress", "Reference", "Message"], jobs.map((j) => h("tr", {},
      h("td", {}, j.name), h("td", {}, j.type), h("td", {}, j.state),
      h("td", {}, h("progress", { max: j.bytesTotal || 1, value: j.bytesDone })), h("td", {}, j.reference), h("td", {}, j.message))));
  },
  // Runner pools: CI jobs' VMs, read when the view opens (and after an action).
  async runnerpools(fresh) {
    const pools = await list("runnerpools", fresh);
    const secs = (x) => (x || 0).toFixed(2) + " s";
    return table(["Pool", "VM config", "Labels", "VMs", "Queued", "Running", "Done", "Start p50 / p95", "Waiting"], pools.map((p) => h("tr", { "data-pool": p.name },
      h("td", {}, p.name), h("td", {}, p.vmConfig), h("td", {}, p.labels.join(", ")), h("td", { "data-vms": p.status.vms }, `${p.status.vms} / ${p.max}`),
      h("td", {}, p.status.queued), h("td", {}, p.status.starting + p.status.running), h("td", {}, p.status.done),
      h("td", {}, secs(p.status.startP50Seconds) + " / " + secs(p.status.startP95Seconds)), h("td", {}, p.status.waiting || ""))));
  },
};

function deployForm(images, configs) {
  const f = h("form", { class: "inline", id: "deploy-form" },
    h("label", {}, "Name", h("input", { name: "name", placeholder: "generated" })),
    h("label", {}, "Image", h("select", { name: "image" }, h("option", { value: "" }, "—"), images.map((i) => h("option", { value: i.name }, i.name)))),
    h("label", {}, "or a registry reference", h("input", { name: "reference", placeholder: "registry/path:tag" })),
    h("label", {}, "VM config", h("select", { name: "vmConfig" }, h("option", { value: "" }, "—"), configs.map((c) => h("option", { value: c.name }, c.name)))),
    h("label", {}, "CPU", h("input", { name: "cpu", type: "number", min: 1, max: 256 })),
    h("label", {}, "Memory (GiB)", h("input", { name: "memory", type: "number", min: 0, step: 0.25 })),
    h("label", {}, "Tag", h("input", { name: "tag" })),
    h("label", {}, "Node", h("input", { name: "node", placeholder: "any" })),
    h("label", { title: "the namespace's shared folder of the node, at /shared in mini-linux" }, h("input", { name: "sharedStorage", type: "checkbox" }), "Shared storage"),
    h("button", { type: "submit" }, "Deploy"));
  f.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const d = Object.fromEntries(new FormData(f));
    const body = { name: d.name || undefined, image: d.reference || d.image || undefined, vmConfig: d.vmConfig || undefined, tag: d.tag || undefined, node: d.node || undefined };
    if (d.cpu) body.cpu = Number(d.cpu);
    if (d.memory) body.memory = Number(d.memory);
    if (d.sharedStorage) body.sharedStorage = true;
    const btn = f.querySelector("button");
    btn.disabled = true;
    btn.textContent = "Deploying…";
    run(() => call("POST", nsPath("vms"), body)).finally(() => { btn.disabled = false; btn.textContent = "Deploy"; });
  });
  return f;
}

async function artifactView(kind, field, fresh) {
  const items = await list(kind, fresh);
  const progress = h("progress", { max: 1, value: 0, hidden: true });
  const file = h("input", { type: "file", name: field });
  const upload = h("form", { class: "inline" }, h("label", {}, "Name", h("input", { name: "name", required: true })), file, h("button", { type: "submit" }, "Upload"), progress);
  upload.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const fd = new FormData(upload);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", nsPath("upload", field));
    xhr.setRequestHeader("Authorization", "Bearer " + state.token);
    progress.hidden = false;
    xhr.upload.onprogress = (e) => { progress.max = e.total; progress.value = e.loaded; };
    xhr.onload = () => { progress.hidden = true; showError(xhr.status >= 300 ? JSON.parse(xhr.responseText || "{}").message || xhr.statusText : null); refresh(true); };
    xhr.onerror = () => showError("upload failed");
    xhr.send(fd);
  });
  return [upload, table(["Name", "State", "Size", "Used", "Source", "Description", ""], items.map((i) => h("tr", {},
    h("td", {}, i.name), h("td", {}, i.state), h("td", {}, i.size), h("td", {}, i.spaceUsed), h("td", {}, `${i.sourceType} ${i.source || ""}`), h("td", {}, i.description),
    h("td", {}, h("button", { type: "button", onclick: () => confirm(`Delete ${i.name}?`) && run(() => call("DELETE", nsPath(kind, i.name))) }, "delete")))))];
}

async function run(fn) {
  try { await fn(); showError(null); } catch (e) { showError(e); }
  refresh(true);
}

function tokenProtocol() {
  const b64 = btoa(unescape(encodeURIComponent(state.token))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return "base64url.bearer.authorization.svc." + b64;
}

function openConsole(vm) {
  location.hash = "console/" + encodeURIComponent(vm);
}

function stopConsole() {
  if (state.rfb) { state.rfb.disconnect(); state.rfb = null; }
}

function showConsole(vm) {
  stopConsole();
  const target = h("div", { id: "console" });
  const status = h("p", { id: "console-status" }, "connecting…");
  $("#view").replaceChildren(h("h2", {}, "Console of " + vm), status, target);
  $("#view").dataset.view = "console";
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + nsPath("vms", vm, "console");
  const rfb = new RFB(target, url, { wsProtocols: ["binary", tokenProtocol()] });
  rfb.scaleViewport = true;
  rfb.addEventListener("connect", () => { status.textContent = "connected"; rfb.focus(); });
  rfb.addEventListener("disconnect", (e) => { status.textContent = e.detail.clean ? "closed" : "the console was refused or lost"; });
  state.rfb = rfb;
}

// refresh renders the view from the lists; fresh reads again the lists no
// stream keeps (a view opened, an action done).
async function refresh(fresh) {
  const hash = location.hash.slice(1) || "vms";
  for (const a of document.querySelectorAll("#tabs a")) a.classList.toggle("active", a.getAttribute("href") === "#" + hash);
  if (hash.startsWith("console/")) return;
  const view = views[hash] || views.vms;
  try {
    const content = await view(fresh);
    if ((location.hash.slice(1) || "vms") !== hash) return;
    // A view that is already shown keeps its forms (what the user typed):
    // only its tables are replaced, and only those whose content changed,
    // so that a button under the pointer is not swapped mid-click.
    const shown = $("#view");
    const tables = [content].flat().filter((n) => n.tagName === "TABLE");
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
  const signedIn = !!state.token;
  $("#signin").hidden = signedIn;
  $("#app").hidden = !signedIn;
  $("#whoami").textContent = sessionStorage.getItem("svc-user") || "";
  if (!signedIn) { showProviders(); return; }
  fillNamespaces();
  startWatches();
  route();
}

$("#signin-form").addEventListener("submit", signIn);
$("#signout").addEventListener("click", signOut);
$("#namespace").addEventListener("change", (ev) => { state.ns = ev.target.value; sessionStorage.setItem("svc-ns", state.ns); startWatches(); route(); });
window.addEventListener("hashchange", route);
if (location.pathname === CALLBACK) {
  finishProvider().catch((e) => { state.token = null; $("#provider-error").textContent = "Sign-in failed: " + e.message; }).finally(start);
} else {
  start();
}
