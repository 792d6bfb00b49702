/**
 * Listing schedules is cheap (issue 36: it cost 0.3–1 s per schedule, and the dashboard's
 * overview lists them on every refresh): `switchyard.list_schedules()` finds each schedule's
 * next tick by looking a day ahead first, and further only when that day has none. Counted, not
 * timed: the candidate days the listing scans (calls of the cron parser per listing, from
 * PostgreSQL's own function statistics in the listing's transaction), and the next ticks are
 * the same as a search a year ahead finds.
 */
import assert from 'node:assert/strict';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { Flow } from '../../lib/mod.ts';
import { createTestDatabase } from '../_helpers/db.ts';

const db = await createTestDatabase();
const sql = db.sql;

const flow = new Flow<{ n?: number }>({ slug: 'listedV1' }).step({ slug: 'work' }, () => 1);
await sql`select switchyard.ensure_flow(${sql.json(toPlacement(flow).shape as never)}::jsonb)`;
await sql`select switchyard.sync_alias('listed', array['listedV1']::text[])`;

/** Every minute, hourly, daily, weekdays, monthly, yearly: 50 schedules in all. */
const CRONS = [
  '* * * * *',
  '*/5 * * * *',
  '7 * * * *',
  '0 3 * * *',
  '30 9 * * 1-5',
  '0 0 1 * *',
  '0 0 1 1 *',
  '15 14 * 6 *',
  '0 12 * * 0',
  '0,30 8-17 * * *',
];
const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Pacific/Auckland'];

Deno.test('listing 50 schedules scans a day or so per schedule, not a year', async () => {
  for (let i = 0; i < 50; i++) {
    await sql`select switchyard.create_schedule(${`listed_${String(i).padStart(2, '0')}`},
      'listed', ${CRONS[i % CRONS.length]}, '{}'::jsonb, ${ZONES[i % ZONES.length]})`;
  }
  // One listing in one transaction, with PostgreSQL counting the calls of the kit's functions.
  const { listed, parses, searches } = await sql.begin(async (tx) => {
    await tx`set local track_functions = 'all'`;
    const [{ list }] = await tx<{ list: { name: string; next_tick_at: string | null }[] }[]>`
      select switchyard.list_schedules() as list`;
    const calls = async (fn: string) =>
      (await tx<{ n: number }[]>`
        select coalesce(pg_stat_get_xact_function_calls(${fn}::regprocedure), 0)::int as n`)[0].n;
    return {
      listed: list,
      parses: await calls('switchyard._cron_parse(text)'),
      searches: await calls(
        'switchyard._cron_ticks(text, text, timestamptz, timestamptz, integer)',
      ),
    };
  });
  assert.equal(listed.length, 50);
  // A search of the ticks parses the expression per local day it scans: a year ahead for each
  // of 50 schedules was 65,430 parses (and 150 searches). Now at most two searches of about a
  // day each per schedule (today's ticks may all be past).
  assert.ok(searches <= 50 * 2, `the listing searched the ticks ${searches} times`);
  assert.ok(parses <= 50 * 30, `the listing parsed a cron expression ${parses} times`);
  // The same next ticks as _cron_ticks finds looking a day, a month, then a year ahead.
  const expected = await sql<{ name: string; next_at: Date | null }[]>`
    select s.name, coalesce(
             (select min(t) from switchyard._cron_ticks(s.cron, s.time_zone, s.checked_until,
                                   s.checked_until + interval '1 day', 1) t),
             (select min(t) from switchyard._cron_ticks(s.cron, s.time_zone, s.checked_until,
                                   s.checked_until + interval '31 days', 1) t),
             (select min(t) from switchyard._cron_ticks(s.cron, s.time_zone, s.checked_until,
                                   s.checked_until + interval '366 days', 1) t)) as next_at
      from (select x.name, x.cron, x.time_zone, greatest(now(), x.checked_until) as checked_until
              from switchyard.schedules x) s
     order by s.name`;
  assert.deepEqual(
    listed.map((s) => [s.name, s.next_tick_at === null ? null : Date.parse(s.next_tick_at)]),
    expected.map((s) => [s.name, s.next_at?.getTime() ?? null]),
  );
  assert.ok(listed.every((s) => s.next_tick_at !== null));
});

Deno.test('teardown', async () => {
  await db.close();
});
