// @ts-check
// Building the page: elements, tables, bars and copyable text.

/**
 * $ returns the page's element for sel; a missing one is a bug of the page.
 * @param {string} sel
 * @returns {HTMLElement}
 */
export const $ = (sel) => {
  const el = document.querySelector(sel);
  if (!(el instanceof HTMLElement)) throw new Error("the page has no " + sel);
  return el;
};

/**
 * $field is the form field sel.
 * @param {string} sel
 * @returns {HTMLInputElement|HTMLTextAreaElement}
 */
export const $field = (sel) => {
  const el = $(sel);
  if (!(el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement)) throw new Error(sel + " is no form field");
  return el;
};

/**
 * A child of h: a node, text, or a list of them (nested lists are flattened).
 * @typedef {Node|string|number|null|undefined|Array<any>} Kid
 */

/**
 * h makes an element: attributes named on* are event listeners, true is an
 * empty attribute, false, null and undefined leave one out.
 * @param {string} tag
 * @param {Record<string, any>} [attrs]
 * @param {...Kid} kids
 * @returns {HTMLElement}
 */
export const h = (tag, attrs = {}, ...kids) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const kid of /** @type {Kid[]} */ (kids).flat(Infinity)) el.append(kid instanceof Node ? kid : document.createTextNode(String(kid ?? "")));
  return el;
};

/**
 * bar shows how much of total is used.
 * @param {number} free
 * @param {number} total
 */
export const bar = (free, total) => {
  const fill = h("span");
  fill.style.width = `${total ? Math.round(100 * (total - free) / total) : 0}%`; // CSSOM: allowed by the page's CSP
  return h("span", {}, h("span", { class: "bar" }, fill), `${total - free} / ${total}`);
};

/**
 * table is a table of head's columns and rows.
 * @param {string[]} head
 * @param {HTMLElement[]} rows
 */
export const table = (head, rows) => h("table", {}, h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))), h("tbody", {}, rows));

/**
 * copyable is text copied to the clipboard on a click.
 * @param {string} text
 */
export const copyable = (text) => h("code", { class: "copy", title: "click to copy", onclick: () => navigator.clipboard && navigator.clipboard.writeText(text) }, text);
