/**
 * The SQL core reads the clock only through its clock functions (docs/design/clock.md):
 * `switchyard.clock_now()` for every time rule and recorded time, `queue_now()` and
 * `queue_clock()` for PGMQ's times. A test engine sets `clock_now` alone, so a raw now() or
 * clock_timestamp() anywhere else would be a rule the virtual clock does not move.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { CLOCK_FUNCTIONS, clockProblems, SCHEMAS } from '../../../tools/sql_source.ts';
import { KIT_ROOT } from '../../../cli/_project.ts';

Deno.test('no function, table or view of supabase/schemas reads the clock but the clock functions', async () => {
  assert.deepEqual(await clockProblems(), []);
  for (const name of CLOCK_FUNCTIONS) {
    const text =
      (await Deno.readTextFile(join(KIT_ROOT, SCHEMAS, 'functions', 'rules', `${name}.sql`)))
        .replace(/^--.*$/gm, '');
    assert.match(text, new RegExp(`create or replace function switchyard\\.${name}\\(\\)`));
    // Inlined into the caller: plain SQL, no SET option, not security definer.
    assert.match(text, /language sql/);
    assert.doesNotMatch(text, /^\s*set |security definer/m);
  }
});

Deno.test('a raw clock in code or in dynamic SQL is named with its file and line; comments are not', async () => {
  const kit = await Deno.makeTempDir({ prefix: 'switchyard-clock-' });
  try {
    for (const dir of ['', 'functions/rules', 'tables']) {
      await Deno.mkdir(join(kit, SCHEMAS, dir), { recursive: true });
    }
    for (const f of ['schema.sql', 'types.sql', 'views.sql', 'triggers.sql', 'privileges.sql']) {
      await Deno.writeTextFile(join(kit, SCHEMAS, f), '');
    }
    await Deno.writeTextFile(join(kit, SCHEMAS, 'exposure.sql'), '');
    for (const name of CLOCK_FUNCTIONS) {
      await Deno.copyFile(
        join(KIT_ROOT, SCHEMAS, 'functions', 'rules', `${name}.sql`),
        join(kit, SCHEMAS, 'functions', 'rules', `${name}.sql`),
      );
    }
    await Deno.writeTextFile(
      join(kit, SCHEMAS, 'functions', 'rules', 'late.sql'),
      `-- compared with now(), in a comment: fine
create or replace function switchyard.late(at timestamptz)
returns boolean
language plpgsql
as $$
begin
  /* clock_timestamp() in a block comment: fine */
  execute format('select vt <= clock_timestamp() from pgmq.%I', 'q_x');
  return at < switchyard.clock_now() or at < now(); -- and now() here is a comment
end
$$;
`,
    );
    await Deno.writeTextFile(
      join(kit, SCHEMAS, 'tables', '010_t.sql'),
      'create table switchyard.t (\n  at timestamptz not null default current_timestamp,\n' +
        "  on_day date default 'today'\n);\n",
    );
    const problems = await clockProblems(kit);
    assert.deepEqual(
      problems.map((p) => p.match(/^(\S+) reads the clock itself \((.+?)\): use /)?.slice(1)),
      [
        [`${SCHEMAS}/functions/rules/late.sql:8`, 'clock_timestamp('],
        [`${SCHEMAS}/functions/rules/late.sql:9`, 'now('],
        [`${SCHEMAS}/tables/010_t.sql:2`, 'current_timestamp'],
        [`${SCHEMAS}/tables/010_t.sql:3`, "'today'"],
      ],
    );
    assert.match(problems[0], /use switchyard\.clock_now\(\)/);
  } finally {
    await Deno.remove(kit, { recursive: true });
  }
});
