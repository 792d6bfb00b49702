/**
 * The Node entries of the npm package (`deno task build-npm`, docs/design/code-layout.md): the
 * flow DSL (`lib/flows.ts`, the package's `switchyard`), the typed client (`lib/client.ts`,
 * `switchyard/client`) and the error classes (`lib/errors.ts`, `switchyard/errors`), compiled
 * with their module graph into one tree of ES modules with declaration files under `node/`. The
 * entries share that tree, so a registry's `Flow` types from `switchyard` and the client's from
 * `switchyard/client` are the same declarations (a `Flow` has private fields: two copies would
 * not match) and an error class is the same class through every entry (`errors.RunFailedError`
 * of `switchyard` is `RunFailedError` of `switchyard/errors`).
 *
 * How: every local module of the two graphs (`deno info`, as the CLI's file list) is copied
 * into a scratch folder with its import specifiers rewritten for Node (`./flow.ts` →
 * `./flow.js`; a bare or `npm:` specifier → the npm package's name, `npm:postgres@3` →
 * `postgres`), the npm packages they import are installed there at the versions deno.lock pins
 * (their types are part of the check), and TypeScript (the compiler API, at the version
 * import_map.json pins, the one Deno's checker is) type-checks the copy and emits ES2022
 * JavaScript and `.d.ts` files. A type error stops the build with TypeScript's words, naming
 * the `lib/` file and line.
 *
 * @module
 */
import ts from 'typescript';
import { dirname, join, relative } from 'node:path';
import { lockedSpecifiers, moduleGraph, pinned } from '../cli/_kit.ts';
import { KIT_ROOT } from '../cli/_project.ts';

/**
 * The package's Node entries: each export path and the `lib/` module behind it. Its compiled
 * files are `node/<name>.js` and `node/<name>.d.ts`.
 *
 * @example
 * ```ts
 * import { NODE_ENTRIES } from './_npm_node.ts';
 * console.assert(NODE_ENTRIES['./client'] === 'client.ts');
 * ```
 */
export const NODE_ENTRIES: Readonly<Record<string, string>> = {
  '.': 'flows.ts',
  './client': 'client.ts',
  './errors': 'errors.ts',
  './testing': 'testing.ts',
};

/**
 * The Node types the build checks `node:` imports against (the test engine's loopback server,
 * `node:net`): Node 20's, the package's `engines`. Only the build installs them; the compiled
 * declarations name none of them (the build refuses a declaration file that does).
 */
const NODE_TYPES = '@types/node@20.19.43';

/** The folder of the package the entries are compiled into. */
const NODE_DIR = 'node';

/**
 * The modules behind the Node entries: their paths relative to `lib/`, and the npm package
 * (name and the exact version deno.lock pins) behind each bare specifier they import.
 */
interface NodeGraph {
  files: string[];
  packages: Map<string, { name: string; version: string; path: string }>;
  /** Whether a module imports a Node built-in (`node:net`): the build then checks Node's types. */
  nodeBuiltins: boolean;
}

const NPM_TARGET = /^npm:(@?[^@/]+(?:\/[^@/]+)?)@(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)(\/.*)?$/;

/** What import_map.json maps a bare specifier to (an exact key, else the longest prefix key). */
function mapped(specifier: string, imports: Record<string, string>): string | undefined {
  if (imports[specifier] !== undefined) return imports[specifier];
  const prefix = Object.keys(imports)
    .filter((key) => key.endsWith('/') && specifier.startsWith(key))
    .sort((a, b) => b.length - a.length)[0];
  return prefix === undefined ? undefined : imports[prefix] + specifier.slice(prefix.length);
}

