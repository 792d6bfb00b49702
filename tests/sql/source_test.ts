/**
 * The SQL core's one source (docs/design/code-layout.md#the-sql-source-and-its-migrations): a
 * database built from
 * `supabase/schemas/` equals one built by applying every migration (normalized `pg_dump`,
 * column order named per column, event triggers, rows); the unreleased migration is what
 * `deno task sql:assemble` writes; every function is defined once, in the file of its name.
 * Each check is also shown failing on a one-character drift of a scratch copy.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import postgres from 'postgres';
import { ensurePgmq, pgmqModeFromEnv } from '../../lib/sql/migrate.ts';
import { DEFAULT_PG_BIN } from '../../tools/_cluster.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import {
  AREAS,
  assemble,
  assemblyProblems,
  coreMigrationFiles,
  freshBuild,
  layoutProblems,
  SCHEMAS,
  UNRELEASED_SUFFIX,
} from '../../tools/sql_source.ts';
import { adminUrl, createTestDatabase, urlFor } from '../_helpers/db.ts';
import { runCommand } from '../_helpers/process.ts';

const PG_BIN = Deno.env.get('PG_BIN') ?? DEFAULT_PG_BIN;

/** A scratch copy of what the source checks read: the source, upgrades, migrations, releases. */
async function scratchKit(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: 'switchyard-source-' });
  for (const part of ['supabase/schemas', 'supabase/upgrades', 'supabase/migrations', 'releases']) {
    await Deno.mkdir(join(dir, part), { recursive: true });
    const out = await runCommand('cp', ['-R', `${join(KIT_ROOT, part)}/.`, join(dir, part)]);
    assert.equal(out.code, 0, out.stderr);
  }
  return dir;
}

async function edit(path: string, from: string, to: string): Promise<void> {
  const text = await Deno.readTextFile(path);
  assert.equal(text.split(from).length, 2, `${from} occurs once in ${path}`);
  await Deno.writeTextFile(path, text.replace(from, to));
}

