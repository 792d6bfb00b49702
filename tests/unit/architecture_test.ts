/**
 * The layout's rules (docs/design/code-layout.md), checked on the module graph that
 * `deno info --json` reports (type-only imports included): no import circles among the kit's modules; the DSL imports
 * nothing of the database, worker or platform layers; only `lib/sql/` imports postgres.js or
 * sends SQL; `lib/mod.ts` (what a queue function loads) reaches no development tooling; `lib/`
 * imports neither `cli/` (what users run) nor `tools/` (what maintainers run), and `cli/` imports
 * nothing of `tools/`.
 */
import assert from 'node:assert/strict';
import { deno } from '../_helpers/process.ts';

const root = new URL('../../', import.meta.url);
const libDir = decodeURIComponent(new URL('lib/', root).pathname);

interface Info {
  modules: {
    specifier: string;
    dependencies?: { code?: { specifier: string }; type?: { specifier: string } }[];
  }[];
}

async function graph(entry: string): Promise<Map<string, string[]>> {
  const out = await deno(['info', '--json', entry], { cwd: decodeURIComponent(root.pathname) });
  assert.equal(out.code, 0, out.stderr);
  const info: Info = JSON.parse(out.stdout);
  const edges = new Map<string, string[]>();
  for (const m of info.modules) {
    if (!m.specifier.startsWith('file://')) continue;
    const from = decodeURIComponent(new URL(m.specifier).pathname);
    edges.set(
      from,
      (m.dependencies ?? [])
        .flatMap((d) => [d.code?.specifier, d.type?.specifier])
        .filter((s): s is string => typeof s === 'string')
        .map((s) => (s.startsWith('file://') ? decodeURIComponent(new URL(s).pathname) : s)),
    );
  }
  return edges;
}

const rel = (path: string) => path.startsWith(libDir) ? `lib/${path.slice(libDir.length)}` : path;

for (
  const entry of [
    'lib/mod.ts',
    'lib/ops.ts',
    'lib/client.ts',
    'lib/flows.ts',
    'lib/errors.ts',
    'lib/testing.ts',
  ]
) {
  Deno.test(`${entry}: the kit's modules import each other without a circle`, async () => {
    const edges = await graph(entry);
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (node: string, path: string[]) => {
      if (state.get(node) === 'done') return;
      if (state.get(node) === 'open') {
        cycles.push([...path.slice(path.indexOf(node)), node].map(rel).join(' -> '));
        return;
      }
      state.set(node, 'open');
      for (const next of edges.get(node) ?? []) {
        if (next.startsWith(libDir)) visit(next, [...path, node]);
      }
      state.set(node, 'done');
    };
    for (const node of edges.keys()) if (node.startsWith(libDir)) visit(node, []);
    assert.deepEqual(cycles, []);
  });
}

