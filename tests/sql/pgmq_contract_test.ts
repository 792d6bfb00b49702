/**
 * PGMQ contract: behaviours the kit relies on, taken from PGMQ 1.5's documentation.
 *
 * These tests run against whatever provides the `pgmq` schema: the local compatible layer
 * (pgmq_compat/pgmq.sql) or the real extension. They touch only the documented API, the
 * documented `pgmq.q_<queue>` / `pgmq.a_<queue>` tables and `pgmq.meta`, so they must pass
 * unchanged against real PGMQ 1.5.x.
 *
 * @module
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { createTestDatabase } from '../_helpers/db.ts';

const db = await createTestDatabase();
const sql = db.sql;

// The shared pool outlives single tests (the last test closes it), so per-test resource checks
// would flag its sockets.
const test = (name: string, fn: () => Promise<void>) =>
  Deno.test({ name, fn, sanitizeOps: false, sanitizeResources: false });

interface Message {
  msg_id: number;
  read_ct: number;
  enqueued_at: Date;
  vt: Date;
  message: unknown;
  headers: unknown;
}

type Row = Record<string, unknown>;

/** Converts rows of pgmq.message_record (msg_id arrives as a bigint string). */
function messages(rows: readonly Row[]): Message[] {
  return rows.map((r) => ({ ...r, msg_id: Number(r.msg_id) }) as Message);
}

function ids(rows: readonly Row[], column: string): number[] {
  return rows.map((r) => Number(r[column]));
}

/** A bigint[] literal for postgres.js, which sends untyped parameters. */
function bigintArray(values: number[]): string {
  return `{${values.join(',')}}`;
}

/** A jsonb[] built in SQL from a JSON array, keeping element order. */
function jsonbArray(items: postgres.JSONValue[]) {
  return sql`array(
    select e from jsonb_array_elements(${sql.json(items)}::jsonb) with ordinality as t(e, i)
    order by i
  )`;
}

let queueCounter = 0;

/** Creates a queue with a name unique to this file's database. */
async function newQueue(label: string): Promise<string> {
  const name = `c_${label}_${queueCounter++}`;
  await sql`select pgmq.create(${name})`;
  return name;
}

async function send(queue: string, msg: postgres.JSONValue): Promise<number> {
  const [row] = await sql`select * from pgmq.send(${queue}, ${sql.json(msg)}::jsonb)`;
  return Number(row.send);
}

async function read(queue: string, vt: number, qty: number): Promise<Message[]> {
  return messages(await sql`select * from pgmq.read(${queue}, ${vt}::int, ${qty}::int)`);
}

async function tableExists(name: string): Promise<boolean> {
  const [row] = await sql`select to_regclass(${'pgmq.' + name}) is not null as present`;
  return row.present as boolean;
}

/** Polls `probe` until it returns a value, failing after `timeoutMs`. */
async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 5000,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

function extraClient(applicationName = 'pgmq_contract_test') {
  return postgres(db.url, {
    max: 1,
    prepare: false,
    onnotice: () => {},
    // A regression that makes a reader block fails the test instead of hanging it.
    connection: { application_name: applicationName, statement_timeout: 10_000 },
  });
}

test('read hides a message for the visibility timeout', async () => {
  const q = await newQueue('vt_hides');
  const id = await send(q, { n: 1 });

  const [before] = await sql`select clock_timestamp() as t`;
  const [first] = await read(q, 30, 1);
  assert.equal(first.msg_id, id);
  const hiddenFor = (first.vt.getTime() - (before.t as Date).getTime()) / 1000;
  assert.ok(
    hiddenFor >= 29 && hiddenFor <= 35,
    `vt should be about now + 30 s, got +${hiddenFor} s`,
  );

  assert.deepEqual(await read(q, 30, 1), []);
});

test('a message becomes visible again when its visibility timeout expires', async () => {
  const q = await newQueue('vt_expires');
  const id = await send(q, { n: 1 });
  const [first] = await read(q, 1, 1);
  assert.equal(first.msg_id, id);
  assert.deepEqual(await read(q, 1, 1), []);

  const again = await eventually('the message to reappear', async () => {
    const [m] = await read(q, 30, 1);
    return m;
  });
  assert.equal(again.msg_id, id);
  assert.equal(again.read_ct, 2);
});

