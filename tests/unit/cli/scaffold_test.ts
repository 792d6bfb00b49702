/**
 * `scaffoldQueue()` details the end-to-end test does not reach: the config.toml section
 * guard, migration ordering, long queue names, private queues, broken registries, files
 * written by the scaffold before its templates moved into the kit's `templates/` folder, and
 * broken templates.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { copyProject } from '../../../cli/_project.ts';
import { ScaffoldError, scaffoldQueue } from '../../../cli/scaffold_queue.ts';
import {
  functionSection,
  readFunctionConfigs,
  setFunctionSection,
} from '../../../cli/_functions_config.ts';
import { deno } from '../../_helpers/process.ts';

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

/** A registry that routes its one step to the 47-character queue `long`. */
function longRegistry(long: string): string {
  return `import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';

const flow = new Flow({ slug: 'longV1' }).step({ slug: 'a' }, () => 1);
const plain = new Flow({ slug: 'plainFlow' }).step({ slug: 'a' }, () => 1);

export const registry = [
  defineDeployedFlow(routeFlow(flow, { queues: { a: '${long}' } }), { alias: 'long' }),
  plain,
] as const;
`;
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

Deno.test('the registration migration sorts after the newest migration and is never named after now', async () => {
  await withProject(async (dir) => {
    const migrations = join(dir, 'supabase/migrations');
    const before = [...Deno.readDirSync(migrations)].map((e) => e.name).sort();
    const newest = before[before.length - 1];
    // A clock before the newest migration: a timestamp after it would lie in the future (and
    // sort after the next `supabase migration new`), so nothing is written.
    await assert.rejects(
      scaffoldQueue({
        projectDir: dir,
        queueName: 'deliver_slack_alerts',
        now: new Date('2001-01-01T00:00:00Z'),
      }),
      (e: Error) =>
        e instanceof ScaffoldError && e.message.includes(`supabase/migrations/${newest}`) &&
        /named after .*from now/.test(e.message) && /Rename that migration/.test(e.message) &&
        /nothing was written/.test(e.message),
    );
    assert.deepEqual([...Deno.readDirSync(migrations)].map((e) => e.name).sort(), before);
    const now = new Date('2031-03-04T05:06:07.890Z');
    const result = await scaffoldQueue({ projectDir: dir, queueName: 'deliver_slack_alerts', now });
    const migration = result.files.find((f) => f.path.includes('migrations/'))!;
    const names = [...Deno.readDirSync(migrations)].map((e) => e.name).sort();
    assert.equal(join(migrations, names[names.length - 1]), join(dir, migration.path));
    assert.equal(names[names.length - 2], newest);
    // The second before the run's: a `supabase migration new` now sorts after it.
    assert.equal(names[names.length - 1].slice(0, 14), '20310304050606');
  });
});

Deno.test('a 47-character queue name gets a fmt-clean multi-line call; a private queue is refused', async () => {
  await withProject(async (dir) => {
    const long = 'q'.repeat(40) + '_alerts';
    await writeRegistry(dir, longRegistry(long));
    const result = await scaffoldQueue({ projectDir: dir, queueName: long, maxConcurrent: 1000 });
    const index = await Deno.readTextFile(
      join(dir, 'supabase/functions', result.functionName, 'index.ts'),
    );
    assert.match(index, new RegExp(`EdgeWorker\\.start\\(registry, \\{\\n  queueName: '${long}',`));
    const fmt = await deno(['fmt', '--check', `supabase/functions/${result.functionName}`], {
      cwd: dir,
    });
    assert.equal(fmt.code, 0, fmt.stderr);
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

// What the scaffold wrote while its templates were inline strings (commit 4fb74ad), taken
// literally from its output: `scaffold-queue classify_threads --max-concurrent 4` in a project
// whose import map does not map `switchyard` (so the kit's own mapping is added).
const OLD_IMPORT_MAP = `{
  "imports": {
    "postgres": "npm:postgres@3",
    "@supabase/supabase-js": "npm:@supabase/supabase-js@2"
  }
}
`;
const OLD_DENO_JSON = `{
  "importMap": "./import_map.json",
  "fmt": {
    "lineWidth": 100,
    "singleQuote": true,
    "exclude": ["supabase/.temp/"]
  }
}
`;
const OLD_INDEX = [
  '/**',
  ' * Queue function for "classify_threads", written by `npx switchyard scaffold-queue`.',
  ' *',
  ' * One worker polls this queue and runs every flow and version of the shared registry routed',
  ' * to it. Edit `../_shared/registry.ts`, not this file.',
  ' *',
  ' * @module',
  ' */',
  "import { EdgeWorker } from 'switchyard';",
  "import { registry } from '../_shared/registry.ts';",
  '',
  "EdgeWorker.start(registry, { queueName: 'classify_threads', maxConcurrent: 4 });",
  '',
].join('\n');
const OLD_FUNCTION_DENO_JSON = [
  '{',
  '  "imports": {',
  '    "postgres": "npm:postgres@3",',
  '    "@supabase/supabase-js": "npm:@supabase/supabase-js@2",',
  '    "switchyard": "../../../lib/mod.ts",',
  '    "switchyard/": "../../../lib/"',
  '  },',
  '  "fmt": {',
  '    "lineWidth": 100,',
  '    "singleQuote": true',
  '  }',
  '}',
  '',
].join('\n');
const OLD_SECTION = [
  '[functions.classify-threads-worker]',
  '# Queue function for "classify_threads" (npx switchyard scaffold-queue). It checks its own bearer (the',
  "# service role key or SWITCHYARD_WORKER_SECRET), so the gateway's JWT check is off.",
  'verify_jwt = false',
  'import_map = "./functions/classify-threads-worker/deno.json"',
  'entrypoint = "./functions/classify-threads-worker/index.ts"',
].join('\n');
/**
 * The registration migration as the scaffold writes it since register_function refuses a queue
 * the catalog does not know (issue 10, item 11): it provisions the shared queue first.
 */
const OLD_MIGRATION = [
  '-- Registers queue function "classify-threads-worker" for queue "classify_threads" (written by',
  '-- `npx switchyard scaffold-queue classify_threads`). The shared queue is provisioned first (created when',
  '-- absent; a queue of the catalog is kept as it is), because register_function refuses a queue',
  '-- the catalog does not know. A new function starts enabled and unpaused; an existing one keeps',
  '-- its flags: this never re-enables a disabled or paused function.',
  "select switchyard.ensure_shared_queue('classify_threads');",
  "select switchyard.register_function('classify-threads-worker', 'classify_threads');",
  '',
].join('\n');
/** `scaffold-queue <47 × q…>_alerts --max-concurrent 1000`: the call does not fit one line. */
const OLD_LONG_INDEX = [
  '/**',
  ' * Queue function for "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq_alerts", written by `npx switchyard scaffold-queue`.',
  ' *',
  ' * One worker polls this queue and runs every flow and version of the shared registry routed',
  ' * to it. Edit `../_shared/registry.ts`, not this file.',
  ' *',
  ' * @module',
  ' */',
  "import { EdgeWorker } from 'switchyard';",
  "import { registry } from '../_shared/registry.ts';",
  '',
  'EdgeWorker.start(registry, {',
  "  queueName: 'qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq_alerts',",
  '  maxConcurrent: 1000,',
  '});',
  '',
].join('\n');

Deno.test('a function written by the inline-template scaffold is clean: nothing to do, no refusal', async () => {
  await withProject(async (dir) => {
    await Deno.writeTextFile(join(dir, 'import_map.json'), OLD_IMPORT_MAP);
    await Deno.writeTextFile(join(dir, 'deno.json'), OLD_DENO_JSON);
    const functionDir = join(dir, 'supabase/functions/classify-threads-worker');
    await Deno.mkdir(functionDir, { recursive: true });
    await Deno.writeTextFile(join(functionDir, 'index.ts'), OLD_INDEX);
    await Deno.writeTextFile(join(functionDir, 'deno.json'), OLD_FUNCTION_DENO_JSON);
    const configPath = join(dir, 'supabase/config.toml');
    const config = `${await Deno.readTextFile(configPath)}\n${OLD_SECTION}\n`;
    await Deno.writeTextFile(configPath, config);
    const migration = 'supabase/migrations/20270101000000_register_classify_threads_worker.sql';
    await Deno.writeTextFile(join(dir, migration), OLD_MIGRATION);

    const result = await scaffoldQueue({
      projectDir: dir,
      queueName: 'classify_threads',
      maxConcurrent: 4,
    });
    assert.equal(result.changed, false);
    assert.deepEqual(result.files, [
      { path: 'supabase/functions/classify-threads-worker/index.ts', action: 'unchanged' },
      { path: 'supabase/functions/classify-threads-worker/deno.json', action: 'unchanged' },
      { path: 'supabase/config.toml', action: 'unchanged' },
      { path: migration, action: 'unchanged' },
    ]);
    assert.equal(await Deno.readTextFile(join(functionDir, 'index.ts')), OLD_INDEX);
    assert.equal(await Deno.readTextFile(configPath), config);
  });
  await withProject(async (dir) => {
    const long = 'q'.repeat(40) + '_alerts';
    await writeRegistry(dir, longRegistry(long));
    const first = await scaffoldQueue({ projectDir: dir, queueName: long, maxConcurrent: 1000 });
    const index = join(dir, 'supabase/functions', first.functionName, 'index.ts');
    assert.equal(await Deno.readTextFile(index), OLD_LONG_INDEX);
    const again = await scaffoldQueue({ projectDir: dir, queueName: long, maxConcurrent: 1000 });
    assert.equal(again.changed, false);
  });
});

/** A copy of the kit's templates, edited by `edit` (file → new text, or null to delete). */
async function brokenTemplates(
  edit: Record<string, (text: string) => string | null>,
): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: 'switchyard-templates-' });
  const kit = new URL('../../../cli/templates/', import.meta.url);
  for (
    const name of [
      'queue_function/index.ts',
      'queue_function/deno.json',
      'function_config.toml',
      'register_function.sql',
    ]
  ) {
    await Deno.mkdir(join(dir, name, '..'), { recursive: true });
    const text = await Deno.readTextFile(new URL(name, kit));
    const edited = edit[name] ? edit[name](text) : text;
    if (edited !== null) await Deno.writeTextFile(join(dir, name), edited);
  }
  return dir;
}

Deno.test('a template out of step with the scaffold fails loudly and nothing is written', async () => {
  const cases: [Record<string, (text: string) => string | null>, RegExp][] = [
    [
      {
        'queue_function/index.ts': (t) =>
          t.replace('maxConcurrent: MAX_CONCURRENT', 'maxConcurrent: 10'),
      },
      /template .*\/queue_function\/index\.ts must contain "\{ queueName: QUEUE_NAME, maxConcurrent: MAX_CONCURRENT \}" exactly once, found it 0 times/,
    ],
    [
      {
        'queue_function/index.ts': (t) =>
          t.replace(' * @module', ' * Queue function for "QUEUE_NAME".\n * @module'),
      },
      /must contain "Queue function for \\"QUEUE_NAME\\"" exactly once, found it 2 times/,
    ],
    [
      { 'queue_function/index.ts': (t) => t.replace('// scaffold-queue: template only.', '//') },
      /must contain one line starting with "\/\/ scaffold-queue: template only\.", found 0/,
    ],
    [
      {
        'queue_function/index.ts': (t) => t.replace("'switchyard';", "'switchyard'; // QUEUE_NAME"),
      },
      /index\.ts holds QUEUE_NAME where the scaffold does not replace it/,
    ],
    [
      { 'register_function.sql': (t) => `${t}-- FUNCTION_NAME\n` },
      /register_function\.sql holds FUNCTION_NAME where the scaffold does not replace it/,
    ],
    [
      { 'function_config.toml': (t) => t.replace('[functions.FUNCTION_NAME]', '[functions.x]') },
      /function_config\.toml must contain "\[functions\.FUNCTION_NAME\]" exactly once, found it 0/,
    ],
    [
      { 'queue_function/deno.json': (t) => t.replace('{', '{ "fmt": {},') },
      /queue_function\/deno\.json must hold exactly an "imports" object/,
    ],
    [
      { 'queue_function/deno.json': () => '{' },
      /template .*queue_function\/deno\.json: .*JSON/,
    ],
    [
      { 'register_function.sql': () => null },
      /cannot read the scaffold's template .*register_function\.sql/,
    ],
  ];
  await withProject(async (dir) => {
    const config = await Deno.readTextFile(join(dir, 'supabase/config.toml'));
    const migrations = [...Deno.readDirSync(join(dir, 'supabase/migrations'))].length;
    for (const [edit, message] of cases) {
      const templatesDir = await brokenTemplates(edit);
      try {
        await assert.rejects(
          scaffoldQueue({ projectDir: dir, queueName: 'classify_threads', templatesDir }),
          (e: Error) => e instanceof ScaffoldError && message.test(e.message),
          `${Object.keys(edit)[0]}: ${message}`,
        );
      } finally {
        await Deno.remove(templatesDir, { recursive: true });
      }
    }
    assert.equal(await Deno.readTextFile(join(dir, 'supabase/config.toml')), config);
    assert.equal([...Deno.readDirSync(join(dir, 'supabase/migrations'))].length, migrations);
    assert.equal(
      [...Deno.readDirSync(join(dir, 'supabase/functions'))].map((e) => e.name).sort().join(),
      '_shared',
    );
    // The kit's own templates work: the same project scaffolds once they are intact.
    assert.equal(
      (await scaffoldQueue({ projectDir: dir, queueName: 'classify_threads' })).changed,
      true,
    );
  });
});

Deno.test('an applied registration written by an earlier kit is kept, even with --force', async () => {
  await withProject(async (dir) => {
    await writeRegistry(dir, longRegistry('kept_q'));
    const first = await scaffoldQueue({ projectDir: dir, queueName: 'kept_q' });
    const path = first.files.find((f) => f.path.endsWith('_register_kept_q_worker.sql'))!.path;
    // What 0.1.0's scaffold wrote: register_function only (no ensure_shared_queue before it).
    const earlier = '-- Registers queue function "kept-q-worker" for queue "kept_q" (written by\n' +
      '-- `npx switchyard scaffold-queue kept_q`).\n' +
      "select switchyard.register_function('kept-q-worker', 'kept_q');\n";
    await Deno.writeTextFile(join(dir, path), earlier);
    const again = await scaffoldQueue({ projectDir: dir, queueName: 'kept_q' });
    assert.equal(again.changed, false, 'nothing to write without --force either');
    assert.deepEqual(again.files.find((f) => f.path === path), { path, action: 'kept' });
    const forced = await scaffoldQueue({ projectDir: dir, queueName: 'kept_q', force: true });
    assert.deepEqual(forced.files.find((f) => f.path === path), { path, action: 'kept' });
    assert.equal(await Deno.readTextFile(join(dir, path)), earlier, 'never rewritten');
    const migrations = [...Deno.readDirSync(join(dir, 'supabase/migrations'))]
      .filter((e) => e.name.endsWith('_register_kept_q_worker.sql'));
    assert.equal(migrations.length, 1, 'and no second registration');
  });
});
