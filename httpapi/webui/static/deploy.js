// @ts-check
// The deploy form: every field of a deploy request a user sets (API.md,
// "Deploy"); the less common ones under "More".
import { call, nsPath } from "./api.js";
import { h } from "./dom.js";

/** @typedef {import("./store.js").Item} Item */

/**
 * metadata reads "key=value" lines (blank lines skipped).
 * @param {string} text
 * @returns {Record<string, string>|undefined}
 */
export function metadata(text) {
  /** @type {Record<string, string>} */
  const out = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    const i = line.indexOf("=");
    if (i <= 0) throw new Error(`custom metadata: "${line}" is not key=value`);
    out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return Object.keys(out).length ? out : undefined;
}

/**
 * request is the deploy request of the form's values; empty fields are left
 * out, so that the VM config's or the cluster's defaults apply.
 * @param {Record<string, string>} d the form's values (checkboxes present when ticked)
 * @returns {Record<string, unknown>}
 */
export function request(d) {
  /** @type {Record<string, unknown>} */
  const body = {};
  const text = ["name", "vmConfig", "tag", "node", "scheduler", "iso", "reservedPorts", "ttl"];
  for (const k of text) if (d[k]) body[k] = d[k];
  if (d.reference || d.image) body.image = d.reference || d.image;
  for (const k of ["cpu", "memory", "timeout", "displayWidth", "displayHeight", "displayDpi"]) if (d[k]) body[k] = Number(d[k]);
  for (const k of ["tagRequired", "gpuPassthrough", "sharedStorage", "netBoost", "legacyIO"]) if (d[k]) body[k] = true;
  if (d.customMetadata) body.customMetadata = metadata(d.customMetadata);
  return body;
}

/**
 * @param {string} label
 * @param {string} name
 * @param {string} [title]
 */
const check = (label, name, title) => h("label", { title }, h("input", { name, type: "checkbox" }), label);

/**
 * @param {string} name
 * @param {Item[]} items
 */
const choose = (name, items) => h("select", { name }, h("option", { value: "" }, "—"), items.map((i) => h("option", { value: i.name }, i.name)));

/**
 * deployForm is the form; run sends the request and shows its outcome.
 * @param {{images: Item[], configs: Item[], isos: Item[]}} lists
 * @param {(fn: () => Promise<unknown>) => Promise<void>} run
 */
export function deployForm({ images, configs, isos }, run) {
  const error = h("span", { class: "error", id: "deploy-error" });
  const submit = /** @type {HTMLButtonElement} */ (h("button", { type: "submit" }, "Deploy"));
  const f = /** @type {HTMLFormElement} */ (h("form", { class: "inline", id: "deploy-form" },
    h("label", {}, "Name", h("input", { name: "name", placeholder: "generated" })),
    h("label", {}, "Image", choose("image", images)),
    h("label", {}, "or a registry reference", h("input", { name: "reference", placeholder: "registry/path:tag" })),
    h("label", {}, "VM config", choose("vmConfig", configs)),
    h("label", {}, "CPU", h("input", { name: "cpu", type: "number", min: 1, max: 256 })),
    h("label", {}, "Memory (GiB)", h("input", { name: "memory", type: "number", min: 0, step: 0.25 })),
    h("label", {}, "Tag", h("input", { name: "tag" })),
    check("Tag required", "tagRequired", "place only on a node with the tag"),
    h("label", {}, "Node", h("input", { name: "node", placeholder: "any" })),
    check("Shared storage", "sharedStorage", "the namespace's shared folder of the node, at /shared in mini-linux"),
    h("details", {}, h("summary", {}, "More"), h("div", { class: "more" },
      h("label", {}, "Scheduler", h("select", { name: "scheduler" }, h("option", { value: "" }, "—"),
        h("option", { value: "default" }, "default (spread)"), h("option", { value: "most-allocated" }, "most-allocated (pack)"))),
      h("label", {}, "ISO", choose("iso", isos)),
      check("GPU passthrough", "gpuPassthrough"),
      h("label", { title: "node:guest, comma-separated" }, "Reserved ports", h("input", { name: "reservedPorts", placeholder: "8080:80,2222:22" })),
      h("label", {}, "Timeout (min)", h("input", { name: "timeout", type: "number", min: 0, step: 1, placeholder: "10" })),
      h("label", { title: "the VM is deleted this long after its deploy" }, "TTL", h("input", { name: "ttl", placeholder: "2h" })),
      check("Net boost", "netBoost"),
      check("Legacy I/O", "legacyIO", "emulated disk and network card instead of virtio"),
      h("label", { class: "row" }, "Display", h("input", { name: "displayWidth", type: "number", min: 1, placeholder: "width" }),
        h("input", { name: "displayHeight", type: "number", min: 1, placeholder: "height" }),
        h("input", { name: "displayDpi", type: "number", min: 1, placeholder: "dpi" })),
      h("label", {}, "Custom metadata", h("textarea", { name: "customMetadata", rows: 2, placeholder: "key=value, one a line" })))),
    submit, error));
  f.addEventListener("submit", (ev) => {
    ev.preventDefault();
    error.textContent = "";
    /** @type {Record<string, unknown>} */
    let body;
    try {
      body = request(/** @type {Record<string, string>} */ (Object.fromEntries(new FormData(f))));
    } catch (e) {
      error.textContent = e instanceof Error ? e.message : String(e);
      return;
    }
    submit.disabled = true;
    submit.textContent = "Deploying…";
    run(() => call("POST", nsPath("vms"), body)).finally(() => { submit.disabled = false; submit.textContent = "Deploy"; });
  });
  return f;
}
