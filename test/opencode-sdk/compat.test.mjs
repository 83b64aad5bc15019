// Compatibility of questiond with the real OpenCode SDK (@opencode-ai/sdk/v2,
// pinned in package-lock.json). Agents ask with plain HTTP, operators answer
// with the SDK exactly as OpenCode clients do, and every assertion is what
// OpenCode itself would answer (docs: shared reference, opencode-protocol.md).
//
// The whole suite runs twice: against the daemon as it starts by default (no
// credentials: open on loopback), and against one started with a password and
// an agent token, as OpenCode users run it (OPENCODE_SERVER_PASSWORD). With
// credentials, the SDK client gets them as OpenCode users give them, the
// agent side sends its bearer token, and a few tests check what callers
// without the right credentials get.
//
// The daemons run on the default, durable store (bolt, each in a data
// directory of its own), or on the store QUESTIOND_TEST_STORE names
// (QUESTIOND_TEST_STORE=postgres ./test/opencode-sdk/run.sh; see
// ../daemon-store.mjs).
//
// With QUESTIOND_TEST_UPSTREAM=opencode every daemon runs with --upstream in
// front of a real OpenCode server of its own (`opencode serve`, offline, see
// ../opencode.mjs) started with the mode's OPENCODE_SERVER_PASSWORD and
// USERNAME, which questiond then sends it: the same assertions hold for
// questiond's questions when OpenCode answers every route questiond does not
// own (`make compat` runs the suite both ways).
//
// run.sh builds the daemon and passes its path in QUESTIOND_BIN.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createOpencodeClient } from "@opencode-ai/sdk/v2";
import { daemonEnv, startDaemon as launch, stopDaemon, within } from "../daemon.mjs";
import { daemonStore, testStore } from "../daemon-store.mjs";
import { startOpencode, stopOpencode, testUpstream } from "../opencode.mjs";

const BIN = process.env.QUESTIOND_BIN;
const STORE = testStore("bolt");
const UPSTREAM = testUpstream();

// Every wait is bounded by one of these.
const STARTUP_MS = 15_000;
const OPENCODE_STARTUP_MS = 90_000; // seconds on an idle machine, more on a busy one
const EVENT_MS = 5_000;
const HTTP_MS = 5_000;
const TEST_MS = 30_000;
const HEARTBEAT_MS = 1_000; // --heartbeat 1s

// A directory with a space and a non-ASCII letter, so that the SDK's
// percent-encoded x-opencode-directory header has something to encode.
const ALICE = "/home/alice/my project/ü";
const BOB = "/home/bob/other";

const EVT_ID = /^evt_[0-9a-f]{12}[0-9A-Za-z]{14}$/;
const QUE_ID = /^que_[0-9a-f]{12}[0-9A-Za-z]{14}$/;

/** A random string of n base64url characters: passwords and tokens differ every run. */
const randomText = (n) => randomBytes(n).toString("base64url").slice(0, n);

/**
 * How the daemon is started, and the credentials its callers then need:
 * `operator` ({user, password}) for the SDK, `agentToken` for the agent side.
 */
const MODES = [
  { title: "questiond without credentials", env: {}, operator: null, agentToken: null },
  (() => {
    // A user other than OpenCode's default, so that the daemon is seen to
    // read OPENCODE_SERVER_USERNAME; a ':' in the password, which Basic
    // credentials allow (only the user name cannot have one).
    const operator = { user: `ops-${randomText(6)}`, password: `${randomText(20)}:${randomText(4)}` };
    const agentToken = randomText(24);
    return {
      title: "questiond with OPENCODE_SERVER_PASSWORD and an agent token",
      env: {
        OPENCODE_SERVER_USERNAME: operator.user,
        OPENCODE_SERVER_PASSWORD: operator.password,
        QUESTIOND_AGENT_TOKENS: `agent=${agentToken}`,
      },
      operator,
      agentToken,
    };
  })(),
];

// The daemon of the mode running now; the modes run one after the other.
let daemon; // { child, base, logs, mode, upstream }

for (const mode of MODES) {
  describe(`${mode.title} (--store ${STORE}${UPSTREAM ? ", --upstream opencode serve" : ""})`, () => {
    before(async () => {
      assert.ok(BIN, "QUESTIOND_BIN must name the questiond binary (run ./test/opencode-sdk/run.sh)");
      daemon = await startDaemon(BIN, mode);
    });

    after(async () => {
      if (!daemon) return;
      const { child, logs, upstream } = daemon;
      daemon = undefined;
      await stopDaemon(child);
      if (upstream) await stopOpencode(upstream);
      // Secrets are never logged, in any form a client sends them.
      for (const secret of secretsOf(mode)) {
        const leaked = logs.find((line) => line.includes(secret));
        assert.equal(leaked, undefined, "a log line holds a secret");
      }
    });

    compatibilityTests();
    if (mode.operator) credentialTests();
  });
}

