// The store that the daemons of a Node suite of test/ run on.
// QUESTIOND_TEST_STORE (memory, bolt or postgres) picks it for a whole run;
// without it each suite keeps its own default. On postgres every daemon gets
// a database of its own from QUESTIOND_TEST_DATABASE_URLS, which
// test/node-suite.sh has test/withpostgres create empty: each daemon starts
// on an empty store, as it does on memory.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const STORES = ["memory", "bolt", "postgres"];

// The databases no daemon has used yet.
const unusedDatabases = (process.env.QUESTIOND_TEST_DATABASE_URLS ?? "").split(/\s+/).filter(Boolean);

/** The store of this run: QUESTIOND_TEST_STORE, else the suite's default. */
export function testStore(suiteDefault) {
  const store = process.env.QUESTIOND_TEST_STORE || suiteDefault;
  if (!STORES.includes(store)) {
    throw new Error(`QUESTIOND_TEST_STORE must be one of ${STORES.join(", ")}, got ${JSON.stringify(store)}`);
  }
  return store;
}

/**
 * The flags and environment of one new daemon on store, each time an empty
 * one. The suites drop every inherited QUESTIOND_ variable from a daemon's
 * environment, so env must be added after that.
 */
export function daemonStore(store) {
  switch (store) {
    case "memory":
      return { args: ["--store", "memory"], env: {} };
    case "bolt": // in a data directory of this daemon's own
      return { args: ["--store", "bolt", "--data-dir", mkdtempSync(join(tmpdir(), "questiond-node-"))], env: {} };
    case "postgres": {
      const url = unusedDatabases.shift();
      if (!url) {
        throw new Error(
          "--store postgres: no unused database left in QUESTIOND_TEST_DATABASE_URLS; " +
            "run the suite with QUESTIOND_TEST_STORE=postgres through its run.sh, which creates one per daemon",
        );
      }
      return { args: ["--store", "postgres"], env: { QUESTIOND_DATABASE_URL: url } };
    }
    default:
      throw new Error(`unknown store ${JSON.stringify(store)}`);
  }
}
