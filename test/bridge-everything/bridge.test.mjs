// `questiond bridge` in front of the official MCP reference server,
// @modelcontextprotocol/server-everything (pinned in package-lock.json), with
// the official TypeScript MCP SDK client (@modelcontextprotocol/sdk, pinned)
// as the host. The host declares no client capabilities at all: no
// elicitation, sampling, roots or tasks.
//
// Each case runs one script of MCP requests twice, once with the host
// talking to server-everything directly and once through the bridge, and
// compares the two transcripts (results, errors, progress and notifications)
// after removing what differs between any two runs: request ids (the SDK
// keeps them), session ids, timing and the level of server-everything's
// randomly-levelled log messages. The one difference expected is the point
// of the bridge: the upstream is told its client elicits, so it registers
// the tools it offers only to such clients (trigger-elicitation-request,
// trigger-url-elicitation); the direct run's list must lack them and the
// bridged one must have them. Then the bridged host calls
// trigger-elicitation-request, the operator answers over questiond's HTTP
// API (GET /question, POST /question/{id}/reply), and the tool's result must
// hold the operator's answer typed by the upstream's schema, its properties
// in the schema's order.
//
// Two cases: the bridge runs server-everything as its child over stdio, and
// the bridge reaches server-everything's Streamable HTTP transport with
// --url (the direct run then uses the SDK's StreamableHTTPClientTransport).
//
// run.sh builds the daemon and passes its path in QUESTIOND_BIN.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { daemonEnv, startDaemon as launch, stopDaemon, within } from "../daemon.mjs";
import { daemonStore, testStore } from "../daemon-store.mjs";

const BIN = process.env.QUESTIOND_BIN;
const STORE = testStore("memory");

// server-everything's launcher: `node index.js stdio|streamableHttp`.
const require = createRequire(import.meta.url);
const EVERYTHING = join(
  dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")),
  "dist",
  "index.js",
);

// Every wait is bounded by one of these.
const STARTUP_MS = 15_000;
const HTTP_MS = 5_000;
const APPEAR_MS = 10_000; // for a question to show up in GET /question, or a notification to arrive
const CASE_MS = 120_000;
const POLL_MS = 25;

// The tools server-everything registers only for clients that declare
// elicitation, sampling, roots or tasks (tools/index.js,
// registerConditionalTools; simulate-research-query is registered for every
// client).
const CONDITIONAL_TOOLS = new Set([
  "get-roots-list",
  "trigger-elicitation-request",
  "trigger-url-elicitation",
  "trigger-sampling-request",
  "trigger-sampling-request-async",
  "trigger-elicitation-request-async",
]);

// trigger-elicitation-request's requestedSchema, property by property in the
// server's order (tools/trigger-elicitation-request.js): not sorted by name,
// so a bridge that loses the order is caught.
const SCHEMA_ORDER = [
  "name",
  "check",
  "firstLine",
  "email",
  "homepage",
  "birthdate",
  "integer",
  "number",
  "untitledSingleSelectEnum",
  "untitledMultipleSelectEnum",
  "titledSingleSelectEnum",
  "titledMultipleSelectEnum",
  "legacyTitledEnum",
];

/** A random string of n base64url characters: secrets differ every run. */
const randomText = (n) => randomBytes(n).toString("base64url").slice(0, n);

const OPERATOR = { user: `ops-${randomText(6)}`, password: randomText(20) };
const AGENT_TOKEN = randomText(24);

let daemon; // { child, base, logs }

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const basic = (user, password) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
const operatorHeaders = () => ({ Authorization: basic(OPERATOR.user, OPERATOR.password) });

/** A plain HTTP request to questiond; returns the status and the parsed JSON body. */
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

/** Polls the operator's GET /question (bounded) until a question matches; returns it. */
async function waitForQuestion(matches, what) {
  const deadline = performance.now() + APPEAR_MS;
  let listed = [];
  while (performance.now() < deadline) {
    const res = await call("GET", "/question", { headers: operatorHeaders() });
    assert.equal(res.status, 200, `GET /question: ${res.text}`);
    listed = res.json;
    const found = listed.find(matches);
    if (found) return found;
    await sleep(POLL_MS);
  }
  throw new Error(`timed out after ${APPEAR_MS} ms waiting for ${what}; GET /question: ${JSON.stringify(listed)}`);
}

