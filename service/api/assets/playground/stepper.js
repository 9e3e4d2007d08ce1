// Merge stepper: the merges of a short text one step at a time, from POST .../explain.
import { Problem, call, debounce, el, hexToBytes, isAbort, pieceLabel, refPath, showError, showWs } from "./api.js";

const TEXTBOOK = { text: "abc", merges: "98 99 256\n97 98 257\n257 99 258", pattern: "none" };
const CORPUS = ("low low low low low lower lower newest newest newest newest newest newest " +
  "widest widest widest. A tokenizer learns the pairs that occur most often; the lowest, newest " +
  "merges come first, then longer and wider tokens are built from them.\n").repeat(3);
const RULES = ["pairs", "ranks"];

let state, lanes = [], k = 0, controller = null, lastSource = "store", lastKey = "";
const $ = (id) => document.getElementById(id);

export function init(s) {
  state = s;
  $("st-corpus").value = CORPUS;
  const refresh = debounce(load, 300);
  state.addEventListener("change", (e) => { if ("ref" in e.detail && source() === "store") load(); });
  $("st-source").addEventListener("change", onSource);
  $("st-text").addEventListener("input", refresh);
  $("st-merges").addEventListener("input", refresh);
  $("st-pattern").addEventListener("change", load);
  $("st-trainbtn").addEventListener("click", trainSmall);
  $("st-first").addEventListener("click", () => go(0));
  $("st-back").addEventListener("click", () => go(k - 1));
  $("st-next").addEventListener("click", () => go(k + 1));
  $("st-last").addEventListener("click", () => go(total()));
  $("st-range").addEventListener("input", () => go(Number($("st-range").value)));
}

const source = () => $("st-source").value;
const total = () => Math.max(0, ...lanes.map((l) => l.resp?.steps || 0));

function onSource() {
  const src = source();
  $("st-inline").hidden = src === "store";
  $("st-train").hidden = src !== "trained";
  $("st-note").hidden = src !== "textbook";
  if (src === "textbook") {
    $("st-text").value = TEXTBOOK.text;
    $("st-merges").value = TEXTBOOK.merges;
    $("st-pattern").value = TEXTBOOK.pattern;
  } else if (src === "trained" && lastSource !== "trained") {
    $("st-text").value = "lowest newer wider";
    $("st-merges").value = "";
    $("st-pattern").value = "gpt2";
    lastSource = src;
    trainSmall();
    return;
  } else if (src === "store") {
    $("st-text").value = "Hello world, lowest newer";
  }
  lastSource = src;
  load();
}

function parseMerges(text) {
  return text.split("\n").map((l) => l.trim()).filter(Boolean).map((line, n) => {
    const nums = line.split(/[\s,]+/).map(Number);
    if (nums.length !== 3 || nums.some((x) => !Number.isInteger(x))) throw new Error(`merge line ${n + 1}: write three ids, "left right new"`);
    return nums;
  });
}

async function trainSmall() {
  const status = $("st-trainstatus");
  status.textContent = "training…";
  try {
    const r = await call("/v1/playground/train", { text: $("st-corpus").value, merges: Number($("st-nmerges").value), pattern: $("st-pattern").value === "none" ? "gpt2" : $("st-pattern").value });
    $("st-merges").value = r.merges.map((m) => m.join(" ")).join("\n");
    $("st-pattern").value = r.pattern;
    status.textContent = `learned ${r.merges.length} merges: ${r.tokens.slice(0, 8).map((h) => JSON.stringify(showWs(pieceLabel(hexToBytes(h)).text))).join(", ")}${r.tokens.length > 8 ? ", …" : ""}`;
    showError($("st-error"), null);
    await load();
  } catch (err) {
    status.textContent = "";
    showError($("st-error"), err);
  }
}

async function load() {
  if (!state.ref) return;
  if (controller) controller.abort();
  controller = new AbortController();
  const { signal } = controller;
  const text = $("st-text").value;
  const key = JSON.stringify([source(), state.ref, text, $("st-merges").value, $("st-pattern").value]);
  try {
    let next;
    if (source() === "store") {
      const resp = await call(`${refPath(state.ref)}/explain`, { text }, signal);
      next = [{ title: `${state.ref} (${resp.rule} rule)`, rule: resp.rule, resp }];
    } else {
      const merges = parseMerges($("st-merges").value);
      const body = { text, merges, pattern: $("st-pattern").value };
      next = await Promise.all(RULES.map((rule) => call("/v1/playground/explain", { ...body, rule }, signal)
        .then((resp) => ({ title: `${rule} rule`, rule, resp }), (err) => {
          if (isAbort(err) || !(err instanceof Problem)) throw err;
          return { title: `${rule} rule`, rule, err };
        })));
    }
    lanes = next;
    $("st-lanes").dataset.text = text; // what the lanes explain (tests wait for it)
    showError($("st-error"), null);
  } catch (err) {
    if (isAbort(err)) return;
    lanes = [];
    showError($("st-error"), err);
  }
  go(key === lastKey ? k : 0); // the same question again keeps its place
  lastKey = key;
}