// --- the daemon ------------------------------------------------------------

/**
 * A daemon in mode on an empty store, its environment without any questiond
 * setting or OpenCode credential this process may have inherited; with
 * QUESTIOND_TEST_UPSTREAM=opencode, in front of an OpenCode server of its
 * own that has the mode's credentials.
 */
async function startDaemon(bin, mode) {
  const store = daemonStore(STORE); // an empty one for each daemon
  const upstream = UPSTREAM ? await startOpencode({ env: daemonEnv(mode.env), startupMs: OPENCODE_STARTUP_MS }) : null;
  const d = await launch(bin, {
    args: ["--heartbeat", "1s", ...store.args, ...(upstream ? ["--upstream", upstream.url] : [])],
    env: daemonEnv(store.env, mode.env),
    startupMs: STARTUP_MS,
  }).catch(async (err) => {
    if (upstream) await stopOpencode(upstream);
    throw err;
  });
  try {
    await checkStarted(d, mode, upstream);
  } catch (err) {
    // Stopped here: after() stops only a daemon that started.
    await stopDaemon(d.child);
    if (upstream) await stopOpencode(upstream).catch(() => {});
    throw err;
  }
  return { child: d.child, base: d.base, logs: d.logs, mode, upstream };
}

/** Checks a daemon just started in mode: its logs, and that it fronts upstream, if any. */
async function checkStarted(d, mode, upstream) {
  for (const l of d.logs) JSON.parse(l); // every log line is one JSON object
  const entry = JSON.parse(d.line);
  assert.equal(entry.msg, "questiond listening", `listening line: ${d.line}`);
  assert.equal(entry.level, "info");
  assert.match(entry.addr, /^127\.0\.0\.1:\d+$/);
  if (upstream) {
    // The daemon stands in front of its OpenCode server, which answers the
    // health route through it (questiond alone would answer with its own
    // version).
    const headers = mode.operator ? { Authorization: basic(mode.operator.user, mode.operator.password) } : {};
    const health = async (base) => {
      const res = await fetch(`${base}/global/health`, { headers, signal: AbortSignal.timeout(HTTP_MS) });
      assert.equal(res.status, 200, `GET ${base}/global/health`);
      return res.json();
    };
    assert.deepEqual(await health(d.base), await health(upstream.url), "GET /global/health through questiond");
  }
}

// --- helpers ----------------------------------------------------------------

/** HTTP Basic credentials, as OpenCode clients send them. */
const basic = (user, password) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

/** The headers an operator of this mode sends: its Basic credentials, if any. */
function operatorHeaders() {
  const { operator } = daemon.mode;
  return operator ? { Authorization: basic(operator.user, operator.password) } : {};
}

/** The headers the agent of this mode sends: its bearer token, if any. */
function agentHeaders() {
  const { agentToken } = daemon.mode;
  return agentToken ? { Authorization: `Bearer ${agentToken}` } : {};
}

/** Every form in which a secret of the mode could leak. */
function secretsOf(mode) {
  const secrets = [];
  if (mode.operator) {
    const { user, password } = mode.operator;
    secrets.push(password, basic(user, password).slice("Basic ".length));
  }
  if (mode.agentToken) secrets.push(mode.agentToken);
  return secrets;
}

/** An SDK client of an operator of this mode, set up as OpenCode users set it up. */
function sdk(options = {}) {
  return createOpencodeClient({ baseUrl: daemon.base, ...options, headers: { ...operatorHeaders(), ...options.headers } });
}

/** The seed form: a single-select model and a multi-select list of symptoms. */
function seedSchema() {
  return {
    type: "object",
    properties: {
      model: {
        type: "string",
        title: "Model",
        description: "Equipment model?",
        enum: ["SY215C", "SY365H"],
      },
      symptoms: {
        type: "array",
        title: "Symptoms",
        description: "Select symptoms",
        items: { type: "string", enum: ["Black smoke", "Low power", "Overheating"] },
      },
    },
    required: ["model"],
  };
}

/** The agent side: POST /elicitations, as an MCP client would, with plain fetch. */
async function ask(extra = {}) {
  const res = await fetch(`${daemon.base}/elicitations`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...agentHeaders() },
    body: JSON.stringify({
      message: "The excavator reports a fault. Help me diagnose it.",
      requestedSchema: seedSchema(),
      ...extra,
    }),
    signal: AbortSignal.timeout(HTTP_MS),
  });
  const text = await res.text();
  assert.equal(res.status, 201, `POST /elicitations: ${text}`);
  const created = JSON.parse(text);
  assert.match(created.id, QUE_ID);
  assert.equal(created.status, "pending");
  assert.equal(res.headers.get("location"), `/elicitations/${created.id}`);
  return created;
}

