/**
 * The catalogue of every error code and refusal the kit can give, extracted from its sources
 * (there is no hand-kept list to drift): docs/guide/troubleshooting.md is checked against it by
 * tests/unit/troubleshooting_test.ts, which fails naming a code with no entry and an entry naming
 * no code. `deno run --allow-read tools/error_catalogue.ts [--json]` prints it.
 *
 * What is extracted, by kind:
 *
 * - `class`: the error classes `lib/errors.ts` exports (`export class <Name>`).
 * - `sqlstate`: the SQLSTATEs the SQL core raises: the first argument of every
 *   `switchyard._refuse(...)` call and every `errcode = '...'` of a hand-raised error in
 *   `supabase/schemas/`.
 * - `rule`: the refusal rules in the `rule` field of a refusal's detail: the second argument of
 *   `_refuse` (a literal, the literals of a `case` expression, or a variable: the literals
 *   assigned to it in the same file), the `'rule', '<x>'` of a hand-built detail, and the
 *   `detail: { rule: '<x>' ... }` the TypeScript side builds before the server would refuse.
 * - `refusal`: what a queue function records in `switchyard.refusals` (`RefusalKind` of
 *   `lib/worker/refusal.ts`).
 * - `http`: the `error` of the JSON answers of the kit's HTTP endpoints (queue functions,
 *   webhooks, the run event stream, the dashboard): `error: '<x>'` and `refuse(<status>, '<x>'`
 *   in `lib/`, and the webhook's signature rules (`rule: '<x>'` in `lib/platform/webhook.ts`).
 * - `doctor`: the checks `deno task doctor` reports problems under (`add('<check>', ...)` in
 *   `cli/doctor.ts`).
 * - `connection`: the failure codes `DatabaseConnectionError` gives advice for (the `case`s of
 *   `connectionAdvice` in `lib/errors.ts`).
 *
 * An SQL refusal whose rule the extractor cannot read (a shape it does not know) throws, naming
 * the file: the catalogue never silently misses one.
 *
 * @module
 */
import { join, relative } from 'node:path';
import { KIT_ROOT } from '../cli/_project.ts';

/** The kinds of codes in the catalogue. */
export const KINDS = [
  'class',
  'sqlstate',
  'rule',
  'refusal',
  'http',
  'doctor',
  'connection',
] as const;

/** One kind of code. */
export type Kind = typeof KINDS[number];

/** A code, and the files (relative to the kit) it was found in. */
export interface CatalogueEntry {
  kind: Kind;
  code: string;
  files: string[];
}

/** The catalogue: for each kind, each code and where it was found, sorted by code. */
export type Catalogue = Record<Kind, CatalogueEntry[]>;

/** A token of SQL text: a string literal's value, or a word or a punctuation mark. */
interface Token {
  type: 'string' | 'word' | 'punct';
  text: string;
}

/**
 * Splits SQL text into tokens: `'...'` (and `E'...'`) string literals with `''` undone, words,
 * and single punctuation marks (`:=` and `=>` as one); comments and dollar quotes are dropped, so
 * a function's body is read like any other text.
 *
 * @example
 * ```ts
 * import { sqlTokens } from './error_catalogue.ts';
 * console.assert(sqlTokens("perform f('a''b') -- x").length === 5);
 * ```
 */
export function sqlTokens(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (/\s/.test(c)) {
      i++;
    } else if (text.startsWith('--', i)) {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end + 1;
    } else if (text.startsWith('/*', i)) {
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 2;
    } else if (c === "'" || ((c === 'E' || c === 'e') && text[i + 1] === "'")) {
      let j = c === "'" ? i + 1 : i + 2;
      let value = '';
      for (;;) {
        if (j >= text.length) throw new Error(`unterminated string literal at ${i}`);
        if (text[j] === "'") {
          if (text[j + 1] === "'") {
            value += "'";
            j += 2;
            continue;
          }
          break;
        }
        value += text[j++];
      }
      tokens.push({ type: 'string', text: value });
      i = j + 1;
    } else if (c === '$') {
      const m = /^\$[A-Za-z_]*\$/.exec(text.slice(i));
      if (m) i += m[0].length;
      else {
        const n = /^\$\d+/.exec(text.slice(i));
        tokens.push({ type: 'word', text: n ? n[0] : '$' });
        i += n ? n[0].length : 1;
      }
    } else if (/[A-Za-z_0-9]/.test(c)) {
      const m = /^[A-Za-z_0-9.]+/.exec(text.slice(i))!;
      tokens.push({ type: 'word', text: m[0].toLowerCase() });
      i += m[0].length;
    } else if (text.startsWith(':=', i) || text.startsWith('=>', i)) {
      tokens.push({ type: 'punct', text: text.slice(i, i + 2) });
      i += 2;
    } else if (c === '"') {
      const end = text.indexOf('"', i + 1);
      tokens.push({ type: 'word', text: text.slice(i + 1, end) });
      i = end + 1;
    } else {
      tokens.push({ type: 'punct', text: c });
      i++;
    }
  }
  return tokens;
}

