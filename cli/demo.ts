/**
 * `deno task demo`: the kit's main job, end to end, on a machine with no database server.
 *
 * 1. Database: PGlite (PostgreSQL in WebAssembly) on a worker thread, exposed to postgres.js
 *    and the Supabase CLI by pglite-socket, plus the PGMQ-compatible layer. With
 *    `DATABASE_URL` set, that server is used instead.
 * 2. A temporary copy of the project; `scaffold-queue` writes the two queue functions of the
 *    shipped registry (`classify_threads`, `deliver_slack_alerts`); `supabase db push` (the
 *    same `migrate()` path as everywhere) applies the SQL core and their migrations.
 * 3. Phase 1 deploys a registry without v2: the two functions are served locally
 *    (`serveFunctions`, real HTTP and subprocesses) and started with supabase-js
 *    `functions.invoke`; runs of `communityThreads` (→ v1) and `supportTickets` start.
 * 4. Phase 2 deploys the shipped registry (v1 and v2) while v1 runs are in flight: the first
 *    new worker moves the alias to v2, new runs use v2, v1 runs drain on v1 handlers.
 * 5. One v2 run is followed live: its events as they happen (`createClient(registry)`,
 *    `run.events()`), then its typed output.
 * 6. A progress line while it runs, then tables of runs, queues, drain states, functions and
 *    the support tickets' conditional step and map fan-out.
 *
 * Exits 0 when every run completed, v1 is drained and v2 is the active version.
 *
 * `deno task demo --dashboard [--dashboard-port N]` also serves the dashboard
 * (`lib/ops/dashboard.ts`, default port 8787, else a free one) from the start, so the phases can
 * be watched live, and keeps it open on the finished database until Ctrl-C. The printed URL
 * carries the demo's bearer in its fragment, so the page's pause and resume work.
 *
 * @module
 */
import { join } from 'node:path';
import postgres from 'postgres';
import { createClient as createSupabaseClient } from '@supabase/supabase-js';
import { parseArgs } from 'node:util';
import { createClient } from '../lib/client.ts';
import { createDashboard } from '../lib/ops.ts';
import { openSql } from '../lib/sql/connection.ts';
import { migrate } from '../lib/sql/migrate.ts';
import { registry } from '../supabase/functions/_shared/registry.ts';
import { freePort } from './_util.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from './_pglite.ts';
import { copyProject } from './_project.ts';
import { scaffoldQueue } from './scaffold_queue.ts';
import { type ServedFunctions, serveFunctions } from './serve.ts';
import { helpOption } from './_help.ts';

helpOption(`usage: deno task demo

Runs the kit end to end without a database server (PGlite), or on DATABASE_URL when it is set
(it writes to that database): scaffolds the shipped registry's two queue functions in a temp
copy of the project, applies the migrations with supabase db push, serves the functions over
HTTP, runs flows by alias, deploys v2 while v1 runs drain, and prints runs, queues and drain
states. Exits 0 when every run completed and v1 drained.`);

const QUEUES = [['classify_threads', 4], ['deliver_slack_alerts', 2]] as const;
const V1_RUNS = 8;
const V2_RUNS = 8;
const TICKET_RUNS = 6;
const DEADLINE_MS = 150_000;

/** Phase 1: the shared registry as it was before v2 existed. */
const REGISTRY_WITHOUT_V2 = `/** Demo phase 1: the registry before communityThreadsV2 existed. */
import { communityThreadsV1 } from './flows/community_threads.ts';
import { supportTicketsV1 } from './flows/support_tickets.ts';

export const registry = [communityThreadsV1, supportTicketsV1] as const;
`;

const began = performance.now();
const elapsed = () => `${((performance.now() - began) / 1000).toFixed(1)}s`;
const say = (line: string) => console.log(`[demo ${elapsed().padStart(6)}] ${line}`);
const tty = Deno.stdout.isTerminal();

