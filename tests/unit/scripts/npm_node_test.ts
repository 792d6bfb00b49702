/**
 * The Node entries' source rewriting and dependency list (scripts/_npm_node.ts): specifiers
 * become what Node resolves, comments stay as written, and the dependencies are the exact
 * versions deno.lock pins for what the entries import. (tests/scripts/node_client_test.ts
 * builds, installs and runs the package.)
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { NODE_ENTRIES, nodeDependencies, nodeSource } from '../../../scripts/_npm_node.ts';
import { lockedSpecifiers } from '../../../scripts/_kit.ts';
import { KIT_ROOT } from '../../../scripts/_project.ts';

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
  assert.deepEqual(Object.keys(NODE_ENTRIES), ['.', './client', './errors']);
  const locked = await lockedSpecifiers(join(KIT_ROOT, 'deno.lock'));
  assert.deepEqual(await nodeDependencies(), {
    '@opentelemetry/api': locked['npm:@opentelemetry/api@1'],
    postgres: locked['npm:postgres@3'],
  });
});
