#!/usr/bin/env node
// The peer of bench_dispatch: graphile-worker completing no-op jobs on the
// same PostgreSQL, in a database of its own. Adds BENCH_PEER_JOBS jobs in
// bulk (addJobs, 5 000 per call), then starts graphile-worker's own runner
// and counts completions; jobs/s over the 10%..90% span of completions, as
// bench_dispatch counts confirmations. Runs once per mode:
//   per_job  graphile-worker's defaults: each worker fetches and completes
//            one job per statement
//   batched  its batching options: a local queue of BENCH_PEER_QUEUE jobs
//            fetched at once, completions grouped (completeJobBatchDelay 0)
// Prints one JSON line per mode. Connection: libpq's PG* environment
// variables (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE), which
// node-postgres reads too. Exits non-zero, naming the cause, on any error
// or when the jobs are not all done within BENCH_PEER_TIMEOUT_S.
"use strict";
const { Pool } = require("pg");
const { Logger, run, runMigrations, makeWorkerUtils } = require("graphile-worker");

function intEnv(name, def, min, max) {
  const v = process.env[name];
  if (v === undefined || v === "") return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`${name}: '${v}' is not an integer in ${min}..${max}`);
  return n;
}

const jobs = intEnv("BENCH_PEER_JOBS", 20000, 100, 1000000);
const concurrency = intEnv("BENCH_PEER_CONCURRENCY", 8, 1, 64);
const queue = intEnv("BENCH_PEER_QUEUE", 500, 2, 10000);
const timeoutS = intEnv("BENCH_PEER_TIMEOUT_S", 600, 10, 3600);
const version = require("graphile-worker/package.json").version;

// graphile-worker's own log: errors and warnings only, on stderr
const logger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") console.error(`graphile-worker: ${message}`);
});

async function addInBulk(pool, n) {
  const utils = await makeWorkerUtils({ pgPool: pool, logger });
  try {
    for (let i = 0; i < n; i += 5000) {
      const specs = [];
      for (let k = i; k < Math.min(n, i + 5000); k++)
        specs.push({ identifier: "noop", payload: { k } });
      await utils.addJobs(specs);
    }
  } finally {
    await utils.release();
  }
}

async function measure(pool, mode) {
  await addInBulk(pool, jobs);
  const stamps = [];
  let failed = 0;
  const worker =
    mode === "batched"
      ? { localQueue: { size: queue }, completeJobBatchDelay: 0 }
      : {};
  const t0 = process.hrtime.bigint();
  const runner = await run({
    pgPool: pool,
    concurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger,
    taskList: { noop: async () => {} },
    preset: { worker },
  });
  runner.events.on("job:success", () => stamps.push(process.hrtime.bigint()));
  runner.events.on("job:failed", () => failed++);
  const deadline = Date.now() + timeoutS * 1000;
  while (stamps.length < jobs && failed === 0 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  await runner.stop();
  if (failed) throw new Error(`${mode}: ${failed} jobs failed`);
  if (stamps.length < jobs)
    throw new Error(`${mode}: ${stamps.length} of ${jobs} jobs done after ${timeoutS} s`);
  const at = (q) => Number(stamps[Math.floor(q * (jobs - 1))]) / 1e9;
  const wall = Number(stamps[jobs - 1] - t0) / 1e9;
  const rate = (0.8 * jobs) / (at(0.9) - at(0.1));
  console.log(
    JSON.stringify({
      bench: "dispatch",
      phase: "peer",
      peer: "graphile-worker",
      version,
      mode,
      jobs,
      concurrency,
      local_queue: mode === "batched" ? queue : 0,
      wall_s: Number(wall.toFixed(2)),
      jobs_per_s: Number(rate.toFixed(1)),
    }),
  );
}

async function main() {
  const pool = new Pool({ max: concurrency + 4 });
  pool.on("error", (e) => console.error(`graphile bench: pool: ${e.message}`));
  pool.on("connect", (client) =>
    client.on("error", (e) => console.error(`graphile bench: client: ${e.message}`)),
  );
  try {
    await runMigrations({ pgPool: pool, logger });
    for (const mode of (process.env.BENCH_PEER_MODES || "per_job,batched").split(",")) {
      if (mode !== "per_job" && mode !== "batched")
        throw new Error(`BENCH_PEER_MODES: '${mode}' is neither per_job nor batched`);
      await measure(pool, mode);
    }
  } finally {
    await pool.end();
  }
}

main().catch((e) => {
  console.error(`graphile bench: ${e.message}`);
  process.exit(1);
});
