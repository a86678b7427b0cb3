// @ts-check
// A VM's screen in the page, through the API's console websocket (noVNC).
import RFB from "./novnc/core/rfb.js";
import { nsPath, session } from "./api.js";
import { $, h } from "./dom.js";

/** @type {any} the open console (noVNC's RFB), null when none */
let open = null;

/**
 * tokenProtocol carries the token in the websocket's protocols (a browser
 * cannot set headers on a websocket).
 */
function tokenProtocol() {
  const b64 = btoa(unescape(encodeURIComponent(session.token || ""))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return "base64url.bearer.authorization.svc." + b64;
}

/**
 * openConsole goes to the console view of vm.
 * @param {string} vm
 */
export function openConsole(vm) {
  location.hash = "console/" + encodeURIComponent(vm);
}

/** stopConsole closes the console, if one is open. */
export function stopConsole() {
  if (open) { open.disconnect(); open = null; }
}

/**
 * showConsole shows vm's screen in the view.
 * @param {string} vm
 */
export function showConsole(vm) {
  stopConsole();
  const target = h("div", { id: "console" });
  const status = h("p", { id: "console-status" }, "connecting…");
  $("#view").replaceChildren(h("h2", {}, "Console of " + vm), status, target);
  $("#view").dataset.view = "console";
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + nsPath("vms", vm, "console");
  const rfb = new RFB(target, url, { wsProtocols: ["binary", tokenProtocol()] });
  rfb.scaleViewport = true;
  rfb.addEventListener("connect", () => { status.textContent = "connected"; rfb.focus(); });
  rfb.addEventListener("disconnect", (/** @type {CustomEvent} */ e) => { status.textContent = e.detail.clean ? "closed" : "the console was refused or lost"; });
  open = rfb;
}