/** A fresh database with PGMQ as the suite has it, and the SQL core built from `kitDir`'s source. */
async function freshDatabase(kitDir: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `sy_fresh_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = urlFor(name);
  const drop = async () => {
    const a = postgres(adminUrl(), { max: 1, onnotice: () => {} });
    try {
      await a.unsafe(`drop database if exists "${name}" with (force)`);
    } finally {
      await a.end();
    }
  };
  try {
    await ensurePgmq(url, pgmqModeFromEnv());
    const sql = postgres(url, { max: 1, onnotice: () => {}, prepare: false });
    try {
      await sql.unsafe(await freshBuild(kitDir));
    } finally {
      await sql.end();
    }
  } catch (e) {
    await drop();
    throw e;
  }
  return { url, drop };
}

async function pgDump(url: string, what: '--schema-only' | '--data-only'): Promise<string> {
  const out = await runCommand(`${PG_BIN}/pg_dump`, [
    what,
    '--schema=switchyard',
    '--no-owner',
    url,
  ]);
  assert.equal(out.code, 0, out.stderr);
  return out.stdout.split('\n')
    .filter((l) =>
      l.trim() !== '' && !l.startsWith('--') && !l.startsWith('SET ') &&
      !l.startsWith('SELECT pg_catalog.set_config') && !/^\\(un)?restrict /.test(l)
    )
    .join('\n');
}

/** Every column of the schema's tables and types in order, one line each. */
async function columns(url: string): Promise<string[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ line: string }[]>`
      select format('%s.%s #%s %s %s%s', c.relname, a.attname,
                    row_number() over (partition by c.oid order by a.attnum),
                    format_type(a.atttypid, a.atttypmod),
                    case when a.attnotnull then 'not null' else 'null' end,
                    coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '')) as line
        from pg_attribute a
        join pg_class c on c.oid = a.attrelid
        left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
       where c.relnamespace = 'switchyard'::regnamespace and c.relkind in ('r', 'v', 'c')
         and a.attnum > 0 and not a.attisdropped
       order by c.relname, a.attnum`;
    const events = await sql<{ line: string }[]>`
      select format('event trigger %s on %s %s %s', evtname, evtevent, evtfoid::regproc,
                    evttags) as line
        from pg_event_trigger order by evtname`;
    return [...rows.map((r) => r.line), ...events.map((r) => r.line)];
  } finally {
    await sql.end();
  }
}

/** Why two databases' SQL cores differ, or [] when they are equal. */
async function differences(migrated: string, fresh: string): Promise<string[]> {
  const problems: string[] = [];
  const [a, b] = [await columns(migrated), await columns(fresh)];
  const position = (lines: string[]) =>
    new Map(lines.map((l) => {
      const [name, at] = l.split(' ');
      return [name, at] as const;
    }));
  const [pa, pb] = [position(a), position(b)];
  for (const [name, at] of pa) {
    if (!pb.has(name)) problems.push(`column ${name} is in the migrated database only`);
    else if (pb.get(name) !== at) {
      problems.push(
        `column ${name} is out of order: ${at} in the migrated database, ${
          pb.get(name)
        } in the source`,
      );
    }
  }
  for (const name of pb.keys()) {
    if (!pa.has(name)) problems.push(`column ${name} is in the source only`);
  }
  for (const line of a) {
    if (!b.includes(line) && pb.get(line.split(' ')[0]) === line.split(' ')[1]) {
      problems.push(
        `migrated: ${line}\n   source: ${b.find((l) => l.startsWith(`${line.split(' ')[0]} `))}`,
      );
    }
  }
  for (const what of ['--schema-only', '--data-only'] as const) {
    const [da, db] = [await pgDump(migrated, what), await pgDump(fresh, what)];
    if (da === db) continue;
    const la = da.split('\n');
    const lb = db.split('\n');
    let i = 0;
    while (i < la.length && la[i] === lb[i]) i++;
    problems.push(
      `pg_dump ${what} differs at line ${i + 1}:\n  migrated: ${la[i] ?? '(end)'}\n  source:   ${
        lb[i] ?? '(end)'
      }`,
    );
  }
  return problems;
}

Deno.test('a database built from supabase/schemas/ equals one built by every migration', async () => {
  const migrated = await createTestDatabase();
  const fresh = await freshDatabase(KIT_ROOT);
  try {
    assert.deepEqual(await differences(migrated.url, fresh.url), []);
    assert.ok((await columns(fresh.url)).length > 150, 'the comparison sees the tables');
  } finally {
    await fresh.drop();
    await migrated.close();
  }
});

Deno.test('one character of drift in the source is named: a column type, a column order', async () => {
  const migrated = await createTestDatabase();
  const kit = await scratchKit();
  try {
    const runs = join(kit, SCHEMAS, 'tables/040_runs.sql');
    await edit(runs, '  remaining_steps int not null,', '  remaining_steps int8 not null,');
    let fresh = await freshDatabase(kit);
    try {
      const found = await differences(migrated.url, fresh.url);
      assert.ok(
        found.some((p) => /runs\.remaining_steps/.test(p) && /bigint/.test(p)),
        found.join('\n'),
      );
      assert.ok(found.some((p) => /pg_dump --schema-only differs/.test(p)), found.join('\n'));
    } finally {
      await fresh.drop();
    }
    await edit(runs, '  remaining_steps int8 not null,', '  remaining_steps int not null,');
    // Two columns swapped: the same columns, another order.
    await edit(
      runs,
      '  remaining_steps int not null,\n' +
        '  started_at timestamptz not null default switchyard.clock_now(),\n',
      '  started_at timestamptz not null default switchyard.clock_now(),\n' +
        '  remaining_steps int not null,\n',
    );
    fresh = await freshDatabase(kit);
    try {
      const found = await differences(migrated.url, fresh.url);
      assert.ok(
        found.some((p) =>
          p.includes('column runs.remaining_steps is out of order: #8 in the migrated')
        ),
        found.join('\n'),
      );
    } finally {
      await fresh.drop();
    }
  } finally {
    await migrated.close();
    await Deno.remove(kit, { recursive: true });
  }
});

Deno.test('the unreleased migration is what sql:assemble writes, and each function is defined once in its file', async () => {
  assert.deepEqual(await layoutProblems(), []);
  assert.deepEqual(await assemblyProblems(), []);
});

Deno.test('one character of drift between the source and the unreleased migration fails the check', async () => {
  const kit = await scratchKit();
  try {
    // Right after a release nothing is unreleased: a changed function starts the next release's
    // migration, as the first change after a release does.
    if ((await assemble(kit)) === null) {
      const first = join(kit, SCHEMAS, 'functions', 'rules', 'limits.sql');
      await Deno.writeTextFile(
        first,
        (await Deno.readTextFile(first)).replace(/\bbegin\b|\bselect\b/, (w) => ` ${w}`),
      );
      await Deno.writeTextFile(
        join(kit, 'supabase/migrations', `20991230000000${UNRELEASED_SUFFIX}`),
        (await assemble(kit))!,
      );
    }
    assert.deepEqual(await assemblyProblems(kit), []);
    // A function changed in the source and not assembled again: one in the unreleased
    // migration, one space more in its body.
    const current = (await assemble(kit))!;
    // Each as <area>/<name>.sql.
    const functions = AREAS.flatMap((area) =>
      [...Deno.readDirSync(join(kit, SCHEMAS, 'functions', area))].map((e) => `${area}/${e.name}`)
    ).sort();
    const inAssembly = functions.filter((f) => current.includes(`-- ${SCHEMAS}/functions/${f}\n`));
    const fn = join(kit, SCHEMAS, 'functions', inAssembly[0]);
    const text = await Deno.readTextFile(fn);
    // In its body: a header comment is not part of the definition.
    await Deno.writeTextFile(fn, text.replace(/(as \$\$[\s\S]*?)\b(begin|select)\b/, '$1 $2'));
    let problems = await assemblyProblems(kit);
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0], /is not what `deno task sql:assemble` writes: line \d+/);
    // A function not changed since the last release, edited: it joins the unreleased migration.
    const untouched = functions.find((f) => !inAssembly.includes(f) && f !== inAssembly[0])!;
    const releasedFn = join(kit, SCHEMAS, 'functions', untouched);
    await Deno.writeTextFile(
      releasedFn,
      (await Deno.readTextFile(releasedFn)).replace(/\$\$;\s*$/, () => '$$;\n-- a note\n'),
    );
    assert.ok(
      !(await assemble(kit))?.includes(`-- ${SCHEMAS}/functions/${untouched}\n`),
      'a comment after the statement is not a redefinition',
    );
    await Deno.writeTextFile(
      releasedFn,
      (await Deno.readTextFile(releasedFn)).replace(/\bbegin\b|\bselect\b/, (w) => ` ${w}`),
    );
    assert.ok((await assemble(kit))?.includes(`-- ${SCHEMAS}/functions/${untouched}\n`), untouched);
    // The unreleased migration edited by hand.
    const [name] = (await coreMigrationFiles(kit)).unreleased;
    await Deno.writeTextFile(fn, text);
    await Deno.writeTextFile(join(kit, 'supabase/migrations', name), (await assemble(kit))!);
    assert.deepEqual(await assemblyProblems(kit), []);
    const migration = join(kit, 'supabase/migrations', name);
    await Deno.writeTextFile(migration, (await Deno.readTextFile(migration)).replace(';', ' ;'));
    problems = await assemblyProblems(kit);
    assert.equal(problems.length, 1, problems.join('\n'));
    // A second unreleased migration.
    await Deno.writeTextFile(join(kit, 'supabase/migrations/20991231000000_core.sql'), '');
    assert.ok((await assemblyProblems(kit)).some((p) => /2 unreleased migrations/.test(p)));
  } finally {
    await Deno.remove(kit, { recursive: true });
  }
});

Deno.test('a function defined twice, or away from the file of its name, is refused', async () => {
  const kit = await scratchKit();
  try {
    const copy = await Deno.readTextFile(join(kit, SCHEMAS, 'functions/rules/limits.sql'));
    await Deno.writeTextFile(join(kit, SCHEMAS, 'views.sql'), `${copy}\n`, { append: true });
    await Deno.writeTextFile(join(kit, SCHEMAS, 'functions/rules/limit.sql'), copy);
    const problems = await layoutProblems(kit);
    assert.ok(
      problems.some((p) => /function limits is defined twice/.test(p)),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) => p.includes(`function limits is defined in ${SCHEMAS}/views.sql`)),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) =>
        p.includes(`function limits is defined in ${SCHEMAS}/functions/rules/limit.sql`)
      ),
      problems.join('\n'),
    );
  } finally {
    await Deno.remove(kit, { recursive: true });
  }
});

Deno.test('a function file outside an area folder, a header naming a migration and an unnumbered step are refused', async () => {
  const kit = await scratchKit();
  try {
    assert.deepEqual(await layoutProblems(kit), []);
    const functions = join(kit, SCHEMAS, 'functions');
    // A function file straight in functions/, and one in a folder that is no area.
    await Deno.rename(join(functions, 'rules/limits.sql'), join(functions, 'limits.sql'));
    await Deno.mkdir(join(functions, 'misc'));
    await Deno.rename(join(functions, 'rules/_clip.sql'), join(functions, 'misc/_clip.sql'));
    // A header naming the migration it came from, and a function file without a header.
    const claim = join(functions, 'claim/start_tasks.sql');
    await Deno.writeTextFile(
      claim,
      `-- ---- start_tasks (latest: 20261202001200_map_claim.sql)\n${await Deno.readTextFile(
        claim,
      )}`,
    );
    const bare = join(functions, 'claim/pair_set.sql');
    await Deno.writeTextFile(
      bare,
      (await Deno.readTextFile(bare)).replace(/^(--.*\n)+/, ''),
    );
    // Two tables with one number, an upgrade step without a number.
    await Deno.writeTextFile(join(kit, SCHEMAS, 'tables/010_more.sql'), '-- More.\n');
    await Deno.mkdir(join(kit, 'supabase/upgrades/unreleased/before'), { recursive: true });
    await Deno.writeTextFile(join(kit, 'supabase/upgrades/unreleased/before/add.sql'), '-- A.\n');
    const problems = await layoutProblems(kit);
    const expect = (pattern: RegExp) =>
      assert.ok(problems.some((p) => pattern.test(p)), `${pattern}: ${problems.join('\n')}`);
    expect(
      /functions\/limits\.sql is outside an area folder: move it to .*functions\/<area>\/limits\.sql/,
    );
    expect(/functions\/misc\/_clip\.sql is outside an area folder/);
    expect(/claim\/start_tasks\.sql:1 names the migration 20261202001200_map_claim\.sql/);
    expect(/claim\/pair_set\.sql has no header/);
    expect(
      /tables\/010_more\.sql and .*tables\/010_queues\.sql share the number 010|010_queues\.sql and .*010_more\.sql share the number 010/,
    );
    expect(/unreleased\/before\/add\.sql has no number/);
  } finally {
    await Deno.remove(kit, { recursive: true });
  }
});

Deno.test('upgrade steps run in the order of their numbers', async () => {
  const kit = await scratchKit();
  try {
    const after = join(kit, 'supabase/upgrades/unreleased/after');
    await Deno.mkdir(after, { recursive: true });
    await Deno.writeTextFile(join(after, '900_last.sql'), '-- The last step.\nselect 900;\n');
    await Deno.writeTextFile(join(after, '005_first.sql'), '-- The first step.\nselect 5;\n');
    const text = (await assemble(kit))!;
    const at = (name: string) => text.indexOf(`-- supabase/upgrades/unreleased/after/${name}\n`);
    assert.ok(at('005_first.sql') >= 0 && at('900_last.sql') >= 0, 'both steps are assembled');
    assert.ok(at('005_first.sql') < at('900_last.sql'), 'the lower number runs first');
    const clock = at('010_clock_defaults.sql');
    if (clock >= 0) assert.ok(at('005_first.sql') < clock && clock < at('900_last.sql'));
  } finally {
    await Deno.remove(kit, { recursive: true });
  }
});
