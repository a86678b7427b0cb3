// @ts-check
// Signing in: a pasted token, or an OpenID Connect provider of the
// cluster's. The provider sends the browser back to /ui/callback with the
// code and the state the cluster sealed; the state must be the one this
// tab started (kept in session storage), so another site cannot sign the
// tab in as somebody else.
import { APIError, call, session } from "./api.js";
import { $, $field, h } from "./dom.js";

/** Where a provider sends the browser back. */
export const CALLBACK = "/ui/callback";

/**
 * signInWithToken checks the pasted token and keeps it; false when the
 * API refused it (the form says why).
 * @returns {Promise<boolean>}
 */
export async function signInWithToken() {
  session.token = $field("#token").value.trim().replace(/^Bearer\s+/i, "");
  try {
    await call("GET", "/api/v1/namespaces/" + encodeURIComponent(session.ns) + "/vms");
  } catch (e) {
    if (e instanceof APIError && e.code === 401) {
      $("#signin-error").textContent = "This token is not valid: " + e.message;
      session.token = null;
      return false;
    }
  }
  sessionStorage.setItem("svc-token", session.token || "");
  $field("#token").value = "";
  return true;
}

/** showProviders offers a button for each of the cluster's providers. */
export async function showProviders() {
  /** @type {{name: string}[]} */
  let items = [];
  try {
    items = (await call("GET", "/api/v1/auth/signin")).items;
  } catch { /* an older cluster: paste a token */ }
  $("#providers").replaceChildren(...items.map((p) =>
    h("button", { type: "button", class: "provider", "data-provider": p.name, onclick: () => startProvider(p.name) }, "Sign in with " + p.name)));
  if (items.length) $("#providers").append(h("p", { class: "hint" }, "or paste a token:"));
}

/**
 * startProvider sends the browser to provider name.
 * @param {string} name
 */
async function startProvider(name) {
  $("#provider-error").textContent = "";
  try {
    const st = await call("POST", "/api/v1/auth/oidc/" + encodeURIComponent(name) + "/start", { redirectUri: location.origin + CALLBACK });
    // The code verifier stays in this tab (never in an address): the
    // provider's answer is redeemed only with it.
    sessionStorage.setItem("svc-signin", JSON.stringify({ provider: name, state: st.state, verifier: st.codeVerifier }));
    location.assign(st.authUrl);
  } catch (e) {
    $("#provider-error").textContent = "Sign-in with " + name + " failed: " + (e instanceof Error ? e.message : String(e));
  }
}

/**
 * finishProvider handles the provider's answer, once, and leaves the
 * address bar without the code.
 */
export async function finishProvider() {
  const q = new URLSearchParams(location.search);
  /** @type {{provider: string, state: string, verifier: string}|null} */
  const started = JSON.parse(sessionStorage.getItem("svc-signin") || "null");
  sessionStorage.removeItem("svc-signin");
  history.replaceState(null, "", "/ui");
  if (q.get("error")) throw new Error("the provider refused: " + q.get("error") + " " + (q.get("error_description") || ""));
  if (!started || started.state !== q.get("state")) throw new Error("this answer is not of a sign-in this tab started; sign in again");
  /** @type {{state: string|null, code: string|null, codeVerifier: string, iss?: string}} */
  const cb = { state: q.get("state"), code: q.get("code"), codeVerifier: started.verifier };
  const iss = q.get("iss");
  if (iss) cb.iss = iss;
  const got = await call("POST", "/api/v1/auth/oidc/" + encodeURIComponent(started.provider) + "/callback", cb);
  session.token = got.token;
  sessionStorage.setItem("svc-token", got.token);
  sessionStorage.setItem("svc-user", got.user + " (" + got.role + ")");
}
