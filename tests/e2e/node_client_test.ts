/**
 * The npm package in a Node app (docs/design/code-layout.md, issue 38): `buildNpm` and `npm pack`
 * it (once per test run: tests/_helpers/npm_package.ts), install the tarball as `switchyard` in a fresh Node project beside pinned tsx, TypeScript
 * and @types/node, copy in the example's shared registry (its flow imports `switchyard`), and,
 * with a worker of that same registry running here in Deno, run a Node script under tsx that
 * starts the alias with `switchyard/client`, follows the run's events and prints its typed
 * output. Then `tsc` checks the script (it passes, the package's declarations checked too:
 * `skipLibCheck` is off) and two wrong ones: an input of the wrong type and an unknown alias.
 * Last, the same registry's test on `switchyard/testing` runs under Node's own test runner
 * (`node --import tsx --test`, issue 39): the engine on its embedded PGlite, a mock, the virtual
 * clock, typed outputs.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { KIT_ROOT } from '../../cli/_project.ts';
import { startWorker, type WorkerTarget } from '../../lib/mod.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { packedKit } from '../_helpers/npm_package.ts';
import { type Output, runCommand } from '../_helpers/process.ts';

/** The Node tools the app uses, pinned (TypeScript at the version the build compiles with). */
const TSX = '4.23.15';
const TYPES_NODE = '20.19.43';

async function typescriptVersion(): Promise<string> {
  const { imports } = JSON.parse(await Deno.readTextFile(join(KIT_ROOT, 'import_map.json')));
  return /^npm:typescript@(.+)$/.exec(imports.typescript)![1];
}

function run(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Output> {
  return runCommand('npx', args, {
    cwd,
    env: { ...env, npm_config_update_notifier: 'false' },
    timeoutMs: 180_000,
  });
}

const START = `import { createClient } from 'switchyard/client';
import { RunFailedError } from 'switchyard/errors';
import { errors } from 'switchyard';
import { registry } from './supabase/functions/_shared/registry.ts';

// No connectionString: the client reads DATABASE_URL from process.env.
const client = createClient(registry);
try {
  const run = await client.start('greet', { name: 'Ada' });
  for await (const event of run.events()) console.log(\`\${event.stepSlug ?? 'run'} \${event.event}\`);
  const { deliver } = await run.output({ timeoutMs: 30_000 });
  const length: number = deliver;
  console.log(\`deliver = \${length}\`);
  console.log(\`one error class: \${RunFailedError === errors.RunFailedError}\`);
} finally {
  await client.close();
}
`;

/** The example flow's test for Node's test runner, on the test engine. */
const NODE_TEST = `import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestEngine } from 'switchyard/testing';
import { registry } from './supabase/functions/_shared/registry.ts';

test('greet delivers the length of its greeting, a failed delivery retried 1 s later', async () => {
  const engine = await createTestEngine({ registry });
  try {
    engine.mock('greet', 'deliver', () => {
      throw new Error('mailbox full');
    }, { times: 1 });
    const run = await engine.start('greet', { name: 'Ada' });
    await engine.runUntilIdle();
    assert.equal((await engine.status(run)).status, 'started');
    await engine.advance('1s');
    const { deliver } = await engine.output(run);
    const length: number = deliver;
    assert.equal(length, 11);
    const calls = engine.calls('greet', 'deliver');
    assert.deepEqual(calls.map((c) => [c.attempt, c.mocked]), [[1, true], [2, false]]);
    assert.deepEqual(calls[1].input.compose, { text: 'Hello, Ada!' });
  } finally {
    await engine.close();
  }
});
`;

const wrong = (call: string) =>
  `import { createClient } from 'switchyard/client';
import { registry } from './supabase/functions/_shared/registry.ts';

const client = createClient(registry, { connectionString: process.env.DATABASE_URL });
await ${call};
await client.close();
`;

const tsconfig = (files: string[]) =>
  JSON.stringify({
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      noEmit: true,
      allowImportingTsExtensions: true,
      types: ['node'],
      skipLibCheck: false,
    },
    files,
  });

