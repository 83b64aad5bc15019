// The real OpenCode server (`opencode serve`, the pinned release, offline,
// its only model a scripted fake) for the Node suites of test/ that put
// questiond in front of it with --upstream. QUESTIOND_TEST_UPSTREAM=opencode
// asks for that; test/node-suite.sh then builds test/offlineopencode, which
// runs one such server, and passes its path in QUESTIOND_TEST_OPENCODE.
//
// Each server is a process of this one that stops its OpenCode when its
// stdin closes: when this process ends, however it ends, so do they.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { within } from "./daemon.mjs";

const UPSTREAMS = ["", "opencode"];

/** The upstream of this run: "opencode" (questiond --upstream in front of OpenCode) or "" (none). */
export function testUpstream() {
  const upstream = process.env.QUESTIOND_TEST_UPSTREAM ?? "";
  if (!UPSTREAMS.includes(upstream)) {
    throw new Error(`QUESTIOND_TEST_UPSTREAM must be "opencode" or unset, got ${JSON.stringify(upstream)}`);
  }
  return upstream;
}

/**
 * Starts an OpenCode server with env (its OPENCODE_SERVER_PASSWORD and
 * OPENCODE_SERVER_USERNAME are the server's credentials; it takes no other
 * OpenCode setting) and waits up to startupMs for it to listen. It returns
 * the child, the server's URL, what test/offlineopencode said of its fake
 * model (ready: model, askPrompt, question, answer, title) and the
 * launcher's stderr lines (OpenCode's output when it fails).
 */
export async function startOpencode({ env, startupMs }) {
  const launcher = process.env.QUESTIOND_TEST_OPENCODE;
  if (!launcher) {
    throw new Error("QUESTIOND_TEST_OPENCODE must name test/offlineopencode (run the suite through its run.sh)");
  }
  // stdin stays open: the launcher stops OpenCode once it closes.
  const child = spawn(launcher, [], { stdio: ["pipe", "pipe", "pipe"], env });
  const logs = [];
  createInterface({ input: child.stderr }).on("line", (line) => logs.push(line));
  const readyLine = new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once("line", resolve);
    child.once("error", reject);
    child.once("exit", (code, signal) =>
      reject(
        new Error(
          `offlineopencode exited before OpenCode listened (code ${code}, signal ${signal}):\n${logs.join("\n")}`,
        ),
      ),
    );
  });
  const ready = JSON.parse(await within(readyLine, startupMs, "OpenCode to listen"));
  return { child, url: ready.url, ready, logs };
}

/**
 * Stops a server of startOpencode: its launcher's stdin closed, SIGKILL if
 * it has not exited 30 s later. It throws when OpenCode had ended by
 * itself (the launcher then exits 1): a server that crashed during a test.
 */
export async function stopOpencode({ child, logs }) {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.stdin.end();
    try {
      await within(exited, 30_000, "OpenCode to stop");
    } catch {
      child.kill("SIGKILL"); // and OpenCode with it (offlineopencode's Pdeathsig)
      await within(exited, 5_000, "offlineopencode to die");
    }
  }
  if (child.exitCode !== 0) {
    throw new Error(
      `offlineopencode ended with code ${child.exitCode}, signal ${child.signalCode}:\n${logs.join("\n")}`,
    );
  }
}
