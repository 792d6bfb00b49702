/**
 * `deno task api [--check]`: the public API's snapshot, `docs/api.json`: every entry of
 * deno.json's `exports` with each name it exports and that name's kind, as `deno doc --json`
 * reports them (docs/design/code-layout.md, "The public API by audience"). A new export, a removed
 * one or a changed kind is one line of its diff, seen in review. With `--check` it writes
 * nothing and exits 1 on any difference, naming what was added, removed or changed;
 * `tests/unit/api_test.ts` runs the same check and {@linkcode apiProblems}, the targets.
 *
 * @module
 */
import { join } from 'node:path';
import { KIT_ROOT } from '../cli/_project.ts';
import { helpOption } from '../cli/_help.ts';

/** The snapshot's path, relative to the kit. */
export const API_SNAPSHOT = 'docs/api.json';

/** The main entry (`.`, what a queue function imports) has fewer names than this. */
export const MAIN_ENTRY_LIMIT = 110;

/**
 * The names that two entries may both export, with why. Every other name is exported by one
 * entry only (the `errors` namespace of `.` is one name there: its members are `./errors`).
 */
export const SHARED_NAMES: Readonly<Record<string, { entries: string[]; reason: string }>> = {
  SwitchyardError: {
    entries: ['.', './errors'],
    reason: 'the base class RetryAfter and NonRetriable extend: `deno doc --lint` of the main ' +
      'entry alone needs it public there',
  },
  Sql: {
    entries: ['.', './client'],
    reason: 'the postgres.js connection type SqlSource names: `deno doc --lint` of the main ' +
      'entry alone needs it public there',
  },
  SqlSource: {
    entries: ['.', './ops'],
    reason: "the connection type createRunEventStream's options name: `deno doc --lint` of the " +
      'main entry alone needs it public there',
  },
  RetryAfter: {
    entries: ['.', './errors'],
    reason: "what a handler throws to retry later: in the queue function's entry by name, " +
      'and an error class like every other in ./errors',
  },
  NonRetriable: {
    entries: ['.', './errors'],
    reason: "what a handler throws to fail without retrying: in the queue function's entry " +
      'by name, and an error class like every other in ./errors',
  },
};

/**
 * One entry of the snapshot: its module and its names with their kinds (`class`, `function`,
 * `interface`, `typeAlias`, `variable`, `namespace`; two kinds joined by `+`).
 */
export interface ApiEntry {
  /** The module behind the entry, relative to the kit (deno.json's `exports`). */
  module: string;
  /** Every exported name, sorted, with its kind. */
  names: Record<string, string>;
  /** For a namespace export (`errors` of `.`), its members, sorted. */
  namespaces?: Record<string, string[]>;
}

/** The snapshot: a note on how it is made, then every entry by its export path. */
export interface ApiSnapshot {
  /** How the file is written: by `deno task api`, never by hand. */
  note: string;
  /** Every entry of deno.json's `exports`, in their order. */
  entries: Record<string, ApiEntry>;
}

interface DocSymbol {
  name: string;
  declarations: { kind: string; def?: { elements?: { name: string }[] } }[];
}