async function nodeGraph(): Promise<NodeGraph> {
  const lib = join(KIT_ROOT, 'lib');
  const { imports } = JSON.parse(await Deno.readTextFile(join(KIT_ROOT, 'import_map.json'))) as {
    imports: Record<string, string>;
  };
  const locked = await lockedSpecifiers(join(KIT_ROOT, 'deno.lock'));
  const files = new Set<string>();
  const packages: NodeGraph['packages'] = new Map();
  for (const entry of Object.values(NODE_ENTRIES)) {
    const graph = await moduleGraph(join(lib, entry), { config: join(KIT_ROOT, 'deno.json') });
    for (const module of graph) {
      if (module.local === null) continue;
      const path = relative(lib, module.local).replaceAll('\\', '/');
      if (path.startsWith('..')) {
        throw new Error(
          `lib/${entry} loads ${module.local}, outside lib/: the Node build takes lib/ only`,
        );
      }
      files.add(path);
      for (const specifier of module.bare) {
        const target = mapped(specifier, imports);
        const match = target === undefined ? null : NPM_TARGET.exec(pinned(target, locked));
        if (!match) {
          throw new Error(
            `lib/${path} imports "${specifier}", which import_map.json maps to ` +
              `${target === undefined ? 'nothing' : `"${target}"`}: the Node entries can import ` +
              'only npm packages whose version deno.lock pins (run `deno task check` to lock one)',
          );
        }
        packages.set(specifier, { name: match[1], version: match[2], path: match[3] ?? '' });
      }
    }
  }
  let nodeBuiltins = false;
  for (const path of files) {
    const text = await Deno.readTextFile(join(lib, path));
    if (/^import [^;]*? from 'node:/m.test(text)) nodeBuiltins = true;
  }
  return { files: [...files].sort(), packages, nodeBuiltins };
}

/**
 * The npm packages the compiled Node entries import, with the exact versions deno.lock pins for
 * import_map.json's ranges (`postgres` → `3.4.9`): the package's `dependencies` beside `deno`.
 *
 * @example
 * ```ts
 * import { nodeDependencies } from './_npm_node.ts';
 * console.log(await nodeDependencies()); // { "@opentelemetry/api": "1.9.1", postgres: "3.4.9" }
 * ```
 */
export async function nodeDependencies(): Promise<Record<string, string>> {
  const { packages } = await nodeGraph();
  const out: Record<string, string> = {};
  for (const { name, version } of [...packages.values()].sort((a, b) => a.name < b.name ? -1 : 1)) {
    if (out[name] !== undefined && out[name] !== version) {
      throw new Error(
        `the Node entries import ${name} at two versions: ${out[name]} and ${version}`,
      );
    }
    out[name] = version;
  }
  return out;
}

/**
 * `source` (the text of `lib/<path>`) with its module specifiers rewritten for Node: a relative
 * `.ts` import becomes `.js`, a bare one the npm package's name (with its sub-path), `node:`
 * stays. Only real specifiers are touched (found with TypeScript's parser: imports, exports,
 * `import()` calls and `import('…')` types), never text in comments.
 *
 * @throws {Error} for a specifier the Node build cannot resolve (naming it and the file)
 * @example
 * ```ts
 * import { nodeSource } from './_npm_node.ts';
 * const text = nodeSource('x.ts', "import { a } from './a.ts';\n", new Map());
 * console.assert(text === "import { a } from './a.js';\n");
 * ```
 */
export function nodeSource(
  path: string,
  source: string,
  packages: ReadonlyMap<string, { name: string; path: string }>,
): string {
  const file = ts.createSourceFile(path, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const literals: ts.StringLiteralLike[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier !== undefined && ts.isStringLiteralLike(node.moduleSpecifier)
    ) {
      literals.push(node.moduleSpecifier);
    } else if (
      ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteralLike(node.argument.literal)
    ) {
      literals.push(node.argument.literal);
    } else if (
      ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments.length > 0 && ts.isStringLiteralLike(node.arguments[0])
    ) {
      literals.push(node.arguments[0]);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  let out = '';
  let at = 0;
  for (const literal of literals.sort((a, b) => a.getStart(file) - b.getStart(file))) {
    const start = literal.getStart(file) + 1; // inside the quotes
    out += source.slice(at, start) + nodeSpecifier(path, literal.text, packages);
    at = literal.getEnd() - 1;
  }
  return out + source.slice(at);
}

function nodeSpecifier(
  path: string,
  specifier: string,
  packages: ReadonlyMap<string, { name: string; path: string }>,
): string {
  if (specifier.startsWith('./') || specifier.startsWith('../')) {
    if (specifier.endsWith('.ts') && !specifier.endsWith('.d.ts')) {
      return `${specifier.slice(0, -'.ts'.length)}.js`;
    }
    throw new Error(
      `lib/${path} imports "${specifier}": the Node build compiles .ts modules only; import ` +
        'the .ts file',
    );
  }
  if (specifier.startsWith('node:')) return specifier;
  const inline = NPM_TARGET.exec(specifier);
  if (inline) return inline[1] + (inline[3] ?? '');
  const target = packages.get(specifier);
  if (target) return target.name + target.path;
  throw new Error(
    `lib/${path} imports "${specifier}", which the Node build cannot resolve: use a relative ` +
      '.ts import, node:, or a bare specifier of an npm package in import_map.json',
  );
}

async function run(command: string, args: string[], cwd: string): Promise<void> {
  const out = await new Deno.Command(command, {
    args,
    cwd,
    stdout: 'piped',
    stderr: 'piped',
    stdin: 'null',
  }).output();
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr).trim() ||
      new TextDecoder().decode(out.stdout).trim();
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}: ${text}`);
  }
}

/**
 * Refuses declaration files under `dir` that name a runtime's own types (`NodeJS.…`, a
 * `node:` import, a reference to Node's or Deno's types): the package's types must check in an
 * app whatever its `types` setting.
 */
async function refuseRuntimeTypes(dir: string): Promise<void> {
  const found: string[] = [];
  const walk = async (at: string) => {
    for await (const entry of Deno.readDir(at)) {
      const path = join(at, entry.name);
      if (entry.isDirectory) await walk(path);
      else if (entry.name.endsWith('.d.ts')) {
        // Outside comments only: a doc example may well import node:assert.
        const code = (await Deno.readTextFile(path)).replace(/\/\*[\s\S]*?\*\//g, '');
        const hit = /\bNodeJS\.|\bDeno\.|from ['"]node:|reference types=['"](node|deno)/.exec(code);
        if (hit) found.push(`${relative(dir, path)} (${hit[0]})`);
      }
    }
  };
  await walk(dir);
  if (found.length > 0) {
    throw new Error(
      `the Node entries' declarations name a runtime's own types: ${found.join(', ')}; keep ` +
        'them out of exported signatures',
    );
  }
}

/** TypeScript's options for the Node entries (the scratch copy is an ES module package). */
function compilerOptions(
  rootDir: string,
  outDir: string,
  nodeTypes: boolean,
): ts.CompilerOptions {
  return {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    // What Node 20 (the package's engines) has: ES2023, ES2024's well-formed strings, which the
    // JSON checks use, and Symbol.asyncDispose (`await using` a test engine). The code is written
    // against Deno's web APIs: the DOM's types are the closest match. Node's own types come in
    // only for modules that import `node:` (the test engine's loopback server), and no runtime's
    // types leak into the declarations (checked after the emit).
    lib: [
      'lib.es2023.d.ts',
      'lib.es2024.string.d.ts',
      'lib.esnext.disposable.d.ts',
      'lib.dom.d.ts',
    ],
    types: nodeTypes ? ['node'] : [],
    typeRoots: [join(rootDir, '..', 'node_modules', '@types')],
    strict: true,
    declaration: true,
    rootDir,
    outDir,
    newLine: ts.NewLineKind.LineFeed,
    noEmitOnError: true,
    skipLibCheck: true,
  };
}

/**
 * Compiles the Node entries ({@linkcode NODE_ENTRIES}) with their module graph into
 * `outDir/node/` (JavaScript and declaration files) and returns the package.json `exports` map
 * for them: `.` → `node/flows.*`, `./client` → `node/client.*`, `./errors` → `node/errors.*`. Needs `npm` (it installs the
 * imported packages, {@linkcode nodeDependencies}, into a scratch folder for their types).
 *
 * @throws {Error} when the code does not type-check for Node (TypeScript's diagnostics, by
 *   `lib/` file and line), or imports what the Node build cannot resolve
 * @example
 * ```ts
 * import { buildNodeEntries } from './_npm_node.ts';
 * const exports = await buildNodeEntries('/tmp/switchyard-npm');
 * console.log(exports['./client'].import); // ./node/client.js
 * ```
 */
export async function buildNodeEntries(
  outDir: string,
): Promise<Record<string, { types: string; import: string }>> {
  const graph = await nodeGraph();
  const dependencies = await nodeDependencies();
  const scratch = await Deno.makeTempDir({ prefix: 'switchyard-node-' });
  try {
    // Named lib/, so TypeScript's diagnostics name the files as they are in the kit.
    const src = join(scratch, 'lib');
    for (const path of graph.files) {
      const text = await Deno.readTextFile(join(KIT_ROOT, 'lib', path));
      await Deno.mkdir(dirname(join(src, path)), { recursive: true });
      await Deno.writeTextFile(join(src, path), nodeSource(path, text, graph.packages));
    }
    await Deno.writeTextFile(
      join(scratch, 'package.json'),
      JSON.stringify({ private: true, type: 'module', dependencies }, null, 2) + '\n',
    );
    const nodeTypes = graph.nodeBuiltins;
    if (Object.keys(dependencies).length > 0 || nodeTypes) {
      await run('npm', [
        'install',
        ...(nodeTypes ? [NODE_TYPES] : []),
        '--ignore-scripts',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--package-lock=false',
      ], scratch);
    }
    const out = join(outDir, NODE_DIR);
    const roots = Object.values(NODE_ENTRIES).map((entry) => join(src, entry));
    const program = ts.createProgram(roots, compilerOptions(src, out, nodeTypes));
    const emitted = program.emit();
    const diagnostics = ts.sortAndDeduplicateDiagnostics([
      ...ts.getPreEmitDiagnostics(program),
      ...emitted.diagnostics,
    ]);
    if (diagnostics.length > 0 || emitted.emitSkipped) {
      const text = ts.formatDiagnostics(diagnostics, {
        getCanonicalFileName: (name) => name,
        getCurrentDirectory: () => scratch,
        getNewLine: () => '\n',
      });
      throw new Error(`the Node entries do not compile:\n${text.trim()}`);
    }
  } finally {
    await Deno.remove(scratch, { recursive: true });
  }
  await refuseRuntimeTypes(join(outDir, NODE_DIR));
  const exports: Record<string, { types: string; import: string }> = {};
  for (const [name, entry] of Object.entries(NODE_ENTRIES)) {
    const base = `./${NODE_DIR}/${entry.slice(0, -'.ts'.length)}`;
    exports[name] = { types: `${base}.d.ts`, import: `${base}.js` };
  }
  return exports;
}