/** The arguments of the call whose `(` is at `open`, split at top-level commas. */
function callArguments(tokens: Token[], open: number): Token[][] {
  const args: Token[][] = [[]];
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    const t = tokens[i];
    if (t.type === 'punct' && (t.text === '(' || t.text === '[')) {
      depth++;
      if (depth === 1) continue;
    } else if (t.type === 'punct' && (t.text === ')' || t.text === ']')) {
      depth--;
      if (depth === 0) return args;
    } else if (depth === 1 && t.type === 'punct' && t.text === ',') {
      args.push([]);
      continue;
    }
    args.at(-1)!.push(t);
  }
  throw new Error('unclosed call');
}

/** The literals a `case` expression starting at `tokens[0]` can give (after `then` and `else`). */
function caseResults(tokens: Token[]): string[] | null {
  const out: string[] = [];
  let depth = 0;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (t.type === 'word' && t.text === 'case') depth++;
    else if (t.type === 'word' && t.text === 'end') {
      depth--;
      if (depth === 0) return out;
    } else if (t.type === 'word' && (t.text === 'then' || t.text === 'else') && depth === 1) {
      const next = tokens[i + 1];
      if (next?.type !== 'string') return null;
      out.push(next.text);
    }
  }
  return null;
}

/** The literals an expression gives: one literal, or a `case` of literals; null when neither. */
function literalsOf(expr: Token[]): string[] | null {
  if (expr.length === 1 && expr[0].type === 'string') return [expr[0].text];
  if (expr[0]?.type === 'word' && expr[0].text === 'case') return caseResults(expr);
  return null;
}

/** The literals assigned (`name := <literal or case>`) to a variable anywhere in `tokens`. */
function assignedLiterals(tokens: Token[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 2 < tokens.length; i++) {
    if (tokens[i].type !== 'word' || tokens[i].text !== name) continue;
    if (tokens[i + 1].type !== 'punct' || tokens[i + 1].text !== ':=') continue;
    const rest = tokens.slice(i + 2);
    const end = rest.findIndex((t) => t.type === 'punct' && t.text === ';');
    const values = literalsOf(end === -1 ? rest : rest.slice(0, end));
    if (values !== null) out.push(...values);
  }
  return out;
}

/** What one SQL file raises: its SQLSTATEs and rules, each with the SQLSTATE it goes with. */
export interface SqlRaises {
  sqlstates: string[];
  rules: { rule: string; sqlstate: string }[];
}

/**
 * The SQLSTATEs and rules one SQL file raises (see the module docs); throws when a `_refuse`
 * call's code or rule has a shape it cannot read.
 *
 * @example
 * ```ts
 * import { sqlRaises } from './error_catalogue.ts';
 * const r = sqlRaises("perform switchyard._refuse('22023', 'x_rule', 'a', null, 'msg');", 'f.sql');
 * console.assert(r.rules[0].rule === 'x_rule');
 * ```
 */
