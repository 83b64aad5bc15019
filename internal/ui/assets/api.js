// The routes the page uses: questiond's form route and OpenCode's public
// question routes. Credentials are the browser's own (HTTP Basic, asked for
// when the page was opened, or given in the address), sent by it on these
// same-origin requests. Paths are relative to the page, /ui, so that a proxy
// may serve questiond under a path of its own.

// pageBase is the page's address without what a browser refuses in a
// request: an address opened as http://user:password@host/ui gives relative
// URLs its credentials, and fetch rejects every such URL. The origin never
// carries them, and the credentials are already the browser's.
const pageBase = new URL(location.pathname, location.origin);

// at resolves a route path against the page's clean address.
export function at(path) {
  return new URL(path, pageBase).href;
}

const json = { "Content-Type": "application/json", Accept: "application/json" };

// skew is the daemon's clock minus this browser's, in milliseconds, read
// from the Date of its answers: a question's time left is the daemon's to
// count, and an operator's clock may be wrong. A Date has whole seconds, so
// a difference within that rounding is taken as none.
let skew = 0;

function heard(res) {
  const date = Date.parse(res.headers.get("Date") || "");
  if (Number.isNaN(date)) return;
  const diff = date + 500 - Date.now();
  skew = Math.abs(diff) > 1500 ? diff : 0;
}

// serverNow is the daemon's time now, as far as its answers tell.
export function serverNow() {
  return Date.now() + skew;
}

// formOf returns the expected form of a pending question, or null when it
// is not pending any more.
export async function formOf(id) {
  const res = await fetch(at(`questiond/question/${encodeURIComponent(id)}/form`), { headers: { Accept: "application/json" } });
  heard(res);
  if (res.status === 404) return null;
  if (!res.ok) throw new Error(await messageOf(res));
  return res.json();
}

// pendingIDs lists the ids of every pending question.
export async function pendingIDs() {
  const res = await fetch(at("question"), { headers: { Accept: "application/json" } });
  heard(res);
  if (!res.ok) throw new Error(await messageOf(res));
  return new Set((await res.json()).map((q) => q.id));
}

// sessionTitle is the title the TUI lists session id under (GET
// /session/{id}, scoped to the directory the page groups it by), without
// the TUI's mark of a session that waits.
export async function sessionTitle(id, directory) {
  const scope = directory ? `?directory=${encodeURIComponent(directory)}` : "";
  const res = await fetch(at(`session/${encodeURIComponent(id)}${scope}`), { headers: { Accept: "application/json" } });
  if (!res.ok) throw new Error(await messageOf(res));
  const info = await res.json();
  return String(info.title || "").replace(/^\[\?\] /, "");
}

// reply sends the answers; it resolves to "" when they were taken, else the
// server's reason.
export async function reply(id, answers) {
  return send(`question/${encodeURIComponent(id)}/reply`, { answers });
}

// reject dismisses the question (cancel), or declines it.
export async function reject(id, action) {
  return send(`question/${encodeURIComponent(id)}/reject`, action ? { action } : undefined);
}

async function send(path, body) {
  const res = await fetch(at(path), {
    method: "POST",
    headers: json,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.ok ? "" : messageOf(res);
}

async function messageOf(res) {
  try {
    const body = await res.json();
    return body?.data?.message || body?.message || `${res.status} ${res.statusText}`;
  } catch {
    return `${res.status} ${res.statusText}`;
  }
}
