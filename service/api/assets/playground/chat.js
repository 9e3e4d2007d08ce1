// Chat and cost panel: a conversation editor; its input tokens per message and in total
// (POST /v1/models/{model}/count, with the rendered prompt) and the request's cost
// (POST /v1/models/{model}/estimate, decimal strings shown as the API gives them). Tools, an
// assistant's tool calls and a tool result's tool_call_id are sent as typed (`chattools.js`).
import { call, debounce, el, isAbort, Problem, showError } from "./api.js";
import * as tools from "./chattools.js";
import { boxed, literalsOf } from "./literals.js";

const ALL_ROLES = ["system", "developer", "user", "assistant", "tool"];
// The roles each chat format renders. Qwen's Jinja templates skip `developer` messages.
const ROLES = { jinja: ["system", "user", "assistant", "tool"] };
const METHOD = {
  "jinja-template": "Exact: rendered with the model's Jinja chat template, then encoded",
  "harmony": "Exact: rendered in OpenAI's harmony format (gpt-oss), then encoded",
  "mistral": "Exact: built in Mistral's instruct format (v3 or v7) as mistral-common builds it, then encoded",
  "openai-estimate": "Estimate (exact: false): OpenAI's published per-message rule; OpenAI does not publish its own rendering",
  "text": "Exact: a plain text",
};
const PREFERRED = ["gpt-4o", "gpt-4o-mini"];
// Ends with a user message, counted with the reply started (add_generation_prompt: true): the one
// ending every chat format accepts (Mistral's refuse an assistant message last unless continued).
const START = [
  { role: "system", content: "You are a concise assistant. Answer in one sentence." },
  { role: "user", content: "How many tokens does this conversation cost, and why do models count differently?" },
  { role: "assistant", content: "Each model wraps every message in its own format tokens, so the same words cost a different number of tokens." },
  { role: "user", content: "Which of them counts this conversation as the fewest tokens?" },
];

let models = [], model = null, messages = START.map((m) => ({ ...m })), controller = null;
const $ = (id) => document.getElementById(id);
const fmt = (n) => n.toLocaleString("en");
const path = (ref, op) => `/v1/models/${encodeURIComponent(ref)}/${op}`;
const schedule = debounce(() => update(), 300);

export async function init() {
  $("ch-add").addEventListener("click", add);
  $("ch-tools-on").addEventListener("change", update);
  $("ch-tools").addEventListener("input", () => { if (tools.offered()) schedule(); });
  $("ch-model").addEventListener("change", () => { pick($("ch-model").value); renderList(); update(); });
  $("ch-messages").addEventListener("input", onEdit);
  $("ch-messages").addEventListener("change", onEdit);
  $("ch-messages").addEventListener("click", onButton);
  for (const id of ["ch-outnone", "ch-outmax", "ch-outset", "ch-reply", "ch-continue"]) $(id).addEventListener("change", update);
  $("ch-outn").addEventListener("input", () => { $("ch-outset").checked = true; schedule(); });
  try {
    ({ models } = await call("/v1/models"));
  } catch (err) {
    showError($("ch-error"), err);
    return;
  }
  if (!models.length) { showError($("ch-error"), new Error("No model profiles are loaded.")); return; }
  $("ch-model").replaceChildren(...models.map((m) =>
    new Option(`${m.ref} · ${m.exact ? "exact" : "estimate"}${m.prices ? "" : " · no price"}`, m.ref)));
  const first = PREFERRED.map((n) => models.find((m) => m.name === n && m.default)).find(Boolean) || models[0];
  $("ch-model").value = first.ref;
  pick(first.ref);
  renderList();
  update();
}

function pick(ref) {
  model = models.find((m) => m.ref === ref);
  const kind = model.exact ? "Exact count" : "Estimate (exact: false)";
  $("ch-info").replaceChildren(
    el("b", { class: model.exact ? "badge exact" : "badge estimate", text: kind }),
    ` ${model.chat_format} · tokenizer ${model.tokenizer} · context ${fmt(model.context_window)} · max output ${fmt(model.max_output_tokens)}`);
  $("ch-max").textContent = `(${fmt(model.max_output_tokens)})`;
}

const rolesOf = (m) => ROLES[m.chat_format] || ALL_ROLES;

