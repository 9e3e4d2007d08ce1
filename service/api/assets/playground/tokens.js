// Tokens panel: colored, boxed token spans with id, bytes and piece; counts; copyable ids.
import { b64ToBytes, call, el, isAbort, pieceLabel, policyFields, refPath, showError, showWs, spacedHex, utf8 } from "./api.js";

const MAX_SHOWN = 3000; // token spans rendered; counts and ids always cover the whole text
const BATCH = 512; // ids per decode request (under TOKSVC_MAX_BATCH_ITEMS' default of 1024)

let state, controller = null;
const $ = (id) => document.getElementById(id);

export function init(s) {
  state = s;
  state.addEventListener("change", (e) => {
    if ("text" in e.detail || "ref" in e.detail || "policy" in e.detail) update();
  });
  $("copy-ids").addEventListener("click", copyIds);
  $("spans").addEventListener("keydown", onKey);
  $("spans").addEventListener("focusin", (e) => e.target.classList.contains("tok") && detail(e.target));
  $("spans").addEventListener("mouseover", (e) => e.target.classList.contains("tok") && detail(e.target));
}

async function update() {
  if (!state.ref) return;
  if (controller) controller.abort();
  controller = new AbortController();
  const { signal } = controller;
  const text = state.text;
  $("count-chars").textContent = [...text].length.toLocaleString("en");
  $("count-bytes").textContent = utf8.encode(text).length.toLocaleString("en");
  try {
    const r = await call(`${refPath(state.ref)}/encode`, { text, ...policyFields(state.policy) }, signal);
    const shown = r.ids.slice(0, MAX_SHOWN);
    const pieces = await tokenBytes(shown, signal);
    showError($("tokens-error"), null);
    $("count-tokens").textContent = r.count.toLocaleString("en");
    $("ids").value = JSON.stringify(r.ids);
    render(shown, pieces, r.count);
    state.set({ ids: r.ids });
  } catch (err) {
    if (isAbort(err)) return;
    showError($("tokens-error"), err);
    $("count-tokens").textContent = "–";
    $("ids").value = "";
    $("spans").replaceChildren();
    $("spans-more").hidden = true;
    state.set({ ids: [] });
  }
}

async function tokenBytes(ids, signal) {
  const out = [];
  for (let i = 0; i < ids.length; i += BATCH) {
    const batch = ids.slice(i, i + BATCH).map((id) => [id]);
    const r = await call(`${refPath(state.ref)}/decode`, { batch, output: "base64" }, signal);
    for (const item of r.results) out.push(b64ToBytes(item.base64));
  }
  return out;
}

function render(ids, pieces, total) {
  const specials = new Set(Object.values(state.info(state.ref)?.special_tokens || {}));
  const stream = new TextDecoder("utf-8"); // joins characters split across tokens
  let held = new Uint8Array();
  const spans = ids.map((id, i) => {
    const bytes = pieces[i];
    const label = pieceLabel(bytes);
    // a character split over tokens shows on the token that completes it; the tokens before
    // show the hex of the bytes they add to it
    const decoded = stream.decode(bytes, { stream: true }).replace(/\n/g, "↵\n");
    held = heldAfter(held, bytes);
    const own = bytes.slice(Math.max(0, bytes.length - held.length));
    const partial = !label.whole;
    const shown = (decoded + (own.length ? `‹${spacedHex(own)}›` : "")) || "∅";
    const span = el("span", { class: "tok" + (partial ? " partial" : "") + (specials.has(id) ? " special" : ""),
      role: "listitem", tabIndex: i === 0 ? 0 : -1, text: shown });
    span.dataset.id = id;
    span.dataset.i = i;
    span.dataset.hex = spacedHex(bytes);
    span.dataset.piece = label.whole ? showWs(label.text) : "(part of a character)";
    span.title = `id ${id} · bytes ${span.dataset.hex} · ${span.dataset.piece}`;
    return span;
  });
  $("spans").replaceChildren(...spans);
  $("spans-more").hidden = total <= ids.length;
  $("spans-more").textContent = total > ids.length ? `Showing the first ${ids.length} of ${total} tokens; the counts and ids cover all.` : "";
  $("token-detail").textContent = total ? "Hover or focus a token for its id, bytes and piece." : "No tokens.";
}

// The bytes of an unfinished UTF-8 character at the end of `pending` + `bytes`.
function heldAfter(pending, bytes) {
  const all = new Uint8Array([...pending, ...bytes]);
  const n = all.length;
  for (let back = 1; back <= Math.min(4, n); back++) {
    const b = all[n - back];
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? all.slice(n - back) : new Uint8Array();
  }
  return new Uint8Array();
}

function detail(span) {
  const n = Number(span.dataset.i) + 1;
  $("token-detail").textContent = `token ${n}: id ${span.dataset.id} · bytes ${span.dataset.hex} · piece ${span.dataset.piece}`;
}

// Roving focus: the list is one tab stop; arrows, Home and End move between tokens.
function onKey(e) {
  const current = e.target.closest(".tok");
  if (!current) return;
  const all = $("spans").querySelectorAll(".tok");
  const i = Number(current.dataset.i);
  const to = { ArrowRight: i + 1, ArrowDown: i + 1, ArrowLeft: i - 1, ArrowUp: i - 1, Home: 0, End: all.length - 1 }[e.key];
  if (to === undefined || to < 0 || to >= all.length) return;
  e.preventDefault();
  current.tabIndex = -1;
  all[to].tabIndex = 0;
  all[to].focus();
}

async function copyIds() {
  const box = $("ids");
  try {
    await navigator.clipboard.writeText(box.value);
    $("copy-status").textContent = "Copied.";
  } catch {
    box.select();
    $("copy-status").textContent = "Selected: press Ctrl+C to copy.";
  }
}
