// Shared state (text, tokenizer, special-token policy) and the panels that listen to it.
// A panel is a module with `init(state)`; the chat panel has its own state (model, messages).
import { call, debounce } from "./api.js";
import * as tokens from "./tokens.js";
import * as compare from "./compare.js";
import * as stepper from "./stepper.js";
import * as stream from "./stream.js";
import * as chat from "./chat.js";

const PREFERRED = ["cl100k_base", "o200k_base", "qwen2", "gpt2"];

class State extends EventTarget {
  constructor() {
    super();
    this.text = "";
    this.ref = "";
    this.policy = "refuse";
    this.tokenizers = [];
    this.ids = [];
  }
  set(changes) {
    Object.assign(this, changes);
    this.dispatchEvent(new CustomEvent("change", { detail: changes }));
  }
  info(ref) { return this.tokenizers.find((t) => t.ref === ref); }
}

async function start() {
  const state = new State();
  const picker = document.getElementById("tokenizer");
  const policy = document.getElementById("policy");
  const text = document.getElementById("text");
  const info = document.getElementById("tokinfo");
  chat.init(); // loads the models while the tokenizer list loads

  const { tokenizers } = await call("/v1/tokenizers");
  tokenizers.sort((a, b) => a.ref.localeCompare(b.ref, "en", { numeric: true }));
  picker.replaceChildren(...tokenizers.map((t) => new Option(t.default ? `${t.ref} (default)` : t.ref, t.ref)));
  const first = PREFERRED.map((n) => tokenizers.find((t) => t.name === n && t.default)).find(Boolean) || tokenizers[0];
  picker.value = first.ref;
  const describe = (t) => `${t.rule} rule · ${t.vocab_size.toLocaleString("en")} ids · normalization ${t.normalization}${t.description ? " · " + t.description : ""}`;
  info.textContent = describe(first);

  for (const panel of [tokens, compare, stepper, stream]) panel.init(state);
  state.set({ tokenizers, ref: first.ref, policy: policy.value, text: text.value });

  picker.addEventListener("change", () => {
    info.textContent = describe(state.info(picker.value));
    state.set({ ref: picker.value });
  });
  policy.addEventListener("change", () => state.set({ policy: policy.value }));
  text.addEventListener("input", debounce(() => state.set({ text: text.value }), 250));
}

start().catch((err) => {
  const box = document.getElementById("tokens-error");
  box.hidden = false;
  box.textContent = `Could not load the tokenizer list: ${err.message}`;
});