// The message list, rebuilt on add, remove, move and model change; typing edits it in place.
function renderList() {
  const roles = rolesOf(model);
  const items = messages.map((msg, i) => {
    const n = i + 1;
    const opts = ALL_ROLES.filter((r) => roles.includes(r) || r === msg.role).map((r) =>
      new Option(roles.includes(r) ? r : `${r} (not rendered by ${model.name})`, r, false, r === msg.role));
    const role = el("select", { id: `ch-role-${i}`, class: "role", "data-i": i }, ...opts);
    const content = el("textarea", { id: `ch-content-${i}`, class: "content", rows: 2, spellcheck: false, "data-i": i, value: msg.content, "aria-describedby": `ch-tokens-${i}` });
    const { calls, callId } = tools.messageFields(msg, i, n);
    const btn = (act, text, label, disabled) => el("button", { type: "button", "data-act": act, "data-i": i, text, "aria-label": label, title: label, disabled });
    return el("li", { class: "msg", "data-i": i },
      el("div", { class: "msg-head" },
        el("label", { for: `ch-role-${i}`, text: `#${n} role` }), role,
        el("span", { class: "msg-tokens", id: `ch-tokens-${i}` }),
        el("span", { class: "msg-btns" },
          btn("up", "↑", `Move message ${n} up`, i === 0),
          btn("down", "↓", `Move message ${n} down`, i === messages.length - 1),
          btn("remove", "✕", `Remove message ${n}`, false))),
      callId,
      el("label", { for: `ch-content-${i}`, class: "sr-only", text: `Message ${n} content` }), content,
      calls);
  });
  $("ch-messages").replaceChildren(...items);
  $("ch-status").textContent = `${messages.length} message${messages.length === 1 ? "" : "s"}`;
}

function onEdit(e) {
  const i = Number(e.target.dataset.i);
  if (!(i in messages) || (e.type === "change" && e.target.tagName === "TEXTAREA")) return;
  const cls = e.target.classList;
  if (cls.contains("content")) messages[i].content = e.target.value;
  else if (cls.contains("calls")) messages[i].tool_calls = e.target.value;
  else if (cls.contains("callid")) messages[i].tool_call_id = e.target.value;
  else if (cls.contains("role")) {
    messages[i].role = e.target.value;
    tools.showFieldsFor(e.target.closest(".msg"), e.target.value);
  } else return;
  schedule();
}

function onButton(e) {
  const b = e.target.closest("button[data-act]");
  if (!b) return;
  const i = Number(b.dataset.i), act = b.dataset.act;
  if (act === "remove") {
    messages.splice(i, 1);
    renderList();
    const next = $("ch-messages").querySelector(`button[data-act="remove"][data-i="${Math.min(i, messages.length - 1)}"]`);
    (next || $("ch-add")).focus();
    $("ch-status").textContent = `Removed message ${i + 1}; ${messages.length} left.`;
  } else {
    const j = act === "up" ? i - 1 : i + 1;
    if (j < 0 || j >= messages.length) return;
    [messages[i], messages[j]] = [messages[j], messages[i]];
    renderList();
    const same = $("ch-messages").querySelector(`button[data-act="${act}"][data-i="${j}"]`);
    (same.disabled ? $("ch-messages").querySelector(`button[data-act="${act === "up" ? "down" : "up"}"][data-i="${j}"]`) : same).focus();
    $("ch-status").textContent = `Moved message ${i + 1} to position ${j + 1}.`;
  }
  update();
}

// A new message takes the turn that follows: a tool result while a tool call is unanswered.
function add() {
  const last = messages[messages.length - 1];
  const open = tools.unansweredCall(messages);
  const role = open ? "tool" : !last || last.role === "assistant" || last.role === "system" ? "user" : "assistant";
  messages.push(open ? { role, content: "", tool_call_id: open } : { role, content: "" });
  renderList();
  $(`ch-content-${messages.length - 1}`).focus();
  update();
}

function outputFields() {
  if ($("ch-outnone").checked) return { ok: true, fields: {} };
  if ($("ch-outmax").checked) return { ok: true, fields: { max_output_tokens: model.max_output_tokens } };
  const n = Number($("ch-outn").value);
  if ($("ch-outn").value === "" || !Number.isInteger(n) || n < 0) return { ok: false };
  return { ok: true, fields: { output_tokens: n } };
}