/** One entry's names and kinds as `deno doc --json` reports them. */
async function docEntry(module: string): Promise<ApiEntry> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ['doc', '--json', module],
    cwd: KIT_ROOT,
    stdout: 'piped',
    stderr: 'piped',
  }).output();
  if (!out.success) {
    throw new Error(`deno doc --json ${module} failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
  const doc = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    nodes: Record<string, { symbols?: DocSymbol[] }>;
  };
  const url = new URL(module, `file://${KIT_ROOT.endsWith('/') ? KIT_ROOT : `${KIT_ROOT}/`}`).href;
  const symbols = doc.nodes[url]?.symbols ?? [];
  if (symbols.length === 0) throw new Error(`deno doc --json ${module} reports no export`);
  const names: Record<string, string> = {};
  const namespaces: Record<string, string[]> = {};
  for (const s of [...symbols].sort((a, b) => a.name.localeCompare(b.name, 'en'))) {
    const kinds = [...new Set(s.declarations.map((d) => d.kind))]
      .filter((k) => k !== 'reference').sort();
    names[s.name] = kinds.join('+');
    const ns = s.declarations.find((d) => d.kind === 'namespace');
    if (ns) {
      namespaces[s.name] = (ns.def?.elements ?? []).map((e) => e.name)
        .sort((a, b) => a.localeCompare(b, 'en'));
    }
  }
  return Object.keys(namespaces).length > 0 ? { module, names, namespaces } : { module, names };
}

/**
 * The API as it is now: every entry of deno.json's `exports` through `deno doc --json` (one
 * process per entry).
 *
 * @example
 * ```ts
 * import { currentApi } from './api.ts';
 * const api = await currentApi();
 * console.log(Object.keys(api.entries['.'].names).length);
 * ```
 */
export async function currentApi(): Promise<ApiSnapshot> {
  const config = JSON.parse(await Deno.readTextFile(join(KIT_ROOT, 'deno.json'))) as {
    exports: Record<string, string>;
  };
  const entries: Record<string, ApiEntry> = {};
  for (const [path, module] of Object.entries(config.exports)) {
    entries[path] = await docEntry(module.replace(/^\.\//, ''));
  }
  return {
    note: `Written by \`deno task api\` (tools/api.ts) from deno doc --json: do not edit. ` +
      `tests/unit/api_test.ts fails when the API differs from it.`,
    entries,
  };
}

/** The snapshot's text: JSON as `deno fmt` leaves it (two spaces, one name a line). */
export function snapshotText(api: ApiSnapshot): string {
  return JSON.stringify(api, null, 2) + '\n';
}

/**
 * The differences between a committed snapshot and the API now, one line each: an entry added
 * or removed, a name added, removed or of another kind, a namespace's members. Empty when they
 * agree.
 *
 * @example
 * ```ts
 * import { apiDifferences } from './api.ts';
 * const entry = (names: Record<string, string>) => ({ module: 'lib/mod.ts', names });
 * const was = { note: '', entries: { '.': entry({ Flow: 'class' }) } };
 * const now = { note: '', entries: { '.': entry({ Flow: 'class', flow: 'function' }) } };
 * console.assert(apiDifferences(was, now)[0] === '. adds flow (function)');
 * ```
 */
export function apiDifferences(was: ApiSnapshot, now: ApiSnapshot): string[] {
  const out: string[] = [];
  const paths = [...new Set([...Object.keys(was.entries), ...Object.keys(now.entries)])];
  for (const path of paths) {
    const a = was.entries[path];
    const b = now.entries[path];
    if (!a) {
      out.push(`entry ${path} (${b.module}) is new`);
      continue;
    }
    if (!b) {
      out.push(`entry ${path} (${a.module}) is gone`);
      continue;
    }
    if (a.module !== b.module) out.push(`${path} is ${b.module}, was ${a.module}`);
    for (const [name, kind] of Object.entries(b.names)) {
      if (!(name in a.names)) out.push(`${path} adds ${name} (${kind})`);
      else if (a.names[name] !== kind) {
        out.push(`${path} ${name} is now ${kind} (was ${a.names[name]})`);
      }
    }
    for (const name of Object.keys(a.names)) {
      if (!(name in b.names)) out.push(`${path} removes ${name}`);
    }
    for (const [ns, members] of Object.entries(b.namespaces ?? {})) {
      const before = new Set(a.namespaces?.[ns] ?? []);
      const after = new Set(members);
      for (const m of members) if (!before.has(m)) out.push(`${path} ${ns} adds ${m}`);
      for (const m of before) if (!after.has(m)) out.push(`${path} ${ns} removes ${m}`);
    }
  }
  return out;
}

/**
 * Where the API misses its targets, one line each: the main entry at {@linkcode MAIN_ENTRY_LIMIT}
 * names or more; a name in two entries that {@linkcode SHARED_NAMES} does not allow (or allows
 * in other entries); an `errors` namespace of `.` that is not exactly `./errors`. Empty when
 * every target holds.
 *
 * @example
 * ```ts
 * import { apiProblems } from './api.ts';
 * const api = {
 *   note: '',
 *   entries: {
 *     '.': { module: 'lib/mod.ts', names: { Flow: 'class' } },
 *     './client': { module: 'lib/client.ts', names: { Flow: 'class' } },
 *   },
 * };
 * console.assert(apiProblems(api)[0].startsWith('Flow is exported by two entries'));
 * ```
 */
export function apiProblems(api: ApiSnapshot): string[] {
  const out: string[] = [];
  const main = api.entries['.'];
  const count = main ? Object.keys(main.names).length : 0;
  if (count >= MAIN_ENTRY_LIMIT) {
    out.push(
      `the main entry exports ${count} names: keep it under ${MAIN_ENTRY_LIMIT} (what a queue ` +
        'function imports; the other audiences have entries of their own)',
    );
  }
  const where = new Map<string, string[]>();
  for (const [path, entry] of Object.entries(api.entries)) {
    for (const name of Object.keys(entry.names)) {
      where.set(name, [...(where.get(name) ?? []), path]);
    }
  }
  for (const [name, paths] of where) {
    if (paths.length < 2) continue;
    const allowed = SHARED_NAMES[name];
    if (!allowed || allowed.entries.join() !== paths.join()) {
      out.push(
        `${name} is exported by two entries (${paths.join(', ')}): export it from one (a type ` +
          'another entry names resolves there: .ci/run lints every entry in one deno doc run), ' +
          'or allow it in SHARED_NAMES of tools/api.ts with the reason',
      );
    }
  }
  const errors = main?.namespaces?.errors;
  const errorsEntry = api.entries['./errors'];
  if (errors && errorsEntry && errors.join() !== Object.keys(errorsEntry.names).join()) {
    out.push('the errors namespace of . is not exactly the names of ./errors');
  }
  return out;
}

if (import.meta.main) {
  helpOption(`usage: deno task api [--check]

Writes ${API_SNAPSHOT}: every entry of deno.json's exports with its names and their kinds
(deno doc --json).
  --check   write nothing; exit 1 when the API differs from ${API_SNAPSHOT}`);
  const path = join(KIT_ROOT, API_SNAPSHOT);
  const now = await currentApi();
  const problems = apiProblems(now);
  for (const p of problems) console.error(`target: ${p}`);
  let was: ApiSnapshot | null = null;
  try {
    was = JSON.parse(await Deno.readTextFile(path)) as ApiSnapshot;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  const differences = was ? apiDifferences(was, now) : [`${API_SNAPSHOT} does not exist`];
  if (was && differences.length === 0 && snapshotText(was) !== snapshotText(now)) {
    differences.push(`${API_SNAPSHOT} is not as deno task api writes it (edited by hand?)`);
  }
  if (Deno.args.includes('--check')) {
    for (const d of differences) console.error(d);
    if (differences.length > 0) {
      console.error(`${API_SNAPSHOT} is out of date: run deno task api`);
    } else console.log(`${API_SNAPSHOT} is up to date`);
    if (differences.length > 0 || problems.length > 0) Deno.exit(1);
  } else if (differences.length === 0) {
    console.log(`unchanged ${API_SNAPSHOT}`);
  } else {
    for (const d of differences) console.log(d);
    await Deno.writeTextFile(path, snapshotText(now));
    console.log(`wrote ${API_SNAPSHOT}`);
  }
  if (problems.length > 0) Deno.exit(1);
}
