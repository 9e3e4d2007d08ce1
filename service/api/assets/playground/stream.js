// Stream panel: feed ids to POST .../decode/step one step at a time and watch the text grow.
import { b64ToBytes, call, el, refPath, showError, spacedHex } from "./api.js";

let state, ids = [], fed = 0, streamState = null, timer = 0, busy = false, done = false;
const $ = (id) => document.getElementById(id);

export function init(s) {
  state = s;
  $("sm-use").addEventListener("click", () => { delete $("sm-ids").dataset.own; fed = 0; fill(); });
  $("sm-ids").addEventListener("input", () => { $("sm-ids").dataset.own = "1"; reset(); });
  $("sm-step").addEventListener("click", step);
  $("sm-play").addEventListener("click", () => (timer ? pause() : play()));
  $("sm-reset").addEventListener("click", reset);
  state.addEventListener("change", (e) => {
    if ("ref" in e.detail) reset();
    // until a person types ids of their own, the stream takes the tokens panel's ids
    if ("ids" in e.detail && !$("sm-ids").dataset.own) fill();
  });
}

function fill() {
  if (fed && !done) return;
  $("sm-ids").value = state.ids.join(", ");
  reset();
}

function parse() {
  const raw = $("sm-ids").value.replace(/[[\]]/g, " ").trim();
  if (!raw) return [];
  const out = raw.split(/[\s,]+/).map(Number);
  const bad = out.findIndex((x) => !Number.isInteger(x) || x < 0);
  if (bad >= 0) throw new Error(`id ${bad + 1} is not a non-negative integer`);
  return out;
}

function reset() {
  pause();
  fed = 0; streamState = null; done = false;
  $("sm-text").textContent = "";
  held(null);
  $("sm-log").tBodies[0].replaceChildren();
  showError($("sm-error"), null);
  try { ids = parse(); } catch (err) { ids = []; showError($("sm-error"), err); }
  progress();
}

function progress() {
  $("sm-progress").textContent = done ? `done: ${ids.length} ids fed` : `fed ${fed} of ${ids.length} ids`;
  $("sm-step").disabled = done || !ids.length;
  $("sm-play").disabled = done || !ids.length;
}

// The held-back bytes live in the step state ("u8.<offset>.<base64url bytes>"); show them.
function held(stateText) {
  const m = stateText && /^u8\.\d+\.([A-Za-z0-9_=-]*)$/.exec(stateText);
  const bytes = m && m[1] ? b64ToBytes(m[1]) : new Uint8Array();
  $("sm-held").hidden = !bytes.length;
  $("sm-held").textContent = bytes.length ? `held back: ${spacedHex(bytes)}` : "";
  return bytes;
}

async function step() {
  if (busy || done) return;
  busy = true;
  $("sm-step").disabled = true;
  const n = $("sm-mode").value === "one" ? 1 : 1 + Math.floor(Math.random() * 4);
  const chunk = ids.slice(fed, fed + n);
  const final = fed + chunk.length >= ids.length;
  try {
    const r = await call(`${refPath(state.ref)}/decode/step`, { ids: chunk, state: streamState, final });
    streamState = r.state;
    fed += chunk.length;
    done = final;
    $("sm-text").textContent += r.text;
    const bytes = held(r.state);
    $("sm-log").tBodies[0].append(el("tr", {},
      el("td", { text: JSON.stringify(chunk) + (final ? " (final)" : "") }),
      el("td", { text: JSON.stringify(r.text) }),
      el("td", { text: bytes.length ? spacedHex(bytes) : "–" })));
    const body = $("sm-log").tBodies[0];
    body.scrollTop = body.scrollHeight; // keep the latest step in view
    showError($("sm-error"), null);
  } catch (err) {
    pause();
    showError($("sm-error"), err);
  } finally {
    busy = false;
  }
  if (done) pause();
  progress();
}

function play() {
  $("sm-play").textContent = "Pause";
  timer = setInterval(step, 350);
}

function pause() {
  clearInterval(timer);
  timer = 0;
  $("sm-play").textContent = "Play";
}