test('read_ct counts every read of a message', async () => {
  const q = await newQueue('read_ct');
  const id = await send(q, { n: 1 });
  for (const expected of [1, 2, 3]) {
    // vt = 0 leaves the message visible for the next read.
    const [m] = await read(q, 0, 1);
    assert.equal(m.msg_id, id);
    assert.equal(m.read_ct, expected);
  }
});

test('set_vt makes a read message visible again without lowering read_ct', async () => {
  const q = await newQueue('set_vt_visible');
  const id = await send(q, { n: 1 });
  await read(q, 30, 1);
  assert.deepEqual(await read(q, 30, 1), []);

  const updated = messages(await sql`select * from pgmq.set_vt(${q}, ${id}::bigint, 0)`);
  assert.equal(updated.length, 1);
  assert.equal(updated[0].msg_id, id);
  assert.equal(updated[0].read_ct, 1);

  const [m] = await read(q, 30, 1);
  assert.equal(m.msg_id, id);
  assert.equal(m.read_ct, 2);
});

test('set_vt hides a message until the new timeout and leaves read_ct alone', async () => {
  const q = await newQueue('set_vt_hides');
  const id = await send(q, { n: 1 });

  const [before] = await sql`select clock_timestamp() as t`;
  const [updated] = messages(await sql`select * from pgmq.set_vt(${q}, ${id}::bigint, 60)`);
  assert.equal(updated.read_ct, 0);
  const hiddenFor = (updated.vt.getTime() - (before.t as Date).getTime()) / 1000;
  assert.ok(
    hiddenFor >= 59 && hiddenFor <= 65,
    `vt should be about now + 60 s, got +${hiddenFor} s`,
  );
  assert.deepEqual(await read(q, 30, 1), []);

  const missing = await sql`select * from pgmq.set_vt(${q}, ${id + 1000}::bigint, 0)`;
  assert.equal(missing.length, 0);
});

test('archive moves the message from q_<queue> to a_<queue>', async () => {
  const q = await newQueue('archive_one');
  const id = await send(q, { keep: 'me' });
  await read(q, 30, 1);

  const [{ archived }] = await sql`select pgmq.archive(${q}, ${id}::bigint) as archived`;
  assert.equal(archived, true);

  const live = await sql`select msg_id from ${sql('pgmq')}.${sql('q_' + q)}`;
  assert.equal(live.length, 0);
  const rows = await sql`
    select msg_id, read_ct, message, archived_at from ${sql('pgmq')}.${sql('a_' + q)}`;
  assert.equal(rows.length, 1);
  assert.equal(Number(rows[0].msg_id), id);
  assert.equal(rows[0].read_ct, 1);
  assert.deepEqual(rows[0].message, { keep: 'me' });
  assert.ok(rows[0].archived_at instanceof Date);

  const [{ again }] = await sql`select pgmq.archive(${q}, ${id}::bigint) as again`;
  assert.equal(again, false);
});

test('archive with an id array moves exactly the listed messages and returns their ids', async () => {
  const q = await newQueue('archive_many');
  const [a, b, c] = [await send(q, { n: 1 }), await send(q, { n: 2 }), await send(q, { n: 3 })];

  const archived = await sql`
    select * from pgmq.archive(${q}, ${bigintArray([a, c, c + 1000])}::bigint[])`;
  assert.deepEqual(ids(archived, 'archive').sort((x, y) => x - y), [a, c]);

  const live = await sql`select msg_id from ${sql('pgmq')}.${sql('q_' + q)}`;
  assert.deepEqual(ids(live, 'msg_id'), [b]);
  const stored = await sql`select msg_id from ${sql('pgmq')}.${sql('a_' + q)} order by msg_id`;
  assert.deepEqual(ids(stored, 'msg_id'), [a, c]);
});

