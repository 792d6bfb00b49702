/**
 * `deno task compile` is the gate before the push
 * (docs/design/worker.md#compiling-at-deploy-and-in-local-development), in a project made
 * by the real `supabase init` and `deno task install`: a runtime-option change is compiled
 * (applied at push, recorded); a shape change of a compiled concrete flow is refused — exit 1,
 * nothing written, what changed named by step, the next free slug in the flow's own naming and
 * the commands to go on — and `--check` refuses it too; a queue the registry routes steps to with
 * no queue function is warned about, naming `deno task scaffold-queue`; aliases that earlier
 * migrations only set `where not exists` are declared. And the compile decision agrees with
 * `ensure_flow` on every kind of change.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import postgres from 'postgres';
import { toPlacement } from '../../lib/dsl/placement.ts';
import { defineDeployedFlow, Flow, routeFlow } from '../../lib/mod.ts';
import {
  ensurePgmq,
  pgmqModeFromEnv,
  SUPABASE_CLI,
  withLocalSslMode,
} from '../../lib/sql/migrate.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { migrationTimestamp, parseMigrationTimestamp } from '../../cli/_util.ts';
import { nextSlug, shapeChange } from '../../cli/_shape_change.ts';
import { supabaseCli, supabaseRemote } from '../../cli/_invocation.ts';
import { adminUrl, createTestDatabase, urlFor } from '../_helpers/db.ts';
import { ok, run, supabaseInit } from '../_helpers/project.ts';

const project = await supabaseInit('switchyard-compile-gate-');
const setup = run(['task', '-q', 'install', '--project', project], KIT_ROOT);

const FLOWS = 'supabase/functions/_shared/flows';

/** ordersV3 as first deployed: charge → ship on `order_work`, alias orders. */
const ORDERS_V3 = `import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';

const ordersV3 = new Flow<{ id: number }>({ slug: 'ordersV3' })
  .step({ slug: 'charge' }, (input) => ({ charged: input.id }))
  .step({ slug: 'ship', dependsOn: ['charge'] }, (input) => \`shipped \${input.charge.charged}\`);

export const orders3 = defineDeployedFlow(
  routeFlow(ordersV3, { queues: { charge: 'order_work', ship: 'order_work' } }),
  { alias: 'orders' },
);
`;

const REGISTRY = `import { orders3 } from './flows/orders_v3.ts';

export const registry = [orders3] as const;
`;

/** `deno task compile`, without its "waiting 1 s for the clock" line (migrations a second apart). */
const compile = async (...extra: string[]) => {
  const out = await run(['task', '-q', 'compile', '--project', project, ...extra], KIT_ROOT);
  return { ...out, stderr: out.stderr.replace(/^waiting \d+ s for the clock: .*\n/gm, '') };
};
const migrations = () =>
  [...Deno.readDirSync(join(project, 'supabase/migrations'))].map((e) => e.name).sort();

async function push(url: string) {
  const out = await run(
    ['run', '-A', SUPABASE_CLI, 'db', 'push', '--db-url', withLocalSslMode(url), '--yes'],
    project,
  );
  ok(out, 'supabase db push');
}

