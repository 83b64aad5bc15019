// Interoperability of questiond's /mcp endpoint with the official TypeScript
// MCP SDK client (@modelcontextprotocol/sdk, pinned in package-lock.json):
// Client + StreamableHTTPClientTransport, exactly as an MCP host connects.
// The agent side speaks MCP only; the operator side is plain fetch against
// the OpenCode routes (GET /question, POST /question/{id}/reply|reject), so
// each assertion checks what one side did against what the other side saw.
//
// One daemon for the whole file: memory store (or the one
// QUESTIOND_TEST_STORE names: QUESTIOND_TEST_STORE=postgres
// ./test/mcp-sdk/run.sh; see ../daemon-store.mjs), an operator password, one
// agent token, and --keepalive 1s so that progress notifications come often
// enough to be seen within a short wait.
//
// run.sh builds the daemon and passes its path in QUESTIOND_BIN.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { daemonEnv, startDaemon as launch, stopDaemon, within } from "../daemon.mjs";
import { daemonStore, testStore } from "../daemon-store.mjs";

const BIN = process.env.QUESTIOND_BIN;
const STORE = testStore("memory");

// Every wait is bounded by one of these.
const STARTUP_MS = 15_000;
const HTTP_MS = 5_000;
const APPEAR_MS = 5_000; // for a question to show up in, or leave, GET /question
const TEST_MS = 30_000;
const POLL_MS = 25;

// The daemon sends a progress notification every KEEPALIVE while a call
// waits. The call below times out after CALL_TIMEOUT_MS without one and the
// operator answers only after WAIT_BEFORE_REPLY_MS, so the call survives
// only if progress notifications arrive and reset its timeout.
const KEEPALIVE = "1s";
const CALL_TIMEOUT_MS = 2_000;
const WAIT_BEFORE_REPLY_MS = 2_500;

const QUE_ID = /^que_[0-9a-f]{12}[0-9A-Za-z]{14}$/;

/** A random string of n base64url characters: secrets differ every run. */
const randomText = (n) => randomBytes(n).toString("base64url").slice(0, n);

const OPERATOR = { user: `ops-${randomText(6)}`, password: randomText(20) };
const AGENT_TOKEN = randomText(24);

// The sessions of this file; their capabilities are set in before().
const SES_USER = "ses_mcpUser";
const SES_PARENT = "ses_mcpChild";
const SES_BOSS = "ses_mcpBoss"; // SES_PARENT's parent
const SES_NONE = "ses_mcpNone";

let daemon; // { child, base, logs }

// --- the daemon ------------------------------------------------------------

async function startDaemon(bin) {
  const store = daemonStore(STORE);
  const d = await launch(bin, {
    args: [...store.args, "--keepalive", KEEPALIVE],
    env: daemonEnv(store.env, {
      QUESTIOND_OPERATOR_USERNAME: OPERATOR.user,
      QUESTIOND_OPERATOR_PASSWORD: OPERATOR.password,
      QUESTIOND_AGENT_TOKENS: `interop=${AGENT_TOKEN}`,
    }),
    startupMs: STARTUP_MS,
  });
  const entry = JSON.parse(d.line);
  assert.match(entry.addr, /^127\.0\.0\.1:\d+$/, `listening line: ${JSON.stringify(entry)}`);
  return { child: d.child, base: d.base, logs: d.logs };
}

// --- helpers ----------------------------------------------------------------

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const basic = (user, password) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
const operatorHeaders = () => ({ Authorization: basic(OPERATOR.user, OPERATOR.password) });
const agentHeaders = () => ({ Authorization: `Bearer ${AGENT_TOKEN}` });

