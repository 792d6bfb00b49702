/**
 * The local loop of an installed project (issue 37, item 7), with real processes: `deno task
 * serve` over the example project (`greet` on the queue `greetings`, its queue function
 * `greetings-worker`), its worker started, then the registry edited as a user does — a new
 * version `greetV2` of the alias — compiled and pushed, and the alias started.
 *
 * - With `--watch`, serve reloads the function when the registry changes and starts its worker
 *   again with the new registry: the new version's run completes and nothing pauses.
 * - Without it, the old worker meets the new version's task and pauses the function: serve says
 *   so, with the reason and the command to run; a restart of serve keeps its port and says the
 *   function is still paused; the command it printed resumes it and the run completes.
 */
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { freePort } from '../../cli/_util.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { SERVE_PORT_FILE } from '../../cli/_serve_port.ts';
import {
  type InstalledProject,
  ServeProcess,
  startQueueWorker,
  withInstalledProject,
} from '../_helpers/installed_project.ts';
import { ok, run } from '../_helpers/project.ts';
import { FAST_ENV, waitFor } from '../_helpers/wait.ts';

const SECRET = 'local-loop-secret';
const FLOW = 'supabase/functions/_shared/flows/greet.ts';
const REGISTRY = 'supabase/functions/_shared/registry.ts';

/** The example's flow file with a second version of `greet`, as a user adds one. */
const GREET_V2 = `
const greetV2 = new Flow<{ name: string }>({ slug: 'greetV2' })
  .step({ slug: 'compose' }, (input) => ({ text: \`Hi, \${input.name}!\` }))
  .step({ slug: 'shout', dependsOn: ['compose'] }, (input) => input.compose.text.toUpperCase())
  .step({ slug: 'deliver', dependsOn: ['shout'] }, (input) => input.shout.length);

/** \`greetV2\`, the alias's new version. */
export const greet2 = defineDeployedFlow(
  routeFlow(greetV2, {
    queues: { compose: 'greetings', shout: 'greetings', deliver: 'greetings' },
  }),
  { alias: 'greet' },
);
`;

/** Adds `greetV2` to the flow file and the registry (after `greet`), then compiles and pushes. */
async function addGreetV2(project: InstalledProject): Promise<void> {
  await Deno.writeTextFile(join(project.dir, FLOW), GREET_V2, { append: true });
  const registry = await Deno.readTextFile(join(project.dir, REGISTRY));
  const edited = registry
    .replace(
      "import { greet } from './flows/greet.ts';",
      "import { greet, greet2 } from './flows/greet.ts';",
    )
    .replace('[greet] as const', '[greet, greet2] as const');
  assert.notEqual(edited, registry, 'the example registry lists greet');
  await Deno.writeTextFile(join(project.dir, REGISTRY), edited);
  ok(await run(['task', '-q', 'compile', '--project', project.dir], KIT_ROOT), 'compile');
  ok(
    await run(['task', '-q', 'db:push', '--project', project.dir], KIT_ROOT, {
      DATABASE_URL: project.url,
    }),
    'db:push',
  );
}

const serveEnv = (project: InstalledProject) => ({
  DATABASE_URL: project.url,
  SWITCHYARD_WORKER_SECRET: SECRET,
  SWITCHYARD_LOG: 'warn',
  ...FAST_ENV,
});

/** A run of the alias `greet`, waited for: its flow, status and output. */
async function greet(project: InstalledProject, serve: ServeProcess) {
  const [{ id }] = await project.sql<{ id: string }[]>`
    select switchyard.start_flow('greet', '{"name": "Ada"}'::jsonb) as id`;
  return await waitFor(`run ${id} to end`, async () => {
    const [r] = await project.sql<{ flow_slug: string; status: string; output: unknown }[]>`
      select flow_slug, status, output from switchyard.runs where run_id = ${id}`;
    return r.status === 'started' ? null : r;
  }, { timeoutMs: 60_000 }).catch((e) => {
    throw new Error(`${(e as Error).message}\nserve printed:\n${serve.log}`);
  });
}

async function pausedReason(project: InstalledProject): Promise<string | null> {
  const [f] = await project.sql<{ pause_reason: string | null }[]>`
    select pause_reason from switchyard.worker_functions
     where function_name = 'greetings-worker'`;
  return f.pause_reason;
}

