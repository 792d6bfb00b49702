/**
 * The Node entries' source rewriting and dependency list (tools/_npm_node.ts): specifiers
 * become what Node resolves, comments stay as written, and the dependencies are the exact
 * versions deno.lock pins for what the entries import. (tests/e2e/node_client_test.ts
 * builds, installs and runs the package.) The package ships `cli/` and what it needs, not
 * `tools/`.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { NODE_ENTRIES, nodeDependencies, nodeSource } from '../../../tools/_npm_node.ts';
import { lockedSpecifiers } from '../../../cli/_kit.ts';
import { KIT_ROOT } from '../../../cli/_project.ts';
import { cliFiles } from '../../../tools/build_npm.ts';

const packages = new Map([
  ['postgres', { name: 'postgres', path: '' }],
  ['otel', { name: '@opentelemetry/api', path: '' }],
  ['std/', { name: '@std/path', path: '/posix' }],
]);

Deno.test('nodeSource rewrites relative .ts imports to .js and bare and npm: ones to package names', () => {
  const source = `/**
 * @example
 * \`\`\`ts
 * import { Flow } from './flow.ts';
 * \`\`\`
 */
import postgres from 'postgres';
import type { Span } from 'otel';
import { a, type B } from '../dsl/a.ts';
export * from "./b.ts";
export type * from './c.ts';
export { d } from 'npm:@scope/pkg@1.2.3/sub';
import { readFile } from 'node:fs/promises';
// import { e } from './e.ts';
type T = typeof import('./f.ts');
const g = () => import('./g.ts');
const text = "from './h.ts'";
`;
  assert.equal(
    nodeSource('sql/x.ts', source, packages),
    `/**
 * @example
 * \`\`\`ts
 * import { Flow } from './flow.ts';
 * \`\`\`
 */
import postgres from 'postgres';
import type { Span } from '@opentelemetry/api';
import { a, type B } from '../dsl/a.js';
export * from "./b.js";
export type * from './c.js';
export { d } from '@scope/pkg/sub';
import { readFile } from 'node:fs/promises';
// import { e } from './e.ts';
type T = typeof import('./f.js');
const g = () => import('./g.js');
const text = "from './h.ts'";
`,
  );
});

Deno.test('nodeSource refuses what Node cannot resolve, naming the file and the specifier', () => {
  assert.throws(
    () => nodeSource('dsl/x.ts', "import { y } from 'jsr:@std/assert';\n", packages),
    /lib\/dsl\/x\.ts imports "jsr:@std\/assert", which the Node build cannot resolve/,
  );
  assert.throws(
    () => nodeSource('dsl/x.ts', "import { y } from 'switchyard';\n", packages),
    /lib\/dsl\/x\.ts imports "switchyard", which the Node build cannot resolve/,
  );
  assert.throws(
    () => nodeSource('x.ts', "import { y } from './browser.js';\n", packages),
    /lib\/x\.ts imports "\.\/browser\.js": the Node build compiles \.ts modules only/,
  );
});

Deno.test('the Node entries depend on the npm packages they import, at the versions deno.lock pins', async () => {
  assert.deepEqual(Object.keys(NODE_ENTRIES), ['.', './client', './errors', './testing']);
  // A lock's version may carry its peers after `_` (`0.2.17_@electric-sql+pglite@0.5.14`).
  const locked = Object.fromEntries(
    Object.entries(await lockedSpecifiers(join(KIT_ROOT, 'deno.lock'))).map((
      [k, v],
    ) => [k, v.split('_')[0]]),
  );
  assert.deepEqual(await nodeDependencies(), {
    // The test engine's embedded database and its loopback server.
    '@electric-sql/pglite': locked['npm:@electric-sql/pglite@0'],
    '@electric-sql/pglite-socket': locked['npm:@electric-sql/pglite-socket@0'],
    '@opentelemetry/api': locked['npm:@opentelemetry/api@1'],
    // A handler's ctx.supabase, which the test engine's handlers get as a worker's do.
    '@supabase/supabase-js': locked['npm:@supabase/supabase-js@2'],
    postgres: locked['npm:postgres@3'],
  });
});

Deno.test("the package's kit/ is cli/ and what it imports or reads, never the maintainers' tools", async () => {
  const files = await cliFiles();
  for (const shipped of ['cli/cli.ts', 'cli/install.ts', 'cli/templates', 'lib', 'deno.json']) {
    assert.ok(files.includes(shipped), `kit/ holds ${shipped}`);
  }
  assert.deepEqual(files.filter((f) => /^(tools|bench|tests|scripts)\//.test(f)), []);
});
