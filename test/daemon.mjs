// A questiond daemon for the Node suites of test/: started as a process of
// this one, its address read from its JSON "questiond listening" log line,
// and stopped with SIGTERM (SIGKILL if that takes too long).
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createInterface } from "node:readline";

// test/node-suite.sh passes a pidfile: the daemon's pid goes there, so that
// the daemon is stopped even when the test process dies without cleaning up.
const PIDFILE = process.env.QUESTIOND_PIDFILE;

/** This process's environment without inherited questiond or OpenCode settings, plus extra. */
export function daemonEnv(...extra) {
  const env = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("QUESTIOND_") && !name.startsWith("OPENCODE_SERVER_")) env[name] = value;
  }
  return Object.assign(env, ...extra);
}

/**
 * Starts bin on a random loopback port with JSON logs and args, in env, and
 * waits up to startupMs for it to listen. It returns the child, its base
 * URL, its log lines (stderr, drained for the whole run: a full pipe would
 * block the daemon) and its listening line.
 */
export async function startDaemon(bin, { args = [], env, startupMs }) {
  const child = spawn(bin, ["--addr", "127.0.0.1:0", "--log-format", "json", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
    env,
  });
  if (PIDFILE && child.pid) writeFileSync(PIDFILE, String(child.pid));
  // Even if the test process dies early, the daemon must not outlive it.
  process.once("exit", () => child.kill("SIGKILL"));

  const logs = [];
  const lines = createInterface({ input: child.stderr });
  const listening = new Promise((resolve, reject) => {
    lines.on("line", (line) => {
      logs.push(line);
      if (line.includes('"msg":"questiond listening"')) resolve(line);
    });
    child.once("error", reject);
    child.once("exit", (code, signal) =>
      reject(new Error(`questiond exited before listening (code ${code}, signal ${signal}):\n${logs.join("\n")}`)),
    );
  });
  const line = await within(listening, startupMs, "questiond's listening log line");
  return { child, base: `http://${JSON.parse(line).addr}`, logs, line };
}

/** Stops child with SIGTERM, or SIGKILL if it has not exited 10 s later. */
export async function stopDaemon(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  try {
    await within(exited, 10_000, "questiond to shut down");
  } catch {
    child.kill("SIGKILL");
    await within(exited, 5_000, "questiond to die");
  }
}

/** Resolves like p, or rejects naming what was awaited once ms have passed. */
export function within(p, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