async function update() {
  if (!model) return;
  if (controller) controller.abort();
  controller = new AbortController();
  const { signal } = controller;
  const m = model;
  if (!messages.length) {
    clearResults();
    showError($("ch-error"), new Error("Add a message to count the conversation."));
    return;
  }
  const { body, bad } = requestBody();
  if (bad.length) {  // not JSON, or not an array: said at the field, and nothing is sent
    controller = null;
    clearResults();
    showError($("ch-error"), null);
    markInvalid(null);
    for (const i of bad.filter((b) => typeof b === "number")) {
      $("ch-messages").querySelector(`.msg[data-i="${i}"]`).classList.add("invalid");
      $(`ch-calls-${i}`).setAttribute("aria-invalid", "true");
      $(`ch-tokens-${i}`).textContent = "⚠ invalid tool calls: see below";
    }
    const where = bad.map((b) => typeof b === "number" ? `message ${b + 1}'s tool calls` : "the tools");
    $("ch-method").textContent = `Not counted until ${where.join(" and ")} are ${where.length === 1 ? "a JSON array" : "JSON arrays"}.`;
    return;
  }
  const out = outputFields();
  const counting = call(path(m.ref, "count"), { ...body, return_text: m.exact, breakdown: true }, signal);
  const pricing = m.prices && out.ok ? call(path(m.ref, "estimate"), { ...body, ...out.fields }, signal) : null;
  const boxing = m.exact ? literalsOf(m.tokenizer).catch(() => null) : null;  // unboxed if unknown
  const [count, cost, literals] = await Promise.allSettled([counting, pricing, boxing]);
  if (signal.aborted) return;
  if (count.status === "rejected") {
    if (isAbort(count.reason)) return;
    clearResults();
    showError($("ch-error"), count.reason);
    markInvalid(count.reason);
    return;
  }
  showError($("ch-error"), null);
  markInvalid(null);
  showCount(count.value, m, literals.value);
  showCost(cost, m, out.ok);
}

// The request as the page holds it; `bad` lists what cannot be sent (a message index, or "tools").
function requestBody() {
  const bad = [];
  const wire = messages.map((msg, i) => {
    const out = { role: msg.role, content: msg.content };
    const calls = msg.role === "assistant" ? tools.parseCalls(msg.tool_calls || "") : { ok: true, value: null };
    tools.showCallsProblem(i, calls.ok ? null : calls.problem);
    if (!calls.ok) bad.push(i);
    else if (calls.value) {
      out.tool_calls = calls.value;
      if (msg.content === "") out.content = null;  // a call alone, as OpenAI's API sends it
    }
    if (msg.role === "tool" && msg.tool_call_id) out.tool_call_id = msg.tool_call_id;
    return out;
  });
  const offered = tools.readTools();
  if (!offered.ok) bad.push("tools");
  // start the assistant's reply, or continue the last (assistant) message as it is
  const body = { messages: wire, add_generation_prompt: !$("ch-continue").checked };
  if (offered.ok && offered.value !== undefined) body.tools = offered.value;
  return { body, bad };
}

function clearResults() {
  for (const id of ["ch-total", "ch-outtok", "ch-cost-total"]) $(id).textContent = "–";
  $("ch-method").textContent = "";
  $("ch-cost").tBodies[0].replaceChildren();
  $("ch-cost").hidden = true;
  $("ch-price").textContent = "";
  $("ch-noprice").hidden = true;
  showError($("ch-cost-error"), null);
  $("ch-text").replaceChildren();
  $("ch-textlen").textContent = "";
  for (const span of $("ch-messages").querySelectorAll(".msg-tokens")) { span.textContent = ""; delete span.dataset.tokens; }
  tools.showToolsTokens(null);
}

// A problem naming a message (`index`) marks that message, in words as well as color, and its
// field (content, tool calls or tool_call_id) as invalid; one naming `tools[…]` marks the editor.
function markInvalid(err) {
  const doc = err instanceof Problem ? err.doc : {};
  const field = typeof doc.field === "string" ? doc.field : "";
  const named = field.startsWith("tool_calls") ? ".calls" : field === "tool_call_id" ? ".callid" : ".content";
  for (const li of $("ch-messages").querySelectorAll(".msg")) {
    const bad = doc.index === Number(li.dataset.i);
    li.classList.toggle("invalid", bad);
    for (const sel of [".content", ".calls", ".callid"]) li.querySelector(sel).setAttribute("aria-invalid", String(bad && sel === named));
    if (bad) li.querySelector(".msg-tokens").textContent = "⚠ invalid: see the error";
  }
  const badTools = (doc.index === null && field.startsWith("tools")) || !$("ch-tools-error").hidden;
  $("ch-tools").setAttribute("aria-invalid", String(badTools));
  $("ch-tools-box").classList.toggle("invalid", badTools);
}

