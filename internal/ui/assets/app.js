// The operator's page: pending questions live from /global/event, grouped by
// session and directory, oldest first; answers go to OpenCode's routes.
import { formOf, pendingIDs, reply, reject } from "./api.js";
import { questionCard, answersOf, checkCounts, fieldNodes } from "./render.js";

const main = document.getElementById("questions");
const empty = document.getElementById("empty");
const status = document.getElementById("status");
const notifyButton = document.getElementById("notify");

const shown = new Map(); // question id → { form, card }
const gone = new Set(); // ids that ended while their form was being fetched

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
  const heading = document.createElement("h2");
  const code = document.createElement("code");
  code.textContent = form.sessionID;
  heading.append("Session ", code);
  if (form.directory) heading.append(` in ${form.directory}`);
  section.append(heading);
  place(section);
  return section;
}

// place puts a session in the order of its oldest question. Question ids
// sort by creation as plain strings, as OpenCode clients order them.
function place(section) {
  const later = [...main.querySelectorAll("section.session")].find((s) => s !== section && s.dataset.first > section.dataset.first);
  if (section.nextElementSibling !== later || !section.parentElement) main.insertBefore(section, later || null);
}

function updateCount() {
  const n = shown.size;
  empty.hidden = n > 0;
  document.title = n > 0 ? `(${n}) questiond` : "questiond";
}

async function asked(id) {
  if (shown.has(id)) return;
  gone.delete(id);
  let form;
  try {
    form = await formOf(id);
  } catch (err) {
    status.textContent = `Could not load question ${id}: ${err.message}`;
    return;
  }
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
  shown.set(id, { form, card });
  updateCount();
  if (document.hidden) notify(form, card);
}

function ended(id) {
  gone.add(id);
  const entry = shown.get(id);
  if (!entry) return;
  shown.delete(id);
  const { card } = entry;
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
  updateCount();
  if (hadFocus) focusQuestion(next || main.querySelector("article.question"));
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
    formError.textContent = message;
    // The server names the answer it refused: answers[3] ("Contact"): …
    const m = /^answers\[(\d+)\]/.exec(message);
    const node = m && fieldNodes(card)[Number(m[1])];
    if (node) {
      node.setAttribute("aria-invalid", "true");
      node.querySelector(".field-error").textContent = message;
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
    const problem = await reply(form.id, answersOf(card, form.fields)).catch((err) => err.message);
    busy(false);
    if (problem) showError(problem);
    else ended(form.id);
  });
  const dismiss = (action) => async () => {
    busy(true);
    const problem = await reject(form.id, action).catch((err) => err.message);
    busy(false);
    if (problem) showError(problem);
    else ended(form.id);
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
  const text = form.message?.trim() || first?.title || first?.header || "";
  const n = new Notification(`Question in session ${form.sessionID}`, {
    body: [text, first?.title].filter(Boolean).join("\n"),
    tag: form.id,
  });
  n.addEventListener("click", () => {
    window.focus();
    card.scrollIntoView({ block: "start" });
    focusQuestion(card);
    n.close();
  });
}

// The event stream: question.asked (pending ones replayed on connect),
// question.replied and question.rejected. On every (re)connect, questions
// that ended while the page was away are dropped.
function connect() {
  const events = new EventSource("global/event");
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
        pendingIDs().then((ids) => {
          for (const id of [...shown.keys()]) if (!ids.has(id)) ended(id);
        }).catch(() => {});
        break;
      case "question.asked":
        asked(properties.id);
        break;
      case "question.replied":
      case "question.rejected":
        ended(properties.requestID);
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
setUpNotifications();
updateCount();
connect();
