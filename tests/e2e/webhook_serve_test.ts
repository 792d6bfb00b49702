/**
 * A scaffolded signed webhook end to end (issue 43, docs/design/ingestion.md#signed-webhooks,
 * docs/design/origins.md): in a project made as the README makes it (`supabase init`,
 * `deno task install --example`, its migrations pushed to a new database),
 * `deno task scaffold-webhook` refuses an alias the registry does not deploy and writes the
 * function for `greet`; `deno task serve` serves it as its own `deno run` on a port picked free
 * at run time, over real HTTP against the real database. A good signature starts one run (202)
 * whose origin names the function and the delivery; its replay answers 200 with the same run;
 * a bad signature and a late timestamp (401) and an oversized body (413) start nothing.
 */
import assert from 'node:assert/strict';
import { freePort } from '../../cli/_util.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import { ServeProcess, withInstalledProject } from '../_helpers/installed_project.ts';
import { ok, run } from '../_helpers/project.ts';
import { waitFor } from '../_helpers/wait.ts';

const SECRET = 'whsec-e2e-0123456789abcdef';
const SECRET_ENV = 'GREET_HOOK_SECRET';

async function hmacHex(secret: string, data: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(data));
  return Array.from(new Uint8Array(mac), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The `t=…,v1=…` header for `body`, signed `age` seconds ago with `secret`. */
async function signature(body: string, { age = 0, secret = SECRET } = {}): Promise<string> {
  const t = Math.floor(Date.now() / 1000) - age;
  return `t=${t},v1=${await hmacHex(secret, `${t}.${body}`)}`;
}

Deno.test('a scaffolded webhook served by serve: 202 once, 200 on replay, 401 and 413 start nothing', async () => {
  await withInstalledProject('switchyard-webhook-e2e-', async (project) => {
    // The example's alias is compiled and pushed, as a user does before deploying.
    ok(await run(['task', '-q', 'compile', '--project', project.dir], KIT_ROOT), 'compile');
    ok(
      await run(['task', '-q', 'db:push', '--project', project.dir], KIT_ROOT, {
        DATABASE_URL: project.url,
      }),
      'db:push',
    );

    // An alias the registry does not deploy is refused, naming it, the rule and the known ones.
    const refused = await run(
      [
        'task',
        '-q',
        'scaffold-webhook',
        'orders-hook',
        '--alias',
        'orders',
        '--project',
        project.dir,
      ],
      KIT_ROOT,
    );
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.match(
      refused.stderr,
      /--alias "orders" is unknown \(alias_unknown\).* it knows \S*greet.*--force/s,
    );
    ok(
      await run(
        [
          'task',
          '-q',
          'scaffold-webhook',
          'greet-hook',
          '--alias',
          'greet',
          '--secret-env',
          SECRET_ENV,
          '--project',
          project.dir,
        ],
        KIT_ROOT,
      ),
      'scaffold-webhook',
    );

    const serve = new ServeProcess(project.dir, ['--port', String(freePort())], {
      DATABASE_URL: project.url,
      [SECRET_ENV]: SECRET,
      SWITCHYARD_LOG: 'warn',
    });
    try {
      const hook = `${await serve.url()}/functions/v1/greet-hook`;
      const runs = async () => {
        const [{ n }] = await project.sql<{ n: number }[]>`
          select count(*)::int as n from switchyard.runs where started_as = 'greet'`;
        return n;
      };
      const deliver = async (
        body: string,
        headers: Record<string, string>,
      ): Promise<{ status: number; json: Record<string, unknown> }> => {
        const response = await fetch(hook, { method: 'POST', body, headers });
        return { status: response.status, json: await response.json() };
      };

      // The function boots on its first request: a good delivery starts one run.
      const body = JSON.stringify({ name: 'Ada' });
      const first = await waitFor('the webhook to answer', async () => {
        const r = await deliver(body, {
          'webhook-signature': await signature(body),
          'webhook-id': 'delivery-1',
        });
        return r.status === 502 || r.status === 503 ? null : r;
      }, { timeoutMs: 90_000 }).catch((e) => {
        throw new Error(`${(e as Error).message}\nserve printed:\n${serve.log}`);
      });
      assert.equal(first.status, 202, `${JSON.stringify(first.json)}\n${serve.log}`);
      const runId = first.json.runId as string;
      assert.equal(await runs(), 1);
      const [started] = await project.sql<
        { input: unknown; origin: unknown; data: unknown }[]
      >`
        select r.input, r.origin, e.data from switchyard.runs r
          join switchyard.run_events e on e.run_id = r.run_id and e.step_slug is null
         where r.run_id = ${runId} and e.event = 'started'`;
      assert.deepEqual(started.input, { name: 'Ada' });
      const origin = { kind: 'webhook', function: 'greet-hook', delivery: 'delivery-1' };
      assert.deepEqual(started.origin, origin);
      assert.deepEqual(started.data, { origin });

      // A replay (a new signature, the same delivery id): 200, the same run, nothing started.
      const replay = await deliver(body, {
        'webhook-signature': await signature(body),
        'webhook-id': 'delivery-1',
      });
      assert.equal(replay.status, 200);
      assert.deepEqual(replay.json, { runId, duplicate: true });
      assert.equal(await runs(), 1);

      // A bad signature (another secret) and a late timestamp: 401, nothing started.
      const other = JSON.stringify({ name: 'Bob' });
      const bad = await deliver(other, {
        'webhook-signature': await signature(other, { secret: 'not-the-secret' }),
        'webhook-id': 'delivery-2',
      });
      assert.equal(bad.status, 401);
      assert.equal(bad.json.error, 'signature_mismatch');
      const late = await deliver(other, {
        'webhook-signature': await signature(other, { age: 600 }),
        'webhook-id': 'delivery-3',
      });
      assert.equal(late.status, 401);
      assert.equal(late.json.error, 'timestamp_outside_tolerance');

      // Over the default limit of 1 MiB: 413, nothing started.
      const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 1) });
      const large = await deliver(big, {
        'webhook-signature': await signature(big),
        'webhook-id': 'delivery-4',
      });
      assert.equal(large.status, 413);
      assert.equal(large.json.error, 'body_too_large');
      assert.equal(await runs(), 1, 'only the good delivery started a run');
    } finally {
      await serve.stop();
    }
  });
});
