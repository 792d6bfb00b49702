/**
 * Every `ts` block of the user docs (README.md and docs/guide/*.md) type-checks against the kit,
 * as a reader's project would: each block is a file in a scratch project whose import map
 * resolves `switchyard`, `switchyard/client`, `switchyard/client.ts`, `switchyard/testing`, … to
 * this checkout's `lib/` (as the kit's own import_map.json does, and as the installer's does to
 * the installed runtime), and one `deno check` reads them all.
 *
 * A block is written where the paragraph before it says (its last `….ts` or `….mts`, as
 * tests/e2e/_readme.ts does), so `./supabase/functions/_shared/registry.ts` and `../registry.ts`
 * resolve to the README's own registry; any other block is a file of its own at the project's
 * root. A block that is deliberately a fragment says so with `<!-- fragment: why -->` right
 * before its fence (tests/_helpers/docs.ts) and is not checked; an unmarked block that does not
 * type-check fails this test, named by its doc and line.
 *
 * @module
 */
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { allDocBlocks, type DocBlock, docBlocks, KIT } from '../_helpers/docs.ts';
import { deno } from '../_helpers/process.ts';

/** The kit's import map with its paths made absolute, for a project outside the checkout. */
function importMap(): Record<string, string> {
  const { imports } = JSON.parse(Deno.readTextFileSync(join(KIT, 'import_map.json'))) as {
    imports: Record<string, string>;
  };
  return Object.fromEntries(
    Object.entries(imports).map((
      [name, target],
    ) => [
      name,
      target.startsWith('./') ? join(KIT, target) + (target.endsWith('/') ? '/' : '') : target,
    ]),
  );
}

/** A type error of `deno check`, placed in its doc. */
interface Problem {
  where: string;
  message: string;
}

/**
 * Writes the `ts` blocks of `blocks` (fragments aside) into a scratch project and type-checks
 * them with one `deno check`; the problems found, each placed at its doc's file and line.
 */
async function checkBlocks(blocks: DocBlock[]): Promise<{ checked: number; problems: Problem[] }> {
  const dir = await Deno.makeTempDir({ prefix: 'switchyard-docs-examples-' });
  try {
    await Deno.writeTextFile(
      join(dir, 'deno.json'),
      JSON.stringify({ imports: importMap(), nodeModulesDir: 'none', lock: false }, null, 2),
    );
    // Each file's origin: the doc and the line of its first body line.
    const origin = new Map<string, { file: string; first: number }>();
    for (const b of blocks) {
      if (b.lang !== 'ts' || b.fragment !== null) continue;
      const named = [...b.lead.matchAll(/`([\w./-]+\.m?ts)`/g)].map((m) => m[1]).at(-1);
      const fallback = `${b.file.replace(/[^\w]+/g, '_')}_L${b.line}.ts`;
      const path = named && !named.startsWith('/') && !named.includes('..') &&
          !origin.has(join(dir, named))
        ? join(dir, named)
        : join(dir, fallback);
      await Deno.mkdir(dirname(path), { recursive: true });
      await Deno.writeTextFile(path, b.body + '\n');
      origin.set(path, { file: b.file, first: b.line + 1 });
    }
    if (origin.size === 0) return { checked: 0, problems: [] };
    const out = await deno(['check', '--config', join(dir, 'deno.json'), ...origin.keys()], {
      cwd: dir,
      env: { NO_COLOR: '1' },
    });
    const said = `${out.stdout}\n${out.stderr}`;
    const problems: Problem[] = [];
    // deno check prints each error, then `at file:///…/file.ts:LINE:COL`.
    const chunks = said.split(/\n(?=(?:TS\d+ \[ERROR\]|error:))/);
    for (const chunk of chunks) {
      const at = chunk.match(/at (file:\/\/\S+?):(\d+):(\d+)/);
      if (!at) continue;
      const path = decodeURIComponent(new URL(at[1]).pathname);
      const from = origin.get(path);
      const where = from
        ? `${from.file}:${from.first + Number(at[2]) - 1}`
        : `${path}:${at[2]} (outside the docs' blocks)`;
      problems.push({ where, message: chunk.split('\n')[0].trim() });
    }
    if (out.code !== 0 && problems.length === 0) {
      problems.push({ where: '(deno check)', message: said.trim() });
    }
    return { checked: origin.size, problems };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test('every unmarked ts block of README.md and docs/guide/*.md type-checks against the kit', async () => {
  const blocks = allDocBlocks();
  const ts = blocks.filter((b) => b.lang === 'ts');
  const fragments = ts.filter((b) => b.fragment !== null);
  // The README's first flow and its test are among them (the check reads the docs at all).
  assert.ok(
    ts.some((b) => b.file === 'README.md' && b.body.includes('defineDeployedFlow')),
    'the README has its first flow',
  );
  // Fragments are rare: a marked block says why, and most blocks are whole.
  for (const f of fragments) assert.ok(f.fragment!.trim().length > 3, `${f.file}:${f.line}`);
  assert.ok(fragments.length * 5 <= ts.length, `${fragments.length} of ${ts.length} blocks marked`);
  const { checked, problems } = await checkBlocks(blocks);
  assert.equal(checked, ts.length - fragments.length);
  assert.deepEqual(
    problems.map((p) => `${p.where}: ${p.message}`),
    [],
    'these doc examples do not type-check',
  );
});

Deno.test('an unmarked block that does not type-check is named by file and line; a marked one is skipped', async () => {
  const doc = [
    '# A page',
    '',
    'A flow, as `flows/ok.ts`:',
    '',
    '```ts',
    "import { Flow } from 'switchyard';",
    "export const ok = new Flow<{ n: number }>({ slug: 'okV1' }).step({ slug: 's' }, (i) => i.n);",
    '```',
    '',
    'A mistake:',
    '',
    '```ts',
    "import { ok } from './flows/ok.ts';",
    'const n: number = ok.slug;',
    '```',
    '',
    '<!-- fragment: continues the flow above -->',
    '',
    '```ts',
    '.step({ slug: "t" }, () => 1)',
    '```',
  ].join('\n');
  const blocks = docBlocks('docs/guide/made_up.md', doc);
  assert.deepEqual(blocks.map((b) => [b.line, b.fragment]), [
    [5, null],
    [12, null],
    [19, 'continues the flow above'],
  ]);
  const { checked, problems } = await checkBlocks(blocks);
  assert.equal(checked, 2);
  assert.equal(problems.length, 1, JSON.stringify(problems));
  assert.equal(problems[0].where, 'docs/guide/made_up.md:14');
  assert.match(problems[0].message, /TS2322/);
});
