// The service's own HTTP API, and the helpers every panel shares. No other origin is ever called.

export class Problem extends Error {
  constructor(doc, status) {
    super(doc && doc.detail ? doc.detail : `HTTP ${status}`);
    this.status = status;
    this.doc = doc || {};
    this.title = this.doc.title || "Error";
  }
}

export async function call(path, body, signal) {
  const init = body === undefined ? { signal } : {
    method: "POST", signal, body: JSON.stringify(body),
    headers: { "content-type": "application/json" },
  };
  const response = await fetch(path, init);
  const type = response.headers.get("content-type") || "";
  const doc = type.includes("json") ? await response.json() : null;
  if (!response.ok) throw new Problem(doc, response.status);
  return doc;
}

export const refPath = (ref) => `/v1/tokenizers/${encodeURIComponent(ref)}`;

// The special-token policy of the selector, as request fields.
export function policyFields(policy) {
  if (policy === "allow") return { allowed_special: "all" };
  if (policy === "text") return { disallowed_special: [] };
  return {};
}

export function debounce(fn, ms) {
  let timer = 0;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
}

// Show an error (a Problem or anything thrown) in an alert element; `null` hides it.
export function showError(el, err) {
  if (!err) { el.hidden = true; el.textContent = ""; return; }
  el.hidden = false;
  el.textContent = err instanceof Problem ? `${err.title} (${err.status}): ${err.message}` : String(err.message || err);
}

export const isAbort = (err) => err && err.name === "AbortError";

export const utf8 = new TextEncoder();

export function hexToBytes(hex) {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(2 * i, 2), 16);
  return out;
}

export function b64ToBytes(b64) {
  const bin = atob(b64.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

export const spacedHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");

// How one token's bytes look: the text if they are whole UTF-8, else their hex.
const strict = new TextDecoder("utf-8", { fatal: true });
export function pieceLabel(bytes) {
  try {
    return { text: strict.decode(bytes), whole: true };
  } catch {
    return { text: spacedHex(bytes), whole: false };
  }
}

// Whitespace made visible for chips and details (spans keep the real text).
export const showWs = (s) => s.replace(/ /g, "␣").replace(/\n/g, "↵").replace(/\t/g, "⇥").replace(/\r/g, "␍");

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k in node) node[k] = v;
    else node.setAttribute(k, v);
  }
  node.append(...children);
  return node;
}