/** The agent collects its result: GET /elicitations/{id}?wait=10s (long-poll). */
async function collect(id) {
  const res = await fetch(`${daemon.base}/elicitations/${id}?wait=10s`, {
    headers: agentHeaders(),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  assert.equal(res.status, 200, `GET /elicitations/${id}?wait=10s: ${text}`);
  return JSON.parse(text);
}

/** The QuestionRequest OpenCode lists and announces for an elicitation asked with `tool`. */
function questionRequest(created, tool) {
  const request = { id: created.id, sessionID: created.sessionID, questions: created.questions };
  if (tool) request.tool = tool;
  return request;
}

/**
 * Opens an SDK event stream and records what it yields. `next` waits (bounded)
 * for the next matching event after the last one returned; `close` aborts the
 * stream so that node --test can exit.
 */
async function openStream(label, subscribe) {
  const abort = new AbortController();
  const errors = [];
  const { stream } = await within(
    subscribe({
      signal: abort.signal,
      sseMaxRetryAttempts: 1, // a failed connection is a test failure, not a silent retry
      onSseError: (err) => errors.push(err),
    }),
    HTTP_MS,
    `${label} to subscribe`,
  );
  const events = [];
  const arrivals = [];
  let ended = false;
  let changed;
  let signalChange;
  const rearm = () => {
    changed = new Promise((resolve) => (signalChange = resolve));
  };
  rearm();
  const pump = (async () => {
    try {
      for await (const event of stream) {
        events.push(event);
        arrivals.push(performance.now());
        signalChange();
        rearm();
      }
    } catch (err) {
      errors.push(err);
    } finally {
      ended = true;
      signalChange();
    }
  })();

  let cursor = 0;
  const describeState = () =>
    `${label} got ${events.length} events: ${events.map((e) => e?.type ?? e?.payload?.type).join(", ")}` +
    (errors.length ? `; errors: ${errors.map((e) => e?.message ?? e).join("; ")}` : "");

  async function next(matches, what, ms = EVENT_MS) {
    const deadline = performance.now() + ms;
    for (;;) {
      for (let i = cursor; i < events.length; i++) {
        if (matches(events[i])) {
          cursor = i + 1;
          return events[i];
        }
      }
      cursor = events.length;
      if (ended) throw new Error(`${label} ended before ${what}; ${describeState()}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`timed out after ${ms} ms waiting for ${what}; ${describeState()}`);
      await within(changed, left, what).catch(() => {});
    }
  }

  async function close() {
    abort.abort();
    await within(pump, HTTP_MS, `${label} to close`);
  }

  return { events, arrivals, errors, next, close, indexOf: (e) => events.indexOf(e) };
}

const ofType = (type) => (e) => e.type === type;
const askedFor = (id) => (e) => e.type === "question.asked" && e.properties.id === id;
const globalOfType = (type) => (e) => e.payload?.type === type;
const globalAskedFor = (id) => (e) => e.payload?.type === "question.asked" && e.payload.properties.id === id;

/** Rejects a question through the SDK and checks that it worked. */
async function reject(id, client = sdk()) {
  const result = await client.question.reject({ requestID: id });
  assert.equal(result.response.status, 200, `reject ${id}: ${JSON.stringify(result.error)}`);
  assert.equal(result.data, true);
}

// --- the suite, run once per mode ---------------------------------------------

/** Every test of OpenCode compatibility; each mode runs all of them. */
function compatibilityTests() {
  // --- listing ----------------------------------------------------------------

  describe("client.question.list", () => {
    test("lists a pending question as OpenCode's QuestionRequest", { timeout: TEST_MS }, async () => {
      const tool = { messageID: "msg_2290d9d4a001UtHwsZBuH2z4id", callID: "call_q1" };
      const created = await ask({ sessionID: "ses_compatList", tool });
      const result = await sdk().question.list();

      assert.equal(result.response.status, 200);
      assert.equal(result.response.headers.get("content-type"), "application/json");
      assert.equal(result.error, undefined);
      assert.ok(Array.isArray(result.data), `data is ${JSON.stringify(result.data)}`);
      const listed = result.data.find((q) => q.id === created.id);
      assert.ok(listed, `${created.id} not in ${JSON.stringify(result.data)}`);

      // Key order is part of OpenCode's wire shape.
      assert.deepEqual(Object.keys(listed), ["id", "sessionID", "questions", "tool"]);
      assert.deepEqual(listed, questionRequest(created, tool));
      assert.equal(listed.sessionID, "ses_compatList");

      const [model, symptoms] = listed.questions;
      assert.equal(listed.questions.length, 2);
      assert.equal(model.header, "Model");
      assert.deepEqual(Object.keys(model).slice(0, 3), ["question", "header", "options"]);
      assert.ok(model.question.includes("Equipment model?"), model.question);
      assert.ok(model.options.some((o) => o.label === "SY215C"), JSON.stringify(model.options));
      assert.notEqual(model.multiple, true);
      assert.equal(symptoms.header, "Symptoms");
      assert.equal(symptoms.multiple, true);
      assert.deepEqual(
        symptoms.options.map((o) => o.label),
        ["Black smoke", "Low power", "Overheating"],
      );
      for (const option of [...model.options, ...symptoms.options]) {
        assert.deepEqual(Object.keys(option), ["label", "description"]);
        assert.equal(typeof option.description, "string");
      }
      await reject(created.id);
    });

    test("scopes by directory: client option, list parameter, other directories", { timeout: TEST_MS }, async () => {
      const alice = await ask({ directory: ALICE });
      const bob = await ask({ directory: BOB });
      const anywhere = await ask();
      const ids = (result) => {
        assert.equal(result.response.status, 200, JSON.stringify(result.error));
        return result.data.map((q) => q.id);
      };

      // createOpencodeClient({directory}) moves the directory into ?directory= for GETs.
      const aliceResult = await sdk({ directory: ALICE }).question.list();
      assert.equal(new URL(aliceResult.request.url).searchParams.get("directory"), ALICE);
      const seenByAlice = ids(aliceResult);
      assert.ok(seenByAlice.includes(alice.id), "alice's client sees alice's question");
      assert.ok(seenByAlice.includes(anywhere.id), "a question without a directory is seen everywhere");
      assert.ok(!seenByAlice.includes(bob.id), "alice's client does not see bob's question");

      const seenAsBob = ids(await sdk().question.list({ directory: BOB }));
      assert.ok(seenAsBob.includes(bob.id));
      assert.ok(seenAsBob.includes(anywhere.id));
      assert.ok(!seenAsBob.includes(alice.id));

      const seenUnscoped = ids(await sdk().question.list());
      for (const q of [alice, bob, anywhere]) assert.ok(seenUnscoped.includes(q.id), `${q.id} unscoped`);

      // The order is creation order.
      const order = seenUnscoped.filter((id) => [alice.id, bob.id, anywhere.id].includes(id));
      assert.deepEqual(order, [alice.id, bob.id, anywhere.id]);

      // A trailing slash names the same directory.
      assert.ok(ids(await sdk({ directory: `${ALICE}/` }).question.list()).includes(alice.id));

      for (const q of [alice, bob, anywhere]) await reject(q.id);
    });
  });

  // --- event streams ----------------------------------------------------------

  describe("client.event.subscribe", () => {
    test("server.connected first, then pending questions replayed, then live ones", { timeout: TEST_MS }, async () => {
      const earlier = await ask({ sessionID: "ses_compatReplay" });
      const stream = await openStream("GET /event", (opts) => sdk().event.subscribe(undefined, opts));
      try {
        const connected = await stream.next(ofType("server.connected"), "server.connected");
        assert.equal(stream.indexOf(connected), 0, "server.connected is the first frame");
        assert.deepEqual(Object.keys(connected), ["id", "type", "properties"]);
        assert.match(connected.id, EVT_ID);
        assert.deepEqual(connected.properties, {});

        const replayed = await stream.next(askedFor(earlier.id), `question.asked replay of ${earlier.id}`);
        assert.deepEqual(Object.keys(replayed), ["id", "type", "properties"]);
        assert.match(replayed.id, EVT_ID);
        assert.deepEqual(replayed.properties, questionRequest(earlier));

        const live = await ask({ sessionID: "ses_compatReplay" });
        const asked = await stream.next(askedFor(live.id), `live question.asked of ${live.id}`);
        assert.deepEqual(asked.properties, questionRequest(live));
        assert.notEqual(asked.id, replayed.id);

        const ids = stream.events.map((e) => e.id);
        assert.equal(new Set(ids).size, ids.length, `event ids repeat: ${ids}`);
        await reject(earlier.id);
        await reject(live.id);
      } finally {
        await stream.close();
      }
    });

    test("a directory-scoped stream carries its directory's questions only", { timeout: TEST_MS }, async () => {
      const client = sdk({ directory: ALICE });
      const stream = await openStream("GET /event (alice)", (opts) => client.event.subscribe(undefined, opts));
      try {
        await stream.next(ofType("server.connected"), "server.connected");
        // Published in this order, so bob's would arrive before alice's if it came at all.
        const bob = await ask({ directory: BOB });
        const alice = await ask({ directory: ALICE });
        const asked = await stream.next(askedFor(alice.id), `question.asked of ${alice.id}`);
        assert.deepEqual(asked.properties, questionRequest(alice));
        assert.ok(
          !stream.events.some(askedFor(bob.id)),
          "bob's question must not reach alice's stream",
        );
        await reject(bob.id);
        await reject(alice.id);
      } finally {
        await stream.close();
      }
    });

    test("server.heartbeat arrives every --heartbeat (1 s)", { timeout: TEST_MS }, async () => {
      const stream = await openStream("GET /event", (opts) => sdk().event.subscribe(undefined, opts));
      try {
        await stream.next(ofType("server.connected"), "server.connected");
        const first = await stream.next(ofType("server.heartbeat"), "first server.heartbeat", 3 * HEARTBEAT_MS);
        const second = await stream.next(ofType("server.heartbeat"), "second server.heartbeat", 3 * HEARTBEAT_MS);
        for (const beat of [first, second]) {
          assert.deepEqual(Object.keys(beat), ["id", "type", "properties"]);
          assert.match(beat.id, EVT_ID);
          assert.deepEqual(beat.properties, {});
        }
        assert.notEqual(first.id, second.id);
        const gap = stream.arrivals[stream.indexOf(second)] - stream.arrivals[stream.indexOf(first)];
        assert.ok(gap > 0.5 * HEARTBEAT_MS && gap < 2 * HEARTBEAT_MS, `heartbeats ${gap.toFixed(0)} ms apart`);
      } finally {
        await stream.close();
      }
    });
  });

  describe("client.global.event", () => {
    test("wraps events in {directory, project, payload}", { timeout: TEST_MS }, async () => {
      const pendingBefore = await ask({ directory: ALICE });
      const global = await openStream("GET /global/event", (opts) => sdk().global.event(opts));
      const local = await openStream("GET /event (alice)", (opts) =>
        sdk({ directory: ALICE }).event.subscribe(undefined, opts),
      );
      try {
        // OpenCode sends server.connected with the payload only.
        const connected = await global.next(globalOfType("server.connected"), "server.connected");
        assert.equal(global.indexOf(connected), 0, "server.connected is the first frame");
        assert.deepEqual(Object.keys(connected), ["payload"]);
        assert.equal(connected.payload.type, "server.connected");
        assert.match(connected.payload.id, EVT_ID);
        assert.deepEqual(connected.payload.properties, {});

        const replayed = await global.next(globalAskedFor(pendingBefore.id), "replayed question.asked");
        assert.deepEqual(Object.keys(replayed), ["directory", "project", "payload"]);
        assert.equal(replayed.directory, ALICE);
        assert.equal(replayed.project, "global");
        assert.deepEqual(replayed.payload.properties, questionRequest(pendingBefore));

        await local.next(ofType("server.connected"), "server.connected on /event");
        const live = await ask({ directory: ALICE, sessionID: "ses_compatGlobal" });
        const wrapped = await global.next(globalAskedFor(live.id), `question.asked of ${live.id}`);
        assert.deepEqual(Object.keys(wrapped), ["directory", "project", "payload"]);
        assert.equal(wrapped.directory, ALICE);
        assert.equal(wrapped.project, "global");
        assert.deepEqual(Object.keys(wrapped.payload), ["id", "type", "properties"]);
        assert.match(wrapped.payload.id, EVT_ID);
        assert.deepEqual(wrapped.payload.properties, questionRequest(live));

        // The payload is the very frame /event sends, same evt_ id.
        const plain = await local.next(askedFor(live.id), `question.asked of ${live.id} on /event`);
        assert.deepEqual(wrapped.payload, plain);

        await reject(live.id);
        const rejected = await global.next(
          (e) => e.payload?.type === "question.rejected" && e.payload.properties.requestID === live.id,
          `question.rejected of ${live.id}`,
        );
        assert.equal(rejected.directory, ALICE);
        assert.deepEqual(rejected.payload.properties, { sessionID: "ses_compatGlobal", requestID: live.id });

        // A question asked without a directory reaches every stream, alice's too.
        const unscoped = await ask();
        const unscopedWrapped = await global.next(globalAskedFor(unscoped.id), `question.asked of ${unscoped.id}`);
        const unscopedPlain = await local.next(askedFor(unscoped.id), `question.asked of ${unscoped.id} on /event`);
        assert.deepEqual(unscopedWrapped.payload, unscopedPlain);
        assert.deepEqual(unscopedPlain.properties, questionRequest(unscoped));
        await reject(unscoped.id);

        const beat = await global.next(globalOfType("server.heartbeat"), "server.heartbeat", 3 * HEARTBEAT_MS);
        assert.deepEqual(Object.keys(beat), ["payload"]);
        assert.match(beat.payload.id, EVT_ID);
        await reject(pendingBefore.id);
      } finally {
        await global.close();
        await local.close();
      }
    });
  });

  // --- answering ----------------------------------------------------------------

  describe("client.question.reply and reject", () => {
    test("reply: data true, the agent gets typed content, question.replied", { timeout: TEST_MS }, async () => {
      const stream = await openStream("GET /event", (opts) => sdk().event.subscribe(undefined, opts));
      try {
        await stream.next(ofType("server.connected"), "server.connected");
        const created = await ask({ sessionID: "ses_compatReply" });
        await stream.next(askedFor(created.id), "question.asked");

        const waiting = collect(created.id); // the agent is already long-polling
        const answers = [["SY215C"], ["Black smoke"]];
        const result = await sdk().question.reply({ requestID: created.id, answers });
        assert.equal(result.response.status, 200, JSON.stringify(result.error));
        assert.equal(result.response.headers.get("content-type"), "application/json");
        assert.equal(result.data, true);
        assert.equal(result.error, undefined);

        const ended = await waiting;
        assert.equal(ended.status, "resolved");
        assert.equal(ended.ending, "replied");
        assert.deepEqual(ended.result, { action: "accept", content: { model: "SY215C", symptoms: ["Black smoke"] } });

        const replied = await stream.next(ofType("question.replied"), "question.replied");
        assert.deepEqual(Object.keys(replied), ["id", "type", "properties"]);
        assert.match(replied.id, EVT_ID);
        assert.deepEqual(replied.properties, { sessionID: "ses_compatReply", requestID: created.id, answers });

        const listed = await sdk().question.list();
        assert.ok(!listed.data.some((q) => q.id === created.id), "a replied question is no longer listed");

        // OpenCode 1.15+: the second answer to the same question is a 404.
        const again = await sdk().question.reply({ requestID: created.id, answers });
        assert.equal(again.response.status, 404);
        assert.equal(again.error._tag, "QuestionNotFoundError");
      } finally {
        await stream.close();
      }
    });

    test("reject: data true, the agent gets cancel, question.rejected", { timeout: TEST_MS }, async () => {
      const stream = await openStream("GET /event", (opts) => sdk().event.subscribe(undefined, opts));
      try {
        await stream.next(ofType("server.connected"), "server.connected");
        const created = await ask({ sessionID: "ses_compatReject" });
        await stream.next(askedFor(created.id), "question.asked");

        const waiting = collect(created.id);
        const result = await sdk().question.reject({ requestID: created.id });
        // The SDK sends the reject without a body or Content-Type.
        assert.equal(result.request.headers.get("content-type"), null);
        assert.equal(result.response.status, 200, JSON.stringify(result.error));
        assert.equal(result.data, true);

        const ended = await waiting;
        assert.equal(ended.status, "resolved");
        assert.equal(ended.ending, "rejected");
        assert.deepEqual(ended.result, { action: "cancel" });

        const rejected = await stream.next(ofType("question.rejected"), "question.rejected");
        assert.deepEqual(Object.keys(rejected), ["id", "type", "properties"]);
        assert.deepEqual(rejected.properties, { sessionID: "ses_compatReject", requestID: created.id });
      } finally {
        await stream.close();
      }
    });

    test("a directory client answers its directory's questions and not others'", { timeout: TEST_MS }, async () => {
      const alice = await ask({ directory: ALICE });
      const asBob = await sdk({ directory: BOB }).question.reply({
        requestID: alice.id,
        answers: [["SY215C"], []],
      });
      // The POST keeps the percent-encoded header (the SDK only moves it for GETs).
      assert.equal(asBob.request.headers.get("x-opencode-directory"), encodeURIComponent(BOB));
      assert.equal(asBob.response.status, 404, JSON.stringify(asBob.error));
      assert.equal(asBob.error._tag, "QuestionNotFoundError");

      const waiting = collect(alice.id);
      const asAlice = await sdk({ directory: ALICE }).question.reply({
        requestID: alice.id,
        answers: [["SY365H"], ["Low power", "Overheating"]],
      });
      assert.equal(asAlice.request.headers.get("x-opencode-directory"), encodeURIComponent(ALICE));
      assert.equal(asAlice.response.status, 200, JSON.stringify(asAlice.error));
      assert.equal(asAlice.data, true);
      assert.deepEqual((await waiting).result, {
        action: "accept",
        content: { model: "SY365H", symptoms: ["Low power", "Overheating"] },
      });
    });
  });

  // --- errors, as the SDK reports them ----------------------------------------

  describe("errors through the SDK", () => {
    test("reply to an unknown que_ id: 404 QuestionNotFoundError", { timeout: TEST_MS }, async () => {
      const requestID = "que_000000000000doesnotexist00";
      const body = {
        _tag: "QuestionNotFoundError",
        requestID,
        message: `Question request not found: ${requestID}`,
      };

      // Result-tuple style: the parsed body, unchanged.
      const result = await sdk().question.reply({ requestID, answers: [["SY215C"], []] });
      assert.equal(result.response.status, 404);
      assert.equal(result.response.headers.get("content-type"), "application/json");
      assert.equal(result.data, undefined);
      assert.deepEqual(result.error, body);

      // throwOnError: an Error whose message is the body's message.
      await assert.rejects(
        sdk().question.reply({ requestID, answers: [["SY215C"], []] }, { throwOnError: true }),
        (err) => {
          assert.ok(err instanceof Error);
          assert.equal(err.message, body.message);
          assert.deepEqual(err.cause, { body, status: 404 });
          return true;
        },
      );

      const rejected = await sdk().question.reject({ requestID });
      assert.equal(rejected.response.status, 404);
      assert.deepEqual(rejected.error, body);
    });

    test("reply with an invalid answer: 400 naming the question; still pending", { timeout: TEST_MS }, async () => {
      const created = await ask();
      const result = await sdk().question.reply({ requestID: created.id, answers: [["SY999"], ["Black smoke"]] });
      assert.equal(result.response.status, 400);
      assert.equal(result.data, undefined);
      assert.deepEqual(Object.keys(result.error), ["name", "data"]);
      assert.equal(result.error.name, "BadRequest");
      assert.equal(result.error.data.kind, "Payload");
      assert.ok(
        result.error.data.message.startsWith('answers[0] ("Model")'),
        `message: ${JSON.stringify(result.error.data.message)}`,
      );
      assert.ok(result.error.data.message.includes("SY999"), result.error.data.message);

      await assert.rejects(
        sdk().question.reply({ requestID: created.id, answers: [["SY999"], []] }, { throwOnError: true }),
        (err) => {
          assert.ok(err.message.startsWith('answers[0] ("Model")'), err.message);
          assert.equal(err.cause.status, 400);
          assert.equal(err.cause.body.name, "BadRequest");
          return true;
        },
      );

      // The operator can try again: the question is still there and answerable.
      const listed = await sdk().question.list();
      assert.ok(listed.data.some((q) => q.id === created.id), "the question is still listed");
      const waiting = collect(created.id);
      const retry = await sdk().question.reply({ requestID: created.id, answers: [["SY215C"], ["Low power"]] });
      assert.equal(retry.data, true, JSON.stringify(retry.error));
      assert.deepEqual((await waiting).result, {
        action: "accept",
        content: { model: "SY215C", symptoms: ["Low power"] },
      });
    });

    test("bad request id abc: 400 Params, OpenCode's message", { timeout: TEST_MS }, async () => {
      const body = {
        name: "BadRequest",
        data: { message: 'Expected a string starting with "que", got "abc"\n  at ["requestID"]', kind: "Params" },
      };
      const reply = await sdk().question.reply({ requestID: "abc", answers: [] });
      assert.equal(reply.response.status, 400);
      assert.deepEqual(reply.error, body);

      const rejected = await sdk().question.reject({ requestID: "abc" });
      assert.equal(rejected.response.status, 400);
      assert.deepEqual(rejected.error, body);

      await assert.rejects(sdk().question.reply({ requestID: "abc", answers: [] }, { throwOnError: true }), {
        message: body.data.message,
      });
    });

    test("reply without answers: 400 Payload, as OpenCode", { timeout: TEST_MS }, async () => {
      const created = await ask();
      // The SDK leaves out the body entirely when `answers` is not given.
      const result = await sdk().question.reply({ requestID: created.id });
      assert.equal(result.request.headers.get("content-type"), null);
      assert.equal(result.response.status, 400);
      assert.deepEqual(result.error, {
        name: "BadRequest",
        data: { message: "Expected object, got undefined", kind: "Payload" },
      });
      await reject(created.id);
    });
  });
}

// --- credentials: what callers without the right ones get --------------------

/** Reads a response body up to its first event frame (without the blank line). */
async function firstFrame(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  try {
    while (!text.includes("\n\n")) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the stream ended after ${JSON.stringify(text)}`);
      text += value;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return text.slice(0, text.indexOf("\n\n"));
}

/** Tests of a daemon with credentials; the operator's and the agent's are in daemon.mode. */
function credentialTests() {
  describe("credentials, as OpenCode users set them", () => {
    test("a client without the right credentials gets OpenCode's 401 and changes nothing", { timeout: TEST_MS }, async () => {
      const created = await ask();
      const { user, password } = daemon.mode.operator;
      const clients = {
        "no credentials": createOpencodeClient({ baseUrl: daemon.base }),
        "a wrong password": sdk({ headers: { Authorization: basic(user, `${password}x`) } }),
        // The right password for OpenCode's default user: the daemon uses OPENCODE_SERVER_USERNAME.
        "the user opencode": sdk({ headers: { Authorization: basic("opencode", password) } }),
      };
      for (const [label, client] of Object.entries(clients)) {
        for (const [call, send] of [
          ["question.list", () => client.question.list()],
          ["question.reply", () => client.question.reply({ requestID: created.id, answers: [["SY215C"], []] })],
          ["question.reject", () => client.question.reject({ requestID: created.id })],
        ]) {
          const result = await send();
          const what = `${call} with ${label}`;
          assert.equal(result.response.status, 401, what);
          assert.equal(result.response.headers.get("www-authenticate"), 'Basic realm="Secure Area"', what);
          assert.equal(result.data, undefined, what);
          // OpenCode's 401 has an empty body, which the SDK reports as an empty error.
          assert.deepEqual(result.error, {}, what);
        }
      }

      // throwOnError: an Error naming the request, the status in its cause.
      await assert.rejects(
        createOpencodeClient({ baseUrl: daemon.base }).question.list(undefined, { throwOnError: true }),
        (err) => {
          assert.ok(err instanceof Error);
          assert.deepEqual(err.cause, { body: "", status: 401 });
          assert.ok(err.message.endsWith("/question → 401 Unauthorized: (empty response body)"), err.message);
          return true;
        },
      );

      // Refused replies and rejects left the question pending.
      const listed = await sdk().question.list();
      assert.equal(listed.response.status, 200, JSON.stringify(listed.error));
      assert.deepEqual(listed.data.find((q) => q.id === created.id), questionRequest(created));
      await reject(created.id);
    });

    test("event streams without credentials fail, as the SDK reports it", { timeout: TEST_MS }, async () => {
      const anonymous = createOpencodeClient({ baseUrl: daemon.base });
      for (const [label, subscribe] of [
        ["event.subscribe", (opts) => anonymous.event.subscribe(undefined, opts)],
        ["global.event", (opts) => anonymous.global.event(opts)],
      ]) {
        const errors = [];
        const { stream } = await subscribe({
          // Bounds a stream that wrongly opens; the test then fails on its events.
          signal: AbortSignal.timeout(HTTP_MS),
          sseMaxRetryAttempts: 1,
          onSseError: (err) => errors.push(err),
        });
        const events = [];
        await within(
          (async () => {
            for await (const event of stream) events.push(event);
          })(),
          2 * HTTP_MS,
          `${label} to end`,
        );
        assert.deepEqual(events, [], `${label} yielded events`);
        assert.deepEqual(errors.map((e) => e.message), ["SSE failed: 401 Unauthorized"], label);
      }
    });

    test("?auth_token= opens GET /event for a plain fetch, as EventSource clients use it", { timeout: TEST_MS }, async () => {
      const { user, password } = daemon.mode.operator;
      const url = new URL("/event", daemon.base);
      url.searchParams.set("auth_token", Buffer.from(`${user}:${password}`).toString("base64"));
      const abort = new AbortController();
      try {
        const res = await within(fetch(url, { signal: abort.signal }), HTTP_MS, "GET /event?auth_token=");
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("content-type"), "text/event-stream");
        const frame = await within(firstFrame(res.body), EVENT_MS, "the first frame of GET /event?auth_token=");
        assert.ok(frame.startsWith("data: "), frame);
        const connected = JSON.parse(frame.slice("data: ".length));
        assert.deepEqual(Object.keys(connected), ["id", "type", "properties"]);
        assert.equal(connected.type, "server.connected");
        assert.match(connected.id, EVT_ID);
      } finally {
        abort.abort();
      }

      url.searchParams.set("auth_token", Buffer.from(`${user}:${password}x`).toString("base64"));
      const refused = await fetch(url, { signal: AbortSignal.timeout(HTTP_MS) });
      assert.equal(refused.status, 401);
      assert.equal(refused.headers.get("www-authenticate"), 'Basic realm="Secure Area"');
      assert.equal(await refused.text(), "");
    });

    test("the agent's token cannot answer, an operator's credentials cannot ask", { timeout: TEST_MS }, async () => {
      const before = await sdk().question.list();
      assert.equal(before.response.status, 200, JSON.stringify(before.error));

      const asAgent = sdk({ headers: agentHeaders() });
      const listed = await asAgent.question.list();
      assert.equal(listed.response.status, 403);
      assert.deepEqual(Object.keys(listed.error), ["name", "data"]);
      assert.equal(listed.error.name, "Forbidden");
      assert.equal(typeof listed.error.data.message, "string");

      const elicit = (headers) =>
        fetch(`${daemon.base}/elicitations`, {
          method: "POST",
          headers: { "Content-Type": "application/json", ...headers },
          body: JSON.stringify({ message: "Refused?", requestedSchema: seedSchema() }),
          signal: AbortSignal.timeout(HTTP_MS),
        });
      const anonymous = await elicit({});
      assert.equal(anonymous.status, 401);
      assert.equal(anonymous.headers.get("www-authenticate"), 'Bearer realm="questiond"');
      const challenge = await anonymous.json();
      assert.equal(challenge.name, "Unauthorized");
      assert.equal(typeof challenge.data.message, "string");

      const asOperator = await elicit(operatorHeaders());
      assert.equal(asOperator.status, 403);
      assert.equal((await asOperator.json()).name, "Forbidden");

      const after = await sdk().question.list();
      assert.deepEqual(after.data, before.data, "a refused request created a question");
    });
  });
}
