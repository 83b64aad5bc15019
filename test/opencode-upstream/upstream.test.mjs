// OpenCode's own routes through questiond --upstream, driven with the real
// OpenCode SDK (@opencode-ai/sdk/v2, pinned in package-lock.json): sessions,
// messages with the (fake) model's turns, config, providers, agents and
// OpenCode's own questions (its question tool, listed, replied to and
// rejected). Every check runs twice — with a client of the OpenCode server
// itself (direct) and with one of questiond in front of it (overlay) — and
// the two answers must be the same.
//
// Both clients talk to the same OpenCode server. A read of what exists
// (a session, its messages, the lists) is made through both and must be
// identical: status, content type and parsed body. So must the events both
// clients' streams carry (one server publishes them). A write (a session created, a
// prompt, a reply) is made once through each, on objects of its own, and
// the answers are compared after normalise (below), which replaces only
// what two objects made at different moments necessarily have of their
// own: ids, times, the random slug.
//
// The whole suite runs twice: without credentials, and with OpenCode's
// OPENCODE_SERVER_PASSWORD and USERNAME, given to the OpenCode server and to
// questiond (which accepts them from operators and sends them upstream).
//
// run.sh builds questiond and test/offlineopencode and passes their paths in
// QUESTIOND_BIN and QUESTIOND_TEST_OPENCODE.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { createOpencodeClient } from "@opencode-ai/sdk/v2";
import { daemonEnv, startDaemon, stopDaemon } from "../daemon.mjs";
import { startOpencode, stopOpencode } from "../opencode.mjs";

const BIN = process.env.QUESTIOND_BIN;

const STARTUP_MS = 15_000;
const OPENCODE_STARTUP_MS = 90_000; // seconds on an idle machine, more on a busy one
const TURN_MS = 90_000; // one model turn: seconds, more on a busy machine
const TEST_MS = 4 * TURN_MS;

const randomText = (n) => randomBytes(n).toString("base64url").slice(0, n);

const MODES = [
  { title: "without credentials", env: {}, operator: null },
  (() => {
    const operator = { user: `ops-${randomText(6)}`, password: `${randomText(20)}:${randomText(4)}` };
    return {
      title: "with OPENCODE_SERVER_PASSWORD",
      env: { OPENCODE_SERVER_USERNAME: operator.user, OPENCODE_SERVER_PASSWORD: operator.password },
      operator,
    };
  })(),
];

// The servers of the mode running now; the modes run one after the other.
let opencode; // startOpencode's server: { url, ready: what its fake model does, … }
let daemon; // questiond --upstream opencode.url
let direct; // an SDK client of the OpenCode server
let overlay; // an SDK client of questiond in front of it
let headers; // the mode's operator's credentials, for clients of other options

/** A client like c (direct or overlay) with options besides. */
function like(c, options) {
  return createOpencodeClient({ baseUrl: c === direct ? opencode.url : daemon.base, headers, ...options });
}

for (const mode of MODES) {
  describe(`opencode serve directly and through questiond --upstream, ${mode.title}`, () => {
    before(async () => {
      assert.ok(BIN, "QUESTIOND_BIN must name the questiond binary (run ./test/opencode-upstream/run.sh)");
      opencode = await startOpencode({ env: daemonEnv(mode.env), startupMs: OPENCODE_STARTUP_MS });
      daemon = await startDaemon(BIN, {
        args: ["--store", "memory", "--upstream", opencode.url],
        env: daemonEnv(mode.env),
        startupMs: STARTUP_MS,
      });
      headers = mode.operator ? { Authorization: basic(mode.operator.user, mode.operator.password) } : {};
      direct = createOpencodeClient({ baseUrl: opencode.url, headers });
      overlay = createOpencodeClient({ baseUrl: daemon.base, headers });
    });

    after(async () => {
      if (daemon) await stopDaemon(daemon.child);
      if (opencode) await stopOpencode(opencode);
      const logs = daemon?.logs ?? [];
      daemon = opencode = undefined;
      if (mode.operator) {
        const { user, password } = mode.operator;
        for (const secret of [password, basic(user, password).slice("Basic ".length)]) {
          assert.equal(
            logs.find((line) => line.includes(secret)),
            undefined,
            "a log line holds a secret",
          );
        }
      }
    });

    suite(mode);
  });
}