export function sqlRaises(text: string, file: string): SqlRaises {
  const tokens = sqlTokens(text);
  const sqlstates: string[] = [];
  const rules: { rule: string; sqlstate: string }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (
      t.type === 'word' && /(^|\.)_refuse$/.test(t.text) && tokens[i + 1]?.text === '(' &&
      tokens[i - 1]?.text !== 'function'
    ) {
      const args = callArguments(tokens, i + 1);
      const [codeArg, ruleArg] = args;
      if (codeArg?.length !== 1 || codeArg[0].type !== 'string') {
        throw new Error(`${file}: a _refuse call whose SQLSTATE is not a literal`);
      }
      const sqlstate = codeArg[0].text;
      sqlstates.push(sqlstate);
      let found = ruleArg ? literalsOf(ruleArg) : null;
      if (found === null && ruleArg?.length === 1 && ruleArg[0].type === 'word') {
        found = assignedLiterals(tokens, ruleArg[0].text);
        if (found.length === 0) found = null;
      }
      if (found === null) {
        throw new Error(
          `${file}: a _refuse call whose rule cannot be read (${
            (ruleArg ?? []).map((x) => x.text).join(' ')
          }): give a literal, a case of literals, or a variable assigned literals`,
        );
      }
      for (const rule of found) rules.push({ rule, sqlstate });
    } else if (
      t.type === 'word' && t.text === 'errcode' && tokens[i + 1]?.text === '=' &&
      tokens[i + 2]?.type === 'string'
    ) {
      const sqlstate = tokens[i + 2].text;
      sqlstates.push(sqlstate);
      // A hand-built detail of the same statement: jsonb_build_object('rule', '<x>', ...).
      const end = tokens.findIndex((x, j) => j > i && x.type === 'punct' && x.text === ';');
      const statement = tokens.slice(i, end === -1 ? tokens.length : end);
      for (let j = 0; j + 2 < statement.length; j++) {
        if (
          statement[j].type === 'string' && statement[j].text === 'rule' &&
          statement[j + 1].text === ',' && statement[j + 2].type === 'string'
        ) {
          rules.push({ rule: statement[j + 2].text, sqlstate });
        }
      }
    }
  }
  return { sqlstates, rules };
}

async function* filesUnder(dir: string, ext: string): AsyncGenerator<string> {
  const entries: Deno.DirEntry[] = [];
  for await (const e of Deno.readDir(dir)) entries.push(e);
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory) yield* filesUnder(path, ext);
    else if (e.isFile && e.name.endsWith(ext) && !e.name.endsWith('_test.ts')) yield path;
  }
}

/** Strips `//` and `/* *\/` comments from TypeScript (naively: enough for the kit's sources). */
function tsCode(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .split('\n')
    .map((line) => line.replace(/^\s*\/\/.*$/, ''))
    .join('\n');
}

/**
 * Builds the catalogue from the kit's sources (see the module docs).
 *
 * @example
 * ```ts
 * import { errorCatalogue } from './error_catalogue.ts';
 * const c = await errorCatalogue();
 * console.log(c.rule.length, 'refusal rules');
 * ```
 */