Deno.test('compile refuses a shape change of a compiled flow before the push, and compiles a runtime-option change', async () => {
  ok(await setup, 'install');
  await Deno.mkdir(join(project, FLOWS), { recursive: true });
  await Deno.writeTextFile(join(project, FLOWS, 'orders_v3.ts'), ORDERS_V3);
  await Deno.writeTextFile(join(project, 'supabase/functions/_shared/registry.ts'), REGISTRY);
  ok(
    await run(['task', '-q', 'scaffold-queue', 'order_work', '--project', project], KIT_ROOT),
    'scaffold',
  );
  const first = await compile();
  ok(first, 'compile');
  assert.equal(first.stderr, '', 'no warning: order_work has its function');
  const [compiledBy] = first.stdout.match(/\d{14}_switchyard_flows\.sql/)!;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  const name = `sy_gate_${crypto.randomUUID().replaceAll('-', '').slice(0, 10)}`;
  await admin.unsafe(`create database "${name}"`);
  try {
    const url = urlFor(name);
    await ensurePgmq(url, pgmqModeFromEnv());
    await push(url);

    // A runtime option: compiled, applied at push and recorded.
    await Deno.writeTextFile(
      join(project, FLOWS, 'orders_v3.ts'),
      ORDERS_V3.replace("{ slug: 'ordersV3' }", "{ slug: 'ordersV3', maxAttempts: 5 }"),
    );
    const options = await compile();
    ok(options, 'compile of a runtime option');
    assert.match(
      options.stdout,
      new RegExp(
        `^ {2}flow ordersV3: runtime options changed since ${compiledBy} \\(flow option ` +
          'maxAttempts 3 -> 5\\): applied at push to tasks created from then on, and recorded',
        'm',
      ),
    );
    await push(url);
    const sql = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const [flow] = await sql`select max_attempts from switchyard.flows
        where flow_slug = 'ordersV3'`;
      assert.equal(flow.max_attempts, 5);
    } finally {
      await sql.end();
    }
    const nothing = await compile('--check');
    assert.equal(nothing.code, 0, nothing.stdout + nothing.stderr);

    // A shape change: a wait step between charge and ship. Refused; nothing written.
    const changed = ORDERS_V3.replace(
      "{ slug: 'ordersV3' }",
      "{ slug: 'ordersV3', maxAttempts: 5 }",
    )
      .replace(
        ".step({ slug: 'ship', dependsOn: ['charge'] }, (input) =>",
        ".wait({ slug: 'approval', dependsOn: ['charge'] })\n" +
          "  .step({ slug: 'ship', dependsOn: ['charge', 'approval'] }, (input) =>",
      );
    assert.notEqual(changed, ORDERS_V3);
    await Deno.writeTextFile(join(project, FLOWS, 'orders_v3.ts'), changed);
    const before = migrations();
    for (const args of [[], ['--check']]) {
      const refused = await compile(...args);
      assert.equal(refused.code, 1, `compile ${args}: ${refused.stdout}`);
      assert.equal(refused.stdout, '');
      assert.deepEqual(migrations(), before, 'nothing written');
      // The latest migration that compiled it: the one of the runtime option.
      const flowsFile =
        options.stdout.match(/supabase\/migrations\/\d{14}_switchyard_flows\.sql/)![0];
      // The push as the user's Supabase CLI takes it (the same one compile finds).
      const cli = await supabaseCli(project);
      assert.equal(
        refused.stderr,
        [
          `error: flow ordersV3 is compiled by ${flowsFile} with another shape; ` +
          'supabase/functions/_shared/registry.ts now changes:',
          '  - step approval added (wait, after charge)',
          '  - step ship dependsOn ["charge"] -> ["charge","approval"]',
          'A compiled concrete flow never changes its steps, dependencies, kinds, conditions or ' +
          'queues (a database may hold runs of it; `supabase db push` would refuse it, SY004); ' +
          'only runtime options may change. Deploy the change as a new version, ordersV4:',
          "  1. give the changed flow the slug 'ordersV4' (new Flow({ slug: 'ordersV4', … })) and " +
          `keep ordersV3 as ${flowsFile} compiled it, for its runs`,
          '  2. list ordersV4 after ordersV3 in supabase/functions/_shared/registry.ts (alias ' +
          'orders); remove ordersV3 once `npx -y deno@2 task drain` shows it drained',
          `  3. npx -y deno@2 task compile --project ${project}`,
          `  4. ${supabaseRemote(cli, 'db push')}, then ${cli.command} functions deploy`,
          'Nothing was written. (In local development a worker recompiles a changed shape: ' +
          `npx -y deno@2 task serve --project ${project}.)`,
          '',
        ].join('\n'),
      );
    }

    // As told: ordersV4 next to the ordersV3 compiled earlier. Compiled, and the push accepts it.
    await Deno.writeTextFile(
      join(project, FLOWS, 'orders_v3.ts'),
      ORDERS_V3.replace("{ slug: 'ordersV3' }", "{ slug: 'ordersV3', maxAttempts: 5 }"),
    );
    await Deno.writeTextFile(
      join(project, FLOWS, 'orders_v4.ts'),
      changed.replaceAll('ordersV3', 'ordersV4').replaceAll('orders3', 'orders4'),
    );
    await Deno.writeTextFile(
      join(project, 'supabase/functions/_shared/registry.ts'),
      `import { orders3 } from './flows/orders_v3.ts';\nimport { orders4 } from './flows/orders_v4.ts';\n\nexport const registry = [orders3, orders4] as const;\n`,
    );
    const v4 = await compile();
    ok(v4, 'compile of ordersV4');
    assert.match(v4.stdout, /^ {2}flow ordersV4$/m);
    assert.match(v4.stdout, /^ {2}alias orders -> ordersV4 \(keeps ordersV3 for drain\)$/m);
    await push(url);
  } finally {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
  }
});

