/**
 * The Deno a compiled `switchyard` spawns (lib/sql/deno_executable.ts,
 * docs/design/local-runs.md#the-switchyard-command): SWITCHYARD_DENO or `deno` on PATH, a Deno 2
 * checked by its version, else an error naming
 * the step and the way out. Each case runs in a child process with its own environment.
 */
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { KIT_ROOT } from '../../../cli/_project.ts';
import { deno } from '../../_helpers/process.ts';

const MODULE = join(KIT_ROOT, 'lib', 'sql', 'deno_executable.ts');

async function find(env: Record<string, string>) {
  const code = `import { isCompiled, separateDeno } from ${JSON.stringify(MODULE)};
console.log(JSON.stringify({ compiled: isCompiled() }));
try { console.log(JSON.stringify({ deno: await separateDeno('the registry probe') })); }
catch (e) { console.log(JSON.stringify({ error: e.message })); }`;
  const out = await deno(['eval', '--no-lock', code], {
    env: { NO_COLOR: '1', ...env },
    clearEnv: true,
  });
  const lines = out.stdout.trim().split('\n');
  assert.equal(out.code, 0, out.stderr);
  return { compiled: JSON.parse(lines[0]).compiled, ...JSON.parse(lines[1]) };
}

Deno.test('separateDeno: SWITCHYARD_DENO, else deno on PATH; anything else is named', async () => {
  const here = Deno.execPath();
  const dir = await Deno.makeTempDir({ prefix: 'sy-deno-exec-' });
  try {
    assert.deepEqual(await find({ SWITCHYARD_DENO: here }), { compiled: false, deno: here });
    // `deno` on PATH: a directory holding this Deno under that name.
    await Deno.symlink(here, join(dir, 'deno'));
    assert.deepEqual(await find({ PATH: `${dir}:/usr/bin:/bin` }), {
      compiled: false,
      deno: 'deno',
    });

    const none = await find({ PATH: '/usr/bin:/bin' });
    assert.match(
      none.error,
      /^no Deno 2 found \(`deno` on PATH: not found\): the compiled switchyard command runs the registry probe/,
    );
    assert.match(none.error, /set SWITCHYARD_DENO to its path/);
    const missing = await find({ SWITCHYARD_DENO: join(dir, 'nope'), PATH: dirname(here) });
    assert.match(missing.error, /SWITCHYARD_DENO=.*nope: not found/);
    const impostor = join(dir, 'impostor');
    await Deno.writeTextFile(impostor, '#!/bin/sh\necho "node v22.0.0"\n', { mode: 0o755 });
    const notDeno = await find({ SWITCHYARD_DENO: impostor });
    assert.match(notDeno.error, /SWITCHYARD_DENO=.*impostor: it says "node v22\.0\.0"\)/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
