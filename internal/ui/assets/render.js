// Building a question's form. Every text from an agent goes in through
// textContent or an attribute value, never as markup.
import { plain, spans } from "./inline.js";

let serial = 0;

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key in node && typeof value !== "string") node[key] = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  node.append(...children.filter(Boolean));
  return node;
}

// inline renders the inline markdown agents write in their text as
// elements holding text (inline.js has the rule), so the markers never show.
export function inline(text) {
  return spans(text).map((s) => (s.mark ? el(s.mark, { text: s.text }) : document.createTextNode(s.text)));
}

const formatInput = {
  email: { type: "email", autocomplete: "email" },
  uri: { type: "url", placeholder: "https://example.com" },
  date: { type: "date" },
  "date-time": { type: "text", placeholder: "2026-01-31T09:30:00Z", inputmode: "text" },
};

// hint says what the field expects, as the server will check it.
function hint(f) {
  const parts = [];
  const range = (lo, hi, unit) => {
    if (lo != null && hi != null) return lo === hi ? `exactly ${lo} ${unit}` : `${lo}–${hi} ${unit}`;
    if (lo != null && lo > 0) return `at least ${lo} ${unit}`;
    if (hi != null) return `at most ${hi} ${unit}`;
    return "";
  };
  switch (f.kind) {
    case "multi": {
      // A required multi-select refuses no pick whatever its minItems says.
      const least = f.required ? Math.max(1, f.minItems ?? 0) : f.minItems;
      const count = least === 1 && f.maxItems == null ? "at least one" : range(least, f.maxItems, "").trim();
      parts.push(`Pick ${count || "any number"}`);
      break;
    }
    case "single": parts.push("Pick one"); break;
    case "integer": case "number": {
      const noun = f.kind === "integer" ? "A whole number" : "A number";
      if (f.minimum != null && f.maximum != null) parts.push(`${noun} from ${f.minimum} to ${f.maximum}`);
      else if (f.minimum != null) parts.push(`${noun}, at least ${f.minimum}`);
      else if (f.maximum != null) parts.push(`${noun}, at most ${f.maximum}`);
      else parts.push(noun);
      break;
    }
    case "text": {
      const names = { email: "An email address", uri: "An absolute URI", date: "A date", "date-time": "A date and time (RFC 3339)" };
      if (f.format) parts.push(names[f.format] || f.format);
      const length = range(f.minLength, f.maxLength, "characters");
      if (length) parts.push(length);
      // A regular expression is for programs: a person sees the
      // property's examples, or only that there is a format.
      if (f.pattern) parts.push(f.examples?.length ? `like ${f.examples.join(" or ")}` : "in the required format");
      break;
    }
  }
  if (f.default !== undefined && f.kind !== "boolean" && f.kind !== "single" && f.kind !== "multi") {
    parts.push(`default ${f.default}`);
  }
  const text = parts.join("; ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

const formatWords = {
  email: "an email address, like name@example.com",
  uri: "a full address, like https://example.com/",
  date: "a date, like 2026-01-31",
  "date-time": "a date and time, like 2026-01-31T09:30:00Z",
};

// forPerson rewords the server's refusal of field f's answer (the problem
// of "answers[i] (header): problem", in the API's words, which OpenCode
// clients and tests read) for the person at the field. A problem it does
// not know is shown as the server put it.
export function forPerson(f, problem) {
  const count = (n, noun) => `${n} ${noun}${n === "1" ? "" : "s"}`;
  let m;
  if (/^an answer is required/.test(problem)) return f.kind === "multi" ? "Pick at least one." : "This one needs an answer.";
  if ((m = /is shorter than (\d+) characters?$/.exec(problem))) return `Type at least ${count(m[1], "character")}.`;
  if ((m = /is longer than (\d+) characters?$/.exec(problem))) return `Type at most ${count(m[1], "character")}.`;
  if (/does not match the pattern/.test(problem)) {
    return f.examples?.length ? `Type it like ${f.examples.join(" or ")}.` : "Type it in the required format.";
  }
  if (f.format && formatWords[f.format] && / is not an? /.test(problem)) return `Type ${formatWords[f.format]}.`;
  if ((m = /is less than the minimum (\S+)$/.exec(problem))) return `Type a number of at least ${m[1]}.`;
  if ((m = /is greater than the maximum (\S+)$/.exec(problem))) return `Type a number of at most ${m[1]}.`;
  if (/is not an integer$|outside the safe integer range/.test(problem)) return "Type a whole number.";
  if (/is not a number$/.test(problem)) return "Type a number.";
  if ((m = /^pick at least (\d+) choices?/.exec(problem))) return `Pick at least ${m[1] === "1" ? "one" : m[1]}.`;
  if ((m = /^pick at most (\d+) choices?/.exec(problem))) return `Pick at most ${m[1]}.`;
  return problem.charAt(0).toUpperCase() + problem.slice(1);
}

function title(f, id) {
  const label = f.title || f.header || f.key;
  return [
    ...inline(label),
    f.required ? el("span", { class: "required", "aria-hidden": "true", text: " *" }) : null,
    f.required ? el("span", { class: "visually-hidden", text: " (required)" }) : null,
  ];
}

function describe(f, id) {
  const ids = [];
  const nodes = [];
  if (f.description && f.description !== f.title) {
    nodes.push(el("span", { class: "description", id: `${id}-desc` }, ...inline(f.description)));
    ids.push(`${id}-desc`);
  }
  const h = hint(f);
  if (h) {
    nodes.push(el("span", { class: "hint", id: `${id}-hint`, text: h }));
    ids.push(`${id}-hint`);
  }
  nodes.push(el("p", { class: "error field-error", id: `${id}-error`, role: "alert" }));
  ids.push(`${id}-error`);
  return { nodes, describedBy: ids.join(" ") };
}

// choices renders radios (single, boolean) or checkboxes (multi).
function choices(f, id) {
  const multi = f.kind === "multi";
  const { nodes, describedBy } = describe(f, id);
  const set = el("fieldset", { class: "choices", "aria-describedby": describedBy, "data-kind": f.kind }, el("legend", {}, ...title(f, id)));
  const error = nodes.pop();
  set.append(...nodes);
  let defaults = [];
  if (Array.isArray(f.default)) defaults = f.default.map(String);
  else if (f.default !== undefined) defaults = [String(f.default)];
  const options = [...(f.options || [])];
  if (!multi && !f.required && f.default === undefined) {
    options.push({ value: "", label: "No answer", description: "", skip: true });
  }
  options.forEach((o, i) => {
    const inputID = `${id}-o${i}`;
    const input = el("input", {
      type: multi ? "checkbox" : "radio", name: id, id: inputID, value: o.skip ? "" : o.label,
      required: !multi && f.required,
    });
    input.checked = o.skip ? true : defaults.includes(o.value);
    const label = el("label", { for: inputID }, el("span", { class: "label" }, ...inline(o.label)));
    if (o.description) label.append(el("span", { class: "description" }, ...inline(o.description)));
    set.append(el("div", { class: "choice" }, input, label));
  });
  set.append(error);
  return set;
}

function textField(f, id) {
  const { nodes, describedBy } = describe(f, id);
  const attrs = { id: `${id}-input`, name: id, required: f.required, "aria-describedby": describedBy };
  if (f.kind === "text") {
    Object.assign(attrs, formatInput[f.format] || { type: "text" });
    if (f.minLength != null) attrs.minlength = f.minLength;
    if (f.maxLength != null) attrs.maxlength = f.maxLength;
    // JSON Schema patterns match anywhere; an HTML pattern must match it all.
    // The server is the judge: a pattern the browser cannot read is ignored.
    if (f.pattern) attrs.pattern = `[\\s\\S]*(?:${f.pattern})[\\s\\S]*`;
  } else {
    Object.assign(attrs, { type: "number", step: f.kind === "integer" ? "1" : "any", inputmode: f.kind === "integer" ? "numeric" : "decimal" });
    if (f.minimum != null) attrs.min = f.minimum;
    if (f.maximum != null) attrs.max = f.maximum;
  }
  const input = el("input", attrs);
  if (f.default !== undefined) input.value = String(f.default);
  const label = el("label", { for: attrs.id }, ...title(f, id));
  return el("div", { class: "field", "data-kind": f.kind }, label, input, ...nodes);
}

// questionCard renders one pending question: the agent's message and one
// control group per field, in schema order.
export function questionCard(form) {
  const base = `q${++serial}`;
  const card = el("article", { class: "question", id: `question-${form.id}`, "aria-labelledby": `${base}-title` });
  const who = [form.agent && `agent ${form.agent}`, form.client, `asked ${new Date(form.createdAt).toLocaleTimeString()}`].filter(Boolean).join(" · ");
  card.append(el("p", { class: "meta", id: `${base}-title`, text: who }));
  if (form.deadline) {
    // Filled and kept current by the page's clock (tick).
    card.append(el("p", { class: "time-left" }, el("time", { datetime: form.deadline, title: `Ends unanswered at ${new Date(form.deadline).toLocaleTimeString()}: the agent then hears cancel` })));
  }
  if (form.message && form.message.trim()) card.append(el("p", { class: "message" }, ...inline(form.message)));
  const formEl = el("form", { class: "answer", "aria-label": form.message ? plain(form.message).slice(0, 80) : "Question" });
  form.fields.forEach((f, i) => {
    const id = `${base}-f${i}`;
    const node = f.kind === "single" || f.kind === "multi" || f.kind === "boolean" ? choices(f, id) : textField(f, id);
    node.dataset.index = String(i);
    formEl.append(node);
  });
  formEl.append(
    el("p", { class: "error form-error", role: "alert" }),
    el("div", { class: "actions" },
      el("button", { type: "submit", class: "submit", text: "Answer" }),
      el("button", { type: "button", class: "secondary dismiss", text: "Dismiss", title: "Not now: the agent hears cancel" }),
      el("button", { type: "button", class: "secondary decline", text: "Decline", title: "No: the agent hears decline" })),
  );
  card.append(formEl);
  return card;
}

// fieldNodes are the control groups of a card, in field order.
export function fieldNodes(card) {
  return [...card.querySelectorAll("[data-index]")];
}

// answersOf reads the answers in reply order: one list per field.
export function answersOf(card, fields) {
  return fieldNodes(card).map((node, i) => {
    const f = fields[i];
    if (node.tagName === "FIELDSET") {
      return [...node.querySelectorAll("input:checked")].map((input) => input.value).filter((v) => v !== "");
    }
    const value = node.querySelector("input").value.trim();
    return value === "" ? [] : [value];
  });
}

// checkCounts marks multi-selects picked outside their bounds, which the
// browser cannot check by itself.
export function checkCounts(card, fields) {
  fieldNodes(card).forEach((node, i) => {
    const f = fields[i];
    if (f.kind !== "multi") return;
    const boxes = node.querySelectorAll("input");
    const n = node.querySelectorAll("input:checked").length;
    let problem = "";
    const least = (m) => `Pick at least ${m === 1 ? "one" : m}.`;
    if (f.minItems != null && n < f.minItems && (n > 0 || f.required)) problem = least(f.minItems);
    if (f.required && n === 0) problem = least(Math.max(1, f.minItems || 1));
    if (f.maxItems != null && n > f.maxItems) problem = `Pick at most ${f.maxItems}.`;
    if (boxes[0]) boxes[0].setCustomValidity(problem);
  });
}

// timeLeft says how long a question has before it ends unanswered, to the
// second in its last ten minutes, coarser before.
export function timeLeft(ms) {
  const s = Math.ceil(ms / 1000);
  if (s <= 0) return "Time is up";
  const [d, h, m] = [Math.floor(s / 86400), Math.floor(s / 3600) % 24, Math.floor(s / 60) % 60];
  if (d > 0) return `${d} d ${h} h left`;
  if (h > 0) return `${h} h ${m} min left`;
  if (m >= 10) return `${m} min left`;
  if (m > 0) return `${m} min ${s % 60} s left`;
  return `${s} s left`;
}

// Under a minute left a question is urgent.
export const urgentMs = 60_000;

// received is what the agent got for each field of form from answers
// (answers[i] answers fields[i], as a reply sends them): the field's name
// (in the agent's markdown) and, as text, the operator's words with the
// value the agent reads when it differs; an empty answer takes the default,
// or leaves the property out.
export function received(form, answers) {
  return form.fields.map((f, i) => {
    const field = f.title || f.header || f.key;
    const picked = (answers?.[i] || []).map(String);
    const shown = (labels) => labels.map((label) => {
      const o = (f.options || []).find((o) => o.label === label);
      return o && o.value !== label && f.kind !== "boolean" ? `${plain(label)} (${o.value})` : plain(label);
    }).join(", ");
    if (picked.length > 0) return { field, value: f.options?.length ? shown(picked) : picked.join(", ") };
    if (f.default === undefined) return { field, value: "no answer", none: true };
    const defaults = (Array.isArray(f.default) ? f.default : [f.default]).map(String);
    const labels = f.options?.length
      ? defaults.map((v) => f.options.find((o) => o.value === v)?.label ?? v)
      : defaults;
    return { field, value: `${f.options?.length ? shown(labels) : labels.join(", ")} (default)` };
  });
}

// outcomes: what the operator sees of an ending, and what the agent heard.
const outcomes = {
  accept: { title: "Answered", heard: "The agent received these answers (accept):" },
  cancel: { title: "Dismissed", heard: "The agent heard cancel: not now." },
  decline: { title: "Declined", heard: "The agent heard decline: no." },
  timeout: { title: "Timed out", heard: "Nobody answered in time: the agent heard cancel." },
  elsewhere: { title: "Ended elsewhere", heard: "Dismissed or declined in another window, or withdrawn by the agent." },
  away: { title: "Ended", heard: "It ended while this page was reconnecting: answered, dismissed or declined elsewhere, or timed out or withdrawn." },
};

// confirmationOf confirms this page's own ending of a question.
export function confirmationOf(form, ending) {
  const what = `“${summaryOf(form)}”`;
  switch (ending.outcome) {
    case "accept": return `Answered ${what}: the agent has your answers.`;
    case "decline": return `Declined ${what}: the agent heard decline.`;
    default: return `Dismissed ${what}: the agent heard cancel.`;
  }
}

// summaryLine is a question's one-line name, in the agent's markdown: the
// first line of its message, else its first field's title; a long one is
// cut, its markers stripped.
function summaryLine(form) {
  const first = form.fields[0];
  const line = (form.message?.trim() || first?.title || first?.header || "Question").split("\n")[0];
  const text = plain(line);
  return text.length > 100 ? `${text.slice(0, 99)}…` : line;
}

// summaryOf is summaryLine without markers, for where only text goes.
export function summaryOf(form) {
  return plain(summaryLine(form));
}

// outcomeTitle is how an ending is named in the page. An ending comes from
// this page (mine), or from the event stream: an answer given elsewhere
// (its answers are in question.replied), or a question.rejected, whose
// cause the stream does not carry beyond the deadline having passed.
export function outcomeTitle(ending) {
  return outcomes[ending.outcome].title + (ending.outcome === "accept" && !ending.mine ? " elsewhere" : "");
}

// doneEntry renders a question that ended, collapsed: what happened and
// when on its line, what the agent received inside.
export function doneEntry(form, ending, at) {
  const o = outcomes[ending.outcome];
  const item = el("details", { class: `done ${ending.outcome}`, id: `done-${form.id}` });
  item.dataset.id = form.id;
  item.append(el("summary", {},
    el("span", { class: "outcome", text: outcomeTitle(ending) }), " ",
    el("span", { class: "what" }, ...inline(summaryLine(form))), " ",
    el("time", { datetime: at.toISOString(), text: at.toLocaleTimeString() })));
  const where = [`session ${form.sessionID}`, form.directory && `in ${form.directory}`, form.agent && `agent ${form.agent}`, form.client].filter(Boolean).join(" · ");
  item.append(el("p", { class: "meta", text: where }), el("p", { class: "heard", text: o.heard }));
  if (ending.outcome === "accept") {
    const list = el("dl", { class: "received" });
    for (const r of received(form, ending.answers)) {
      list.append(el("dt", {}, ...inline(r.field)), el("dd", { class: r.none ? "none" : null, text: r.value }));
    }
    item.append(list);
  }
  return item;
}