// --- the hosts ----------------------------------------------------------------

/** A free loopback port (closed again at once) for server-everything's HTTP transport. */
async function freePort() {
  const srv = createServer();
  await new Promise((resolve, reject) => srv.listen(0, "127.0.0.1", resolve).once("error", reject));
  const { port } = srv.address();
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

/**
 * server-everything on its Streamable HTTP transport, for the --url case;
 * resolves once it listens. Its stderr is kept for failure messages.
 */
async function startEverythingHTTP() {
  const port = await freePort();
  const child = spawn(process.execPath, [EVERYTHING, "streamableHttp"], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...getDefaultEnvironment(), PORT: String(port) },
  });
  process.once("exit", () => child.kill("SIGKILL"));
  let stderr = "";
  const listening = new Promise((resolve, reject) => {
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      if (stderr.includes("listening on port")) resolve();
    });
    child.once("exit", (code, signal) =>
      reject(new Error(`server-everything exited before listening (code ${code}, signal ${signal}): ${stderr}`)),
    );
  });
  await within(listening, STARTUP_MS, "server-everything's Streamable HTTP transport to listen");
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await within(exited, 10_000, "server-everything to exit").catch(() => child.kill("SIGKILL"));
    },
  };
}

/** The bridge as the host's stdio server, with questiond's address and token in its environment. */
function bridgeTransport(upstreamArgs) {
  return new StdioClientTransport({
    command: BIN,
    args: ["bridge", "--name", "everything", ...upstreamArgs],
    env: { ...getDefaultEnvironment(), QUESTIOND_SERVER: daemon.base, QUESTIOND_TOKEN: AGENT_TOKEN },
    stderr: "inherit", // the bridge's log, in the test's output
  });
}

/**
 * An SDK client that declares no capabilities, with every notification it
 * receives (other than progress, which goes to the call's onprogress)
 * recorded in order.
 */
