// @ts-check
// The views: each renders its lists as the page shows them.
import { call, nsPath, session } from "./api.js";
import { openConsole } from "./console.js";
import { deployForm } from "./deploy.js";
import { bar, copyable, h, table } from "./dom.js";
import { list } from "./store.js";

/**
 * What a view's buttons do: run an action (its error shown, the view
 * read again after), show an error, read the view again.
 * @typedef {object} Actions
 * @property {(fn: () => Promise<unknown>) => Promise<void>} run
 * @property {(e: unknown) => void} showError
 * @property {(fresh: boolean) => void} refresh
 */

/**
 * A view: its content, from lists read again when fresh.
 * @typedef {(fresh: boolean, act: Actions) => Promise<Node|Node[]>} View
 */

/** @type {Record<string, View>} */
export const views = {
  async nodes() {
    const nodes = await list("nodes");
    return table(["Node", "Phase", "Scheduling", "CPU used", "Memory", "GPU", "Tags"], nodes.map((n) => h("tr", { "data-node": n.name },
      h("td", {}, n.name), h("td", {}, n.phase), h("td", { "data-scheduling": n.schedulable ? "on" : "cordoned" }, n.schedulable ? "on" : "cordoned"),
      h("td", {}, bar(n.availableCpu, n.allocatableCpu)),
      h("td", {}, `${n.availableMemory} free of ${n.allocatableMemory}`), h("td", {}, `${n.availableGpu}/${n.allocatableGpu}`), h("td", {}, (n.svcTags || []).join(", ")))));
  },
  async vms(fresh, { run }) {
    const [vms, images, configs, isos] = await Promise.all([list("vms"), list("images"), list("vmconfigs", fresh), list("isos", fresh)]);
    /**
     * @param {import("./store.js").Item} vm
     * @param {string} action
     */
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
    return [deployForm({ images, configs, isos }, run), table(["VM", "Status", "Node", "Image", "Connect", ""], rows)];
  },
  async images(fresh, act) { return artifactView("images", "image", fresh, act); },
  async isos(fresh, act) { return artifactView("isos", "iso", fresh, act); },
  async vmconfigs(fresh, { run }) {
    const cfgs = await list("vmconfigs", fresh);
    // Where the booted template is ready, and each node's hot pool: its
    // ready guests of the config's count (fewer: the node is filling it).
    /** @param {import("./store.js").Item} c */
    const warm = (c) => (!c.warm ? "-" : (c.warmNodes || []).join(", ") || "none yet");
    /** @param {import("./store.js").Item} c */
    const hot = (c) => (!c.hot ? "-" : Object.keys(c.hotNodes || {}).sort()
      .map((n) => `${n}: ${c.hotNodes[n]}/${c.hot} ready${c.hotNodes[n] < c.hot ? ", filling" : ""}`).join("; ") || `none yet (of ${c.hot})`);
    return table(["Config", "Image", "CPU", "Memory", "Tag", "Warm on", "Hot pool", ""], cfgs.map((c) => h("tr", { "data-config": c.name },
      h("td", {}, c.name), h("td", {}, c.image), h("td", {}, c.cpu), h("td", {}, c.memory), h("td", {}, c.tag),
      h("td", {}, warm(c)), h("td", {}, hot(c)),
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
    /** @param {number} [x] */
    const secs = (x) => (x || 0).toFixed(2) + " s";
    return table(["Pool", "VM config", "Labels", "VMs", "Queued", "Running", "Done", "Start p50 / p95", "Waiting"], pools.map((p) => h("tr", { "data-pool": p.name },
      h("td", {}, p.name), h("td", {}, p.vmConfig), h("td", {}, p.labels.join(", ")), h("td", { "data-vms": p.status.vms }, `${p.status.vms} / ${p.max}`),
      h("td", {}, p.status.queued), h("td", {}, p.status.starting + p.status.running), h("td", {}, p.status.done),
      h("td", {}, secs(p.status.startP50Seconds) + " / " + secs(p.status.startP95Seconds)), h("td", {}, p.status.waiting || ""))));
  },
};

/**
 * artifactView lists images or ISOs, with an upload form (its progress shown).
 * @param {string} kind "images" or "isos"
 * @param {string} field the upload's form field: "image" or "iso"
 * @param {boolean} fresh
 * @param {Actions} act
 */
async function artifactView(kind, field, fresh, { run, showError, refresh }) {
  const items = await list(kind, fresh);
  const progress = /** @type {HTMLProgressElement} */ (h("progress", { max: 1, value: 0, hidden: true }));
  const file = h("input", { type: "file", name: field });
  const upload = /** @type {HTMLFormElement} */ (h("form", { class: "inline" }, h("label", {}, "Name", h("input", { name: "name", required: true })), file, h("button", { type: "submit" }, "Upload"), progress));
  upload.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const fd = new FormData(upload);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", nsPath("upload", field));
    xhr.setRequestHeader("Authorization", "Bearer " + session.token);
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
