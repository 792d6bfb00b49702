/**
 * Static checks of the SQL core's PL/pgSQL (docs/design/errors.md, "Static checks"): every
 * function in schema switchyard written in PL/pgSQL, trigger functions with the table they fire
 * on, is compiled by plpgsql_check (Debian's postgresql-15-plpgsql-check), which finds what a
 * test reaches only on a rare path: a column or variable that does not exist, a type mismatch
 * in an assignment, a statement that cannot run.
 *
 * @module
 */
import assert from 'node:assert/strict';
import { createTestDatabase } from '../_helpers/db.ts';

const db = await createTestDatabase();

interface Finding {
  routine: string;
  level: string;
  message: string;
  lineno: number | null;
  statement: string | null;
}

Deno.test('plpgsql_check finds no error in any PL/pgSQL function of schema switchyard', async () => {
  const [available] = await db.sql`
    select 1 from pg_available_extensions where name = 'plpgsql_check'`;
  assert.ok(
    available,
    'the test server lacks the plpgsql_check extension: install postgresql-15-plpgsql-check ' +
      '(deno task test does as root when it starts its own cluster)',
  );
  await db.sql`create extension if not exists plpgsql_check`;
  const [{ n }] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from pg_proc p
      join pg_namespace ns on ns.oid = p.pronamespace
      join pg_language l on l.oid = p.prolang
     where ns.nspname = 'switchyard' and l.lanname = 'plpgsql'`;
  assert.ok(n > 50, `the SQL core has its PL/pgSQL functions (${n})`);
  const findings = await db.sql<Finding[]>`
    with targets as (
      select p.oid, p.oid::regprocedure::text as routine,
             coalesce(tg.tgrelid, 0) as relid, tg.tgoldtable as oldtable, tg.tgnewtable as newtable,
             p.prorettype = 'trigger'::regtype as is_trigger,
             p.prorettype = 'event_trigger'::regtype as is_event_trigger
        from pg_proc p
        join pg_namespace ns on ns.oid = p.pronamespace
        join pg_language l on l.oid = p.prolang
        -- A statement trigger's transition tables (an update's old and new rows, the ones
        -- every branch of the function may read) are checked under their names.
        left join lateral (select t.tgrelid, t.tgoldtable, t.tgnewtable from pg_trigger t
                            where t.tgfoid = p.oid
                            order by t.tgoldtable is null, t.tgnewtable is null limit 1) tg on true
       where ns.nspname = 'switchyard' and l.lanname = 'plpgsql'
    )
    select t.routine, c.level, c.message, c.lineno, c.statement
      from targets t
     cross join lateral plpgsql_check_function_tb(
       t.oid, t.relid, fatal_errors => false, other_warnings => false,
       performance_warnings => false, extra_warnings => false,
       oldtable => t.oldtable, newtable => t.newtable) c
     where not t.is_event_trigger and (not t.is_trigger or t.relid <> 0)
       and c.level = 'error'
     order by t.routine, c.lineno`;
  // Statements on Supabase's optional schemas (pg_cron, pg_net, Vault, auth) run only where
  // the function found the schema first; this database has none of them.
  const optional = /^(schema|relation) "(cron|net|vault|auth)(\.[a-z_]+)?" does not exist$/;
  const absent = findings.filter((f) => optional.test(f.message));
  assert.ok(absent.every((f) => f.statement === 'EXECUTE'), 'only dynamic statements name them');
  assert.deepEqual(
    findings.filter((f) => !optional.test(f.message))
      .map((f) => `${f.routine} line ${f.lineno} (${f.statement}): ${f.message}`),
    [],
  );
});

Deno.test('the check reports a function that reads a column runs does not have', async () => {
  await db.sql`create extension if not exists plpgsql_check`;
  await db.sql.unsafe(`create function switchyard.zz_broken(run uuid) returns text
    language plpgsql as $$
    declare s text;
    begin
      select r.no_such_column into s from switchyard.runs r where r.run_id = run;
      return s;
    end $$`);
  try {
    const rows = await db.sql<{ message: string }[]>`
      select c.message from plpgsql_check_function_tb('switchyard.zz_broken(uuid)'::regprocedure) c
       where c.level = 'error'`;
    assert.deepEqual(rows.map((r) => r.message), ['column r.no_such_column does not exist']);
  } finally {
    await db.sql`drop function switchyard.zz_broken(uuid)`;
  }
});

// Not a test: it asserts nothing.
Deno.test.afterAll(async () => {
  await db.close();
});
