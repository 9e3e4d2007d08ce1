// Compare panel: the same text counted by several tokenizers, with tokens per character.
import { call, el, isAbort, policyFields, refPath } from "./api.js";

const DEFAULT_PICKS = ["cl100k_base", "o200k_base", "qwen2", "gpt2"];
let state, controller = null;
const $ = (id) => document.getElementById(id);

export function init(s) {
  state = s;
  state.addEventListener("change", (e) => {
    if ("tokenizers" in e.detail) picks();
    if ("text" in e.detail || "policy" in e.detail || "tokenizers" in e.detail) update();
  });
}

function picks() {
  const boxes = state.tokenizers.map((t) => {
    const box = el("input", { type: "checkbox", value: t.ref, checked: t.default && DEFAULT_PICKS.includes(t.name) });
    box.addEventListener("change", update);
    return el("label", {}, box, ` ${t.ref}`);
  });
  $("compare-picks").replaceChildren(...boxes);
}

async function update() {
  if (controller) controller.abort();
  controller = new AbortController();
  const { signal } = controller;
  const refs = [...$("compare-picks").querySelectorAll("input:checked")].map((b) => b.value);
  const chars = [...state.text].length;
  const results = await Promise.all(refs.map((ref) =>
    call(`${refPath(ref)}/count`, { text: state.text, ...policyFields(state.policy) }, signal)
      .then((r) => ({ ref, count: r.count }), (err) => ({ ref, err }))));
  if (signal.aborted || results.some((r) => isAbort(r.err))) return;
  const max = Math.max(1, ...results.map((r) => r.count || 0));
  const rows = results.map(({ ref, count, err }) => {
    if (err) return el("tr", {}, el("th", { scope: "row", text: ref }), el("td", { colSpan: 3, class: "error", text: err.message }));
    const bar = el("div", { class: "bar", role: "img", "aria-label": `${Math.round((100 * count) / max)}% of the largest count` });
    bar.style.width = `${(100 * count) / max}%`;
    return el("tr", { "data-ref": ref },
      el("th", { scope: "row", text: ref }),
      el("td", { class: "num", text: count.toLocaleString("en") }),
      el("td", { class: "num", text: chars ? (count / chars).toFixed(3) : "–" }),
      el("td", {}, bar));
  });
  $("compare-table").tBodies[0].replaceChildren(...rows);
}
