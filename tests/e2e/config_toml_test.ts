/**
 * The scaffold's edits of `supabase/config.toml` (`cli/_functions_config.ts`) keep the rest of
 * the file byte for byte, in the files the real Supabase CLI writes: `supabase init` of CLI 2 (the
 * kit's pinned one) and of CLI 3 (tests/_helpers/project.ts, `SUPABASE_CLIS`). Adding a queue function's section, rewriting it and adding a
 * second leaves every other byte where it was, and the sections read back as written.
 */
import assert from 'node:assert/strict';
import {
  functionSection,
  readFunctionConfigs,
  setFunctionSection,
} from '../../cli/_functions_config.ts';
import { SUPABASE_CLIS, supabaseInit } from '../_helpers/project.ts';

const section = (name: string, note = '') =>
  `[functions.${name}]\nenabled = true\nverify_jwt = false${note}\n` +
  `import_map = "./functions/${name}/deno.json"\nentrypoint = "./functions/${name}/index.ts"`;

for (const cli of SUPABASE_CLIS) {
  Deno.test(`config.toml of supabase init (${cli.name}) round-trips byte for byte except the kit's sections`, async () => {
    const dir = await supabaseInit('switchyard-config-toml-', cli);
    try {
      const original = await Deno.readTextFile(`${dir}/supabase/config.toml`);
      assert.ok(original.length > 5_000, 'a whole config.toml');
      assert.deepEqual(readFunctionConfigs(original), [], 'supabase init writes no function');

      const one = setFunctionSection(original, 'greetings-worker', section('greetings-worker'));
      // Appended after the file, which is kept as it was up to its last non-blank byte.
      const kept = original.replace(/\n*$/, '');
      assert.equal(one.slice(0, kept.length), kept);
      assert.equal(functionSection(one, 'greetings-worker'), section('greetings-worker'));
      const two = setFunctionSection(one, 'alerts-worker', section('alerts-worker'));
      assert.equal(two.slice(0, one.replace(/\n*$/, '').length), one.replace(/\n*$/, ''));
      // A rewrite of the first section in the middle of the file changes that section only.
      const rewritten = setFunctionSection(
        two,
        'greetings-worker',
        section('greetings-worker', ' # checks its own bearer'),
      );
      assert.equal(
        rewritten.replace(section('greetings-worker', ' # checks its own bearer'), '<kit>'),
        two.replace(section('greetings-worker'), '<kit>'),
      );
      assert.deepEqual(readFunctionConfigs(rewritten).map((c) => [c.name, c.verifyJwt]), [
        ['greetings-worker', false],
        ['alerts-worker', false],
      ]);
      assert.equal(
        setFunctionSection(rewritten, 'alerts-worker', section('alerts-worker')),
        rewritten,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
