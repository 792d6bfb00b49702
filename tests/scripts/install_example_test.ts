/**
 * `deno task install --example` (docs/ARCHITECTURE.md §8): in a project made by the real
 * `supabase init`, the two commands the installer prints next (`deno task db:push`, then the
 * example's client script) run the example flow to its typed output; a second run changes
 * nothing.
 */
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { KIT_ROOT } from '../../scripts/_project.ts';
import { adminUrl, urlFor } from '../_helpers/db.ts';
import { ok, run, supabaseInit } from '../_helpers/project.ts';

Deno.test('install --example: the commands it prints next run the example flow to its typed output', async () => {
  const project = await supabaseInit('switchyard-example-');
  const database = `sy_example_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  try {
    const install = await run(
      ['task', '-q', 'install', '--project', project, '--example'],
      KIT_ROOT,
    );
    ok(install, 'install --example');
    for (
      const path of [
        'supabase/functions/_shared/flows/greet.ts',
        'supabase/functions/_shared/registry.ts',
        'example.ts',
        'supabase/functions/greetings-worker/index.ts',
      ]
    ) {
      assert.match(install.stdout, new RegExp(`^(created|updated)\\s+${path}$`, 'm'));
    }
    assert.match(install.stdout, /^created\s+supabase\/migrations\/\d{14}_switchyard_flows\.sql$/m);
    const again = await run(['task', '-q', 'install', '--project', project, '--example'], KIT_ROOT);
    ok(again, 'second install --example');
    assert.match(again.stdout, /nothing to do/);

    // The two commands it prints, as printed (npx -y deno@2 being this Deno).
    const next = install.stdout.split('\nnext, against a PostgreSQL (DATABASE_URL):\n')[1];
    const [push, start] = next.trim().split('\n').map((l) => l.trim());
    assert.equal(push, `npx -y deno@2 task db:push --project ${project}`);
    await admin.unsafe(`create database "${database}"`);
    const url = urlFor(database);
    const env = { DATABASE_URL: url, SWITCHYARD_LOG: 'error' };
    ok(await run(push.replace(/^npx -y deno@2 /, '').split(' '), KIT_ROOT, env), push);
    const [cd, command] = start.split(' && ');
    assert.equal(cd, `cd ${project}`);
    const out = await run(command.replace(/^npx -y deno@2 /, '').split(' '), project, env);
    ok(out, command);
    assert.match(out.stdout, /^started run [0-9a-f-]{36} of greet$/m);
    assert.match(out.stdout, /^completed: deliver = 11 \(the greeting's length\)$/m);
  } finally {
    await admin.unsafe(`drop database if exists "${database}" with (force)`);
    await admin.end();
    await Deno.remove(project, { recursive: true });
  }
});