async function connectHost(transport) {
  const client = new Client({ name: "bridge-everything-host", version: "1.0.0" }, { capabilities: {} });
  const notifications = [];
  let wake = () => {};
  client.fallbackNotificationHandler = async (n) => {
    notifications.push(n);
    wake();
  };
  let stderr = "";
  transport.stderr?.on("data", (chunk) => (stderr += chunk));
  await client.connect(transport);
  // Progress is recorded as it comes off the wire: the SDK client runs
  // notification handlers a tick later than it settles a result, so a
  // call's onprogress misses its last progress notification whenever that
  // arrives in the same read as the result (with or without the bridge).
  const progress = [];
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message.method === "notifications/progress") progress.push(message.params);
    deliver(message, extra);
  };
  return {
    client,
    progress,
    notifications,
    stderr: () => stderr,
    /** Waits (bounded) until a notification matches; returns it. */
    async waitFor(matches, what) {
      const deadline = performance.now() + APPEAR_MS;
      for (;;) {
        const found = notifications.find(matches);
        if (found) return found;
        const left = deadline - performance.now();
        if (left <= 0) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(notifications)}`);
        await new Promise((resolve) => {
          wake = resolve;
          setTimeout(resolve, Math.min(left, 200));
        });
      }
    },
  };
}

// --- one script, recorded -----------------------------------------------------

// Values that differ between any two runs, replaced before comparing.
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const LOG_LEVELS = /^(Debug|Info|Notice|Warning|Error|Critical|Alert|Emergency)[- ]level[- ]message/;
// server-everything's dynamic resources say when they were made (toLocaleTimeString).
const CLOCK = /\b\d{1,2}:\d{2}:\d{2}( [AP]M)?\b/g;

/** v with session ids and randomly chosen log levels replaced, for comparing. */
function normalise(v) {
  if (typeof v === "string") {
    return v.replace(UUID, "<uuid>").replace(CLOCK, "<time>").replace(LOG_LEVELS, "<level> message");
  }
  if (Array.isArray(v)) return v.map(normalise);
  if (v && typeof v === "object") {
    const out = {};
    for (const [k, x] of Object.entries(v)) out[k] = normalise(x);
    // A dynamic blob resource is base64 of a text with its time in it.
    if (typeof v.blob === "string" && v.mimeType === "text/plain") {
      out.blob = normalise(Buffer.from(v.blob, "base64").toString("utf8"));
    }
    // server-everything's simulated log messages pick a level at random.
    if (typeof out.data === "string" && out.data.startsWith("<level> message") && "level" in out) out.level = "<random>";
    return out;
  }
  return v;
}

/** The outcome of one request: its result or its JSON-RPC error (code and message). */
async function outcome(p) {
  try {
    return { result: await p };
  } catch (err) {
    return { error: { code: err.code, message: err.message } };
  }
}

/**
 * Runs the script against host and returns its transcript: each step's
 * outcome, the progress it reported and the notifications that arrived
 * while it ran. tools/list_changed notifications are kept apart (their
 * number depends on how many conditional tools the upstream registered).
 */
async function runScript(host) {
  const { client } = host;
  const steps = [];
  let seen = 0;
  const drain = () => {
    const fresh = host.notifications.slice(seen);
    seen = host.notifications.length;
    return fresh.filter((n) => !n.method.endsWith("/list_changed"));
  };
  const step = async (name, run, { settle } = {}) => {
    const from = host.progress.length;
    const out = await outcome(run({ onprogress: () => {} }));
    if (settle) await settle();
    steps.push({ step: name, ...out, progress: host.progress.slice(from), notifications: drain() });
    return out;
  };
  const tool = (name, args = {}, options = {}) => client.callTool({ name, arguments: args }, undefined, options);

  steps.push({
    step: "initialize",
    server: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    instructions: client.getInstructions(),
  });

  const tools = await step("tools/list", () => client.listTools());
  const names = tools.result.tools.map((t) => t.name);
  // Compared without the conditional tools; they are checked by the caller.
  steps.at(-1).result = { ...tools.result, tools: tools.result.tools.filter((t) => !CONDITIONAL_TOOLS.has(t.name)) };

  await step("ping", () => client.ping());
  await step("resources/list", () => client.listResources());
  await step("resources/templates/list", () => client.listResourceTemplates());
  await step("resources/read static", () =>
    client.readResource({ uri: "demo://resource/static/document/instructions.md" }),
  );
  await step("resources/read dynamic", () => client.readResource({ uri: "demo://resource/dynamic/text/7" }));
  await step("resources/read unknown (an error)", () => client.readResource({ uri: "demo://resource/nowhere/1" }));
  await step("prompts/list", () => client.listPrompts());
  await step("prompts/get simple-prompt", () => client.getPrompt({ name: "simple-prompt" }));
  await step("prompts/get args-prompt", () =>
    client.getPrompt({ name: "args-prompt", arguments: { city: "Lyon", state: "Rhône" } }),
  );
  await step("prompts/get resource-prompt", () =>
    client.getPrompt({ name: "resource-prompt", arguments: { resourceType: "Text", resourceId: "2" } }),
  );
  await step("completion/complete", () =>
    client.complete({
      ref: { type: "ref/prompt", name: "completable-prompt" },
      argument: { name: "name", value: "" },
      context: { arguments: { department: "Sales" } },
    }),
  );
  await step("tools/call echo", () => tool("echo", { message: 'hello "bridge" ✓' }));
  await step("tools/call get-sum", () => tool("get-sum", { a: 40, b: 2.5 }));
  await step("tools/call get-structured-content", () => tool("get-structured-content", { location: "Chicago" }));
  await step("tools/call get-annotated-message", () =>
    tool("get-annotated-message", { messageType: "error", includeImage: true }),
  );
  await step("tools/call get-tiny-image", () => tool("get-tiny-image"));
  await step("tools/call get-resource-links", () => tool("get-resource-links", { count: 3 }));
  await step("tools/call get-resource-reference", () =>
    tool("get-resource-reference", { resourceType: "Blob", resourceId: 4 }),
  );
  await step("tools/call get-env", () => tool("get-env"));
  await step("tools/call get-sum with a bad argument (an error)", () => tool("get-sum", { a: "forty" }));
  await step("tools/call an unknown tool (an error)", () => tool("no-such-tool"));
  await step("tools/call trigger-long-running-operation with a progress token", ({ onprogress }) =>
    tool("trigger-long-running-operation", { duration: 0.4, steps: 4 }, { onprogress }),
  );

  // Logging: every level, then server-everything's simulated log messages
  // (one at once, then every 5 s: the toggle stops them before the next).
  await step("logging/setLevel", () => client.setLoggingLevel("debug"));
  await step("tools/call toggle-simulated-logging (on)", () => tool("toggle-simulated-logging"), {
    settle: () => host.waitFor((n) => n.method === "notifications/message", "a simulated log message"),
  });
  await step("tools/call toggle-simulated-logging (off)", () => tool("toggle-simulated-logging"));

  // Resource subscriptions: the update arrives at once when toggled on.
  const uri = "demo://resource/dynamic/text/3";
  await step("resources/subscribe", () => client.subscribeResource({ uri }), {
    settle: () => host.waitFor((n) => n.method === "notifications/message" && /Subscribe/.test(n.params?.data), "the subscription's log message"),
  });
  await step("tools/call toggle-subscriber-updates (on)", () => tool("toggle-subscriber-updates"), {
    settle: () => host.waitFor((n) => n.method === "notifications/resources/updated", "notifications/resources/updated"),
  });
  await step("tools/call toggle-subscriber-updates (off)", () => tool("toggle-subscriber-updates"));
  await step("resources/unsubscribe", () => client.unsubscribeResource({ uri }), {
    settle: () => host.waitFor((n) => n.method === "notifications/message" && /Unsubscribe/.test(n.params?.data), "the unsubscription's log message"),
  });

  return {
    steps,
    toolNames: names,
    listChanged: [...new Set(host.notifications.filter((n) => n.method.endsWith("/list_changed")).map((n) => n.method))].sort(),
  };
}

/**
 * Checks the bridged transcript against the direct one. The tools/list_changed
 * notifications server-everything sends while it initializes are compared
 * only over stdio: over Streamable HTTP they go to the client's standalone
 * GET stream, which may or may not be open yet when they are sent.
 */
function compareTranscripts(direct, bridged, { listChanged }) {
  // The host declares no elicitation: talking to the server directly, it gets
  // none of the conditional tools.
  const directConditional = direct.toolNames.filter((n) => CONDITIONAL_TOOLS.has(n));
  assert.deepEqual(directConditional, [], "direct: the host declares no capabilities, so no conditional tools");
  // Through the bridge the upstream is told its client elicits (form and URL
  // modes, not elicitation tasks), so it offers its elicitation tools.
  const bridgedConditional = bridged.toolNames.filter((n) => CONDITIONAL_TOOLS.has(n)).sort();
  assert.deepEqual(
    bridgedConditional,
    ["trigger-elicitation-request", "trigger-url-elicitation"],
    `bridged: tools/list ${JSON.stringify(bridged.toolNames)}`,
  );
  // Everything else is the same, step by step, in order.
  assert.deepEqual(
    bridged.steps.map((s) => s.step),
    direct.steps.map((s) => s.step),
  );
  if (listChanged) {
    for (let i = 0; i < direct.steps.length; i++) {
      assert.deepEqual(normalise(bridged.steps[i]), normalise(direct.steps[i]), `step ${direct.steps[i].step}`);
    }
  } else {
    // Over Streamable HTTP a notification may come on a call's own event
    // stream or on the standalone one, so which step it lands in depends on
    // timing, with or without the bridge: results are compared step by
    // step, and progress and notifications over the whole run.
    const bare = (step) => ({ ...normalise(step), progress: [], notifications: [] });
    for (let i = 0; i < direct.steps.length; i++) {
      assert.deepEqual(bare(bridged.steps[i]), bare(direct.steps[i]), `step ${direct.steps[i].step}`);
    }
    // The SDK's HTTP client may hand one progress notification to the
    // transcript twice (from a call's stream and its resumption): what
    // arrived is compared, not how often.
    const distinct = (items) => [...new Set(items.map((x) => JSON.stringify(x)))].sort();
    const all = (run) => {
      const steps = run.steps.map(normalise);
      return {
        progress: distinct(steps.flatMap((s) => s.progress ?? [])),
        notifications: distinct(steps.flatMap((s) => s.notifications ?? [])),
      };
    };
    assert.deepEqual(all(bridged), all(direct), "progress and notifications over the whole run");
  }
  if (listChanged) {
    assert.deepEqual(direct.listChanged, ["notifications/tools/list_changed"], "direct: list_changed notifications");
    assert.deepEqual(bridged.listChanged, direct.listChanged, "list_changed notifications");
  }
  // The comparison compared something: progress, log messages, resource updates and errors.
  const progressOf = (steps) => [...new Set(steps.flatMap((s) => s.progress ?? []).map((p) => p.progress))];
  const notified = (steps, method) => steps.some((s) => (s.notifications ?? []).some((n) => n.method === method));
  assert.deepEqual(progressOf(direct.steps), [1, 2, 3, 4]);
  assert.ok(notified(direct.steps, "notifications/resources/updated"));
  assert.ok(notified(direct.steps, "notifications/message"));
  assert.ok(direct.steps.find((s) => s.step === "resources/read unknown (an error)")?.error, "reading an unknown resource fails");
}

// --- the elicitation ---------------------------------------------------------

/**
 * Calls trigger-elicitation-request through the bridged host, answers it as
 * the operator and checks the typed content, in the schema's order, in the
 * tool's result; then the operator's decline and dismissal.
 */
async function elicitThroughQuestiond(host) {
  const pending = host.client.callTool({ name: "trigger-elicitation-request", arguments: {} }, undefined, {
    timeout: 60_000,
  });
  const settled = pending.then(
    (r) => ({ r }),
    (e) => ({ e }),
  );

  const question = await waitForQuestion(
    (q) => q.questions?.[0]?.question?.startsWith("Please provide inputs for the following fields:"),
    "the bridge's question for trigger-elicitation-request",
  );
  // One question per property, in the upstream's order (the headers are the
  // properties' titles, shortened to 30 characters).
  assert.deepEqual(
    question.questions.map((q) => q.header),
    [
      "String",
      "Boolean",
      "String with default",
      "String with email format",
      "String with uri format",
      "String with date format",
      "Integer",
      "Number in range 1-1000",
      "Untitled Single Select Enum",
      "Untitled Multiple Select Enum",
      "Titled Single Select Enum",
      "Titled Multiple Select Enum",
      "Legacy Titled Single Select E…",
    ],
    JSON.stringify(question),
  );
  // The call is still waiting for the operator.
  assert.equal(await Promise.race([settled, sleep(50).then(() => "waiting")]), "waiting");

  const answers = [
    ["Ada Lovelace"],
    ["Yes"],
    ["Call me Ishmael."],
    ["ada@example.com"],
    ["https://example.com/ada"],
    ["1815-12-10"],
    ["7"],
    ["2.5"],
    ["Ross"],
    ["Piano", "Drums"],
    ["Wonder Woman"],
    ["Salmon", "Trout"],
    ["Birds"],
  ];
  const reply = await call("POST", `/question/${question.id}/reply`, { headers: operatorHeaders(), body: { answers } });
  assert.equal(reply.status, 200, reply.text);

  const { r: result, e: err } = await within(settled, APPEAR_MS, "trigger-elicitation-request's result");
  assert.equal(err, undefined, `${err}\nbridge stderr: ${host.stderr()}`);
  assert.notEqual(result.isError, true, JSON.stringify(result));
  const texts = result.content.map((c) => c.text);
  assert.equal(texts[0], "✅ User provided the requested information!", JSON.stringify(result));
  const raw = texts.find((t) => t.startsWith("\nRaw result: "));
  assert.ok(raw, JSON.stringify(result));
  const elicitResult = JSON.parse(raw.slice("\nRaw result: ".length));
  // Typed by the schema: a boolean, numbers, enum values (not their titles), arrays.
  assert.deepEqual(elicitResult, {
    action: "accept",
    content: {
      name: "Ada Lovelace",
      check: true,
      firstLine: "Call me Ishmael.",
      email: "ada@example.com",
      homepage: "https://example.com/ada",
      birthdate: "1815-12-10",
      integer: 7,
      number: 2.5,
      untitledSingleSelectEnum: "Ross",
      untitledMultipleSelectEnum: ["Piano", "Drums"],
      titledSingleSelectEnum: "hero-3",
      titledMultipleSelectEnum: ["fish-2", "fish-3"],
      legacyTitledEnum: "pet-3",
    },
  });
  // ... and in the upstream's property order (deepEqual ignores key order).
  assert.deepEqual(Object.keys(elicitResult.content), SCHEMA_ORDER);
  assert.match(texts[1], /- Name: Ada Lovelace\n- Agreed to terms: true\n/);

  // The bridge's session is titled for operators after --name and the host.
  const sessions = await call("GET", "/session", { headers: operatorHeaders() });
  assert.equal(sessions.status, 200, sessions.text);
  const session = sessions.json.find((s) => s.id === question.sessionID);
  assert.equal(session?.title, "everything via bridge-everything-host", sessions.text);

  // The operator declining, or dismissing, reaches the upstream as decline and cancel.
  for (const [body, action, text] of [
    [{ action: "decline" }, "decline", "❌ User declined to provide the requested information."],
    [undefined, "cancel", "⚠️ User cancelled the elicitation dialog."],
  ]) {
    const call2 = host.client.callTool({ name: "trigger-elicitation-request", arguments: {} }, undefined, {
      timeout: 60_000,
    });
    const next = await waitForQuestion(
      (q) => q.id !== question.id && q.questions?.[0]?.question?.startsWith("Please provide inputs"),
      `the question of the call the operator ends with ${action}`,
    );
    const rejected = await call("POST", `/question/${next.id}/reject`, { headers: operatorHeaders(), body });
    assert.equal(rejected.status, 200, rejected.text);
    const ended = await within(call2, APPEAR_MS, `trigger-elicitation-request's result after ${action}`);
    assert.deepEqual(
      ended.content.map((c) => c.text),
      [text, `\nRaw result: ${JSON.stringify({ action }, null, 2)}`],
    );
  }
}