Deno.test('compile warns about a routed queue with no queue function, naming scaffold-queue; --check fails on it', async () => {
  await Deno.writeTextFile(
    join(project, FLOWS, 'returns.ts'),
    `import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';

const returnsV1 = new Flow<{ id: number }>({ slug: 'returnsV1' })
  .step({ slug: 'refund' }, (input) => input.id);

export const returns1 = defineDeployedFlow(
  routeFlow(returnsV1, { queues: { refund: 'refund_work' } }),
  { alias: 'returns' },
);
`,
  );
  const registry = join(project, 'supabase/functions/_shared/registry.ts');
  const kept = await Deno.readTextFile(registry);
  await Deno.writeTextFile(
    registry,
    kept.replace(
      'export const registry = [',
      "import { returns1 } from './flows/returns.ts';\n" +
        'export const registry = [returns1, ',
    ),
  );
  const warning = `warning: queue refund_work has no queue function in supabase/functions/ ` +
    '(returnsV1 route steps to it): its tasks would wait with no worker. Write it: ' +
    `npx -y deno@2 task scaffold-queue refund_work --project ${project}\n`;
  const check = await compile('--check');
  assert.equal(check.code, 1);
  assert.equal(check.stderr, warning);
  const compiled = await compile();
  ok(compiled, 'compile');
  assert.equal(compiled.stderr, warning, 'a warning; the migration is written');
  assert.match(compiled.stdout, /^ {2}flow returnsV1$/m);
  const again = await compile('--check');
  assert.equal(again.code, 1, 'nothing is due, but the queue still has no function');
  assert.match(again.stdout, /^nothing to do/m);
  assert.equal(again.stderr, warning);
  // A function of the user's own that polls the queue counts as its queue function.
  await Deno.mkdir(join(project, 'supabase/functions/refunds'));
  await Deno.writeTextFile(
    join(project, 'supabase/functions/refunds/index.ts'),
    "import { EdgeWorker } from 'switchyard';\nimport { registry } from '../_shared/registry.ts';\n\n" +
      "EdgeWorker.start(registry, { queueName: 'refund_work' });\n",
  );
  const served = await compile('--check');
  assert.equal(served.code, 0, served.stdout + served.stderr);
  assert.equal(served.stderr, '');
});

