// The operator's page: pending questions live from /global/event, grouped by
// session and directory, oldest first; answers go to OpenCode's routes.
import { at, formOf, pendingIDs, reply, reject, serverNow, sessionTitle } from "./api.js";
import { plain } from "./inline.js";
import {
  questionCard, answersOf, checkCounts, confirmationOf, doneEntry, fieldNodes, forPerson, inline, timeLeft, urgentMs,
} from "./render.js";

const main = document.getElementById("questions");
const empty = document.getElementById("empty");
const loadingNote = document.getElementById("loading");
const failures = document.getElementById("failures");
const status = document.getElementById("status");
const notifyButton = document.getElementById("notify");
const confirmation = document.getElementById("confirmation");
const recent = document.getElementById("recent");
const recentList = document.getElementById("recent-list");

const shown = new Map(); // question id → { form, card }
const loading = new Set(); // ids whose form is being fetched
const failed = new Map(); // question id, or LIST → the failure shown for it
const gone = new Set(); // ids that ended while their form was being fetched
let listed = false; // whether the pending questions have been read once
const sending = new Map(); // question id → this page's ending of it, while it is sent

// RECENT is how many ended questions stay shown, collapsed.
const RECENT = 5;

// LIST keys the failure to read the pending questions among the questions'
// own; it sorts before every question id (que_…).
const LIST = "list";

function sessionKey(form) {
  return JSON.stringify([form.sessionID, form.directory]);
}

function sessionSection(form) {
  const key = sessionKey(form);
  for (const section of main.querySelectorAll("section.session")) {
    if (section.dataset.key === key) return section;
  }
  const section = document.createElement("section");
  section.className = "session";
  section.dataset.key = key;
  section.dataset.first = form.id;
  // The heading is the session's title as the TUI lists it (who asks and
  // what about), with its id and directory below; until the title is
  // known, or if it cannot be read, the id stands in.
  const heading = document.createElement("h2");
  const title = document.createElement("span");
  title.className = "title";
  title.textContent = "Session";
  const where = document.createElement("span");
  where.className = "where";
  const code = document.createElement("code");
  code.textContent = form.sessionID;
  where.append(code);
  if (form.directory) where.append(` in ${form.directory}`);
  heading.append(title, " ", where);
  section.append(heading);
  place(section);
  sessionTitle(form.sessionID, form.directory).then((text) => {
    if (!text) return;
    title.replaceChildren(...inline(text));
    heading.classList.add("titled");
  }).catch(() => {});
  return section;
}

// place puts a session in the order of its oldest question. Question ids
// sort by creation as plain strings, as OpenCode clients order them.
function place(section) {
  const later = [...main.querySelectorAll("section.session")].find((s) => s !== section && s.dataset.first > section.dataset.first);
  if (section.nextElementSibling !== later || !section.parentElement) main.insertBefore(section, later || null);
}

// showState says what the list holds. "No question is waiting" only once
// the pending questions are known and none is: until then "Loading…", and a
// question that could not be loaded shows as that failure, counted as
// waiting.
function showState() {
  const waiting = shown.size + failed.size - (failed.has(LIST) ? 1 : 0);
  const known = listed && loading.size === 0;
  empty.hidden = waiting > 0 || !known || failed.has(LIST);
  loadingNote.hidden = waiting > 0 || known || failed.has(LIST);
  document.title = waiting > 0 ? `(${waiting}) questiond` : "questiond";
}

// failure shows why key (a question id, or LIST) could not be loaded, with a
// button that tries again.
function failure(key, text, retry) {
  failed.get(key)?.remove();
  const node = document.createElement("div");
  node.className = "failure";
  node.id = `failed-${key}`;
  node.dataset.key = key;
  node.setAttribute("role", "alert");
  const message = document.createElement("p");
  message.className = "error";
  message.textContent = text;
  const again = document.createElement("button");
  again.type = "button";
  again.className = "secondary";
  again.textContent = "Try again";
  again.addEventListener("click", () => {
    cleared(key);
    retry();
  });
  node.append(message, again);
  const later = [...failures.children].find((n) => n.dataset.key > key);
  failures.insertBefore(node, later || null);
  failed.set(key, node);
  showState();
}