// --- comparing the two sides -----------------------------------------------------

/** HTTP Basic credentials, as OpenCode clients send them. */
const basic = (user, password) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

/**
 * What a caller learns from an SDK result: the status, the parsed body
 * (data or error), the body's type and the headers named in headers.
 */
function answer(result, headers = []) {
  const out = {
    status: result.response?.status,
    contentType: result.response?.headers.get("content-type"),
    data: result.data,
    error: result.error,
  };
  for (const name of headers) out[name] = result.response?.headers.get(name);
  return out;
}

/**
 * Reads the same thing through both clients, one after the other, and
 * checks that the answers are identical (with the headers named in headers):
 * nothing changes in between. Returns the answer.
 */
async function identical(what, read, headers) {
  const fromDirect = answer(await read(direct), headers);
  const fromOverlay = answer(await read(overlay), headers);
  assert.deepEqual(fromOverlay, fromDirect, `${what}: through questiond ≠ directly`);
  return fromDirect;
}

/**
 * Makes the same change once through each client (both at once: they touch
 * objects of their own), and checks that the answers are the same once
 * normalised. Returns both answers as they came.
 */
async function same(what, write) {
  const results = await Promise.all([write(direct, "direct"), write(overlay, "overlay")]);
  const [fromDirect, fromOverlay] = results.map((r) => answer(r));
  assert.deepEqual(normalise(fromOverlay), normalise(fromDirect), `${what}: through questiond ≠ directly (normalised)`);
  return [fromDirect, fromOverlay];
}

// OpenCode's ids: a prefix naming the kind, then a time-ordered random part.
// The fake model's call ids are call_fake_<n>, n counting its replies.
const ID = /^(ses|msg|prt|que|per|call)_[0-9A-Za-z_]+$/;

/**
 * value with what necessarily differs between two objects made the same way
 * at different moments replaced:
 *  - ids (sessions, messages, parts, questions, the model's tool calls):
 *    each side's objects are its own, and OpenCode draws ids from the clock
 *    and randomness (the fake model numbers its calls in the order requests
 *    come). Each id becomes its kind and the order it first appears in
 *    within value, so that which id refers to which is still compared;
 *  - the numbers of a "time" object (created, updated, completed, start,
 *    end): the moments things happened;
 *  - a session's "slug": words OpenCode draws at random for each session.
 * Everything else — titles, directories, the model's texts and tokens, the
 * questions and answers, statuses, the order of lists — stays as it is.
 */
function normalise(value) {
  const seen = new Map();
  const count = {};
  const id = (s) => {
    if (!seen.has(s)) {
      const kind = ID.exec(s)[1];
      count[kind] = (count[kind] ?? 0) + 1;
      seen.set(s, `<${kind} ${count[kind]}>`);
    }
    return seen.get(s);
  };
  const walk = (v, key) => {
    if (typeof v === "string") return ID.test(v) ? id(v) : v;
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v === null || typeof v !== "object") return v;
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      if (key === "time" && typeof x === "number") out[k] = "<time>";
      else if (k === "slug" && typeof x === "string") out[k] = "<slug>";
      else out[k] = walk(x, k);
    }
    return out;
  };
  return walk(value);
}

// --- helpers over OpenCode's API -------------------------------------------------------

/** A prompt of text for the fake model, which every prompt must name. */
function prompt(sessionID, text) {
  return { sessionID, model: opencode.ready.model, parts: [{ type: "text", text }] };
}