Deno.test('compile declares an alias that earlier migrations only set where not exists', async () => {
  // A flows migration as compile wrote it before declarations (0.3.0), for alias legacy.
  const shape = toPlacement(
    defineDeployedFlow(
      routeFlow(
        new Flow<{ id: number }>({ slug: 'legacyV1' }).step({ slug: 'go' }, () => 1),
        { queues: { go: 'order_work' } },
      ),
      { alias: 'legacy' },
    ),
  ).shape;
  const names = migrations();
  const newest = parseMigrationTimestamp(names[names.length - 1].slice(0, 14));
  const at = migrationTimestamp(new Date(newest.getTime() + 1000));
  await Deno.writeTextFile(
    join(project, `supabase/migrations/${at}_switchyard_flows.sql`),
    [
      '-- written by compile before declarations',
      `select switchyard.ensure_flow('${JSON.stringify(shape)}'::jsonb);`,
      "select switchyard.sync_alias('legacy', array['legacyV1']::text[])",
      "  where not exists (select 1 from switchyard.aliases a where a.alias = 'legacy');",
      '',
    ].join('\n'),
  );
  await Deno.writeTextFile(
    join(project, FLOWS, 'legacy.ts'),
    `import { defineDeployedFlow, Flow, routeFlow } from 'switchyard';

export const legacy1 = defineDeployedFlow(
  routeFlow(new Flow<{ id: number }>({ slug: 'legacyV1' }).step({ slug: 'go' }, () => 1), {
    queues: { go: 'order_work' },
  }),
  { alias: 'legacy' },
);
`,
  );
  const registry = join(project, 'supabase/functions/_shared/registry.ts');
  const kept = await Deno.readTextFile(registry);
  await Deno.writeTextFile(
    registry,
    kept.replace(
      'export const registry = [',
      "import { legacy1 } from './flows/legacy.ts';\n" +
        'export const registry = [legacy1, ',
    ),
  );
  const out = await compile();
  ok(out, 'compile');
  assert.doesNotMatch(out.stdout, /flow legacyV1/, 'compiled already');
  assert.match(out.stdout, /^ {2}alias legacy -> legacyV1$/m);
  const written = out.stdout.match(/supabase\/migrations\/\d{14}_switchyard_flows\.sql/)![0];
  assert.match(
    await Deno.readTextFile(join(project, written)),
    /^select switchyard\.declare_alias\('legacy', array\['legacyV1'\]::text\[\]\);$/m,
  );
  const again = await compile();
  assert.match(again.stdout, /^nothing to do/m);
  await Deno.remove(project, { recursive: true });
});

Deno.test("compile's decision agrees with ensure_flow on every kind of change", async () => {
  const db = await createTestDatabase();
  try {
    const base = (slug: string) =>
      JSON.parse(JSON.stringify(
        toPlacement(routeFlow(
          new Flow<{ id: number }>({ slug })
            .step({ slug: 'a' }, () => 1)
            .wait({ slug: 'w', dependsOn: ['a'], timeout: 60 })
            .step({ slug: 'b', dependsOn: ['a', 'w'] }, () => 2),
          { queues: { a: 'agree_q', b: 'agree_q' } },
        )).shape,
      ));
    type Shape = ReturnType<typeof base>;
    const step = (s: Shape, slug: string) => s.steps.find((x: { slug: string }) => x.slug === slug);
    const variants: [string, (s: Shape) => void, 'same' | 'options' | 'shape'][] = [
      ['nothing', () => {}, 'same'],
      ['flow maxAttempts', (s) => s.options.maxAttempts = 5, 'options'],
      ['flow runTimeout', (s) => s.options.runTimeout = 3600, 'options'],
      ['flow events off', (s) => s.options.events = false, 'options'],
      ['flow events true, spelled out', (s) => s.options.events = true, 'same'],
      ['step timeout', (s) => step(s, 'b').options.timeout = 30, 'options'],
      ['step startDelay', (s) => step(s, 'a').options.startDelay = 10, 'options'],
      ['step baseDelay', (s) => step(s, 'b').options.baseDelay = 4, 'options'],
      ['step defaults left out', (s) => {
        for (const k of ['maxAttempts', 'startDelay', 'whenUnmet', 'if']) {
          delete step(s, 'b').options[k];
        }
        delete step(s, 'b').kind;
      }, 'same'],
      ['step condition', (s) => step(s, 'b').options.if = { id: 1 }, 'shape'],
      ['step whenUnmet', (s) => step(s, 'b').options.whenUnmet = 'fail', 'shape'],
      ['step whenExhausted', (s) => step(s, 'b').options.whenExhausted = 'skip', 'shape'],
      ['wait timeout', (s) => step(s, 'w').options.waitTimeout = 120, 'shape'],
      ['wait onTimeout', (s) => step(s, 'w').options.onTimeout = 'skip', 'shape'],
      ['step queue', (s) => step(s, 'b').queue = 'agree_other_q', 'shape'],
      ['step dependsOn', (s) => step(s, 'b').dependsOn = ['w'], 'shape'],
      ['step kind', (s) => step(s, 'a').kind = 'map', 'shape'],
      ['step added', (s) => {
        s.steps.push({ ...step(s, 'a'), slug: 'c', index: 3, dependsOn: ['b'] });
      }, 'shape'],
      ['step removed', (s) => s.steps.pop(), 'shape'],
    ];
    let n = 0;
    for (const [what, change, expected] of variants) {
      const slug = `agree${++n}`;
      const before = base(slug);
      const after = base(slug);
      change(after);
      assert.equal(shapeChange(before, after).kind, expected, what);
      await db.sql`select switchyard.ensure_flow(${db.sql.json(before)}::jsonb)`;
      const outcome = await db.sql`select switchyard.ensure_flow(${db.sql.json(after)}::jsonb) as r`
        .then(([row]) => row.r, (e) => e.code);
      assert.equal(
        outcome,
        { same: 'verified', options: 'updated', shape: 'SY004' }[expected],
        `${what}: compile says ${expected}, ensure_flow ${outcome}`,
      );
    }
    // The step-added diff names the step by slug, in its place, not as every later step changed.
    const before = base('named');
    const after = base('named');
    after.steps.splice(1, 0, { ...step(after, 'a'), slug: 'check', index: 1, dependsOn: ['a'] });
    after.steps.forEach((s: { index: number }, i: number) => s.index = i);
    step(after, 'w').dependsOn = ['check'];
    assert.deepEqual(shapeChange(before, after), {
      kind: 'shape',
      differences: [
        'step check added (single, queue agree_q, after a)',
        'step w dependsOn ["a"] -> ["check"]',
      ],
    });
  } finally {
    await db.close();
  }
});