test('delete removes a single message permanently', async () => {
  const q = await newQueue('delete_one');
  const id = await send(q, { n: 1 });

  const [{ deleted }] = await sql`select pgmq.delete(${q}, ${id}::bigint) as deleted`;
  assert.equal(deleted, true);
  const [{ again }] = await sql`select pgmq.delete(${q}, ${id}::bigint) as again`;
  assert.equal(again, false);

  assert.equal((await sql`select 1 from ${sql('pgmq')}.${sql('q_' + q)}`).length, 0);
  assert.equal((await sql`select 1 from ${sql('pgmq')}.${sql('a_' + q)}`).length, 0);
  assert.deepEqual(await read(q, 30, 10), []);
});

test('delete with an id array removes the listed messages and returns their ids', async () => {
  const q = await newQueue('delete_many');
  const [a, b, c] = [await send(q, { n: 1 }), await send(q, { n: 2 }), await send(q, { n: 3 })];

  const deleted = await sql`
    select * from pgmq.delete(${q}, ${bigintArray([a, b, c + 1000])}::bigint[])`;
  assert.deepEqual(ids(deleted, 'delete').sort((x, y) => x - y), [a, b]);

  const rest = await read(q, 30, 10);
  assert.deepEqual(rest.map((m) => m.msg_id), [c]);
  assert.equal((await sql`select 1 from ${sql('pgmq')}.${sql('a_' + q)}`).length, 0);
});

test('send with a delay hides the message until the delay has passed', async () => {
  const q = await newQueue('send_delay');
  const sentAt = Date.now();
  const [row] = await sql`select * from pgmq.send(${q}, ${
    sql.json({ late: true })
  }::jsonb, ${1}::int)`;
  const id = Number(row.send);
  assert.deepEqual(await read(q, 30, 1), []);

  const m = await eventually('the delayed message', async () => {
    const [found] = await read(q, 30, 1);
    return found;
  });
  assert.equal(m.msg_id, id);
  assert.equal(m.read_ct, 1);
  assert.ok(
    Date.now() - sentAt >= 990,
    `delivered after ${Date.now() - sentAt} ms, expected >= 1 s`,
  );
});

test('send with a timestamp delay hides the message until that time', async () => {
  const q = await newQueue('send_at');
  const [row] = await sql`
    select * from pgmq.send(${q}, ${sql.json({})}::jsonb, clock_timestamp() + interval '1 hour')`;
  assert.ok(Number(row.send) > 0);
  assert.deepEqual(await read(q, 30, 1), []);
  const [metrics] = await sql`select * from pgmq.metrics(${q})`;
  assert.equal(Number(metrics.queue_length), 1);
});

test('read delivers messages in FIFO order by msg_id', async () => {
  const q = await newQueue('fifo');
  const sent: number[] = [];
  for (let i = 0; i < 5; i++) sent.push(await send(q, { i }));
  assert.deepEqual([...sent].sort((x, y) => x - y), sent, 'msg_ids increase in send order');

  const received: number[] = [];
  for (let i = 0; i < 5; i++) {
    const [m] = await read(q, 30, 1);
    assert.deepEqual(m.message, { i });
    received.push(m.msg_id);
  }
  assert.deepEqual(received, sent);
});

test('read returns at most qty messages, the oldest first', async () => {
  const q = await newQueue('qty');
  const sent: number[] = [];
  for (let i = 0; i < 5; i++) sent.push(await send(q, { i }));

  const first = await read(q, 30, 3);
  assert.deepEqual(first.map((m) => m.msg_id).sort((x, y) => x - y), sent.slice(0, 3));
  const rest = await read(q, 30, 10);
  assert.deepEqual(rest.map((m) => m.msg_id).sort((x, y) => x - y), sent.slice(3));
  assert.deepEqual(await read(q, 30, 10), []);
});