/** Renders rows as an aligned text table. */
function table(title: string, rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return `${title}\n  (none)\n`;
  const cols = Object.keys(rows[0]);
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : String(v));
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) =>
    `  ${vals.map((v, i) => v.padEnd(widths[i])).join('  ')}`.trimEnd();
  return [
    title,
    line(cols),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map((r) => line(cols.map((c) => cell(r[c])))),
    '',
  ].join('\n');
}

function sample<T>(items: readonly T[], i: number): T {
  return items[i % items.length];
}

const TITLES = [
  'Checkout is down for EU customers',
  'How do I export my data?',
  'Security: API key leak in logs',
  'Feature idea: dark mode',
  'Webhooks broken since last deploy',
  'Thanks for the new release!',
];

function thread(k: number) {
  return {
    id: `thread-${k}`,
    title: sample(TITLES, k),
    body: k % 3 === 0 ? 'Customers report errors on every request. '.repeat(3) : 'See above.',
  };
}

const USAGE = 'usage: deno task demo [--dashboard [--dashboard-port N]]';

/** Serves the dashboard on `port` (or a free port when it is taken) with the demo's bearer. */
function serveDashboard(url: string, secret: string, port: number) {
  const sql = openSql(url, { max: 2, origin: 'the demo database' });
  const dashboard = createDashboard({
    source: sql,
    env: (name) => (name === 'SWITCHYARD_WORKER_SECRET' ? secret : undefined),
    refreshMs: 2000,
  });
  let server: Deno.HttpServer;
  try {
    server = Deno.serve({ hostname: '127.0.0.1', port, onListen: () => {} }, dashboard.fetch);
  } catch (e) {
    if (!(e instanceof Deno.errors.AddrInUse)) throw e;
    port = freePort();
    server = Deno.serve({ hostname: '127.0.0.1', port, onListen: () => {} }, dashboard.fetch);
  }
  return {
    url: `http://127.0.0.1:${port}/#token=${secret}`,
    async close() {
      await dashboard.close();
      await server.shutdown();
      await sql.end({ timeout: 5 });
    },
  };
}

