/**
 * The tests' subprocess helper (tests/_helpers/process.ts): a command's code and output, its
 * time limit, and a long-lived process waited on by its output. The processes are this Deno
 * (`deno eval`). Killing a process tree needs /proc, which Deno reads only with every
 * permission: tests/e2e/process_tree_test.ts.
 */
import assert from 'node:assert/strict';
import { deno, spawnDeno } from '../_helpers/process.ts';

Deno.test('deno: the exit code, both outputs and the standard input', async () => {
  const out = await deno([
    'eval',
    `const text = await new Response(Deno.stdin.readable).text();
     console.log('out ' + text); console.error('err'); Deno.exit(3);`,
  ], { stdin: 'hello' });
  assert.deepEqual(out, { code: 3, signal: null, stdout: 'out hello\n', stderr: 'err\n' });
  const env = await deno(['eval', 'console.log(Deno.env.get("A") + Deno.env.get("HOME"))'], {
    env: { A: 'a' },
    clearEnv: true,
  });
  assert.equal(env.stdout, 'aundefined\n', 'clearEnv: only the variables given');
});

Deno.test('Spawned: a process that exits before printing fails the wait at once, with its output', async () => {
  const quick = spawnDeno(['eval', 'console.log("bye"); console.error("oops"); Deno.exit(1)']);
  const started = Date.now();
  await assert.rejects(
    quick.waitFor(/ready/, { timeoutMs: 30_000 }),
    /deno eval .* exited before it printed \/ready\/; it printed:\nbye\n\noops/s,
  );
  assert.ok(Date.now() - started < 15_000, 'not after the time limit');
  assert.equal((await quick.wait()).code, 1);
  const slow = spawnDeno(['eval', 'await new Promise((r) => setTimeout(r, 60_000))']);
  await assert.rejects(slow.waitFor(/ready/, { timeoutMs: 500 }), /timed out after 500 ms/);
  assert.equal((await slow.stop('SIGKILL')).signal, 'SIGKILL');
});

Deno.test('a command past its time limit is killed and the run fails, with what it printed', async () => {
  const started = Date.now();
  await assert.rejects(
    deno(['eval', 'console.log("started"); await new Promise((r) => setTimeout(r, 60_000))'], {
      timeoutMs: 2_000,
    }),
    /^Error: deno eval .* did not end within 2000 ms: killed it and its children; it printed:\nstarted\n/s,
  );
  assert.ok(Date.now() - started < 20_000, 'not after the sleep');
});