Deno.test("SY004 names an inserted step by slug and suggests the next free slug in the flow's naming", async () => {
  const db = await createTestDatabase();
  try {
    const shape = (slug: string, wait: boolean) => {
      const flow = new Flow<{ id: number }>({ slug }).step({ slug: 'charge' }, () => 1);
      const queues = { queues: { charge: 'sy004_q', ship: 'sy004_q' } } as const;
      return (wait
        ? toPlacement(routeFlow(
          flow.wait({ slug: 'approval', dependsOn: ['charge'] })
            .step({ slug: 'ship', dependsOn: ['approval'] }, () => 2),
          queues,
        ))
        : toPlacement(
          routeFlow(flow.step({ slug: 'ship', dependsOn: ['charge'] }, () => 2), queues),
        ))
        .shape as never;
    };
    for (const slug of ['shipV3', 'shipV4']) {
      await db.sql`select switchyard.ensure_flow(${db.sql.json(shape(slug, false))}::jsonb)`;
    }
    const refused = await db.sql`select switchyard.ensure_flow(${
      db.sql.json(shape('shipV3', true))
    }::jsonb)`.then(() => assert.fail('accepted'), (e) => e);
    assert.equal(refused.code, 'SY004');
    assert.deepEqual(JSON.parse(refused.detail).differences, [
      'step "approval" added',
      'step "ship" dependsOn ["charge"] -> ["approval"]',
    ]);
    assert.match(refused.message, /deploy the change under a new slug \(for example "shipV5"\)$/);
  } finally {
    await db.close();
  }
});

Deno.test("the next free slug follows the flow's own naming", () => {
  assert.equal(nextSlug('ordersV3', ['ordersV3']), 'ordersV4');
  assert.equal(nextSlug('ordersV3', ['ordersV3', 'ORDERSV4']), 'ordersV5');
  assert.equal(nextSlug('orders_v9', []), 'orders_v10');
  assert.equal(nextSlug('orders', ['orders']), 'ordersV2');
  assert.equal(nextSlug('orders', ['ordersV2']), 'ordersV3');
});