test('a reader skips messages another open transaction has claimed', async () => {
  const q = await newQueue('skip_locked');
  const a = await send(q, { n: 1 });
  const b = await send(q, { n: 2 });
  const holder = extraClient();
  const other = extraClient();
  try {
    await holder.begin(async (tx) => {
      const [held] = messages(await tx`select * from pgmq.read(${q}, ${30}::int, ${1}::int)`);
      assert.equal(held.msg_id, a);
      // The claim is not committed yet; the other reader must neither wait nor take it.
      const seen = messages(await other`select * from pgmq.read(${q}, ${0}::int, ${10}::int)`);
      assert.deepEqual(seen.map((m) => m.msg_id), [b]);
      throw new Error('rollback');
    }).catch((e) => {
      if ((e as Error).message !== 'rollback') throw e;
    });
    // Rolled back: the message is visible again and its read was not counted.
    const [back] = messages(await other`select * from pgmq.read(${q}, ${30}::int, ${1}::int)`);
    assert.equal(back.msg_id, a);
    assert.equal(back.read_ct, 1);
  } finally {
    await holder.end();
    await other.end();
  }
});

test('concurrent readers on separate connections never receive the same message', async () => {
  const q = await newQueue('concurrent');
  const total = 300;
  const sent = ids(
    await sql`select * from pgmq.send_batch(${q}, ${
      jsonbArray(Array.from({ length: total }, (_, i) => ({ i })))
    })`,
    'send_batch',
  );
  assert.equal(sent.length, total);

  const readers = Array.from({ length: 4 }, () => extraClient());
  try {
    await Promise.all(readers.map((r) => r`select 1`));
    const got = await Promise.all(readers.map(async (r) => {
      const mine: number[] = [];
      for (;;) {
        const batch = messages(await r`select * from pgmq.read(${q}, ${60}::int, ${3}::int)`);
        if (batch.length === 0) return mine;
        mine.push(...batch.map((m) => m.msg_id));
      }
    }));

    const all = got.flat();
    assert.equal(new Set(all).size, all.length, 'no message was delivered twice');
    assert.deepEqual([...all].sort((x, y) => x - y), [...sent].sort((x, y) => x - y));
    assert.ok(got.filter((g) => g.length > 0).length >= 2, 'more than one reader got messages');
  } finally {
    await Promise.all(readers.map((r) => r.end()));
  }
});

test('read_with_poll waits for a message sent while it polls', async () => {
  const q = await newQueue('poll_wait');
  const appName = `pgmq_poll_${q}`;
  const poller = extraClient(appName);
  try {
    const started = Date.now();
    // postgres.js queries are lazy: execute() sends it now, without awaiting the result.
    // max_poll_seconds 120: the bound below (60 s for what takes milliseconds) holds on a
    // loaded machine (load average 8 on 2 cores), and a poll that only reads at its end
    // would still take 120 s.
    const polling = poller`
      select * from pgmq.read_with_poll(${q}, ${30}::int, ${1}::int, ${120}::int, ${50}::int)`
      .execute();
    // Send only once the poll is really running on the server.
    await eventually('read_with_poll to be running', async () => {
      const rows = await sql`
        select 1 from pg_stat_activity where application_name = ${appName} and state = 'active'`;
      return rows.length > 0 ? true : undefined;
    });
    const id = await send(q, { woke: true });

    const got = messages(await polling);
    assert.equal(got.length, 1);
    assert.equal(got[0].msg_id, id);
    assert.deepEqual(got[0].message, { woke: true });
    assert.ok(Date.now() - started < 60_000, 'returned long before max_poll_seconds (120 s)');
  } finally {
    await poller.end();
  }
});

test('read_with_poll returns no rows after max_poll_seconds when nothing arrives', async () => {
  const q = await newQueue('poll_empty');
  const started = Date.now();
  const got = await sql`
    select * from pgmq.read_with_poll(${q}, ${30}::int, ${1}::int, ${1}::int, ${100}::int)`;
  const elapsed = Date.now() - started;
  assert.equal(got.length, 0);
  // A lower bound load cannot break; the upper one is 30 times the 1 s expected, so it holds
  // on a loaded machine (load average 8 on 2 cores) and still tells a poll that never ends.
  assert.ok(elapsed >= 900, `returned after ${elapsed} ms, expected about 1 s`);
  assert.ok(elapsed < 30_000, `returned after ${elapsed} ms, expected about 1 s`);
});

