/**
 * followRun's Supabase Realtime transport (issue 26, docs/design/observability.md). Supabase
 * Realtime cannot run here (it needs Docker), so the client handed to followRun is a channel over
 * the real database that behaves as Realtime's `postgres_changes` does for followRun: after
 * `SUBSCRIBED` it delivers the run's `run_events` inserts as `payload.new` rows — the first
 * channel from a few rows before the subscription (rows that committed while it was being made,
 * which the backlog read returns too) — and mid-run it fails with `CHANNEL_ERROR` and delivers
 * nothing more; the next subscription takes 300 ms and delivers only later inserts, so what
 * committed in between is found only by the backlog read. Its
 * `schema().from().select()...` is the API read of the backlog, against the same table. What is
 * tested is followRun's side: subscribe first, read the backlog after the cursor, hold back and
 * de-duplicate, and start again from the cursor after a channel error — every event once, in
 * order, while a real worker's handler reports progress. (Realtime's own row-level security check
 * is the policy tests/sql/progress_test.ts tests with real roles.)
 */
import assert from 'node:assert/strict';
import type postgres from 'postgres';
import { followRun } from '../../lib/browser.ts';
import type { FollowedEvent, RealtimeClient } from '../../lib/browser.ts';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow, startWorker } from '../../lib/mod.ts';
import { runEvents } from '../../lib/ops.ts';
import { untypedClient } from '../_helpers/untyped_client.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, within } from '../_helpers/wait.ts';

const SILENT = { info: () => {}, warn: () => {}, error: () => {} };
type Row = Record<string, unknown>;