/** Waits until client's OpenCode reports session idle (GET /session/status lists busy ones only). */
async function idle(client, sessionID) {
  await eventually(`session ${sessionID} idle`, async () => {
    const { data } = await client.session.status();
    return !data?.[sessionID] || data[sessionID].type === "idle";
  });
}

/** The pending question of session, once client's GET /question lists it. */
async function questionOf(client, sessionID) {
  let question;
  await eventually(`a question in ${sessionID}`, async () => {
    const { data } = await client.question.list();
    question = data?.find((q) => q.sessionID === sessionID);
    return question !== undefined;
  });
  return question;
}

/** Polls check until it holds, failing after TURN_MS. */
async function eventually(what, check) {
  const deadline = performance.now() + TURN_MS;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${TURN_MS} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Follows an event stream of the SDK, subscribe(options) (event.subscribe or
 * global.event), until close; next waits for an event that matches and
 * returns it.
 */
async function follow(subscribe) {
  const abort = new AbortController();
  const { stream } = await subscribe({ signal: abort.signal, sseMaxRetryAttempts: 1 });
  const events = [];
  const pump = (async () => {
    try {
      for await (const event of stream) events.push(event);
    } catch {
      // aborted by close
    }
  })();
  return {
    async next(what, matches) {
      let found;
      await eventually(what, async () => (found = events.find(matches)) !== undefined);
      return found;
    },
    async close() {
      abort.abort();
      await pump;
    },
  };
}

/**
 * Follows GET /event and GET /global/event through both clients. sameEvent
 * waits for an event that matches on all four streams (on /global/event,
 * the payload matches), checks that each stream gives the same event
 * directly and through questiond, and returns /event's.
 */
async function followBoth() {
  const streams = [];
  for (const c of [direct, overlay]) {
    streams.push(await follow((options) => c.event.subscribe(undefined, options)));
    streams.push(await follow((options) => c.global.event(options)));
  }
  const [plainDirect, globalDirect, plainOverlay, globalOverlay] = streams;
  return {
    async sameEvent(what, matches) {
      const global = (e) => e.payload !== undefined && matches(e.payload);
      const [a, b, c, d] = await Promise.all([
        plainDirect.next(what, matches),
        plainOverlay.next(what, matches),
        globalDirect.next(`${what} on /global/event`, global),
        globalOverlay.next(`${what} on /global/event`, global),
      ]);
      assert.deepEqual(b, a, `${what} on /event: through questiond ≠ directly`);
      assert.deepEqual(d, c, `${what} on /global/event: through questiond ≠ directly`);
      return a;
    },
    async close() {
      await Promise.all(streams.map((s) => s.close()));
    },
  };
}

// --- the suite, run once per mode -------------------------------------------------------

function suite(mode) {
  if (mode.operator) {
    test("a client without the credentials: the same 401 from both", { timeout: TEST_MS }, async () => {
      const anonymous = new Map([
        [direct, createOpencodeClient({ baseUrl: opencode.url })],
        [overlay, createOpencodeClient({ baseUrl: daemon.base })],
      ]);
      const { user, password } = mode.operator;
      const wrong = new Map([
        [
          direct,
          createOpencodeClient({ baseUrl: opencode.url, headers: { Authorization: basic(user, `${password}x`) } }),
        ],
        [
          overlay,
          createOpencodeClient({ baseUrl: daemon.base, headers: { Authorization: basic(user, `${password}x`) } }),
        ],
      ]);
      for (const [label, clients] of [
        ["no credentials", anonymous],
        ["a wrong password", wrong],
      ]) {
        for (const [call, send] of [
          ["session.list", (c) => c.session.list()],
          ["session.create", (c) => c.session.create({ title: "refused" })],
          ["config.get", (c) => c.config.get()],
          ["question.list", (c) => c.question.list()],
        ]) {
          const refused = await identical(`${call} with ${label}`, (c) => send(clients.get(c)), ["www-authenticate"]);
          assert.equal(refused.status, 401, `${call} with ${label}`);
        }
      }
      const sessions = await identical("session.list", (c) => c.session.list());
      assert.ok(!sessions.data.some((s) => s.title === "refused"), "a refused session.create made a session");
    });
  }

  describe("the server", () => {
    test("config.get, config.providers, provider.list, app.agents, global.health", { timeout: TEST_MS }, async () => {
      const config = await identical("config.get", (c) => c.config.get());
      assert.equal(config.status, 200);
      assert.equal(config.data.model, `${opencode.ready.model.providerID}/${opencode.ready.model.modelID}`);

      const providers = await identical("config.providers", (c) => c.config.providers());
      assert.equal(providers.status, 200);
      assert.deepEqual(
        providers.data.providers.map((p) => p.id),
        [opencode.ready.model.providerID],
      );

      const listed = await identical("provider.list", (c) => c.provider.list());
      assert.equal(listed.status, 200);
      assert.ok(listed.data.connected.includes(opencode.ready.model.providerID), JSON.stringify(listed.data.connected));

      const agents = await identical("app.agents", (c) => c.app.agents());
      assert.equal(agents.status, 200);
      assert.ok(
        agents.data.some((a) => a.name === "build"),
        JSON.stringify(agents.data.map((a) => a.name)),
      );

      const health = await identical("global.health", (c) => c.global.health());
      assert.equal(health.status, 200);
      assert.equal(health.data.healthy, true);
    });
  });

  describe("client.session", () => {
    test("create, get, update, children, list, delete", { timeout: TEST_MS }, async () => {
      const roots = await same("session.create", (c) => c.session.create({ title: "sdk session" }));
      assert.equal(roots[0].status, 200, JSON.stringify(roots[0].error));
      assert.equal(roots[0].data.title, "sdk session");
      const ids = roots.map((r) => r.data.id); // [direct's, questiond's]
      const mine = (side) => ids[side === "direct" ? 0 : 1];

      // Each side's session, read through both clients.
      for (const id of ids) {
        const got = await identical(`session.get ${id}`, (c) => c.session.get({ sessionID: id }));
        assert.equal(got.status, 200);
        assert.equal(got.data.id, id);
      }

      const updated = await same("session.update", (c, side) =>
        c.session.update({ sessionID: mine(side), title: "renamed" }),
      );
      assert.equal(updated[0].status, 200, JSON.stringify(updated[0].error));
      assert.equal(updated[0].data.title, "renamed");

      // A child of each; its title given (OpenCode's default one holds the time).
      const children = await same("session.create with a parentID", (c, side) =>
        c.session.create({ title: "sdk child", parentID: mine(side) }),
      );
      assert.equal(children[0].data.parentID, ids[0]);
      const childIDs = children.map((r) => r.data.id);
      const kids = await same("session.children", (c, side) => c.session.children({ sessionID: mine(side) }));
      assert.deepEqual(
        kids[0].data.map((s) => s.id),
        [childIDs[0]],
      );
      for (const id of ids) await identical(`session.children ${id}`, (c) => c.session.children({ sessionID: id }));

      const all = await identical("session.list", (c) => c.session.list());
      assert.equal(all.status, 200);
      for (const id of [...ids, ...childIDs])
        assert.ok(
          all.data.some((s) => s.id === id),
          `${id} not listed`,
        );
      const rootsOnly = await identical("session.list roots", (c) => c.session.list({ roots: true }));
      assert.ok(
        ids.every((id) => rootsOnly.data.some((s) => s.id === id)),
        "a root is not listed",
      );
      assert.ok(!childIDs.some((id) => rootsOnly.data.some((s) => s.id === id)), "a child is listed with the roots");

      const deleted = await same("session.delete", (c, side) => c.session.delete({ sessionID: mine(side) }));
      assert.equal(deleted[0].status, 200, JSON.stringify(deleted[0].error));
      assert.equal(deleted[0].data, true);
      for (const id of [...ids, "ses_000000000000000000000000000"]) {
        const gone = await identical(`session.get ${id} (deleted or unknown)`, (c) => c.session.get({ sessionID: id }));
        assert.equal(gone.status, 404);
        assert.equal(gone.error.name, "NotFoundError");
      }
      await identical("session.list after the deletes", (c) => c.session.list());
    });
  });

  describe("a client of another directory", () => {
    test("sessions made and listed there (x-opencode-directory, ?directory=)", { timeout: TEST_MS }, async () => {
      const path = await identical("path.get", (c) => c.path.get());
      assert.equal(path.status, 200);
      // Beside OpenCode's project, in its directory (removed with it); a
      // space and a non-ASCII letter, which the SDK percent-encodes.
      const elsewhere = join(dirname(path.data.directory), "my project ü");
      mkdirSync(elsewhere, { recursive: true });

      const created = await same("session.create there", (c) =>
        like(c, { directory: elsewhere }).session.create({ title: "elsewhere" }),
      );
      assert.equal(created[0].status, 200, JSON.stringify(created[0].error));
      assert.equal(created[0].data.directory, elsewhere);
      const there = await identical("session.list there", (c) => like(c, { directory: elsewhere }).session.list());
      for (const r of created)
        assert.ok(
          there.data.some((s) => s.id === r.data.id),
          `${r.data.id} not listed there`,
        );
      await identical("session.list in the project", (c) => c.session.list());
      await identical("path.get there", (c) => like(c, { directory: elsewhere }).path.get());
      const deleted = await same("session.delete there", (c, side) =>
        like(c, { directory: elsewhere }).session.delete({ sessionID: created[side === "direct" ? 0 : 1].data.id }),
      );
      assert.equal(deleted[0].data, true, JSON.stringify(deleted[0].error));
      await identical("session.list there after", (c) => like(c, { directory: elsewhere }).session.list());
    });
  });

  describe("client.session messages", () => {
    test("prompt the model, then messages and message", { timeout: TEST_MS }, async () => {
      const ids = (await same("session.create", (c) => c.session.create({ title: "sdk prompt" }))).map(
        (r) => r.data.id,
      );
      const mine = (side) => ids[side === "direct" ? 0 : 1];

      // The prompt is held until the model's turn ends: a long request through questiond.
      const turns = await same("session.prompt", (c, side) => c.session.prompt(prompt(mine(side), "Hello.")));
      assert.equal(turns[0].status, 200, JSON.stringify(turns[0].error));
      assert.equal(turns[0].data.info.role, "assistant");
      assert.ok(
        turns[0].data.parts.some((p) => p.type === "text" && p.text === opencode.ready.answer),
        JSON.stringify(turns[0].data.parts),
      );

      for (const id of ids) await idle(direct, id);
      const histories = await same("session.messages", (c, side) => c.session.messages({ sessionID: mine(side) }));
      assert.deepEqual(
        histories[0].data.map((m) => m.info.role),
        ["user", "assistant"],
      );
      assert.deepEqual(
        histories[0].data[0].parts.map((p) => [p.type, p.text]),
        [["text", "Hello."]],
      );
      for (const [i, id] of ids.entries()) {
        await identical(`session.messages ${id}`, (c) => c.session.messages({ sessionID: id }));
        const last = histories[i].data.at(-1).info.id;
        const one = await identical(`session.message ${last}`, (c) =>
          c.session.message({ sessionID: id, messageID: last }),
        );
        assert.equal(one.data.info.id, last);
      }
    });
  });

  describe("OpenCode's own questions", () => {
    for (const ending of ["reply", "reject"]) {
      test(`the model asks; question.list, then question.${ending}`, { timeout: TEST_MS }, async () => {
        const ids = (await same("session.create", (c) => c.session.create({ title: `sdk ${ending}` }))).map(
          (r) => r.data.id,
        );
        const mine = (side) => ids[side === "direct" ? 0 : 1];

        // Both sides' streams carry both sides' events: one server publishes them.
        const streams = await followBoth();
        try {
          await questionTurn(ids, mine, ending, streams.sameEvent);
        } finally {
          await streams.close();
        }
      });
    }
  });
}

/**
 * The question test's turn in the sessions ids ([direct's, questiond's]):
 * the model asks through each side, the question is listed, ended (a reply
 * or a reject) and its events seen; sameEvent waits for an event on both
 * clients' streams and checks they are the same.
 */
async function questionTurn(ids, mine, ending, sameEvent) {
  const prompted = await same("session.promptAsync", (c, side) =>
    c.session.promptAsync(prompt(mine(side), opencode.ready.askPrompt)),
  );
  assert.equal(prompted[0].status, 204, JSON.stringify(prompted[0].error));
  // Each side's question, as that side lists it.
  const asked = await Promise.all([questionOf(direct, ids[0]), questionOf(overlay, ids[1])]);
  assert.deepEqual(normalise(asked[1]), normalise(asked[0]), "the questions asked through questiond and directly");
  assert.deepEqual(asked[0].questions, opencode.ready.question.questions);
  for (const q of asked) {
    const event = await sameEvent(
      `question.asked of ${q.id}`,
      (e) => e.type === "question.asked" && e.properties.id === q.id,
    );
    assert.deepEqual(event.properties, q);
  }

  const listed = await identical("question.list with both pending", (c) => c.question.list());
  for (const q of asked)
    assert.ok(
      listed.data.some((l) => l.id === q.id),
      `${q.id} not listed`,
    );
  const directory = (await direct.session.get({ sessionID: ids[0] })).data.directory;
  const scoped = await identical("question.list in the project's directory", (c) => c.question.list({ directory }));
  for (const q of asked)
    assert.ok(
      scoped.data.some((l) => l.id === q.id),
      `${q.id} not listed in ${directory}`,
    );
  await identical("question.list elsewhere", (c) => c.question.list({ directory: "/nowhere/else" }));

  const label = opencode.ready.question.questions[0].options[0].label;
  const ended = await same(`question.${ending}`, (c, side) => {
    const requestID = asked[side === "direct" ? 0 : 1].id;
    return ending === "reply" ? c.question.reply({ requestID, answers: [[label]] }) : c.question.reject({ requestID });
  });
  assert.equal(ended[0].status, 200, JSON.stringify(ended[0].error));
  assert.equal(ended[0].data, true);

  const endingType = ending === "reply" ? "question.replied" : "question.rejected";
  for (const q of asked) {
    const event = await sameEvent(
      `${endingType} of ${q.id}`,
      (e) => e.type === endingType && e.properties.requestID === q.id,
    );
    assert.equal(event.properties.sessionID, q.sessionID);
  }

  // A second ending of the same question: OpenCode's 404, through both.
  for (const q of asked) {
    const again = await identical(`question.${ending} again`, (c) =>
      ending === "reply"
        ? c.question.reply({ requestID: q.id, answers: [[label]] })
        : c.question.reject({ requestID: q.id }),
    );
    assert.equal(again.status, 404);
  }

  for (const id of ids) await idle(direct, id);
  const listedAfter = await identical("question.list after", (c) => c.question.list());
  for (const q of asked) assert.ok(!listedAfter.data.some((l) => l.id === q.id), `${q.id} still listed`);
  const histories = await same("session.messages after the question", (c, side) =>
    c.session.messages({ sessionID: mine(side) }),
  );
  const call = histories[0].data.flatMap((m) => m.parts).find((p) => p.type === "tool" && p.tool === "question");
  if (ending === "reply") {
    assert.equal(call?.state.status, "completed", JSON.stringify(call));
    assert.ok(call.state.output.includes(label), call.state.output);
  } else {
    assert.equal(call?.state.status, "error", JSON.stringify(call));
    assert.match(call.state.error, /dismissed/);
  }
  for (const id of ids) await identical(`session.messages ${id}`, (c) => c.session.messages({ sessionID: id }));
}