// `literals`: the pattern of the tokenizer's special and added tokens (literals.js), or null.
function showCount(r, m, literals) {
  $("ch-total").textContent = fmt(r.input_tokens);
  $("ch-total").dataset.value = r.input_tokens;
  for (const t of r.messages) {
    const span = $(`ch-tokens-${t.index}`);
    if (!span) continue;
    span.dataset.tokens = t.tokens;
    const msg = messages[t.index];
    const written = msg && (msg.content || (msg.role === "assistant" && (msg.tool_calls || "").trim()));
    span.textContent = t.merged_with_next ? "counted with the next message"
      : t.tokens === 0 && written ? "0 tokens: the template renders nothing for it"
      : `${t.tokens < 0 ? "−" : "+"}${fmt(Math.abs(t.tokens))} token${Math.abs(t.tokens) === 1 ? "" : "s"}`;
  }
  const parts = [`${fmt(r.messages.reduce((a, t) => a + t.tokens, 0))} in messages`];
  const named = { preamble: "before the first message", generation_prompt: "to start the reply", unattributed: "unattributed" };
  for (const [k, v] of Object.entries(r.overhead)) if (v) parts.push(`${fmt(v)} ${named[k] || k}`);
  if (r.tools_tokens) parts.push(`${fmt(r.tools_tokens)} for tools`);
  tools.showToolsTokens(r);
  $("ch-method").textContent = `${fmt(r.input_tokens)} = ${parts.join(" + ")}. ${METHOD[r.method] || r.method}.`;
  if (typeof r.text === "string") {
    $("ch-textlen").textContent = `(${fmt([...r.text].length)} characters; special and added tokens boxed)`;
    $("ch-text").replaceChildren(...boxed(r.text, literals));
  } else {
    $("ch-textlen").textContent = "(not available for an estimate)";
    $("ch-text").textContent = `${m.ref} is counted by OpenAI's published per-message rule (3 tokens per message, the tokens of each value, 1 more with a name, 3 to prime the reply): OpenAI does not publish the text its API renders, so there is none to show.`;
  }
}

function showCost(cost, m, outOk) {
  const body = $("ch-cost").tBodies[0];
  showError($("ch-cost-error"), null);
  $("ch-noprice").hidden = true;
  $("ch-price").textContent = "";
  body.replaceChildren();
  $("ch-cost").hidden = true;
  $("ch-outtok").textContent = "–";
  $("ch-cost-total").textContent = "–";
  if (!m.prices) {
    $("ch-noprice").hidden = false;
    $("ch-noprice").textContent = `No cost estimate: no loaded price file prices ${m.ref} (its /v1/models entry has no prices). The token counts are ${m.exact ? "exact" : "an estimate"}.`;
    return;
  }
  if (!outOk) {
    showError($("ch-cost-error"), new Error("Expected output tokens must be a whole number, 0 or more."));
    return;
  }
  if (cost.status === "rejected") {
    if (!isAbort(cost.reason)) showError($("ch-cost-error"), cost.reason);
    return;
  }
  const e = cost.value, p = m.prices, cur = e.currency;
  $("ch-outtok").textContent = fmt(e.output_tokens);
  $("ch-cost-total").textContent = `${e.cost.total} ${cur}`;
  $("ch-cost-total").dataset.value = e.cost.total;
  const row = (part, tokens, price, amount, cls) => el("tr", { class: cls || "" },
    el("th", { scope: "row", text: part }), el("td", { class: "num", text: tokens }),
    el("td", { class: "num", text: price }), el("td", { class: "num", text: `${amount} ${cur}` }));
  const rows = [row("input", fmt(e.input_tokens - e.cached_input_tokens), `${p.input_per_million} ${cur}`, e.cost.input)];
  if (e.cached_input_tokens) rows.push(row("cached input", fmt(e.cached_input_tokens), `${p.cached_input_per_million} ${cur}`, e.cost.cached_input));
  rows.push(row("output", fmt(e.output_tokens), `${p.output_per_million} ${cur}`, e.cost.output));
  rows.push(row("total", fmt(e.input_tokens + e.output_tokens), "", e.cost.total, "total"));
  body.replaceChildren(...rows);
  $("ch-cost").hidden = false;
  $("ch-price").textContent = `Prices from ${e.price_file} (sha256 ${e.price_file_sha256.slice(0, 12)}…), read on ${p.read_on}: ${p.source}. ` +
    `${fmt(e.remaining_context)} of ${fmt(e.context_window)} context tokens left after input and output. ` +
    `The longest reply (${fmt(e.max_output.tokens)} tokens) would cost ${e.max_output.cost} ${cur}.`;
}
