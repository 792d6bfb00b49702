/**
 * The public API against its committed snapshot (docs/api.json, written by `deno task api`;
 * docs/design/code-layout.md, "The public API by audience"): every entry's names and kinds as
 * `deno doc --json` reports them now, and the targets (the main entry under 110 names, no name
 * in two entries but the allowed ones, the `errors` namespace exactly `./errors`). Runs the deno
 * binary (`deno doc`), no database.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import {
  API_SNAPSHOT,
  apiDifferences,
  apiProblems,
  type ApiSnapshot,
  currentApi,
  MAIN_ENTRY_LIMIT,
  SHARED_NAMES,
  snapshotText,
} from '../../tools/api.ts';
import { KIT_ROOT } from '../../cli/_project.ts';

const committed = JSON.parse(
  await Deno.readTextFile(join(KIT_ROOT, API_SNAPSHOT)),
) as ApiSnapshot;
const now = await currentApi();

Deno.test('the API is its committed snapshot (docs/api.json)', () => {
  const differences = apiDifferences(committed, now);
  assert.deepEqual(
    differences,
    [],
    `the public API differs from ${API_SNAPSHOT}:\n  ${differences.join('\n  ')}\n` +
      'if that is meant, run `deno task api` and commit docs/api.json with the change',
  );
  assert.equal(
    snapshotText(committed),
    snapshotText(now),
    `${API_SNAPSHOT} is not as \`deno task api\` writes it`,
  );
});

Deno.test('the API meets its targets: a small main entry, each name in one entry', () => {
  assert.deepEqual(apiProblems(now), []);
  assert.ok(Object.keys(now.entries['.'].names).length < MAIN_ENTRY_LIMIT);
  assert.deepEqual(
    now.entries['.'].namespaces?.errors,
    Object.keys(now.entries['./errors'].names),
    'the errors namespace of . is ./errors',
  );
});

Deno.test('.ci/run lints the docs of every entry in one deno doc run', async () => {
  const ci = await Deno.readTextFile(join(KIT_ROOT, '.ci/run'));
  const line = ci.split('\n').find((l) => / doc --lint /.test(l));
  assert.ok(line, '.ci/run runs deno doc --lint');
  const linted = new Set(line.split(/\s+/).filter((w) => w.startsWith('lib/')));
  const entries = Object.values(now.entries).map((e) => e.module);
  assert.deepEqual(entries.filter((m) => !linted.has(m)), [], 'entries .ci/run does not lint');
  assert.deepEqual([...linted].filter((m) => !entries.includes(m)), [], 'linted, not an entry');
});

Deno.test('the check names what differs and what misses a target', () => {
  const entry = (module: string, names: Record<string, string>) => ({ module, names });
  const was: ApiSnapshot = {
    note: '',
    entries: { '.': entry('lib/mod.ts', { Flow: 'class', gone: 'function' }) },
  };
  const changed: ApiSnapshot = {
    note: '',
    entries: {
      '.': entry('lib/mod.ts', { Flow: 'interface', added: 'function' }),
      './more': entry('lib/more.ts', { Flow: 'class' }),
    },
  };
  assert.deepEqual(apiDifferences(was, changed), [
    '. Flow is now interface (was class)',
    '. adds added (function)',
    '. removes gone',
    'entry ./more (lib/more.ts) is new',
  ]);
  assert.deepEqual(apiDifferences(was, was), []);
  const big: Record<string, string> = {};
  for (let i = 0; i < MAIN_ENTRY_LIMIT; i++) big[`n${i}`] = 'function';
  const problems = apiProblems({
    note: '',
    entries: { '.': entry('lib/mod.ts', big), './more': entry('lib/more.ts', { n1: 'function' }) },
  });
  assert.equal(problems.length, 2);
  assert.match(problems[0], /main entry exports 110 names: keep it under 110/);
  assert.match(problems[1], /^n1 is exported by two entries \(\., \.\/more\)/);
  // An allowed name is allowed only between the entries it is allowed in.
  const [name, { entries }] = Object.entries(SHARED_NAMES)[0];
  const shared = (paths: string[]) =>
    apiProblems({
      note: '',
      entries: Object.fromEntries(paths.map((p) => [p, entry(`lib${p}.ts`, { [name]: 'class' })])),
    });
  assert.deepEqual(shared(entries), []);
  assert.equal(shared(['.', './client']).length, 1);
});
