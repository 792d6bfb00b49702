/**
 * The `[functions.<name>]` sections of `supabase/config.toml`: read by `deno task serve`,
 * written by `deno task scaffold-queue`.
 *
 * Only the small TOML subset these sections use is understood (a table header per function,
 * `key = "string"` and `key = true|false` lines, comments). Everything else in the file is
 * kept byte for byte, so a scaffold never reformats a user's config.
 *
 * Why not a TOML library from npm: the file is the user's, with the Supabase CLI's comments and
 * layout, and the npm TOML libraries parse it into values and stringify values anew (smol-toml,
 * the one the Deno ecosystem reaches for: `stringify(parse(text))` drops every comment of a
 * `supabase init` config), so none keeps the rest of the file as it is. Editing lines of the
 * kit's own sections does; tests/e2e/config_toml_test.ts checks it on the files
 * `supabase init` of CLI 2 and 3 writes.
 *
 * @module
 */

/**
 * One function's settings as the Supabase CLI reads them.
 *
 * @example
 * ```ts
 * import type { FunctionConfig } from './_functions_config.ts';
 *
 * const config: FunctionConfig = { name: 'a-worker', verifyJwt: false };
 * ```
 */
export interface FunctionConfig {
  name: string;
  /** Path relative to `supabase/`, e.g. `./functions/x-worker/index.ts`. */
  entrypoint?: string;
  /** Path relative to `supabase/`, e.g. `./functions/x-worker/deno.json`. */
  importMap?: string;
  verifyJwt?: boolean;
  enabled?: boolean;
}

const HEADER = /^\s*\[\s*functions\s*\.\s*(?:"([^"]+)"|([A-Za-z0-9_-]+))\s*\]\s*(#.*)?$/;
const ANY_HEADER = /^\s*\[/;

interface Section {
  name: string;
  /** Index of the header line. */
  start: number;
  /** Index one past the last line of the section (before trailing blank lines). */
  end: number;
}

function sections(lines: string[]): Section[] {
  const out: Section[] = [];
  let current: Section | null = null;
  const close = (at: number) => {
    if (!current) return;
    let end = at;
    while (end > current.start + 1 && lines[end - 1].trim() === '') end--;
    current.end = end;
    out.push(current);
    current = null;
  };
  lines.forEach((line, i) => {
    if (!ANY_HEADER.test(line)) return;
    close(i);
    const m = HEADER.exec(line);
    if (m) current = { name: m[1] ?? m[2], start: i, end: i + 1 };
  });
  close(lines.length);
  return out;
}

function unquote(value: string): string | boolean | undefined {
  const v = value.replace(/\s+#.*$/, '').trim();
  if (v === 'true') return true;
  if (v === 'false') return false;
  const m = /^"((?:[^"\\]|\\.)*)"$/.exec(v) ?? /^'([^']*)'$/.exec(v);
  return m ? m[1].replace(/\\(["\\])/g, '$1') : undefined;
}

/**
 * Every `[functions.<name>]` section of a config.toml text.
 *
 * @example
 * ```ts
 * import { readFunctionConfigs } from './_functions_config.ts';
 *
 * const configs = readFunctionConfigs('[functions.a-worker]\nverify_jwt = false\n');
 * console.assert(configs[0].name === 'a-worker' && configs[0].verifyJwt === false);
 * ```
 */
export function readFunctionConfigs(toml: string): FunctionConfig[] {
  const lines = toml.split('\n');
  return sections(lines).map((s) => {
    const config: FunctionConfig = { name: s.name };
    for (const line of lines.slice(s.start + 1, s.end)) {
      const m = /^\s*([A-Za-z_]+)\s*=\s*(.+)$/.exec(line);
      if (!m) continue;
      const value = unquote(m[2]);
      if (m[1] === 'entrypoint' && typeof value === 'string') config.entrypoint = value;
      if (m[1] === 'import_map' && typeof value === 'string') config.importMap = value;
      if (m[1] === 'verify_jwt' && typeof value === 'boolean') config.verifyJwt = value;
      if (m[1] === 'enabled' && typeof value === 'boolean') config.enabled = value;
    }
    return config;
  });
}

/**
 * The text of one function's section (header included, no trailing blank lines), or `null`.
 *
 * @example
 * ```ts
 * import { functionSection } from './_functions_config.ts';
 *
 * console.assert(functionSection('[functions.a]\nverify_jwt = false\n\n', 'a') ===
 *   '[functions.a]\nverify_jwt = false');
 * ```
 */
export function functionSection(toml: string, name: string): string | null {
  const lines = toml.split('\n');
  const s = sections(lines).find((x) => x.name === name);
  return s ? lines.slice(s.start, s.end).join('\n') : null;
}

/**
 * The config text with one function's section set to `section` (replaced in place when it
 * exists, else appended after one blank line). The rest of the file is unchanged.
 *
 * @example
 * ```ts
 * import { setFunctionSection } from './_functions_config.ts';
 *
 * const toml = setFunctionSection('project_id = "x"\n', 'a', '[functions.a]\nverify_jwt = false');
 * console.assert(toml === 'project_id = "x"\n\n[functions.a]\nverify_jwt = false\n');
 * ```
 */
export function setFunctionSection(toml: string, name: string, section: string): string {
  const lines = toml.split('\n');
  const s = sections(lines).find((x) => x.name === name);
  if (s) {
    return [...lines.slice(0, s.start), ...section.split('\n'), ...lines.slice(s.end)].join('\n');
  }
  const body = toml.replace(/\n*$/, '');
  return `${body}${body ? '\n\n' : ''}${section}\n`;
}