test('send_batch returns one id per message, in array order', async () => {
  const q = await newQueue('batch');
  const bodies = [{ k: 'a' }, { k: 'b' }, { k: 'c' }, { k: 'd' }];
  const sent = ids(
    await sql`select * from pgmq.send_batch(${q}, ${jsonbArray(bodies)})`,
    'send_batch',
  );
  assert.equal(sent.length, bodies.length);
  assert.deepEqual([...sent].sort((x, y) => x - y), sent, 'ids ascend in array order');

  const got = await read(q, 30, 10);
  const byId = new Map(got.map((m) => [m.msg_id, m.message]));
  sent.forEach((id, i) => assert.deepEqual(byId.get(id), bodies[i]));
});

test('send_batch pairs each message with its headers', async () => {
  const q = await newQueue('batch_headers');
  const bodies = [{ n: 1 }, { n: 2 }];
  const headers = [{ h: 'x' }, { h: 'y' }];
  const sent = ids(
    await sql`select * from pgmq.send_batch(${q}, ${jsonbArray(bodies)}, ${jsonbArray(headers)})`,
    'send_batch',
  );
  const got = await read(q, 30, 10);
  sent.forEach((id, i) => {
    const m = got.find((g) => g.msg_id === id);
    assert.deepEqual(m?.message, bodies[i]);
    assert.deepEqual(m?.headers, headers[i]);
  });
});

test('queue names of 47 characters are accepted and 48 are rejected as too long', async () => {
  const ok = 'c_len_' + 'x'.repeat(41);
  assert.equal(ok.length, 47);
  await sql`select pgmq.create(${ok})`;
  assert.ok(await tableExists('q_' + ok));

  const tooLong = 'c_len_' + 'y'.repeat(42);
  assert.equal(tooLong.length, 48);
  await assert.rejects(sql`select pgmq.create(${tooLong})`, /too long/);
  const meta = await sql`select 1 from pgmq.meta where queue_name = ${tooLong}`;
  assert.equal(meta.length, 0);
});

test('queue names containing $, ;, -- or a quote are rejected', async () => {
  for (const bad of ['c_bad$1', 'c_bad;2', 'c_bad--3', "c_bad'4"]) {
    await assert.rejects(sql`select pgmq.create(${bad})`, /invalid characters/, bad);
    await assert.rejects(
      sql`select * from pgmq.send(${bad}, ${sql.json({})}::jsonb)`,
      /invalid characters/,
    );
    const meta = await sql`select 1 from pgmq.meta where queue_name = ${bad}`;
    assert.equal(meta.length, 0, bad);
  }
});

test('drop_queue removes the queue table, the archive table and the meta row', async () => {
  const q = await newQueue('drop');
  await send(q, { n: 1 });
  assert.ok(await tableExists('q_' + q));
  assert.ok(await tableExists('a_' + q));

  const [{ dropped }] = await sql`select pgmq.drop_queue(${q}) as dropped`;
  assert.equal(dropped, true);
  assert.equal(await tableExists('q_' + q), false);
  assert.equal(await tableExists('a_' + q), false);
  assert.equal((await sql`select 1 from pgmq.meta where queue_name = ${q}`).length, 0);
  const listed = await sql`select * from pgmq.list_queues() where queue_name = ${q}`;
  assert.equal(listed.length, 0);
});

test('create is idempotent and keeps existing messages', async () => {
  const q = await newQueue('idempotent');
  const id = await send(q, { n: 1 });
  await sql`select pgmq.create(${q})`;
  await sql`select pgmq.create(${q})`;

  assert.equal((await sql`select 1 from pgmq.meta where queue_name = ${q}`).length, 1);
  const [m] = await read(q, 30, 1);
  assert.equal(m.msg_id, id);
});