// --- the cases ------------------------------------------------------------------

before(async () => {
  assert.ok(BIN, "QUESTIOND_BIN must name the questiond binary (run the suite with run.sh)");
  const store = daemonStore(STORE);
  const d = await launch(BIN, {
    args: store.args,
    env: daemonEnv(store.env, {
      QUESTIOND_OPERATOR_USERNAME: OPERATOR.user,
      QUESTIOND_OPERATOR_PASSWORD: OPERATOR.password,
      QUESTIOND_AGENT_TOKENS: `bridge=${AGENT_TOKEN}`,
    }),
    startupMs: STARTUP_MS,
  });
  daemon = { child: d.child, base: d.base, logs: d.logs };
});

after(async () => {
  if (daemon) await stopDaemon(daemon.child);
});

/** Runs both hosts over one pair of transports and checks everything. */
async function runCase(t, { direct, bridged, listChanged }) {
  const hosts = [];
  t.after(async () => {
    for (const h of hosts) await h.client.close().catch(() => {});
  });
  const d = await connectHost(direct());
  hosts.push(d);
  const directRun = await runScript(d);
  await d.client.close();

  const b = await connectHost(bridged());
  hosts.push(b);
  try {
    const bridgedRun = await runScript(b);
    compareTranscripts(directRun, bridgedRun, { listChanged });
    // questiond's token is for questiond: nothing the host receives carries it.
    assert.ok(!JSON.stringify(bridgedRun).includes(AGENT_TOKEN), "the host received questiond's token");
    await elicitThroughQuestiond(b);
  } catch (err) {
    err.message += `\nbridge stderr:\n${b.stderr()}`;
    throw err;
  }
}

describe("server-everything behind questiond bridge, the TypeScript SDK client as the host", () => {
  test("over stdio: the same transcript as without the bridge, and its elicitation answered through questiond", { timeout: CASE_MS }, (t) =>
    runCase(t, {
      direct: () =>
        new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, "stdio"], env: getDefaultEnvironment(), stderr: "pipe" }),
      bridged: () => bridgeTransport(["--", process.execPath, EVERYTHING, "stdio"]),
      listChanged: true,
    }),
  );

  test("with --url: the same transcript as without the bridge, and its elicitation answered through questiond", { timeout: CASE_MS }, async (t) => {
    const server = await startEverythingHTTP();
    t.after(() => server.stop());
    try {
      await runCase(t, {
        direct: () => new StreamableHTTPClientTransport(new URL(server.url)),
        bridged: () => bridgeTransport(["--url", server.url]),
        listChanged: false,
      });
    } catch (err) {
      err.message += `\nserver-everything stderr:\n${server.stderr()}`;
      throw err;
    }
  });
});