/** A plain HTTP request; returns the status and the parsed JSON body (or the raw text). */
async function call(method, path, { headers = {}, body } = {}) {
  const res = await fetch(new URL(path, daemon.base), {
    method,
    headers: body === undefined ? headers : { "Content-Type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(HTTP_MS),
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

/** PUT /sessions/{id} as the agent; checks the status and the record it answers. */
async function putSession(id, capability, parentSessionID) {
  const body = { questionCapability: capability };
  if (parentSessionID) body.parentSessionID = parentSessionID;
  const res = await call("PUT", `/sessions/${id}`, { headers: agentHeaders(), body });
  assert.ok(res.status === 201 || res.status === 200, `PUT /sessions/${id}: ${res.status} ${res.text}`);
  // The record names the session, its capability and its parent (only for "parent").
  const { id: gotID, questionCapability, parentSessionID: gotParent } = res.json ?? {};
  assert.deepEqual({ id: gotID, questionCapability, parentSessionID: gotParent }, { id, ...body, parentSessionID }, res.text);
}

/** The operator's GET /question. */
async function listQuestions() {
  const res = await call("GET", "/question", { headers: operatorHeaders() });
  assert.equal(res.status, 200, `GET /question: ${res.text}`);
  assert.ok(Array.isArray(res.json), `GET /question: ${res.text}`);
  return res.json;
}

/** Polls GET /question (bounded) until a question matches; returns it. */
async function waitForQuestion(matches, what) {
  const deadline = performance.now() + APPEAR_MS;
  let listed = [];
  while (performance.now() < deadline) {
    listed = await listQuestions();
    const found = listed.find(matches);
    if (found) return found;
    await sleep(POLL_MS);
  }
  throw new Error(`timed out after ${APPEAR_MS} ms waiting for ${what}; GET /question: ${JSON.stringify(listed)}`);
}

/** Polls GET /question (bounded) until the question id is gone. */
async function waitGone(id) {
  const deadline = performance.now() + APPEAR_MS;
  while (performance.now() < deadline) {
    if (!(await listQuestions()).some((q) => q.id === id)) return;
    await sleep(POLL_MS);
  }
  throw new Error(`timed out after ${APPEAR_MS} ms waiting for ${id} to leave GET /question`);
}

/**
 * The operator's GET /event stream, read with plain fetch. `next` waits
 * (bounded) for an event that matches; `close` ends the stream.
 */
async function operatorEvents() {
  const abort = new AbortController();
  const res = await within(
    fetch(new URL("/event", daemon.base), { headers: operatorHeaders(), signal: abort.signal }),
    HTTP_MS,
    "GET /event",
  );
  assert.equal(res.status, 200, "GET /event");
  const events = [];
  let wake = () => {};
  const pump = (async () => {
    let buffered = "";
    try {
      for await (const chunk of res.body.pipeThrough(new TextDecoderStream())) {
        buffered += chunk;
        let end;
        while ((end = buffered.indexOf("\n\n")) >= 0) {
          const frame = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          const data = frame
            .split("\n")
            .filter((line) => line.startsWith("data: "))
            .map((line) => line.slice("data: ".length))
            .join("\n");
          if (data) events.push(JSON.parse(data));
          wake();
        }
      }
    } catch (err) {
      if (!abort.signal.aborted) throw err;
    }
  })();
  return {
    async next(matches, what) {
      const deadline = performance.now() + APPEAR_MS;
      for (;;) {
        const found = events.find(matches);
        if (found) return found;
        const left = deadline - performance.now();
        if (left <= 0) {
          throw new Error(`timed out waiting for ${what}; events: ${events.map((e) => e.type).join(", ")}`);
        }
        await within(new Promise((resolve) => (wake = resolve)), left, what).catch(() => {});
      }
    },
    async close() {
      abort.abort();
      await within(pump, HTTP_MS, "GET /event to close").catch(() => {});
    },
  };
}

/** The clients a test opened; each test closes its own. */
function clientPool() {
  const open = [];
  return {
    /**
     * Connects an MCP client to /mcp, naming the session in the URL
     * (via "query") or in the X-Questiond-Session header (via "header").
     */
    async connect({ session, via = "query", headers = agentHeaders() } = {}) {
      const url = new URL("/mcp", daemon.base);
      const requestHeaders = { ...headers };
      if (session && via === "query") url.searchParams.set("session", session);
      if (session && via === "header") requestHeaders["X-Questiond-Session"] = session;
      const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: requestHeaders } });
      const client = new Client({ name: "questiond-mcp-interop", version: "1.0.0" });
      client.onerror = () => {}; // a failed connect is asserted on by the caller
      open.push(client);
      await within(client.connect(transport, { timeout: HTTP_MS }), HTTP_MS + 1_000, `connect to ${url}`);
      return client;
    },
    async closeAll() {
      await Promise.allSettled(open.map((c) => within(c.close(), HTTP_MS, "client.close")));
    },
  };
}

/** Runs body with a fresh client pool and closes every client it opened. */
async function withClients(body) {
  const pool = clientPool();
  try {
    return await body(pool);
  } finally {
    await pool.closeAll();
  }
}

/** Checks that err is the transport's HTTP error with this status. */
const httpStatus = (status) => (err) => {
  assert.ok(err instanceof StreamableHTTPError, `expected a StreamableHTTPError, got ${err?.stack ?? err}`);
  assert.equal(err.code, status, err.message);
  return true;
};

const toolNames = async (client) =>
  (await within(client.listTools(), HTTP_MS, "tools/list")).tools.map((t) => t.name).sort();

/** The single text content of a tool result. */
function textOf(result) {
  assert.ok(Array.isArray(result.content), JSON.stringify(result));
  const texts = result.content.filter((c) => c.type === "text");
  assert.equal(texts.length, 1, `one text content: ${JSON.stringify(result.content)}`);
  return texts[0].text;
}

// --- the suite ------------------------------------------------------------------

describe(`questiond /mcp with the TypeScript MCP SDK client (--store ${STORE})`, () => {
  before(async () => {
    assert.ok(BIN, "QUESTIOND_BIN must name the questiond binary (run ./test/mcp-sdk/run.sh)");
    daemon = await startDaemon(BIN);
    await putSession(SES_USER, "user");
    await putSession(SES_PARENT, "parent", SES_BOSS);
    await putSession(SES_NONE, "none");
  });

  after(async () => {
    if (!daemon) return;
    const { child, logs } = daemon;
    daemon = undefined;
    await stopDaemon(child);
    for (const secret of [AGENT_TOKEN, OPERATOR.password, basic(OPERATOR.user, OPERATOR.password)]) {
      assert.equal(logs.find((line) => line.includes(secret)), undefined, "a log line holds a secret");
    }
  });

  describe("connecting", () => {
    test("without the agent token: HTTP 401; with a wrong one: 401; as the operator: 403", { timeout: TEST_MS }, () =>
      withClients(async (pool) => {
        await assert.rejects(pool.connect({ session: SES_USER, headers: {} }), httpStatus(401));
        await assert.rejects(
          pool.connect({ session: SES_USER, headers: { Authorization: `Bearer ${AGENT_TOKEN}x` } }),
          httpStatus(401),
        );
        await assert.rejects(pool.connect({ session: SES_USER, headers: operatorHeaders() }), httpStatus(403));
      }));

    test("an invalid session id: HTTP 400", { timeout: TEST_MS }, () =>
      withClients(async (pool) => {
        await assert.rejects(pool.connect({ session: "not-a-session" }), httpStatus(400));
        await assert.rejects(pool.connect({ session: "ses_no spaces", via: "header" }), httpStatus(400));
      }));

    test("tools follow the session's capability, named in the URL or in the header", { timeout: TEST_MS }, () =>
      withClients(async (pool) => {
        const user = await pool.connect({ session: SES_USER });
        const parent = await pool.connect({ session: SES_PARENT });
        const none = await pool.connect({ session: SES_NONE });
        // The default capability is "user", so only a header that is read yields these.
        const parentByHeader = await pool.connect({ session: SES_PARENT, via: "header" });
        const noneByHeader = await pool.connect({ session: SES_NONE, via: "header" });

        assert.deepEqual(await toolNames(user), ["ask_user_question"]);
        assert.deepEqual(await toolNames(parent), ["ask_parent_question"]);
        assert.deepEqual(await toolNames(none), []);
        assert.deepEqual(await toolNames(parentByHeader), ["ask_parent_question"]);
        assert.deepEqual(await toolNames(noneByHeader), []);

        // The input schema is the question tool's: an object with a questions array.
        const [tool] = (await user.listTools()).tools;
        assert.equal(tool.inputSchema.type, "object");
        const questionsType = [tool.inputSchema.properties?.questions?.type].flat();
        assert.ok(questionsType.includes("array"), JSON.stringify(tool.inputSchema));
        assert.equal(typeof tool.description, "string");
      }));
  });

  describe("ask_user_question", () => {
    const questions = [
      {
        question: "Which stores should the service use?",
        header: "Stores",
        options: [
          { label: "Postgres", description: "Relational, the system of record" },
          { label: "Redis", description: "Cache and queues" },
          { label: "SQLite", description: "Embedded, for tests" },
        ],
        multiple: true,
      },
      { question: "Anything else the operator should know?", header: "Notes" },
    ];
    const answers = [["Postgres", "Redis"], ["Ship it on Friday, \"carefully\""]];

    test("the operator answers; progress keeps the call alive; the result is accept", { timeout: TEST_MS }, (t) =>
      withClients(async (pool) => {
        const client = await pool.connect({ session: SES_USER });
        await client.listTools(); // the client checks structuredContent against the tool's outputSchema
        const progress = [];
        const started = performance.now();
        const result = client.callTool({ name: "ask_user_question", arguments: { questions } }, undefined, {
          onprogress: (p) => progress.push({ ...p, at: performance.now() - started }),
          resetTimeoutOnProgress: true,
          timeout: CALL_TIMEOUT_MS,
          maxTotalTimeout: TEST_MS,
        });
        // A call that ends before the operator answers is reported with its outcome.
        let early;
        result.then(
          (value) => (early = { value }),
          (error) => (early = { error }),
        );

        const listed = await waitForQuestion(
          (q) => q.sessionID === SES_USER && q.questions[0]?.question === questions[0].question,
          `the question of ${SES_USER}`,
        );
        assert.match(listed.id, QUE_ID);
        assert.equal(listed.questions.length, 2);
        const [stores, notes] = listed.questions;
        assert.equal(stores.question, questions[0].question);
        assert.equal(stores.header, "Stores");
        assert.deepEqual(stores.options, questions[0].options);
        assert.equal(stores.multiple, true);
        // Options are choices: OpenCode clients must not offer a typed answer.
        assert.equal(stores.custom, false, `choice question: ${JSON.stringify(stores)}`);
        assert.equal(notes.question, questions[1].question);
        assert.equal(notes.header, "Notes");
        assert.deepEqual(notes.options, []);
        assert.notEqual(notes.multiple, true);
        assert.notEqual(notes.custom, false, `free-text question: ${JSON.stringify(notes)}`);

        // Outlast the call's own timeout: only progress notifications keep it alive.
        await sleep(Math.max(0, WAIT_BEFORE_REPLY_MS - (performance.now() - started)));
        assert.equal(early, undefined, `the call ended before the operator answered: ${early?.error ?? JSON.stringify(early?.value)}`);
        assert.ok(progress.length >= 1, `no progress notification in ${WAIT_BEFORE_REPLY_MS} ms`);
        for (let i = 1; i < progress.length; i++) {
          assert.ok(progress[i].progress > progress[i - 1].progress, `progress must increase: ${JSON.stringify(progress)}`);
        }

        const reply = await call("POST", `/question/${listed.id}/reply`, { headers: operatorHeaders(), body: { answers } });
        assert.equal(reply.status, 200, reply.text);
        assert.equal(reply.json, true);

        const ended = await within(result, HTTP_MS, "the tool result");
        assert.notEqual(ended.isError, true, JSON.stringify(ended));
        assert.deepEqual(ended.structuredContent, { action: "accept", answers });
        assert.equal(
          textOf(ended),
          `User has answered your questions: "${questions[0].question}"="Postgres, Redis", ` +
            `"${questions[1].question}"="${answers[1][0]}". You can now continue with the user's answers in mind.`,
        );
        await waitGone(listed.id);
        t.diagnostic(
          `progress: ${progress.length} notifications at ${progress.map((p) => `${Math.round(p.at)} ms`).join(", ")}`,
        );
      }));

    test("cancelling the call withdraws the question; operators see question.rejected", { timeout: TEST_MS }, () =>
      withClients(async (pool) => {
        const client = await pool.connect({ session: SES_USER });
        const events = await operatorEvents();
        try {
          await events.next((e) => e.type === "server.connected", "server.connected");
          const abort = new AbortController();
          const result = client.callTool(
            { name: "ask_user_question", arguments: { questions: [{ question: "Cancel me?", header: "Cancel" }] } },
            undefined,
            { signal: abort.signal, timeout: TEST_MS },
          );
          const listed = await waitForQuestion(
            (q) => q.sessionID === SES_USER && q.questions[0]?.question === "Cancel me?",
            "the question to cancel",
          );
          abort.abort();
          // The SDK rejects an aborted call at once, naming the abort, and tells the server.
          await assert.rejects(within(result, HTTP_MS, "the cancelled call"), /AbortError/);
          await waitGone(listed.id);
          const rejected = await events.next(
            (e) => e.type === "question.rejected" && e.properties?.requestID === listed.id,
            `question.rejected for ${listed.id}`,
          );
          assert.deepEqual(rejected.properties, { sessionID: SES_USER, requestID: listed.id });

          // The operator can no longer answer it.
          const late = await call("POST", `/question/${listed.id}/reply`, {
            headers: operatorHeaders(),
            body: { answers: [["too late"]] },
          });
          assert.equal(late.status, 404, late.text);
        } finally {
          await events.close();
        }
      }));
  });

  describe("ask_parent_question", () => {
    test("asked under the parent's session; the operator dismisses it; the result is cancel", { timeout: TEST_MS }, () =>
      withClients(async (pool) => {
        const client = await pool.connect({ session: SES_PARENT });
        const question = { question: "May the child agent drop the staging database?", header: "Staging" };
        const result = client.callTool({ name: "ask_parent_question", arguments: { questions: [question] } }, undefined, {
          timeout: TEST_MS,
        });

        const listed = await waitForQuestion((q) => q.questions[0]?.question === question.question, "the parent question");
        assert.equal(listed.sessionID, SES_BOSS, `listed under ${listed.sessionID}`);
        assert.equal(listed.questions[0].header, "Staging");
        assert.equal((await listQuestions()).some((q) => q.sessionID === SES_PARENT), false, "listed under the child");

        const rejected = await call("POST", `/question/${listed.id}/reject`, { headers: operatorHeaders() });
        assert.equal(rejected.status, 200, rejected.text);
        assert.equal(rejected.json, true);

        const ended = await within(result, HTTP_MS, "the tool result");
        assert.notEqual(ended.isError, true, JSON.stringify(ended));
        assert.deepEqual(ended.structuredContent, { action: "cancel" }); // a reject without a body: not now
        assert.equal(textOf(ended), "The user dismissed this question");
        await waitGone(listed.id);
      }));
  });

  describe("capability changes", () => {
    test("a live session keeps its tools; a call it may no longer make is an error and asks nothing", { timeout: TEST_MS }, () =>
      withClients(async (pool) => {
        const session = "ses_mcpDemoted";
        await putSession(session, "user");
        const client = await pool.connect({ session });
        assert.deepEqual(await toolNames(client), ["ask_user_question"]);

        await putSession(session, "none");
        assert.deepEqual(await toolNames(client), ["ask_user_question"]);
        const before = await listQuestions();
        const result = await within(
          client.callTool({
            name: "ask_user_question",
            arguments: { questions: [{ question: "Still allowed?", header: "Allowed" }] },
          }),
          HTTP_MS,
          "the refused call",
        );
        assert.equal(result.isError, true, JSON.stringify(result));
        assert.deepEqual(await listQuestions(), before, "a refused call created a question");

        // A new connection sees the new capability.
        assert.deepEqual(await toolNames(await pool.connect({ session })), []);
      }));
  });
});
