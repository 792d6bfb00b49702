/**
 * `scaffoldWebhook()` (issue 43, docs/design/ingestion.md#signed-webhooks): the files it writes in
 * a copy of
 * the kit's project, idempotence, the hand-edit guard, and refusals of bad names.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { copyProject, KIT_ROOT } from '../../../cli/_project.ts';
import { ScaffoldError } from '../../../cli/scaffold_queue.ts';
import { scaffoldWebhook } from '../../../cli/scaffold_webhook.ts';
import { functionSection } from '../../../cli/_functions_config.ts';
import { deno } from '../../_helpers/process.ts';

async function withProject(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await copyProject('switchyard-scaffold-webhook-');
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test('writes index.ts, deno.json and the config section; a second run changes nothing', async () => {
  await withProject(async (dir) => {
    const result = await scaffoldWebhook({
      projectDir: dir,
      functionName: 'orders-webhook',
      alias: 'supportTickets',
      secretEnv: 'ORDERS_WEBHOOK_SECRET',
    });
    assert.equal(result.changed, true);
    assert.deepEqual(result.files.map((f) => [f.action, f.path]), [
      ['created', 'supabase/functions/orders-webhook/index.ts'],
      ['created', 'supabase/functions/orders-webhook/deno.json'],
      ['updated', 'supabase/config.toml'],
    ]);
    const index = await Deno.readTextFile(join(dir, 'supabase/functions/orders-webhook/index.ts'));
    assert.match(
      index,
      /serveWebhook\(\{\s*name: 'orders-webhook',\s*alias: 'supportTickets',\s*secretEnv: 'ORDERS_WEBHOOK_SECRET',?\s*\}\);/,
    );
    assert.match(index, /from 'switchyard';/);
    assert.ok(!/ALIAS_NAME|SECRET_ENV_NAME|FUNCTION_NAME/.test(index), index);
    const map = JSON.parse(
      await Deno.readTextFile(join(dir, 'supabase/functions/orders-webhook/deno.json')),
    );
    assert.equal(map.imports.switchyard, '../../../lib/mod.ts');
    const config = await Deno.readTextFile(join(dir, 'supabase/config.toml'));
    const section = functionSection(config, 'orders-webhook')!;
    assert.match(section, /verify_jwt = false/);
    assert.match(section, /entrypoint = "\.\/functions\/orders-webhook\/index\.ts"/);
    // The written function type-checks against the project's copy of the kit.
    const check = await deno([
      'check',
      '--config',
      join(dir, 'supabase/functions/orders-webhook/deno.json'),
      join(dir, 'supabase/functions/orders-webhook/index.ts'),
    ]);
    assert.equal(check.code, 0, check.stderr);
    const again = await scaffoldWebhook({
      projectDir: dir,
      functionName: 'orders-webhook',
      alias: 'supportTickets',
      secretEnv: 'ORDERS_WEBHOOK_SECRET',
    });
    assert.equal(again.changed, false);
    assert.ok(again.files.every((f) => f.action === 'unchanged'));
  });
});

Deno.test('in an installed project: the runtime copy, pinned imports, and it type-checks', async () => {
  const dir = await Deno.makeTempDir({ prefix: 'switchyard-webhook-installed-' });
  try {
    await Deno.mkdir(join(dir, 'supabase'));
    await Deno.writeTextFile(join(dir, 'supabase/config.toml'), 'project_id = "webhooks"\n');
    const install = await deno(['run', '-A', join(KIT_ROOT, 'cli/install.ts'), '--project', dir]);
    assert.equal(install.code, 0, install.stderr);
    // A fresh install's registry lists no flow: the alias is refused, naming none known.
    await assert.rejects(
      scaffoldWebhook({ projectDir: dir, functionName: 'hook', alias: 'orders' }),
      (e: Error) =>
        e instanceof ScaffoldError &&
        /--alias "orders" is unknown \(alias_unknown\).*knows none yet.*--force/.test(e.message),
    );
    const result = await scaffoldWebhook({
      projectDir: dir,
      functionName: 'hook',
      alias: 'orders',
      force: true,
    });
    assert.equal(result.changed, true);
    const map = JSON.parse(await Deno.readTextFile(join(dir, 'supabase/functions/hook/deno.json')));
    assert.equal(map.imports.switchyard, '../_switchyard/mod.ts');
    assert.match(map.imports.postgres, /^npm:postgres@\d+\.\d+\.\d+$/, 'pinned');
    // The shared map of the functions holds entries the runtime does not load (PGlite, the
    // testing entry): the function's map keeps only what its graph loads.
    const shared = JSON.parse(await Deno.readTextFile(join(dir, 'supabase/functions/deno.json')));
    assert.ok('@electric-sql/pglite' in shared.imports && 'switchyard/testing' in shared.imports);
    assert.ok(!('@electric-sql/pglite' in map.imports), JSON.stringify(map.imports));
    assert.ok(!('switchyard/testing' in map.imports), JSON.stringify(map.imports));
    const check = await deno(['check', '--config', 'deno.json', 'index.ts'], {
      cwd: join(dir, 'supabase/functions/hook'),
    });
    assert.equal(check.code, 0, check.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test('a hand-edited index.ts is kept unless --force; other options count as an edit', async () => {
  await withProject(async (dir) => {
    await scaffoldWebhook({ projectDir: dir, functionName: 'hook', alias: 'supportTickets' });
    const path = join(dir, 'supabase/functions/hook/index.ts');
    const original = await Deno.readTextFile(path);
    assert.match(original, /secretEnv: 'SWITCHYARD_WEBHOOK_SECRET'/);
    await assert.rejects(
      scaffoldWebhook({ projectDir: dir, functionName: 'hook', alias: 'communityThreads' }),
      (e: Error) =>
        e instanceof ScaffoldError &&
        /refusing to overwrite supabase\/functions\/hook\/index\.ts/.test(e.message),
    );
    assert.equal(await Deno.readTextFile(path), original, 'nothing was written');
    const forced = await scaffoldWebhook({
      projectDir: dir,
      functionName: 'hook',
      alias: 'communityThreads',
      force: true,
    });
    assert.equal(forced.files[0].action, 'updated');
    assert.match(await Deno.readTextFile(path), /alias: 'communityThreads'/);
  });
});

Deno.test('bad names are refused with the rule, writing nothing', async () => {
  await withProject(async (dir) => {
    const cases: [Parameters<typeof scaffoldWebhook>[0], RegExp][] = [
      [{ projectDir: dir, functionName: 'Orders', alias: 'orders' }, /function name "Orders"/],
      [{ projectDir: dir, functionName: 'hook', alias: "x'y" }, /--alias "x'y" is invalid/],
      // An alias the registry does not deploy: the value, the rule and the aliases it knows.
      [
        { projectDir: dir, functionName: 'hook', alias: 'orders' },
        /--alias "orders" is unknown \(alias_unknown\).*knows communityThreads, .*supportTickets.*--force/,
      ],
      [
        { projectDir: dir, functionName: 'hook', alias: 'orders', secretEnv: 'SUPABASE_X' },
        /not starting with SUPABASE_/,
      ],
      [
        { projectDir: dir, functionName: 'hook', alias: 'orders', secretEnv: 'lower' },
        /--secret-env "lower" is invalid/,
      ],
    ];
    for (const [options, message] of cases) {
      await assert.rejects(
        scaffoldWebhook(options),
        (e: Error) => e instanceof ScaffoldError && message.test(e.message),
      );
    }
    assert.equal(
      await Deno.stat(join(dir, 'supabase/functions/hook')).then(() => true, () => false),
      false,
    );
  });
});