async function main(args: string[]): Promise<number> {
  let options;
  try {
    options = parseArgs({
      args,
      options: { dashboard: { type: 'boolean' }, 'dashboard-port': { type: 'string' } },
    }).values;
  } catch (e) {
    console.error(`error: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  const portText = options['dashboard-port'] ?? '8787';
  const dashboardPort = Number(portText);
  if (!/^\d+$/.test(portText) || dashboardPort < 1 || dashboardPort > 65535) {
    console.error(
      `error: --dashboard-port "${portText}" is invalid: use an integer from 1 to 65535`,
    );
    return 2;
  }
  const external = Deno.env.get('DATABASE_URL') || undefined;
  let dashboard: ReturnType<typeof serveDashboard> | undefined;
  let embedded: EmbeddedPostgres | undefined;
  let served: ServedFunctions | undefined;
  let project: string | undefined;
  let sql: postgres.Sql | undefined;
  const functionLog: string[] = [];
  let ticker: ReturnType<typeof setInterval> | undefined;
  try {
    let url: string;
    if (external) {
      url = external;
      say('database: DATABASE_URL');
    } else {
      say('database: starting embedded PGlite (no server needed)…');
      embedded = await startEmbeddedPostgres();
      url = embedded.url;
      say(`database: ${embedded.version.split(' on ')[0]} on ${new URL(url).host} (pglite-socket)`);
    }

    project = await copyProject('switchyard-demo-');
    say(`project copy: ${project}`);
    const registryPath = join(project, 'supabase/functions/_shared/registry.ts');
    const shippedRegistry = await Deno.readTextFile(registryPath);
    for (const [queue, maxConcurrent] of QUEUES) {
      const result = await scaffoldQueue({ projectDir: project, queueName: queue, maxConcurrent });
      say(
        `scaffold-queue ${queue} → supabase/functions/${result.functionName}/ (${
          result.files.filter((f) => f.action !== 'unchanged').length
        } files)`,
      );
    }
    say('supabase db push: SQL core + the two function registrations…');
    await migrate(url, { workdir: project, pgmqMode: 'auto' });
    sql = postgres(url, { max: 2, prepare: false, onnotice: () => {} });
    // PGlite's socket shares one session among all connections, so a notification reaches
    // whichever connection committed, not the listener: there the client also re-reads.
    const client = createClient(registry, {
      connectionString: url,
      max: 2,
      fallbackPollMs: embedded ? 250 : undefined,
    });

    const secret = crypto.randomUUID();
    if (options.dashboard) {
      dashboard = serveDashboard(url, secret, dashboardPort);
      say(`dashboard: ${dashboard.url}`);
    }
    const env = {
      DATABASE_URL: url,
      SWITCHYARD_WORKER_SECRET: secret,
      SWITCHYARD_LOG: 'warn',
      SWITCHYARD_MAX_POLL_SECONDS: '1',
      SWITCHYARD_POLL_INTERVAL_MS: '50',
      // Fewer bookkeeping statements: on PGlite each one waits for its turn.
      SWITCHYARD_HEARTBEAT_INTERVAL_MS: '4000',
      SWITCHYARD_STALL_CHECK_INTERVAL_MS: '10000',
    };
    const invokeAll = async () => {
      const supabase = createSupabaseClient(served!.url, secret, {
        auth: { persistSession: false, autoRefreshToken: false },
      });
      // Concurrently: on PGlite every start-up query waits its turn behind the other
      // function's polls, so starting them one after the other would double the wait.
      await Promise.all(served!.functions.map(async (name) => {
        const { data, error } = await supabase.functions.invoke(name);
        if (error) {
          const body = await (error as { context?: Response }).context?.text?.();
          throw new Error(`invoking ${name} failed: ${error.message} ${body ?? ''}`);
        }
        say(
          `functions.invoke('${name}') → ${data.state} worker ${String(data.workerId).slice(0, 8)}`,
        );
      }));
    };

    // Phase 1: the registry without v2.
    await Deno.writeTextFile(registryPath, REGISTRY_WITHOUT_V2);
    served = await serveFunctions({
      projectDir: project,
      env,
      log: (l) => functionLog.push(l),
      reportPauses: false, // on PGlite every statement waits its turn: no polling
    });
    say(
      `phase 1: registry [communityThreadsV1, supportTicketsV1] served at ${served.url}/functions/v1/`,
    );
    await invokeAll();

    // One statement per refresh: on PGlite every statement waits for its turn.
    const progress = async () => {
      const [row] = await sql!<{ runs: string; queues: string; drain: string }[]>`
        select
          (select string_agg(format('%s %s/%s', flow_slug, done, total), ', ' order by flow_slug)
             from (select flow_slug, count(*) filter (where status = 'completed') as done,
                          count(*) as total
                     from switchyard.runs group by flow_slug) r) as runs,
          (select string_agg(format('%s=%s', q.queue_name, m.queue_length), ' '
                             order by q.queue_name)
             from switchyard.queues q cross join lateral pgmq.metrics(q.queue_name) m) as queues,
          (select string_agg(format('%s %s', replace(flow_slug, 'communityThreads', ''), state),
                             ', ' order by flow_slug)
             from (select flow_slug,
                          case when bool_or(state = 'active') then 'active'
                               when bool_or(state = 'draining') then 'draining'
                               else 'drained' end as state
                     from switchyard.drain_status()
                    where flow_slug like 'communityThreads%' group by flow_slug) d) as drain`;
      return `runs ${row.runs ?? '-'} | queued ${row.queues ?? '-'} | ${row.drain ?? ''}`;
    };
    let lastPrinted = 0;
    let busy = false;
    ticker = setInterval(async () => {
      if (busy) return;
      busy = true;
      try {
        const line = await progress();
        if (tty) {
          await Deno.stdout.write(new TextEncoder().encode(`\r\x1b[K  ${elapsed()} ${line}`));
        } else if (performance.now() - lastPrinted > 3000) {
          lastPrinted = performance.now();
          console.log(`  ${elapsed().padStart(6)} ${line}`);
        }
      } catch {
        /* the database is busy or closing */
      } finally {
        busy = false;
      }
    }, 500);
    const newline = () => tty && console.log();
    // A line above the progress line (which a terminal rewrites in place).
    const sayAbove = async (line: string) => {
      if (tty) await Deno.stdout.write(new TextEncoder().encode('\r\x1b[K'));
      say(line);
    };

    const started: string[] = [];
    const startRuns = async (alias: string, n: number, offset: number) => {
      for (let i = 0; i < n; i++) {
        const k = offset + i;
        const run = alias === 'communityThreads'
          ? await client.start('communityThreads', thread(k))
          : await client.start('supportTickets', {
            id: `ticket-${k}`,
            customer: sample(['acme', 'globex', 'initech'], k),
            plan: sample(['free', 'pro', 'enterprise'] as const, k),
            subject: sample(['Site down after upgrade', 'Invoice question', 'SSO setup'], k),
          });
        started.push(run.runId);
      }
    };
    // Said before each wait, so the demo is never silent while the workers start up and work.
    await sayAbove(
      `starting ${V1_RUNS / 2} communityThreads and ${TICKET_RUNS / 2} supportTickets runs ` +
        "(on PGlite each start waits its turn behind the workers' first polls)",
    );
    await startRuns('communityThreads', V1_RUNS / 2, 0);
    await startRuns('supportTickets', TICKET_RUNS / 2, 0);
    const deadline = Date.now() + DEADLINE_MS;
    const waitUntil = async (what: string, check: () => Promise<boolean>) => {
      await sayAbove(`waiting for ${what}`);
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    };
    const completed = async (flow: string) =>
      (await sql!<{ n: number }[]>`
        select count(*)::int as n from switchyard.runs
         where flow_slug = ${flow} and status = 'completed'`)[0].n;
    await waitUntil(
      'the first two communityThreadsV1 runs to complete (classify, then deliver)',
      async () => (await completed('communityThreadsV1')) >= 2,
    );
    await startRuns('communityThreads', V1_RUNS / 2, V1_RUNS / 2);
    await startRuns('supportTickets', TICKET_RUNS / 2, TICKET_RUNS / 2);

    // Phase 2: deploy v1 + v2 while v1 runs are in flight.
    const [{ inflight }] = await sql<{ inflight: number }[]>`
      select count(*)::int as inflight from switchyard.runs
       where flow_slug = 'communityThreadsV1' and status = 'started'`;
    newline();
    say(
      `phase 2: deploying registry [communityThreadsV1, communityThreadsV2, supportTicketsV1] ` +
        `with ${inflight} v1 run(s) in flight`,
    );
    await Deno.writeTextFile(registryPath, shippedRegistry);
    await served.restart();
    await invokeAll();
    const [alias] = await sql<{ flow_slug: string }[]>`
      select flow_slug from switchyard.aliases where alias = 'communityThreads'`;
    say(`alias communityThreads → ${alias.flow_slug}; v1 runs drain on v1 handlers`);
    // Follow one v2 run live, while the others run.
    const followed = await client.start('communityThreads', {
      ...thread(0),
      id: 'thread-followed',
    });
    say(`following run ${followed.runId.slice(0, 8)} live (run.events()):`);
    const following = (async () => {
      for await (const e of followed.events()) {
        await sayAbove(`  run ${followed.runId.slice(0, 8)}: ${e.stepSlug ?? 'run'} ${e.event}`);
      }
      const out = await followed.output();
      await sayAbove(
        `  run ${
          followed.runId.slice(0, 8)
        }: output deliverSlack.posted = ${out.deliverSlack.posted}`,
      );
    })();
    await startRuns('communityThreads', V2_RUNS - 1, V1_RUNS);
    await following;

    const total = V1_RUNS + V2_RUNS + TICKET_RUNS;
    await waitUntil('every run to finish', async () => {
      const [{ n }] = await sql!<{ n: number }[]>`
        select count(*)::int as n from switchyard.runs where status <> 'started'`;
      return n >= total;
    });
    clearInterval(ticker);
    ticker = undefined;
    newline();
    // Stop the functions first (their workers drain and record the stop): the tables below
    // then read an idle database.
    await served.close();
    say('functions stopped');

    const runs = await sql`
      select flow_slug as flow, started_as,
             count(*) filter (where status = 'completed')::int as completed,
             count(*) filter (where status = 'failed')::int as failed,
             count(*) filter (where status = 'started')::int as running
        from switchyard.runs group by flow_slug, started_as order by flow_slug`;
    const queues = await sql`
      select q.queue_name as queue, q.ownership, m.queue_length::int as queued,
             m.total_messages::int as messages_sent
        from switchyard.queues q cross join lateral pgmq.metrics(q.queue_name) m
       order by q.queue_name`;
    const drain = await sql`
      select queue_name as queue, flow_slug as version, alias, state,
             started_runs::int, queued_tasks::int, started_tasks::int
        from switchyard.drain_status() order by queue_name, flow_slug`;
    const functions = await sql`
      select f.function_name as function, f.queue_name as queue, f.enabled,
             f.paused_at is not null as paused,
             (select count(*) from switchyard.workers w
               where w.function_name = f.function_name)::int as workers_started,
             (select count(*) from switchyard.workers w
               where w.function_name = f.function_name and w.stopped_at is null)::int as live
        from switchyard.worker_functions f order by f.function_name`;
    // supportTicketsV1 has a condition (escalate unless sev3, skip-cascade) and a map (one
    // Slack delivery per escalation channel): per ticket, what SQL decided.
    const tickets = await sql`
      select r.input ->> 'id' as ticket, t.output ->> 'severity' as severity,
             e.status as escalate, n.status as notify,
             (select count(*) from switchyard.step_tasks x
               where x.run_id = r.run_id and x.step_slug = 'notify')::int as notify_tasks
        from switchyard.runs r
        join switchyard.step_states t on t.run_id = r.run_id and t.step_slug = 'triage'
        join switchyard.step_states e on e.run_id = r.run_id and e.step_slug = 'escalate'
        join switchyard.step_states n on n.run_id = r.run_id and n.step_slug = 'notify'
       where r.flow_slug = 'supportTicketsV1'
       order by (r.input ->> 'id')`;
    const activations = await sql`
      select alias, flow_slug as activated, coalesce(previous_flow_slug, '-') as previous, source
        from switchyard.alias_activations where alias = 'communityThreads'
       order by activation_id`;
    console.log();
    console.log(table('Runs', runs));
    console.log(table('Queues (shared, explicit)', queues));
    console.log(table('Drain status (switchyard.drain_status())', drain));
    console.log(table('Queue functions', functions));
    console.log(table('Support tickets (a condition and a map step)', tickets));
    console.log(table('Alias activations', activations));
    await client.close();

    const failed = runs.reduce((n, r) => n + (r.failed as number) + (r.running as number), 0);
    const v1Drained = drain.filter((d) => d.version === 'communityThreadsV1')
      .every((d) => d.state === 'drained');
    const v2Active = alias.flow_slug === 'communityThreadsV2';
    if (failed > 0 || !v1Drained || !v2Active) {
      say(
        `FAILED: ${failed} run(s) not completed, v1 drained: ${v1Drained}, v2 active: ${v2Active}`,
      );
      return 1;
    }
    say(`done: all ${total} runs completed; communityThreadsV1 drained, communityThreadsV2 active`);
    return 0;
  } catch (e) {
    if (ticker) clearInterval(ticker);
    console.log();
    console.error(`[demo] error: ${(e as Error).message}`);
    if (functionLog.length > 0) {
      console.error('[demo] last function output:');
      for (const line of functionLog.slice(-40)) console.error(`  ${line}`);
    }
    return 1;
  } finally {
    if (ticker) clearInterval(ticker);
    await served?.close().catch(() => {});
    if (dashboard) {
      say(`dashboard stays open on the finished database: ${dashboard.url} (Ctrl-C to stop)`);
      await new Promise<void>((done) => {
        for (const signal of ['SIGINT', 'SIGTERM'] as const) Deno.addSignalListener(signal, done);
      });
    }
    await dashboard?.close().catch(() => {});
    await sql?.end({ timeout: 2 }).catch(() => {});
    await embedded?.close().catch(() => {});
    if (project) await Deno.remove(project, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