/** The backlog read: `from('run_events').select('*').eq().gt().order().limit()`, awaited. */
class EventsQuery implements PromiseLike<{ data: Row[] | null; error: Error | null }> {
  #run = '';
  #after = 0;
  #limit = 1000;
  constructor(readonly sql: postgres.Sql, readonly reads: number[]) {}
  select(columns: string) {
    assert.equal(columns, '*');
    return this;
  }
  eq(column: string, value: string) {
    assert.equal(column, 'run_id');
    this.#run = value;
    return this;
  }
  gt(column: string, value: number) {
    assert.equal(column, 'event_id');
    this.#after = value;
    return this;
  }
  order(column: string) {
    assert.equal(column, 'event_id');
    return this;
  }
  limit(n: number) {
    this.#limit = n;
    return this;
  }
  then<A, B>(
    ok?: ((value: { data: Row[] | null; error: Error | null }) => A | PromiseLike<A>) | null,
    fail?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): PromiseLike<A | B> {
    this.reads.push(this.#after);
    return this.sql<Row[]>`
      select event_id, run_id, flow_slug, step_slug, event, created_at, task_index, data
        from switchyard.run_events
       where run_id = ${this.#run}::uuid and event_id > ${this.#after}
       order by event_id limit ${this.#limit}`
      .then((rows) => ({ data: [...rows], error: null }))
      .then(ok, fail);
  }
}

/** A channel as followRun uses it, delivering the database's inserts (see the module doc). */
function realtimeOverDatabase(sql: postgres.Sql, { failAfter }: { failAfter: number }) {
  const reads: number[] = [];
  const channels: string[] = [];
  let delivered = 0;
  let failed = false;
  let first = true;
  let overlap = true;
  const client: RealtimeClient = {
    channel(name: string) {
      channels.push(name);
      let onInsert: (payload: { new: Row }) => void = () => {};
      let runId = '';
      let closed = false;
      let listening: { unlisten(): Promise<void> } | undefined;
      const channel = {
        on(
          kind: string,
          options: { event: string; schema: string; table: string; filter: string },
          cb: typeof onInsert,
        ) {
          assert.equal(kind, 'postgres_changes');
          assert.deepEqual([options.event, options.schema, options.table], [
            'INSERT',
            'switchyard',
            'run_events',
          ]);
          runId = /^run_id=eq\.(.+)$/.exec(options.filter)?.[1] ?? '';
          onInsert = cb;
          return channel;
        },
        subscribe(status: (state: string, err?: Error) => void) {
          channel.start(runId, status).catch((e) => status('CHANNEL_ERROR', e));
          return channel;
        },
        async start(runId: string, status: (state: string, err?: Error) => void) {
          // The first subscription delivers from a few rows before "now" (they committed while
          // it was being made; the backlog read returns them too). A later one takes 300 ms and
          // delivers only what commits after it: what committed meanwhile is only in the backlog.
          if (first) first = false;
          else await new Promise((r) => setTimeout(r, 300));
          const [{ max }] = await sql<{ max: string | null }[]>`
            select max(event_id)::text as max from switchyard.run_events where run_id = ${runId}`;
          let sent = Math.max(0, Number(max ?? 0) - (overlap ? 3 : 0));
          overlap = false;
          let busy = Promise.resolve();
          const push = () =>
            busy = busy.then(async () => {
              if (closed) return;
              const rows = await sql<Row[]>`
                select event_id, run_id, flow_slug, step_slug, event, created_at, task_index, data
                  from switchyard.run_events where run_id = ${runId} and event_id > ${sent}
                 order by event_id`;
              for (const row of rows) {
                if (closed) return;
                sent = Number(row.event_id);
                onInsert({ new: row });
                delivered++;
                if (!failed && delivered >= failAfter) {
                  // The connection to Realtime is lost: nothing more on this channel.
                  failed = true;
                  closed = true;
                  status('CHANNEL_ERROR', new Error('the test broke the channel'));
                  return;
                }
              }
            });
          listening = await sql.listen('switchyard_run_events', (id) => {
            if (id === runId) push();
          });
          status('SUBSCRIBED');
          push();
        },
        async stop() {
          closed = true;
          await listening?.unlisten();
        },
      };
      return channel;
    },
    removeChannel(channel: { stop(): Promise<void> }) {
      return channel.stop();
    },
    schema(name: string) {
      assert.equal(name, 'switchyard');
      return {
        from: (table: string) => (assert.equal(table, 'run_events'), new EventsQuery(sql, reads)),
      };
    },
  };
  return { client, reads, channels };
}

Deno.test('followRun over Realtime: subscribe, backlog, held-back repeats dropped, a channel error resumed', async () => {
  const db = await createTestDatabase();
  const client = untypedClient(db.url);
  try {
    const flow = new Flow<{ n: number }>({ slug: 'followRealtimeV1' })
      .step({ slug: 'work' }, async (input, ctx) => {
        for (let i = 1; i <= input.n; i++) {
          await ctx.progress({ i });
          await new Promise((r) => setTimeout(r, 60));
        }
        return null;
      });
    await db.sql`select switchyard.ensure_flow(${
      db.sql.json(toPlacement(flow).shape as never)
    }::jsonb)`;
    const runId = await client.startFlow('followRealtimeV1', { n: 30 });
    const { client: supabase, reads, channels } = realtimeOverDatabase(db.sql, { failAfter: 12 });
    const followed: FollowedEvent[] = [];
    const statuses: string[] = [];
    const following = followRun(runId, {
      supabase,
      retryMs: 50,
      onEvent: (e) => followed.push(e),
      onStatus: (s) => statuses.push(s),
    });
    const worker = await startWorker(flow, { connectionString: db.url, ...FAST, logger: SILENT });
    try {
      await within(60_000, 'the follow to end', following.done);
    } finally {
      await worker.stop();
    }
    const stored = await runEvents(client, runId);
    assert.equal(stored.at(-1)?.event, 'completed');
    assert.deepEqual(followed.map((e) => e.eventId), stored.map((e) => e.eventId));
    assert.deepEqual(
      followed.filter((e) => e.event === 'progress').map((e) => e.data),
      Array.from({ length: 30 }, (_, k) => ({ i: k + 1 })),
    );
    assert.ok(statuses.includes('reconnecting'), statuses.join(' '));
    assert.ok(channels.length >= 2, 'a new channel after the error');
    // The second backlog read started after the events already delivered.
    assert.equal(reads[0], 0);
    assert.ok(reads.some((after) => after > 0), reads.join(' '));
  } finally {
    await client.close();
    await db.close();
  }
});
