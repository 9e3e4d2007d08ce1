// The chat panel's tool fields, read before anything is sent: the request's `tools` (the Tools
// editor) and an assistant message's `tool_calls`, each a JSON array typed by hand. A field that
// is not JSON, or not an array, is refused here with the problem in words, and nothing is sent;
// what is inside the array is left to the API, whose problem names the message and the field.
import { el } from "./api.js";

const $ = (id) => document.getElementById(id);
const fmt = (n) => n.toLocaleString("en");

// A JSON array, or the problem with it; `what` names the field in the message.
export function parseArray(text, what) {
  if (!text.trim()) return { ok: false, problem: `${what} are empty: write a JSON array ([] for none).` };
  let value;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: `${what} are not valid JSON: ${err.message}.` };
  }
  if (!Array.isArray(value)) {
    const kind = value === null ? "null" : typeof value === "object" ? "an object" : `a ${typeof value}`;
    return { ok: false, problem: `${what} must be a JSON array […], not ${kind}${kind === "an object" ? " (wrap it in [ ])" : ""}.` };
  }
  return { ok: true, value };
}

// An assistant message's tool calls: none when the field is blank, else a JSON array.
export function parseCalls(text) {
  if (!text.trim()) return { ok: true, value: null };
  return parseArray(text, "Tool calls");
}

export function offered() { return $("ch-tools-on").checked; }

// The request's `tools`: `{ ok, value }` (value undefined when tools are not offered), or the
// problem, shown at the editor; the textarea is marked invalid in words and by aria-invalid.
export function readTools() {
  if (!offered()) { showToolsProblem(null); return { ok: true, value: undefined }; }
  const r = parseArray($("ch-tools").value, "Tools");
  showToolsProblem(r.ok ? null : r.problem);
  return r;
}

export function showToolsProblem(text) {
  const box = $("ch-tools-error");
  box.hidden = !text;
  box.textContent = text || "";
  $("ch-tools").setAttribute("aria-invalid", String(Boolean(text)));
  $("ch-tools-box").classList.toggle("invalid", Boolean(text));
}

// The tools' own tokens (`tools_tokens`) beside the editor; "" clears it.
export function showToolsTokens(r) {
  const span = $("ch-tools-tokens");
  if (!r || !offered()) {
    span.textContent = offered() ? "" : "not offered: not sent";
    delete span.dataset.tokens;
    return;
  }
  span.dataset.tokens = r.tools_tokens;
  span.textContent = r.tools_tokens === 0 ? "0 tokens: this format renders no tools"
    : `+${fmt(r.tools_tokens)} token${r.tools_tokens === 1 ? "" : "s"} for the tools`;
}

// The first tool call that the messages after it do not answer yet, for a new tool message.
export function unansweredCall(messages) {
  const answered = new Set();
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === "tool") { answered.add(m.tool_call_id); continue; }
    if (m.role !== "assistant") return null;
    const calls = parseCalls(m.tool_calls || "");
    if (!calls.ok || !calls.value) return null;
    const open = calls.value.find((c) => c && typeof c.id === "string" && !answered.has(c.id));
    return open ? open.id : null;
  }
  return null;
}

// The per-message fields: tool calls (assistant) and tool_call_id (tool); `hidden` by role.
export function messageFields(msg, i, n) {
  const who = (text) => [el("span", { class: "sr-only", text: `Message ${n} ` }), text];
  const calls = el("div", { class: "msg-extra", "data-for": "assistant", hidden: msg.role !== "assistant" },
    el("label", { for: `ch-calls-${i}` }, ...who("tool calls (JSON, optional)")),
    el("textarea", {
      id: `ch-calls-${i}`, class: "calls", rows: 1, spellcheck: false, "data-i": i, value: msg.tool_calls || "",
      placeholder: 'none; e.g. [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]',
      "aria-describedby": `ch-calls-hint-${i} ch-calls-error-${i}`,
    }),
    el("p", { class: "hint", id: `ch-calls-hint-${i}`, text: "Leave empty for none. With tool calls, empty content is sent as null." }),
    el("p", { class: "error", id: `ch-calls-error-${i}`, role: "alert", hidden: true }));
  const callId = el("div", { class: "msg-extra inline", "data-for": "tool", hidden: msg.role !== "tool" },
    el("label", { for: `ch-callid-${i}` }, ...who("tool_call_id")),
    el("input", { id: `ch-callid-${i}`, class: "callid", spellcheck: false, "data-i": i, value: msg.tool_call_id || "", placeholder: "e.g. call_1" }));
  return { calls, callId };
}

// Show or hide a message's tool fields after its role changed.
export function showFieldsFor(li, role) {
  for (const box of li.querySelectorAll(".msg-extra")) box.hidden = box.dataset.for !== role;
}

// A message's tool-calls problem (or none), in words below the field.
export function showCallsProblem(i, text) {
  const box = $(`ch-calls-error-${i}`), area = $(`ch-calls-${i}`);
  if (!box) return;
  box.hidden = !text;
  box.textContent = text || "";
  area.setAttribute("aria-invalid", String(Boolean(text)));
}
