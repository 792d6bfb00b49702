/**
 * Reading SQL text without a server: split a script into its statements (quotes, dollar quotes
 * and comments respected) and name what each statement defines. The SQL source
 * (`supabase/schemas/`), its assembly into the unreleased migration (`tools/sql_source.ts`)
 * and the source checks use it.
 *
 * @module
 */

/** One statement of a script, with the comment lines that lead it. */
export interface Statement {
  /** The statement's text from its first leading comment to its `;`, included. */
  readonly text: string;
  /** The statement alone, without leading comments or the closing `;`. */
  readonly body: string;
}

/**
 * Splits a script into statements. Comments and blank lines before a statement belong to it;
 * a comment after the last statement is returned as a statement whose body is empty.
 *
 * @example
 * ```ts
 * import { splitStatements } from './_sql_text.ts';
 * const parts = splitStatements("-- one\nselect 1;\nselect $$a;b$$;\n");
 * console.assert(parts.length === 2 && parts[1].body === 'select $$a;b$$');
 * ```
 */
export function splitStatements(script: string): Statement[] {
  const out: Statement[] = [];
  let start = 0;
  let bodyStart = -1;
  let i = 0;
  const n = script.length;
  const push = (end: number) => {
    const text = script.slice(start, end).replace(/^\s*\n/, '');
    const body = bodyStart < 0 ? '' : script.slice(bodyStart, end).replace(/;\s*$/, '').trim();
    if (text.trim() !== '') out.push({ text: text.replace(/\s+$/, ''), body });
    start = end;
    bodyStart = -1;
  };
  while (i < n) {
    const c = script[i];
    if (c === '-' && script[i + 1] === '-') {
      const eol = script.indexOf('\n', i);
      i = eol < 0 ? n : eol + 1;
      continue;
    }
    if (c === '/' && script[i + 1] === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (script[i] === '/' && script[i + 1] === '*') (depth++, i += 2);
        else if (script[i] === '*' && script[i + 1] === '/') (depth--, i += 2);
        else i++;
      }
      continue;
    }
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (bodyStart < 0) bodyStart = i;
    if (c === "'") {
      const escapes = /[eE]/.test(script[i - 1] ?? '') && !/\w/.test(script[i - 2] ?? '');
      i++;
      while (i < n) {
        if (escapes && script[i] === '\\') i += 2;
        else if (script[i] === "'" && script[i + 1] === "'") i += 2;
        else if (script[i] === "'") break;
        else i++;
      }
      i++;
      continue;
    }
    if (c === '"') {
      i = script.indexOf('"', i + 1) + 1 || n;
      continue;
    }
    if (c === '$') {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(script.slice(i, i + 64));
      if (tag && !/\w/.test(script[i - 1] ?? '')) {
        const close = script.indexOf(tag[0], i + tag[0].length);
        i = close < 0 ? n : close + tag[0].length;
        continue;
      }
    }
    if (c === ';') {
      i++;
      const eol = /^[ \t]*(--[^\n]*)?\n?/.exec(script.slice(i));
      push(i + (eol ? eol[0].length : 0));
      i = start;
      continue;
    }
    i++;
  }
  if (start < n) push(n);
  return out;
}

/** What a statement defines or removes, as far as the source layout cares. */
export interface Defines {
  /** `function`, `table`, `index`, `view`, `trigger`, `policy`, or `other`. */
  readonly kind: string;
  /** `create`, `drop`, `alter` or `other`. */
  readonly action: string;
  /** The object's name without its schema (a function's name without arguments). */
  readonly name: string;
  /** A function's argument list as written, lower-cased, spaces collapsed. */
  readonly args?: string;
}

const IDENT = String.raw`(?:"[^"]+"|[A-Za-z_][A-Za-z0-9_$]*)`;
const QUALIFIED = String.raw`(?:${IDENT}\.)?(${IDENT})`;

function unquote(name: string): string {
  return name.startsWith('"') ? name.slice(1, -1) : name.toLowerCase();
}

/**
 * Names what a statement defines.
 *
 * @example
 * ```ts
 * import { definesOf } from './_sql_text.ts';
 * const d = definesOf('create or replace function switchyard.f(a int) returns int');
 * console.assert(d.kind === 'function' && d.name === 'f' && d.args === 'a int');
 * ```
 */
export function definesOf(body: string): Defines {
  const text = body.replace(/\s+/g, ' ').trim();
  let m = new RegExp(String.raw`^create (?:or replace )?function ${QUALIFIED}\s*\(`, 'i').exec(
    text,
  );
  if (m) {
    const open = m[0].length;
    let depth = 1;
    let j = open;
    while (j < text.length && depth > 0) {
      if (text[j] === '(') depth++;
      else if (text[j] === ')') depth--;
      j++;
    }
    const args = text.slice(open, j - 1).trim().toLowerCase();
    return { kind: 'function', action: 'create', name: unquote(m[1]), args };
  }
  m = new RegExp(String.raw`^drop function (?:if exists )?${QUALIFIED}\s*(?:\((.*?)\))?`, 'i')
    .exec(text);
  if (m) {
    return {
      kind: 'function',
      action: 'drop',
      name: unquote(m[1]),
      args: (m[2] ?? '').trim().toLowerCase(),
    };
  }
  const forms: [RegExp, string, string][] = [
    [/^create (?:unlogged )?table (?:if not exists )?/i, 'table', 'create'],
    [/^alter table (?:if exists )?(?:only )?/i, 'table', 'alter'],
    [/^drop table (?:if exists )?/i, 'table', 'drop'],
    [/^create (?:unique )?index (?:concurrently )?(?:if not exists )?/i, 'index', 'create'],
    [/^drop index (?:concurrently )?(?:if exists )?/i, 'index', 'drop'],
    [/^create (?:or replace )?view /i, 'view', 'create'],
    [/^create (?:or replace )?trigger /i, 'trigger', 'create'],
    [/^drop trigger (?:if exists )?/i, 'trigger', 'drop'],
    [/^create policy /i, 'policy', 'create'],
    [/^drop policy (?:if exists )?/i, 'policy', 'drop'],
  ];
  for (const [re, kind, action] of forms) {
    const head = re.exec(text);
    if (!head) continue;
    const rest = text.slice(head[0].length);
    const name = new RegExp(`^${QUALIFIED}`).exec(rest);
    return { kind, action, name: name ? unquote(name[1]) : '' };
  }
  return { kind: 'other', action: 'other', name: '' };
}