Deno.test('a Node app installs the npm package, starts and follows a run with the typed client, and tsc refuses a wrong input and alias', async () => {
  const started = performance.now();
  const db = await createTestDatabase();
  const tmp = await Deno.makeTempDir({ prefix: 'switchyard-node-client-' });
  try {
    const tarball = await packedKit();

    const app = join(tmp, 'app');
    await Deno.mkdir(app);
    await Deno.writeTextFile(
      join(app, 'package.json'),
      JSON.stringify({ name: 'node-app', private: true, type: 'module' }),
    );
    const install = await run(app, [
      'npm',
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      `switchyard@file:${tarball}`,
      `tsx@${TSX}`,
      `typescript@${await typescriptVersion()}`,
      `@types/node@${TYPES_NODE}`,
    ]);
    assert.equal(install.code, 0, `npm install failed:\n${install.stderr}`);

    // The example's shared registry, as `switchyard install --example` writes it.
    const shared = join(app, 'supabase', 'functions', '_shared');
    await Deno.mkdir(join(shared, 'flows'), { recursive: true });
    for (const file of ['registry.ts', 'flows/greet.ts']) {
      await Deno.copyFile(
        join(KIT_ROOT, 'cli', 'templates', 'example', 'supabase', 'functions', '_shared', file),
        join(shared, file),
      );
    }
    await Deno.writeTextFile(join(app, 'start.ts'), START);
    await Deno.writeTextFile(
      join(app, 'bad_input.ts'),
      wrong(`client.start('greet', { name: 42 })`),
    );
    await Deno.writeTextFile(
      join(app, 'bad_alias.ts'),
      wrong(`client.start('greeet', { name: 'Ada' })`),
    );

    // The same registry file in Deno, where `switchyard` is the kit's lib/mod.ts: its worker.
    const { registry } = await import(pathToFileURL(join(shared, 'registry.ts')).href) as {
      registry: readonly WorkerTarget[];
    };
    const worker = await startWorker(registry, {
      queueName: 'greetings',
      connectionString: db.url,
    });
    try {
      const node = await run(app, ['tsx', 'start.ts'], {
        SWITCHYARD_DB_URL: '', // read before DATABASE_URL: none may shadow it
        SUPABASE_DB_URL: '',
        DATABASE_URL: db.url,
      });
      assert.equal(node.code, 0, `the Node script failed:\n${node.stderr}\n${node.stdout}`);
      assert.deepEqual(node.stdout.trim().split('\n'), [
        'run started',
        'compose started',
        'compose completed',
        'deliver started',
        'deliver completed',
        'run completed',
        'deliver = 11', // 'Hello, Ada!'.length
        'one error class: true',
      ]);
    } finally {
      await worker.stop();
    }
    const [{ count }] = await db.sql<{ count: number }[]>`
      select count(*)::int as count from switchyard.runs
       where flow_slug = 'greetV1' and status = 'completed'`;
    assert.equal(count, 1);

    await Deno.writeTextFile(join(app, 'greet.test.ts'), NODE_TEST);
    await Deno.writeTextFile(join(app, 'tsconfig.json'), tsconfig(['start.ts', 'greet.test.ts']));
    const good = await run(app, ['tsc', '-p', 'tsconfig.json']);
    assert.equal(good.code, 0, `tsc refused the correct script:\n${good.stdout}${good.stderr}`);

    await Deno.writeTextFile(
      join(app, 'tsconfig.json'),
      tsconfig(['bad_input.ts', 'bad_alias.ts']),
    );
    const bad = await run(app, ['tsc', '-p', 'tsconfig.json']);
    assert.notEqual(bad.code, 0, 'tsc accepted a wrong input and an unknown alias');
    const errors = bad.stdout.trim().split('\n').filter((line) => / error TS\d+/.test(line));
    assert.equal(errors.length, 2, bad.stdout);
    assert.match(
      errors.find((l) => l.startsWith('bad_input.ts')) ?? bad.stdout,
      /^bad_input\.ts\(5,\d+\): error TS2322: Type 'number' is not assignable to type 'string'\./,
    );
    assert.match(
      errors.find((l) => l.startsWith('bad_alias.ts')) ?? bad.stdout,
      /^bad_alias\.ts\(5,\d+\): error TS2345: Argument of type '"greeet"' is not assignable to parameter of type '"greet"'\./,
    );

    // The flow's test under Node's test runner: no database but the engine's embedded one.
    const nodeTest = await run(app, ['node', '--import', 'tsx', '--test', 'greet.test.ts']);
    assert.equal(nodeTest.code, 0, `node --test failed:\n${nodeTest.stdout}\n${nodeTest.stderr}`);
    assert.match(nodeTest.stdout, /^# pass 1$/m);
    assert.match(nodeTest.stdout, /^# fail 0$/m);
  } finally {
    await Deno.remove(tmp, { recursive: true });
    await db.close();
    console.log(`node client test: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
});