export async function errorCatalogue(kitDir: string = KIT_ROOT): Promise<Catalogue> {
  const found = new Map<string, CatalogueEntry>();
  const add = (kind: Kind, code: string, path: string) => {
    const file = relative(kitDir, path);
    const key = `${kind}\0${code}`;
    const entry = found.get(key) ?? { kind, code, files: [] };
    if (!entry.files.includes(file)) entry.files.push(file);
    found.set(key, entry);
  };

  // SQL core
  for await (const path of filesUnder(join(kitDir, 'supabase', 'schemas'), '.sql')) {
    const raises = sqlRaises(await Deno.readTextFile(path), relative(kitDir, path));
    for (const s of raises.sqlstates) add('sqlstate', s, path);
    for (const r of raises.rules) add('rule', r.rule, path);
  }

  // TypeScript
  const errorsPath = join(kitDir, 'lib', 'errors.ts');
  const errors = tsCode(await Deno.readTextFile(errorsPath));
  for (const m of errors.matchAll(/^export class (\w+)/gm)) add('class', m[1], errorsPath);
  const advice = /function connectionAdvice[\s\S]*?\n}/.exec(errors)?.[0] ?? '';
  for (const m of advice.matchAll(/case '([^']+)':/g)) add('connection', m[1], errorsPath);

  for await (const path of filesUnder(join(kitDir, 'lib'), '.ts')) {
    const code = tsCode(await Deno.readTextFile(path));
    for (const m of code.matchAll(/detail: \{ rule: '(\w+)'/g)) add('rule', m[1], path);
    for (const m of code.matchAll(/\berror: '(\w+)'/g)) add('http', m[1], path);
    for (const m of code.matchAll(/\brefuse\(\s*\d{3},\s*'(\w+)'/g)) add('http', m[1], path);
    if (path.endsWith(join('platform', 'webhook.ts'))) {
      for (const m of code.matchAll(/\brule: '(\w+)'/g)) add('http', m[1], path);
    }
  }

  const refusalPath = join(kitDir, 'lib', 'worker', 'refusal.ts');
  const refusal = tsCode(await Deno.readTextFile(refusalPath));
  const union = /export type RefusalKind =([^;]*);/.exec(refusal)?.[1] ?? '';
  for (const m of union.matchAll(/'(\w+)'/g)) add('refusal', m[1], refusalPath);

  const doctorPath = join(kitDir, 'cli', 'doctor.ts');
  const doctor = tsCode(await Deno.readTextFile(doctorPath));
  for (const m of doctor.matchAll(/\badd\(\s*'([^']+)'/g)) add('doctor', m[1], doctorPath);

  const catalogue = Object.fromEntries(KINDS.map((k) => [k, [] as CatalogueEntry[]])) as Catalogue;
  for (const e of found.values()) catalogue[e.kind].push(e);
  for (const k of KINDS) catalogue[k].sort((a, b) => a.code.localeCompare(b.code));
  return catalogue;
}

/** The page the catalogue is documented on, relative to the kit. */
export const TROUBLESHOOTING_PAGE = 'docs/guide/troubleshooting.md';

/**
 * The codes a page documents, by kind: the backticked codes in the first column of each table
 * that follows a `<!-- catalogue: <kind> -->` line (its header and separator rows skipped), with
 * the problems of the page's shape (an unknown kind, a marker with no table, a row naming no
 * code).
 *
 * @example
 * ```ts
 * import { documentedCodes } from './error_catalogue.ts';
 * const page = '<!-- catalogue: sqlstate -->\n\n| code | x |\n| - | - |\n| `SY001` | paused |\n';
 * console.assert(documentedCodes(page).codes.sqlstate.has('SY001'));
 * ```
 */
export function documentedCodes(
  markdown: string,
): { codes: Record<Kind, Set<string>>; problems: string[] } {
  const codes = Object.fromEntries(KINDS.map((k) => [k, new Set<string>()])) as Record<
    Kind,
    Set<string>
  >;
  const problems: string[] = [];
  let kind: Kind | null = null;
  let markerLine = 0;
  let tableRows = 0;
  const endTable = () => {
    if (kind !== null && tableRows === 0) {
      problems.push(`line ${markerLine}: catalogue marker "${kind}" is followed by no table`);
    }
    kind = null;
  };
  const lines = markdown.split('\n');
  lines.forEach((line, index) => {
    const marker = /^<!--\s*catalogue:\s*(\S+)\s*-->\s*$/.exec(line);
    if (marker) {
      endTable();
      if (!(KINDS as readonly string[]).includes(marker[1])) {
        problems.push(
          `line ${index + 1}: unknown catalogue kind "${marker[1]}" (${KINDS.join(', ')})`,
        );
        return;
      }
      kind = marker[1] as Kind;
      markerLine = index + 1;
      tableRows = 0;
      return;
    }
    if (kind === null) return;
    if (!line.startsWith('|')) {
      if (line.trim() === '' && tableRows === 0) return;
      endTable();
      return;
    }
    tableRows++;
    if (tableRows <= 2) return; // header and separator
    const first = line.split('|')[1] ?? '';
    const found = [...first.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    if (found.length === 0) problems.push(`line ${index + 1}: a ${kind} entry names no code`);
    for (const code of found) codes[kind].add(code);
  });
  endTable();
  return { codes, problems };
}

/**
 * What is wrong with a page against the catalogue: each code with no entry, each entry naming a
 * code the kit does not have, and the page's shape problems; empty when none.
 *
 * @example
 * ```ts
 * import { catalogueProblems, errorCatalogue } from './error_catalogue.ts';
 * console.log(catalogueProblems(await errorCatalogue(), '# no entries'));
 * ```
 */
export function catalogueProblems(catalogue: Catalogue, markdown: string): string[] {
  const { codes, problems } = documentedCodes(markdown);
  const out = [...problems];
  for (const kind of KINDS) {
    const known = new Set(catalogue[kind].map((e) => e.code));
    for (const e of catalogue[kind]) {
      if (!codes[kind].has(e.code)) {
        out.push(`${kind} ${e.code} (from ${e.files.join(', ')}) has no entry`);
      }
    }
    for (const code of codes[kind]) {
      if (!known.has(code)) out.push(`an entry names ${kind} ${code}, which the kit does not have`);
    }
  }
  return out;
}

if (import.meta.main) {
  const catalogue = await errorCatalogue();
  if (Deno.args.includes('--json')) console.log(JSON.stringify(catalogue, null, 2));
  else {
    for (const k of KINDS) {
      console.log(`${k} (${catalogue[k].length}):`);
      for (const e of catalogue[k]) console.log(`  ${e.code}  ${e.files.join(', ')}`);
    }
  }
}