Deno.test('the layers import only downwards: dsl nothing of sql/worker/platform, sql no worker/platform', async () => {
  const edges = await graph('lib/ops.ts');
  for (const [from, deps] of await graph('lib/mod.ts')) edges.set(from, deps);
  for (const [from, deps] of await graph('lib/client.ts')) edges.set(from, deps);
  for (const [from, deps] of await graph('lib/testing.ts')) edges.set(from, deps);
  const forbidden: Record<string, string[]> = {
    'lib/dsl/': ['lib/sql/', 'lib/worker/', 'lib/platform/', 'lib/ops/', 'lib/testing/', 'npm:'],
    'lib/sql/': ['lib/worker/', 'lib/platform/', 'lib/ops/', 'lib/testing/'],
    'lib/worker/': ['lib/platform/', 'lib/ops/', 'lib/testing/'],
    'lib/platform/': ['lib/testing/'],
    'lib/testing/': ['lib/platform/', 'lib/ops/'],
  };
  const broken: string[] = [];
  for (const [from, deps] of edges) {
    const layer = Object.keys(forbidden).find((l) => rel(from).startsWith(l));
    if (!layer) continue;
    for (const dep of deps) {
      if (forbidden[layer].some((f) => rel(dep).startsWith(f))) {
        broken.push(`${rel(from)} -> ${rel(dep)}`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

Deno.test('only lib/sql/ imports postgres.js or writes SQL', async () => {
  const offenders: string[] = [];
  for await (const path of walk(libDir)) {
    if (path.startsWith(`${libDir}sql/`)) continue;
    const text = await Deno.readTextFile(path);
    // Code, not documentation: drop comment lines before looking.
    const code = text.split('\n').filter((l) => !/^\s*(\*|\/\/|\/\*)/.test(l)).join('\n');
    if (/from 'postgres'|npm:postgres|\bsql`|\.unsafe\(/.test(code)) offenders.push(rel(path));
  }
  assert.deepEqual(offenders, []);
});

Deno.test('lib/ imports neither cli/ nor tools/, and cli/ imports nothing of tools/', async () => {
  // What users run (cli/) may import the kit; what maintainers run (tools/) may import both; the
  // kit imports neither. Every import counts, those of the @example blocks too (deno check --doc
  // type-checks them), static or dynamic.
  const rules: [string, string[]][] = [['lib/', ['cli/', 'tools/']], ['cli/', ['tools/']]];
  const broken: string[] = [];
  for (const [folder, forbidden] of rules) {
    const dir = decodeURIComponent(new URL(folder, root).pathname);
    for await (const path of walk(dir)) {
      const text = await Deno.readTextFile(path);
      for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'(\.\.?\/[^']*)'/g)) {
        const target = new URL(m[1], `file://${path}`).pathname;
        const to = decodeURIComponent(target).slice(decodeURIComponent(root.pathname).length);
        if (forbidden.some((f) => to.startsWith(f))) {
          broken.push(`${folder}${path.slice(dir.length)} -> ${to}`);
        }
      }
    }
  }
  assert.deepEqual(broken, []);
});

/** Where the tests may start a process themselves: the one subprocess helper. */
const PROCESS_HELPER = 'tests/_helpers/process.ts';

/**
 * The lines of `text` that start a process directly (`Deno.Command`, `node:child_process`), in
 * code: comment lines and the text of template literals (a script a test hands to a child Deno)
 * do not count.
 */
function directSpawns(text: string): string[] {
  const code = text.replace(/`(?:\\[\s\S]|[^`\\])*`/g, '``').split('\n')
    .filter((l) => !/^\s*(\*|\/\/|\/\*)/.test(l));
  return code.filter((l) => /\bDeno\.Command\b|node:child_process/.test(l)).map((l) => l.trim());
}

Deno.test(`tests/ start processes only through ${PROCESS_HELPER} (runCommand, deno, Spawned)`, async () => {
  // One helper bounds every command's time, captures its output without blocking on a full pipe
  // and stops whole process trees; a test that spawns directly gets none of that.
  const testsDir = decodeURIComponent(new URL('tests/', root).pathname);
  const offenders: string[] = [];
  for await (const path of walk(testsDir)) {
    const name = `tests/${path.slice(testsDir.length)}`;
    // The helper itself, and this file, which names what it looks for.
    if (name === PROCESS_HELPER || name === 'tests/unit/architecture_test.ts') continue;
    for (const line of directSpawns(await Deno.readTextFile(path))) {
      offenders.push(`${name}: ${line}`);
    }
  }
  assert.deepEqual(offenders, []);
  // The check itself finds a direct use, and passes over a child's script and a comment.
  assert.deepEqual(directSpawns("const out = await new Deno.Command('git', {});"), [
    "const out = await new Deno.Command('git', {});",
  ]);
  assert.deepEqual(
    directSpawns('// new Deno.Command\nconst script = `new Deno.Command(\\`x\\`)`;'),
    [],
  );
});

for (const entry of ['lib/mod.ts', 'lib/client.ts']) {
  Deno.test(`${entry} reaches no development tooling (migrate, the Supabase CLI, the test engine)`, async () => {
    const reached = [...(await graph(entry)).keys()].map(rel);
    assert.deepEqual(
      reached.filter((p) =>
        /lib\/sql\/migrate\.ts|npm:supabase|lib\/testing|lib\/sql\/(core_build|testing_queries)\.ts|pglite/
          .test(p)
      ),
      [],
    );
  });
}

Deno.test('lib/client.ts reaches no worker or platform code', async () => {
  const reached = [...(await graph('lib/client.ts')).keys()].map(rel);
  assert.deepEqual(reached.filter((p) => /^lib\/(worker|platform)\//.test(p)), []);
});

Deno.test('lib/flows.ts reaches the DSL and the error classes only: no database, worker, platform or npm code', async () => {
  const reached = [...(await graph('lib/flows.ts')).keys()].map(rel);
  const allowed =
    /^lib\/(flows|errors|_describe_value)\.ts$|^lib\/dsl\/|^lib\/sql\/fence_status\.ts$/;
  assert.deepEqual(reached.filter((p) => !allowed.test(p)), []);
});

Deno.test('lib/errors.ts, the errors entry, reaches nothing but its value helper and a type', async () => {
  const reached = [...(await graph('lib/errors.ts')).keys()].map(rel).sort();
  assert.deepEqual(reached, ['lib/_describe_value.ts', 'lib/errors.ts', 'lib/sql/fence_status.ts']);
});

for (const entry of ['lib/flows.ts', 'lib/client.ts', 'lib/errors.ts', 'lib/testing.ts']) {
  Deno.test(`${entry}, an entry of the npm package for Node, names no Deno global in its code`, async () => {
    const offenders: string[] = [];
    for (const path of (await graph(entry)).keys()) {
      if (!path.startsWith(libDir)) continue;
      const text = await Deno.readTextFile(path);
      // Code, not documentation (examples may use Deno.env): drop comment lines. A global read
      // through globalThis, where the runtime has it, is fine (`runtime.Deno`).
      const code = text.split('\n').filter((l) => !/^\s*(\*|\/\/|\/\*)/.test(l));
      code.forEach((line) => {
        if (/(?<![\w.])(Deno\.|EdgeRuntime\b)/.test(line)) {
          offenders.push(`${rel(path)}: ${line.trim()}`);
        }
      });
    }
    assert.deepEqual(offenders, []);
  });
}

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}${entry.name}`;
    if (entry.isDirectory) yield* walk(`${path}/`);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}