function go(to) {
  k = Math.max(0, Math.min(total(), to));
  const n = total();
  $("st-range").max = n;
  $("st-range").value = k;
  $("st-pos").textContent = `${k} / ${n}`;
  $("st-first").disabled = $("st-back").disabled = k === 0;
  $("st-next").disabled = $("st-last").disabled = k >= n;
  $("st-lanes").replaceChildren(...lanes.map(renderLane));
}

// The symbols of every piece after the first `upto` steps of the lane, and the step just made.
function replayLane(resp, upto) {
  let left = upto, last = null;
  const pieces = resp.pieces.map((p, pi) => {
    const syms = p.start.map((id, i) => ({ id, hex: p.start_bytes[i] }));
    const n = Math.min(left, p.steps.length);
    for (let s = 0; s < n; s++) {
      const step = p.steps[s];
      const sym = { id: step.id, hex: step.bytes, fresh: s === n - 1 && n === left };
      if (step.kind === "whole") syms.splice(0, syms.length, sym);
      else syms.splice(step.at, 2, sym);
      if (sym.fresh) last = { step, piece: p, index: pi, number: upto };
    }
    left -= n;
    return syms;
  });
  return { pieces, last };
}

const show = (hex) => { const l = pieceLabel(hexToBytes(hex)); return l.whole ? showWs(l.text) : `‹${l.text}›`; };

function renderLane(lane) {
  const box = el("section", { class: "lane", "data-rule": lane.rule, "aria-label": lane.title }, el("h3", { text: lane.title }));
  if (lane.err) { box.append(el("p", { class: "error", text: lane.err.message })); return box; }
  const { resp } = lane;
  const upto = Math.min(k, resp.steps);
  const { pieces, last } = replayLane(resp, upto);
  box.append(el("p", { class: "stepinfo", "aria-live": "polite", text: describe(lane, upto, last) }));
  const seq = el("div", { class: "seq", role: "list", "aria-label": "Current tokens" },
    ...pieces.map((syms, pi) => el("div", { class: "piece", role: "listitem", title: `piece ${pi + 1}: ${JSON.stringify(resp.pieces[pi].text)}` },
      ...syms.map((s) => el("span", { class: s.fresh ? "chip new" : "chip" }, show(s.hex), el("small", { text: String(s.id) }))))));
  const current = pieces.flat().map((s) => s.id);
  box.append(seq,
    el("p", { class: "final" }, "current ids: ", el("code", { class: "cur-ids", text: JSON.stringify(current) })),
    el("p", { class: "final" }, `final ids after ${resp.steps} ${resp.steps === 1 ? "merge" : "merges"}: `, el("code", { class: "final-ids", text: JSON.stringify(resp.ids) })));
  return box;
}

function describe(lane, upto, last) {
  const n = lane.resp.steps;
  const bytes = lane.resp.pieces.reduce((a, p) => a + p.start.length, 0);
  if (!last) return n ? `Start: ${bytes} bytes, one token each. ${n} merges to go.` : `No merge applies: ${bytes} single-byte tokens.`;
  const { step, piece } = last;
  const end = upto === n ? (lane.rule === "pairs" ? " Done: no listed pair of adjacent ids is left." : " Done: no adjacent pair's bytes form a token.") : "";
  const where = `in piece ${JSON.stringify(piece.text)}`;
  const head = `Step ${upto} of ${n}: `;
  if (step.kind === "whole") return `${head}${JSON.stringify(piece.text)} is itself token ${step.id}: the ranks rule returns a piece that is a token whole.${end}`;
  const sym = (id) => { const i = piece.start.indexOf(id); return i >= 0 ? show(piece.start_bytes[i]) : show(stepBytes(piece, id)); };
  const why = lane.rule === "pairs" ? `the listed pair (${step.left}, ${step.right}) with the lowest rank, ${step.rank}` : `the adjacent pair whose bytes form the lowest-ranked token, rank ${step.rank}`;
  return `${head}merge «${sym(step.left)}» (${step.left}) + «${sym(step.right)}» (${step.right}) → «${show(step.bytes)}» = id ${step.id} ${where}: ${why}.${end}`;
}

function stepBytes(piece, id) {
  const step = piece.steps.find((s) => s.id === id);
  return step ? step.bytes : "";
}
