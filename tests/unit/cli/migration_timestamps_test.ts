/**
 * The timestamps of the migrations the installer and the scaffold write: one second apart,
 * after the project's newest migration, and never after now (the last is the second before the
 * run's, so the next `supabase migration new` sorts after them); when that needs the clock to
 * run, the command waits a little or refuses, naming the newest migration.
 */
import assert from 'node:assert/strict';
import {
  MAX_MIGRATION_WAIT_MS,
  migrationSlots,
  migrationTimestamp,
  timestampsAfter,
} from '../../../cli/_util.ts';

const at = (iso: string) => new Date(iso);
const ts = (d: Date) => migrationTimestamp(d);

Deno.test('without a recent migration the slots end the second before now', () => {
  const now = at('2026-12-02T10:00:00.400Z');
  const none = migrationSlots(undefined, 3, now);
  assert.equal(ts(none.first), '20261202095957');
  assert.equal(none.waitMs, 0);
  const old = migrationSlots('20200101000000', 1, now);
  assert.equal(ts(old.first), '20261202095959');
  assert.equal(old.waitMs, 0);
  // An old enough newest migration leaves room exactly.
  const exact = migrationSlots('20261202095956', 3, now);
  assert.equal(ts(exact.first), '20261202095957');
  assert.equal(exact.waitMs, 0);
});

Deno.test('right after a migration the slots follow it and the clock must run until they are past', () => {
  const now = at('2026-12-02T10:00:00.400Z');
  // `supabase migration new` a second ago: three slots after it, the last at 10:00:02.
  const recent = migrationSlots('20261202095959', 3, now);
  assert.equal(ts(recent.first), '20261202100000');
  assert.equal(recent.waitMs, 2600, 'until 10:00:03, when 10:00:02 is the second before');
  // The same second as now.
  const same = migrationSlots('20261202100000', 1, now);
  assert.equal(ts(same.first), '20261202100001');
  assert.equal(same.waitMs, 1600);
  // A newest migration named an hour ahead.
  const future = migrationSlots('20261202110000', 1, now);
  assert.equal(ts(future.first), '20261202110001');
  assert.ok(future.waitMs > MAX_MIGRATION_WAIT_MS);
});

Deno.test('timestampsAfter waits for a short gap and refuses a future newest migration', async () => {
  const now = new Date();
  const newest = ts(now);
  const first = await timestampsAfter({
    newest,
    newestName: `${newest}_mine.sql`,
    count: 1,
    now,
    what: 'the registration migration',
    refuse: (m) => new Error(m),
  });
  assert.equal(first.getTime(), Math.floor(now.getTime() / 1000) * 1000 + 1000);
  assert.ok(Date.now() >= first.getTime() + 1000, 'returned once its second is in the past');
  await assert.rejects(
    timestampsAfter({
      newest: '20991231235959',
      newestName: '20991231235959_later.sql',
      count: 34,
      now: at('2026-12-02T10:00:00Z'),
      what: "the kit's 34 new migration(s)",
      refuse: (m) => new RangeError(m),
    }),
    (e: Error) =>
      e instanceof RangeError &&
      e.message.startsWith(
        'the newest migration, supabase/migrations/20991231235959_later.sql, is named after ' +
          '2099-12-31T23:59:59.000Z,',
      ) && e.message.includes("the kit's 34 new migration(s) must sort after it") &&
      e.message.includes('rerun after 2100-01-01T00:00:34.000Z'),
  );
});