function cleared(key) {
  const node = failed.get(key);
  if (!node) return;
  node.remove();
  failed.delete(key);
  showState();
}

async function asked(id) {
  if (shown.has(id) || loading.has(id)) return;
  gone.delete(id);
  loading.add(id);
  showState();
  let form;
  try {
    form = await formOf(id);
  } catch (err) {
    // A failure shown already stays (and stays counted) until this one
    // replaces it.
    if (!gone.has(id)) failure(id, `Could not load question ${id}: ${err.message}`, () => asked(id));
    return;
  } finally {
    loading.delete(id);
    showState();
  }
  cleared(id);
  if (!form || gone.has(id) || shown.has(id)) return;
  const card = questionCard(form);
  wire(card, form);
  const section = sessionSection(form);
  const later = [...section.querySelectorAll("article.question")].find((c) => c.dataset.id > id);
  if (section.dataset.first > id) {
    section.dataset.first = id;
    place(section);
  }
  card.dataset.id = id;
  section.insertBefore(card, later || null);
  const entry = { form, card, deadline: form.deadline ? Date.parse(form.deadline) : NaN };
  shown.set(id, entry);
  showTimeLeft(entry);
  showState();
  if (document.hidden) notify(form, card);
}

// ended takes question id off the list; if it was shown, it stays under
// "Just answered" with how it ended: ending, else what its deadline tells.
function ended(id, ending) {
  gone.add(id);
  cleared(id);
  const entry = shown.get(id);
  if (!entry) return;
  shown.delete(id);
  const { card, form } = entry;
  ending ||= { outcome: serverNow() >= entry.deadline - 1000 ? "timeout" : "elsewhere" };
  remember(form, ending);
  const hadFocus = card.contains(document.activeElement);
  const section = card.parentElement;
  const next = card.nextElementSibling || section.nextElementSibling?.querySelector("article.question");
  card.remove();
  const rest = section?.querySelector("article.question");
  if (!rest) section?.remove();
  else if (section.dataset.first !== rest.dataset.id) {
    section.dataset.first = rest.dataset.id;
    place(section);
  }
  showState();
  if (hadFocus) focusQuestion(next || main.querySelector("article.question"));
}

// remember shows an ended question first under "Just answered", collapsed,
// and confirms this page's own endings.
function remember(form, ending) {
  document.getElementById(`done-${form.id}`)?.remove();
  recentList.prepend(doneEntry(form, ending, new Date()));
  while (recentList.children.length > RECENT) recentList.lastElementChild.remove();
  recent.hidden = false;
  if (ending.mine) confirmation.textContent = confirmationOf(form, ending);
}

// theirs is how the event stream says question id ended, unless this page
// is ending it the same way (the event may come before the page's own
// request returns).
function theirs(id, ending) {
  const mine = sending.get(id);
  return mine && (mine.outcome === "accept") === (ending?.outcome === "accept") ? mine : ending;
}

// showTimeLeft says how long a shown question has before it ends unanswered,
// by the daemon's clock.
function showTimeLeft({ card, deadline }) {
  const node = card.querySelector(".time-left");
  if (!node || Number.isNaN(deadline)) return;
  const ms = deadline - serverNow();
  node.querySelector("time").textContent = timeLeft(ms);
  node.classList.toggle("urgent", ms < urgentMs);
}

function focusQuestion(card) {
  const target = card?.querySelector("input, button");
  if (target) target.focus();
  else main.focus();
}