Deno.test('serve --watch: a registry edited while serving reloads the function, and the new version runs without a pause', async () => {
  await withInstalledProject('switchyard-watch-', async (project) => {
    const serve = new ServeProcess(project.dir, ['--watch'], serveEnv(project));
    try {
      const url = await serve.url();
      const worker = `${url}/functions/v1/greetings-worker`;
      assert.equal((await startQueueWorker(worker, SECRET)).state, 'started');
      assert.deepEqual((await greet(project, serve)).output, { deliver: 11 });

      const mark = serve.mark;
      await addGreetV2(project);
      await serve.line(/^\[serve\] .*supabase\/functions\/_shared\/\S+ changed: reloading /, mark);
      await serve.line(/^\[serve\] greetings-worker: its worker started again/, mark);

      const v2 = await greet(project, serve);
      assert.equal(v2.flow_slug, 'greetV2', serve.log);
      assert.equal(v2.status, 'completed', serve.log);
      assert.deepEqual(v2.output, { deliver: 8 }); // "HI, ADA!"
      assert.equal(await pausedReason(project), null, serve.log);
    } finally {
      await serve.stop();
    }
  });
});

Deno.test('serve: a registry edit that pauses the function is said with what to run; a restart keeps the port', async () => {
  await withInstalledProject('switchyard-loop-', async (project) => {
    // A port the project's last serve used (not 54321, which another serve beside this test
    // may take while this one is stopped): the first serve and the restart take it again.
    const last = freePort();
    await Deno.mkdir(join(project.dir, dirname(SERVE_PORT_FILE)), { recursive: true });
    await Deno.writeTextFile(join(project.dir, SERVE_PORT_FILE), `${last}\n`);
    let serve = new ServeProcess(project.dir, [], serveEnv(project));
    try {
      const url = await serve.url();
      assert.equal(url, `http://127.0.0.1:${last}`, "the last serve's port");
      const port = await Deno.readTextFile(join(project.dir, SERVE_PORT_FILE));
      assert.equal(url, `http://127.0.0.1:${port.trim()}`, 'the port is kept for the next serve');
      const worker = `${url}/functions/v1/greetings-worker`;
      assert.equal((await startQueueWorker(worker, SECRET)).state, 'started');

      const mark = serve.mark;
      await addGreetV2(project);
      // The alias stays on greetV1 until a worker with the new registry starts: start greetV2.
      await project.sql`select switchyard.start_flow('greetV2', '{"name": "Ada"}'::jsonb)`;
      await serve.line(/^\[serve\] greetings-worker was paused at \S+: unsupported work/, mark);
      const [, command] = await serve.line(
        /^\[serve\] greetings-worker starts no worker until it is resumed\..*restart serve.*run `(npx -y deno@2 task resume greetings-worker)`/,
        mark,
      );
      assert.notEqual(await pausedReason(project), null);

      // Ctrl-C and serve again: the same port, and the pause said at once.
      await serve.stop();
      serve = new ServeProcess(project.dir, [], serveEnv(project));
      assert.equal(await serve.url(), url, 'a restart serves on the same port');
      await serve.line(/^\[serve\] greetings-worker is paused since \S+: unsupported work/);
      const refused = await startQueueWorker(worker, SECRET);
      assert.equal(refused.status, 409, refused.body);

      // The command it printed, as printed.
      ok(
        await run(
          ['task', '-q', ...command.replace(/^npx -y deno@2 task /, '').split(' ')],
          KIT_ROOT,
          {
            DATABASE_URL: project.url,
          },
        ),
        command,
      );
      await serve.line(/^\[serve\] greetings-worker was resumed$/);
      assert.equal((await startQueueWorker(worker, SECRET)).state, 'started');
      const v2 = await greet(project, serve); // the new worker moved the alias to greetV2
      assert.equal(v2.flow_slug, 'greetV2');
      assert.equal(v2.status, 'completed');
      const [queued] = await project.sql<{ status: string }[]>`
        select status from switchyard.runs where flow_slug = 'greetV2' order by started_at
         limit 1`;
      assert.equal(queued.status, 'completed', 'the run that paused it completed too');
    } finally {
      await serve.stop();
    }
  });
});