test('pgmq.meta keeps the spelling given at creation while table names are lower-cased', async () => {
  const q = `C_MixedCase_${queueCounter++}`;
  await sql`select pgmq.create(${q})`;

  const meta = await sql`select queue_name from pgmq.meta where lower(queue_name) = lower(${q})`;
  assert.deepEqual(meta.map((r) => r.queue_name), [q]);
  assert.ok(await tableExists('q_' + q.toLowerCase()));
  assert.ok(await tableExists('a_' + q.toLowerCase()));
  const [{ quoted }] = await sql`
    select to_regclass(format('pgmq.%I', ${'q_' + q}::text)) is not null as quoted`;
  assert.equal(quoted, false, 'no table keeps the mixed-case spelling');

  // Both spellings address the same queue.
  const id = await send(q, { n: 1 });
  const [m] = await read(q.toLowerCase(), 30, 1);
  assert.equal(m.msg_id, id);
});

test('metrics counts queued, visible and total messages', async () => {
  const q = await newQueue('metrics');
  const a = await send(q, { n: 1 });
  const b = await send(q, { n: 2 });
  await send(q, { n: 3 });
  await sql`select * from pgmq.send(${q}, ${sql.json({})}::jsonb, ${3600}::int)`;
  const [readOne] = await read(q, 30, 1);
  assert.equal(readOne.msg_id, a);
  await sql`select pgmq.delete(${q}, ${b}::bigint)`;

  // In the queue: a (hidden by the read), the third (visible), the delayed one (hidden).
  const [m] = await sql`select * from pgmq.metrics(${q})`;
  assert.equal(m.queue_name, q);
  assert.equal(Number(m.queue_length), 3);
  assert.equal(Number(m.queue_visible_length), 1);
  assert.equal(Number(m.total_messages), 4, 'every message ever sent');
  assert.ok(typeof m.oldest_msg_age_sec === 'number' && m.oldest_msg_age_sec >= 0);
  assert.ok(typeof m.newest_msg_age_sec === 'number' && m.newest_msg_age_sec >= 0);
  assert.ok(m.scrape_time instanceof Date);

  const empty = await newQueue('metrics_empty');
  const [e] = await sql`select * from pgmq.metrics(${empty})`;
  assert.equal(Number(e.queue_length), 0);
  assert.equal(Number(e.total_messages), 0);
  assert.equal(e.oldest_msg_age_sec, null);
});

test('metrics_all reports every queue', async () => {
  const q1 = await newQueue('metrics_all');
  const q2 = await newQueue('metrics_all');
  await send(q1, { n: 1 });
  await send(q2, { n: 1 });
  await send(q2, { n: 2 });

  const rows = await sql`select * from pgmq.metrics_all()`;
  const byName = new Map(rows.map((r) => [r.queue_name, Number(r.queue_length)]));
  assert.equal(byName.get(q1), 1);
  assert.equal(byName.get(q2), 2);
  const [{ count }] = await sql`select count(*)::int as count from pgmq.meta`;
  assert.equal(rows.length, count);
});

test('list_queues returns every queue with its flags and creation time', async () => {
  const plain = await newQueue('list');
  const unlogged = `c_list_unlogged_${queueCounter++}`;
  await sql`select pgmq.create_unlogged(${unlogged})`;

  const rows = await sql`select * from pgmq.list_queues()`;
  assert.deepEqual(rows.columns.map((c) => c.name), [
    'queue_name',
    'is_partitioned',
    'is_unlogged',
    'created_at',
  ]);
  const p = rows.find((r) => r.queue_name === plain);
  const u = rows.find((r) => r.queue_name === unlogged);
  assert.ok(p && u);
  assert.equal(p.is_partitioned, false);
  assert.equal(p.is_unlogged, false);
  assert.equal(u.is_unlogged, true);
  assert.ok(p.created_at instanceof Date);
});

test('purge_queue deletes every queued message, returns the count and keeps the archive', async () => {
  const q = await newQueue('purge');
  const first = await send(q, { n: 1 });
  await send(q, { n: 2 });
  await send(q, { n: 3 });
  await sql`select pgmq.archive(${q}, ${first}::bigint)`;

  const [{ purged }] = await sql`select pgmq.purge_queue(${q}) as purged`;
  assert.equal(Number(purged), 2);
  assert.deepEqual(await read(q, 30, 10), []);
  assert.equal((await sql`select 1 from ${sql('pgmq')}.${sql('a_' + q)}`).length, 1);
});