function wire(card, form) {
  const formEl = card.querySelector("form");
  const buttons = [...card.querySelectorAll("button")];
  const formError = card.querySelector(".form-error");
  const busy = (on) => buttons.forEach((b) => { b.disabled = on; });

  const showError = (message) => {
    for (const node of fieldNodes(card)) {
      node.removeAttribute("aria-invalid");
      node.querySelector(".field-error").textContent = "";
    }
    // The server names the answer it refused, in the API's words:
    // answers[3] ("Contact"): "ab" is shorter than 3 characters. The page
    // says it to the person at that field.
    const m = /^answers\[(\d+)\] \("(?:[^"\\]|\\.)*"\): ([\s\S]*)$/.exec(message);
    const node = m && fieldNodes(card)[Number(m[1])];
    formError.textContent = node ? "" : message;
    if (node) {
      node.setAttribute("aria-invalid", "true");
      node.querySelector(".field-error").textContent = forPerson(form.fields[Number(m[1])], m[2]);
      node.querySelector("input")?.focus();
    }
  };

  for (const node of fieldNodes(card)) {
    node.addEventListener("change", () => checkCounts(card, form.fields));
  }
  checkCounts(card, form.fields);

  formEl.addEventListener("submit", async (event) => {
    event.preventDefault();
    checkCounts(card, form.fields);
    if (!formEl.reportValidity()) return;
    busy(true);
    const answers = answersOf(card, form.fields);
    const ending = { outcome: "accept", answers, mine: true };
    sending.set(form.id, ending);
    const problem = await reply(form.id, answers).catch((err) => err.message);
    sending.delete(form.id);
    busy(false);
    if (problem) showError(problem);
    else ended(form.id, ending);
  });
  const dismiss = (action) => async () => {
    busy(true);
    const ending = { outcome: action || "cancel", mine: true };
    sending.set(form.id, ending);
    const problem = await reject(form.id, action).catch((err) => err.message);
    sending.delete(form.id);
    busy(false);
    if (problem) showError(problem);
    else ended(form.id, ending);
  };
  card.querySelector(".dismiss").addEventListener("click", dismiss(undefined));
  card.querySelector(".decline").addEventListener("click", dismiss("decline"));
}

// Desktop notifications: asked for on a click, as browsers require.
function setUpNotifications() {
  if (!("Notification" in window)) return;
  const show = () => {
    notifyButton.hidden = Notification.permission !== "default";
  };
  notifyButton.addEventListener("click", async () => {
    await Notification.requestPermission();
    show();
  });
  show();
}

function notify(form, card) {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  const first = form.fields[0];
  const text = plain(form.message?.trim() || first?.title || first?.header || "");
  const n = new Notification(`Question in session ${form.sessionID}`, {
    body: [text, plain(first?.title || "")].filter(Boolean).join("\n"),
    tag: form.id,
  });
  n.addEventListener("click", () => {
    window.focus();
    card.scrollIntoView({ block: "start" });
    focusQuestion(card);
    n.close();
  });
}

// list reads the pending questions: those that ended while the page was
// away are dropped (only those shown before the list was asked for: one
// asked since may be missing from it), any the stream has not announced are
// loaded, and from then on the page knows its list.
async function list() {
  const before = [...shown.keys(), ...failed.keys()].filter((id) => id !== LIST);
  let ids;
  try {
    ids = await pendingIDs();
  } catch (err) {
    failure(LIST, `Could not list the pending questions: ${err.message}`, list);
    return;
  }
  cleared(LIST);
  for (const id of before) if (!ids.has(id)) ended(id, { outcome: "away" });
  for (const id of ids) asked(id);
  listed = true;
  showState();
}

// The event stream: question.asked (pending ones replayed on connect),
// question.replied and question.rejected. On every (re)connect, questions
// that ended while the page was away are dropped.
function connect() {
  const events = new EventSource(at("global/event"));
  events.addEventListener("message", (event) => {
    let frame;
    try {
      frame = JSON.parse(event.data);
    } catch {
      return;
    }
    const { type, properties } = frame.payload || {};
    switch (type) {
      case "server.connected":
        status.textContent = "Connected: questions appear as agents ask them.";
        list();
        break;
      case "question.asked":
        asked(properties.id);
        break;
      case "question.replied":
        ended(properties.requestID, theirs(properties.requestID, { outcome: "accept", answers: properties.answers }));
        break;
      case "question.rejected":
        ended(properties.requestID, theirs(properties.requestID, null));
        break;
    }
  });
  events.addEventListener("error", () => {
    status.textContent = events.readyState === EventSource.CLOSED
      ? "Disconnected. Reload the page to reconnect."
      : "Reconnecting…";
  });
}

main.tabIndex = -1;
setInterval(() => shown.forEach(showTimeLeft), 1000);
setUpNotifications();
showState();
connect();
