// The rule for the inline markdown agents write in what operators read:
// **strong**, *emphasis* and `code` are marks, their markers never show;
// anything else stays as written (underscores are text: ids and snake_case
// are full of them). Pure functions, no DOM: Go surfaces share the rule
// through the package internal/ui/inline, whose Pattern is this one and
// whose Spans answers as spans does (e2e/ui checks both on the same texts).

// A mark's text does not start or end with whitespace and holds no "*";
// code spans one line. Whitespace is spelled out (not \s) to mean what Go's
// RE2 means by it.
const marks = /\*\*([^*\t\n\v\f\r ]|[^*\t\n\v\f\r ][^*]*[^*\t\n\v\f\r ])\*\*|\*([^*\t\n\v\f\r ]|[^*\t\n\v\f\r ][^*]*[^*\t\n\v\f\r ])\*|`([^`\n]+)`/g;

// spans splits text into its marked and plain runs, in order, markers
// removed: [{mark: "" | "strong" | "em" | "code", text}], none empty.
export function spans(text) {
  const s = String(text ?? "");
  const out = [];
  let at = 0;
  for (const m of s.matchAll(marks)) {
    if (m.index > at) out.push({ mark: "", text: s.slice(at, m.index) });
    if (m[1] !== undefined) out.push({ mark: "strong", text: m[1] });
    else if (m[2] !== undefined) out.push({ mark: "em", text: m[2] });
    else out.push({ mark: "code", text: m[3] });
    at = m.index + m[0].length;
  }
  if (at < s.length) out.push({ mark: "", text: s.slice(at) });
  return out;
}

// plain is text without its markers, for where only text goes (a
// notification, an accessible name, a summary line).
export function plain(text) {
  return spans(text).map((s) => s.text).join("");
}
