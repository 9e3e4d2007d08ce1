// The literals a tokenizer matches whole: its special tokens and its other added tokens, as
// GET /v1/tokenizers/{ref} lists them (`special_tokens`, `added_tokens`). Gemma's <bos>,
// Mistral's [INST] and DeepSeek's <｜User｜> are boxed in a rendered prompt, as <|im_start|> is.
import { call, el, refPath } from "./api.js";

const known = new Map(); // tokenizer ref -> a promise of its pattern (null: it has no literals)

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

// One pattern of every literal, longest first, so that a literal inside a longer one is not
// boxed alone; asked once per tokenizer (a failed answer is asked again next time).
export function literalsOf(ref) {
  if (!known.has(ref)) {
    const asked = call(refPath(ref)).then((info) => {
      const all = [...Object.keys(info.special_tokens), ...Object.keys(info.added_tokens || {})];
      const literals = [...new Set(all)].filter(Boolean).sort((a, b) => b.length - a.length);
      return literals.length ? new RegExp(`(${literals.map(escape).join("|")})`, "u") : null;
    });
    asked.catch(() => known.delete(ref));
    known.set(ref, asked);
  }
  return known.get(ref);
}

// The text as nodes, each literal of `pattern` in a box (`span.sp`), the rest as plain text.
export function boxed(text, pattern) {
  if (!pattern) return [document.createTextNode(text)];
  return text.split(pattern).map((part, i) =>
    i % 2 ? el("span", { class: "sp", text: part }) : document.createTextNode(part))
    .filter((node) => node.textContent !== "");
}
