/**
 * The local gateway (`deno task serve`, cli/serve.ts) over real HTTP, with a function that
 * runs as its own `deno run`: a malformed percent-encoding in the path answers 400 (issue 10,
 * item 13), and a function that fails to boot answers 502 without its output, which stays in
 * the gateway's log.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type ServedFunctions, serveFunctions } from '../../cli/serve.ts';
import { waitFor } from '../_helpers/wait.ts';

const MARKER = `LOG-MARKER-${crypto.randomUUID()}`;

/** A function that serves until asked to exit, and fails to boot while `FLAKY_FLAG` exists. */
const FLAKY = `
let broken = false;
try {
  Deno.statSync(Deno.env.get('FLAKY_FLAG')!);
  broken = true;
} catch { /* no flag: boot */ }
if (broken) {
  console.log('${MARKER} stdout: DATABASE_URL=postgres://user:hunter2@db/app');
  console.error('${MARKER} stderr: boot failed');
  Deno.exit(3);
}
Deno.serve(
  { hostname: Deno.env.get('HOSTNAME'), port: Number(Deno.env.get('PORT')), onListen() {} },
  (request) => {
    if (new URL(request.url).pathname.endsWith('/exit')) {
      setTimeout(() => Deno.exit(1), 20);
      return new Response('bye');
    }
    return new Response('ok');
  },
);
`;

/** Serves a temporary project holding the flaky function, for one test. */
async function withGateway(
  fn: (served: ServedFunctions, flag: string, logs: string[]) => Promise<void>,
): Promise<void> {
  const project = await Deno.makeTempDir({ prefix: 'switchyard-serve-' });
  const flag = join(project, 'broken.flag');
  await Deno.mkdir(join(project, 'supabase/functions/flaky'), { recursive: true });
  await Deno.writeTextFile(join(project, 'supabase/functions/flaky/index.ts'), FLAKY);
  const logs: string[] = [];
  const served = await serveFunctions({
    projectDir: project,
    env: { FLAKY_FLAG: flag },
    log: (line) => logs.push(line),
  });
  try {
    assert.deepEqual(served.functions, ['flaky']);
    assert.equal(await (await fetch(`${served.url}/functions/v1/flaky`)).text(), 'ok');
    await fn(served, flag, logs);
  } finally {
    await served.close();
    await Deno.remove(project, { recursive: true });
  }
}

Deno.test('the gateway answers 400 to a malformed percent-encoding in the function name', async () => {
  await withGateway(async (served) => {
    for (const bad of ['%E0%A4%A', '%', '%zz', 'fl%C3aky', '%ED%A0%80']) {
      const response = await fetch(`${served.url}/functions/v1/${bad}`);
      assert.equal(response.status, 400, bad);
      assert.deepEqual(await response.json(), {
        code: 'BAD_REQUEST',
        message: 'the function name in the path has a malformed percent-encoding',
      });
    }
    // A well-formed encoding still reaches the function.
    assert.equal(await (await fetch(`${served.url}/functions/v1/fl%61ky`)).text(), 'ok');
  });
});

Deno.test('a function that fails to boot answers 502 without its output, which stays in the log', async () => {
  await withGateway(async (served, flag, logs) => {
    // The function exits; from now on it fails to boot.
    await Deno.writeTextFile(flag, '');
    assert.equal(await (await fetch(`${served.url}/functions/v1/flaky/exit`)).text(), 'bye');
    const body = await waitFor('a boot failure', async () => {
      const response = await fetch(`${served.url}/functions/v1/flaky`);
      const text = await response.text();
      return response.status === 502 && JSON.parse(text).code === 'BOOT_ERROR' ? text : null;
    });
    assert.ok(!body.includes(MARKER), `the 502 carries no output of the function: ${body}`);
    assert.ok(!body.includes('hunter2'));
    assert.match(
      JSON.parse(body).message,
      /^function "flaky" did not start listening on port \d+ \(exit code 3\); its output is in the log$/,
    );
    // The output stayed local: in the gateway's log.
    assert.ok(logs.some((l) => l.includes(`${MARKER} stdout`)), logs.join('\n'));
    assert.ok(logs.some((l) => l.includes(`${MARKER} stderr`)));
    assert.ok(logs.some((l) => /^\[serve\] function "flaky" did not start listening/.test(l)));
  });
});