test('headers round-trip through send and read', async () => {
  const q = await newQueue('headers');
  const headers = { trace: 'abc', attempt: 2, nested: { ok: true } };
  const [row] = await sql`
    select * from pgmq.send(${q}, ${sql.json({ body: 1 })}::jsonb, ${sql.json(headers)}::jsonb)`;
  const withHeaders = Number(row.send);
  const without = await send(q, { body: 2 });

  const got = await read(q, 30, 10);
  assert.deepEqual(got.find((m) => m.msg_id === withHeaders)?.headers, headers);
  assert.equal(got.find((m) => m.msg_id === without)?.headers, null);
});

test('message_record has the columns msg_id, read_ct, enqueued_at, vt, message, headers', async () => {
  const q = await newQueue('shape');
  const id = await send(q, { n: 1 });
  const expected = [
    ['msg_id', 20], // bigint
    ['read_ct', 23], // integer
    ['enqueued_at', 1184], // timestamptz
    ['vt', 1184],
    ['message', 3802], // jsonb
    ['headers', 3802],
  ];

  const readRows = await sql`select * from pgmq.read(${q}, ${0}::int, ${1}::int)`;
  assert.deepEqual(readRows.columns.map((c) => [c.name, c.type]), expected);
  const setRows = await sql`select * from pgmq.set_vt(${q}, ${id}::bigint, 0)`;
  assert.deepEqual(setRows.columns.map((c) => [c.name, c.type]), expected);
  const popRows = await sql`select * from pgmq.pop(${q})`;
  assert.deepEqual(popRows.columns.map((c) => [c.name, c.type]), expected);

  const [m] = messages(readRows);
  assert.equal(m.msg_id, id);
  assert.ok(m.enqueued_at instanceof Date && m.vt instanceof Date);
});

test('pop returns the first visible message and deletes it', async () => {
  const q = await newQueue('pop');
  const a = await send(q, { n: 1 });
  const b = await send(q, { n: 2 });

  const [popped] = messages(await sql`select * from pgmq.pop(${q})`);
  assert.equal(popped.msg_id, a);
  assert.deepEqual(popped.message, { n: 1 });
  const rest = await read(q, 30, 10);
  assert.deepEqual(rest.map((m) => m.msg_id), [b]);
  assert.equal((await sql`select 1 from ${sql('pgmq')}.${sql('a_' + q)}`).length, 0);
});

test('read with a conditional only returns messages containing it', async () => {
  const q = await newQueue('conditional');
  await send(q, { kind: 'a', n: 1 });
  const b = await send(q, { kind: 'b', n: 2 });

  const got = messages(
    await sql`
    select * from pgmq.read(${q}, ${30}::int, ${10}::int, ${sql.json({ kind: 'b' })}::jsonb)`,
  );
  assert.deepEqual(got.map((m) => m.msg_id), [b]);
});

test('queue and archive tables have the documented columns', async () => {
  const q = await newQueue('layout');
  const columns = async (table: string) =>
    (await sql`
      select column_name, data_type from information_schema.columns
      where table_schema = 'pgmq' and table_name = ${table}
      order by column_name`).map((r) => `${r.column_name}:${r.data_type}`);

  const queueColumns = [
    'enqueued_at:timestamp with time zone',
    'headers:jsonb',
    'message:jsonb',
    'msg_id:bigint',
    'read_ct:integer',
    'vt:timestamp with time zone',
  ];
  assert.deepEqual(await columns('q_' + q), queueColumns);
  assert.deepEqual(
    await columns('a_' + q),
    [...queueColumns, 'archived_at:timestamp with time zone'].sort(),
  );
  const meta = await sql`
    select column_name from information_schema.columns
    where table_schema = 'pgmq' and table_name = 'meta' order by ordinal_position`;
  assert.deepEqual(meta.map((r) => r.column_name), [
    'queue_name',
    'is_partitioned',
    'is_unlogged',
    'created_at',
  ]);
});

test('teardown: close the clients and drop the test database', async () => {
  await db.close();
});
