/**
 * `scaffoldQueue()` details the end-to-end test does not reach: the config.toml section
 * guard, migration ordering, long queue names, private queues and broken registries.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { copyProject } from '../scripts/_project.ts';
import { ScaffoldError, scaffoldQueue } from '../scripts/scaffold_queue.ts';
import {
  functionSection,
  readFunctionConfigs,
  setFunctionSection,
} from '../scripts/_functions_config.ts';

async function withProject(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await copyProject('switchyard-scaffold-');
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function writeRegistry(dir: string, body: string): Promise<void> {
  await Deno.writeTextFile(join(dir, 'supabase/functions/_shared/registry.ts'), body);
}

Deno.test('config.toml: a hand-edited section is refused; --force replaces only that section', async () => {
  await withProject(async (dir) => {
    const configPath = join(dir, 'supabase/config.toml');
    await scaffoldQueue({ projectDir: dir, queueName: 'classify_threads' });
    const generated = await Deno.readTextFile(configPath);
    const edited = generated.replace(
      /(\[functions\.classify-threads-worker\][^[]*verify_jwt = )false/,
      '$1true',
    ) + '\n[functions.my-own-function]\nverify_jwt = true\n';
    await Deno.writeTextFile(configPath, edited);
    await assert.rejects(
      scaffoldQueue({ projectDir: dir, queueName: 'classify_threads' }),
      (e: Error) =>
        e instanceof ScaffoldError &&
        /the \[functions\.classify-threads-worker\] section of supabase\/config\.toml/.test(
          e.message,
        ) && /--force/.test(e.message),
    );
    assert.equal(await Deno.readTextFile(configPath), edited, 'nothing was written');
    const forced = await scaffoldQueue({
      projectDir: dir,
      queueName: 'classify_threads',
      force: true,
    });
    assert.deepEqual(
      forced.files.filter((f) => f.action !== 'unchanged').map((f) => f.path),
      ['supabase/config.toml'],
    );
    const after = await Deno.readTextFile(configPath);
    assert.equal(
      functionSection(after, 'classify-threads-worker'),
      functionSection(generated, 'classify-threads-worker'),
    );
    assert.equal(
      functionSection(after, 'my-own-function'),
      '[functions.my-own-function]\nverify_jwt = true',
    );
    assert.match(after, /^project_id = "switchyard"$/m, 'the rest of the file is kept');
  });
});

Deno.test('the registration migration sorts after the newest migration even with an early clock', async () => {
  await withProject(async (dir) => {
    const result = await scaffoldQueue({
      projectDir: dir,
      queueName: 'deliver_slack_alerts',
      now: new Date('2001-01-01T00:00:00Z'),
    });
    const migration = result.files.find((f) => f.path.includes('migrations/'))!;
    const names = [...Deno.readDirSync(join(dir, 'supabase/migrations'))].map((e) => e.name).sort();
    assert.equal(
      join(dir, 'supabase/migrations', names[names.length - 1]),
      join(dir, migration.path),
    );
    const previous = names[names.length - 2].slice(0, 14);
    const mine = names[names.length - 1].slice(0, 14);
    assert.ok(mine > previous, `${mine} sorts after ${previous}`);
  });
});

Deno.test('a 47-character queue name gets a fmt-clean multi-line call; a private queue is refused', async () => {
  await withProject(async (dir) => {
    const long = 'q'.repeat(40) + '_alerts';
    await writeRegistry(
      dir,
      `import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';

const flow = new Flow({ slug: 'longV1' }).step({ slug: 'a' }, () => 1);
const plain = new Flow({ slug: 'plainFlow' }).step({ slug: 'a' }, () => 1);

export const registry = [
  defineDeployedFlow(routeFlow(flow, { queues: { a: '${long}' } }), { alias: 'long' }),
  plain,
] as const;
`,
    );
    const result = await scaffoldQueue({ projectDir: dir, queueName: long, maxConcurrent: 1000 });
    const index = await Deno.readTextFile(
      join(dir, 'supabase/functions', result.functionName, 'index.ts'),
    );
    assert.match(index, new RegExp(`EdgeWorker\\.start\\(registry, \\{\\n  queueName: '${long}',`));
    const fmt = await new Deno.Command(Deno.execPath(), {
      args: ['fmt', '--check', `supabase/functions/${result.functionName}`],
      cwd: dir,
      stdout: 'piped',
      stderr: 'piped',
    }).output();
    assert.equal(fmt.code, 0, new TextDecoder().decode(fmt.stderr));
    await assert.rejects(
      scaffoldQueue({ projectDir: dir, queueName: 'plainflow' }),
      /queue "plainflow" is the private queue of flow "plainFlow": the scaffold writes functions for explicit shared queues only/,
    );
    await assert.rejects(
      scaffoldQueue({ projectDir: dir, queueName: long, maxConcurrent: 0 }),
      /--max-concurrent 0 is invalid: use an integer from 1 to 1000/,
    );
  });
});

Deno.test('a registry module without a registry export or that fails to load is reported', async () => {
  await withProject(async (dir) => {
    await writeRegistry(dir, 'export const flows = [];\n');
    await assert.rejects(
      scaffoldQueue({ projectDir: dir, queueName: 'classify_threads' }),
      /registry\.ts must export `registry` \(or a default export\): an array of deployments, got no such export/,
    );
  });
  await withProject(async (dir) => {
    await writeRegistry(dir, "import './missing.ts';\nexport const registry = [];\n");
    await assert.rejects(
      scaffoldQueue({ projectDir: dir, queueName: 'classify_threads' }),
      /cannot load supabase\/functions\/_shared\/registry\.ts/,
    );
  });
});

Deno.test('config.toml helpers keep everything outside the function section', () => {
  const toml = '# top\nproject_id = "x"\n\n[functions.a]\nverify_jwt = false # no jwt\n' +
    'import_map = "./functions/a/deno.json"\n\n[db]\nport = 1\n';
  assert.deepEqual(readFunctionConfigs(toml), [
    { name: 'a', verifyJwt: false, importMap: './functions/a/deno.json' },
  ]);
  const replaced = setFunctionSection(toml, 'a', '[functions.a]\nverify_jwt = true');
  assert.equal(
    replaced,
    '# top\nproject_id = "x"\n\n[functions.a]\nverify_jwt = true\n\n[db]\nport = 1\n',
  );
  assert.equal(
    setFunctionSection('', 'b', '[functions.b]\nverify_jwt = false'),
    '[functions.b]\nverify_jwt = false\n',
  );
  assert.equal(functionSection(toml, 'missing'), null);
});
