/**
 * `deno task docs:cite [--check | --fix] [path…]`: the design's citations. The design lived in one
 * file, `docs/ARCHITECTURE.md`, cited by section number (`docs/ARCHITECTURE.md §5.11`, `§5.12,
 * §5.13`, `(§12.1)`); it now lives in `docs/design/`, one page per subsystem, cited by path and
 * anchor (`docs/design/waits.md`, `docs/design/claim.md#stall-recovery`).
 *
 * `--check` (the default) lists each old-style citation left, as file:line, and exits 1 when there
 * is one. `--fix` rewrites them in place: in code, SQL, JSON, YAML, CSS and TOML as the path and
 * anchor; in Markdown as a relative link (the path, in inline code and code blocks). Without
 * paths it covers the whole kit except what it must not touch: released SQL (`releases/`, the
 * released migrations, released upgrade steps) is immutable and skipped; `docs/ARCHITECTURE.md`
 * keeps the table from old numbers to pages; generated files (`lib/sql/core_build.ts`, the
 * unreleased migration, `lib/ops/dashboard_page.ts`) are checked but not fixed: regenerate them
 * (`deno task sql:assemble`, `deno task dashboard-page`).
 *
 * @module
 */
import { dirname, join, relative } from 'node:path';
import { KIT_ROOT } from '../cli/_project.ts';
import { helpOption } from '../cli/_help.ts';

/** Where an old section went: its page, the anchor of its heading (none: the whole page), the heading. */
export interface DesignTarget {
  readonly page: string;
  readonly anchor: string | null;
  readonly heading: string;
}

const t = (page: string, heading: string, whole = false): DesignTarget => ({
  page,
  anchor: whole ? null : headingSlug(heading),
  heading,
});

/** The old section numbers of `docs/ARCHITECTURE.md` and where each went. */
export const SECTIONS: Readonly<Record<string, DesignTarget>> = {
  '1': t('overview', 'Layers'),
  '2': t('overview', 'Identity rules'),
  '3': t('overview', 'Queue ownership'),
  '4': t('worker', 'Worker start-up'),
  '4.1': t('worker', 'Compiling at deploy and in local development'),
  '5': t('claim', 'The claim path', true),
  '5.1': t('claim', 'Read'),
  '5.2': t('claim', 'start_tasks'),
  '5.3': t('claim', 'The unsupported batch'),
  '5.4': t('claim', 'Hiding claimed messages'),
  '5.5': t('claim', 'Dispatch and completion'),
  '5.6': t('claim', 'Stall recovery'),
  '5.7': t('claim', 'Planner settings'),
  '5.8': t('runs', 'Starting a run'),
  '5.9': t('runs', 'Ready steps, conditions and skips'),
  '5.10': t('runs', 'Map steps'),
  '5.11': t('waits', 'Wait steps and signals', true),
  '5.12': t('flow-control', 'Rate limits and keyed concurrency'),
  '5.13': t('flow-control', 'Start keys'),
  '5.14': t('flow-control', 'Priority and keys in turn'),
  '6': t('versions', 'Versions, drain and the fenced rollout', true),
  '7': t('supabase', 'Supabase shape', true),
  '8': t('local-runs', 'Local runs and tests', true),
  '8.1': t('local-runs', 'Local runs and tests', true),
  '8.2': t('local-runs', 'The switchyard command'),
  '8.3': t('testing', 'Upgrades with work in flight'),
  '8.4': t('testing', 'Both kinds of PGMQ'),
  '8.5': t('local-runs', 'Doctor'),
  '8.6': t('testing', 'Test tiers'),
  '9': t('worker', 'Worker states and parts'),
  '9.1': t('worker', 'Refusals are seen where operators look'),
  '10': t('errors', 'SQL errors', true),
  '11': t('vocabulary', 'Vocabulary', true),
  '12': t('code-layout', 'Code layout', true),
  '12.1': t('code-layout', 'The SQL source and its migrations'),
  '13': t('limits', 'Limits', true),
  '14': t('client', 'Following runs: the client, events, cancel and retry', true),
  '14.1': t('rerun', 'Rerun, fork, move and pause', true),
  '15': t('schedules', 'Schedules', true),
  '16': t('observability', 'Seeing work move: progress, metrics, traces and charts', true),
  '16.1': t('observability', 'Live progress and following a run'),
  '16.2': t('observability', 'Metrics, traces and charts'),
  '16.3': t('observability', 'Counters, histograms and levels'),
  '17': t('clock', 'The clock, and testing flows with a virtual one', true),
  '17.1': t('clock', 'One clock for every time rule'),
  '17.2': t('clock', 'The test engine'),
  '17.3': t('clock', 'Export and replay'),
  '17.4': t('clock', 'Speed, and what the engine is not'),
  '18': t('ingestion', "Runs from the app's own rows: row triggers and their backfill", true),
  '18.1': t('ingestion', 'Signed webhooks'),
};

/**
 * GitHub's anchor of a Markdown heading: lower case, punctuation dropped (letters, digits, `_`,
 * `-` and spaces stay), each space a `-`.
 *
 * @example
 * ```ts
 * import { headingSlug } from './design_citations.ts';
 * console.assert(headingSlug('Start keys: singleton, `dedupe`') === 'start-keys-singleton-dedupe');
 * ```
 */
export function headingSlug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replace(/ /g, '-');
}

/** The citation of an old section number, as code writes it: `docs/design/<page>.md[#anchor]`. */
export function designCitation(section: string): string {
  const to = SECTIONS[section];
  if (!to) {
    throw new Error(
      `§${section} is no section of the old docs/ARCHITECTURE.md: the sections are ` +
        Object.keys(SECTIONS).join(', '),
    );
  }
  return `docs/design/${to.page}.md${to.anchor ? `#${to.anchor}` : ''}`;
}

/** The title of a page: the heading of the section that is the whole page, or the page's name. */
function pageTitle(page: string): string {
  return Object.values(SECTIONS).find((s) => s.page === page && s.anchor === null)?.heading ?? page;
}

/**
 * Files that speak of the old citations rather than make them: the table from old numbers to
 * pages, this tool and the tests of the citations.
 */
export const ABOUT_CITATIONS: readonly string[] = [
  'docs/ARCHITECTURE.md',
  'tools/design_citations.ts',
  'tests/unit/docs_links_test.ts',
];

/** Files whose citations are never rewritten nor reported (kit-relative, `/`-separated). */
export function isImmutable(path: string, releasedMigrations: ReadonlySet<string>): boolean {
  if (path.startsWith('releases/')) return true;
  if (ABOUT_CITATIONS.includes(path)) return true;
  const upgrade = /^supabase\/upgrades\/([^/]+)\//.exec(path);
  if (upgrade && upgrade[1] !== 'unreleased') return true;
  const migration = /^supabase\/migrations\/([^/]+\.sql)$/.exec(path);
  return migration !== null && releasedMigrations.has(migration[1]);
}

/** Files that are generated: checked, never fixed (regenerate them instead). */
export function isGenerated(path: string, releasedMigrations: ReadonlySet<string>): boolean {
  if (path === 'lib/sql/core_build.ts' || path === 'lib/ops/dashboard_page.ts') return true;
  if (path === 'docs/api.json') return true;
  const migration = /^supabase\/migrations\/([^/]+_core\.sql)$/.exec(path);
  return migration !== null && !releasedMigrations.has(migration[1]);
}

/** The released migrations' file names, from `releases/<version>/manifest.json`. */
export async function releasedMigrations(kitDir: string = KIT_ROOT): Promise<Set<string>> {
  const out = new Set<string>();
  for await (const entry of Deno.readDir(join(kitDir, 'releases'))) {
    if (!entry.isDirectory) continue;
    const text = await Deno.readTextFile(join(kitDir, 'releases', entry.name, 'manifest.json'));
    for (const m of (JSON.parse(text) as { migrations: { file: string }[] }).migrations) {
      out.add(m.file);
    }
  }
  return out;
}

const CITED = /\.(ts|js|mjs|sql|md|json|toml|yml|yaml|css)$/;
const SKIPPED_DIRS = new Set(['.git', 'node_modules', 'dist', '.temp', '.branches']);

/** Every file of the kit the citations may be in (kit-relative paths, sorted). */
export async function citingFiles(kitDir: string = KIT_ROOT): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(join(kitDir, dir))) {
      const path = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory) {
        if (!SKIPPED_DIRS.has(entry.name)) await walk(path);
      } else if (entry.isFile && (CITED.test(entry.name) || path === '.ci/run')) {
        out.push(path);
      }
    }
  };
  await walk('');
  return out.sort();
}

const NUM = String.raw`\d+(?:\.\d+)?`;
/** `§5.1`, a range `§5.1–§5.4` or `§5.8-5.10`; `\u00a7` is JSON's escape of `§`. */
const SECTION = String.raw`(?:§|\\u00a7)(${NUM})(?:\s*[-–]\s*(?:§|\\u00a7)?(${NUM}))?`;
/**
 * What may name the old file right before a section: `docs/ARCHITECTURE.md`, `ARCHITECTURE`,
 * a Markdown link to it, or the word `docs`; then spaces, or a line break and a comment's leader.
 */
const PREFIX = String
  .raw`(?:\[(?:docs/)?ARCHITECTURE(?:\.md)?\]\([^)\s]*\)|(?:docs/)?ARCHITECTURE(?:\.md)?\)?|\bdocs)` +
  String.raw`(?:[ \t]+|[ \t]*\n[ \t]*(?:--|\*|//|#)?[ \t]*)`;
const CITATION = new RegExp(`(${PREFIX})?${SECTION}`, 'g');
/**
 * An old-style citation, for --check: any section sign with a number, or the old file by name
 * (but as a Markdown link's text or target: the link to the table of old numbers).
 */
const OLD = /(?:§|\\u00a7)\d|ARCHITECTURE\.md(?![\])])/g;

/**
 * `text` (the file at kit-relative `path`) with every old-style citation rewritten, and how many.
 * A section number no page has is an error naming it and the file.
 *
 * @example
 * ```ts
 * import { rewriteCitations } from './design_citations.ts';
 * const { text } = rewriteCitations('-- (docs/ARCHITECTURE.md §5.6, §6)', 'x.sql');
 * console.assert(text === '-- (docs/design/claim.md#stall-recovery, docs/design/versions.md)');
 * ```
 */
export function rewriteCitations(text: string, path: string): { text: string; count: number } {
  const markdown = path.endsWith('.md');
  let count = 0;
  const lines = text.split('\n');
  // Where each line starts, and which lines are inside a Markdown code block.
  const starts: number[] = [];
  const fenced: boolean[] = [];
  let at = 0;
  let fence = false;
  for (const line of lines) {
    starts.push(at);
    if (markdown && /^\s*```/.test(line)) fence = !fence;
    fenced.push(fence);
    at += line.length + 1;
  }
  const lineOf = (offset: number) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const inCode = (offset: number) => {
    const n = lineOf(offset);
    if (fenced[n]) return true;
    const before = text.slice(starts[n], offset);
    return (before.match(/`/g) ?? []).length % 2 === 1;
  };
  const cite = (section: string): string => {
    if (!SECTIONS[section]) {
      throw new Error(
        `${path}: §${section} is no section of the old docs/ARCHITECTURE.md (the sections: ` +
          `${Object.keys(SECTIONS).join(', ')})`,
      );
    }
    return designCitation(section);
  };
  const link = (section: string): string => {
    const to = SECTIONS[section];
    const target = relative(dirname(path), `docs/design/${to.page}.md`) +
      (to.anchor ? `#${to.anchor}` : '');
    return `[${to.heading}](${target})`;
  };
  const out = text.replace(
    CITATION,
    (
      _match: string,
      prefix: string | undefined,
      from: string,
      to: string | undefined,
      offset: number,
    ) => {
      count++;
      const code = !markdown || inCode(offset + (prefix?.length ?? 0));
      const one = code ? cite : link;
      let replacement: string;
      if (to === undefined) replacement = one(from);
      else if (cite(from) && cite(to) && SECTIONS[from].page === SECTIONS[to].page) {
        // A range within one page cites the page.
        const page = `docs/design/${SECTIONS[from].page}.md`;
        replacement = code
          ? page
          : `[${pageTitle(SECTIONS[from].page)}](${relative(dirname(path), page)})`;
      } else replacement = `${one(from)} to ${one(to)}`;
      if (prefix === undefined || !prefix.includes('\n')) return replacement;
      // The old file's name ended a line and its number began the next: the citation goes on the
      // next line, after the comment's leader, with an opening parenthesis that preceded it.
      const leader = /\n[ \t]*(?:--|\*|\/\/|#)?[ \t]*$/.exec(prefix)![0];
      return `${leader}${replacement}`;
    },
  );
  // A line left with its opening parenthesis alone at its end takes it along to the next one.
  const tidy = out.replace(/\(\n([ \t]*(?:--|\*|\/\/|#)?[ \t]*)(docs\/design\/)/g, '\n$1($2')
    .replace(/[ \t]+\n([ \t]*(?:--|\*|\/\/|#)?[ \t]*(?:\()?docs\/design\/)/g, '\n$1');
  if (markdown) return { text: tidy, count };
  // A comment line the rewrite made longer than the kit's width is wrapped under the same leader.
  const before = new Set(lines);
  const wrapped = tidy.split('\n').flatMap((line) =>
    before.has(line) || line.length <= WIDTH ? [line] : wrapComment(line)
  );
  return { text: wrapped.join('\n'), count };
}

/** The kit's line width (deno.json's `fmt.lineWidth`). */
const WIDTH = 100;

/**
 * A long comment line as lines of at most {@link WIDTH} characters where it has a space to break
 * at (outside inline code), each after the comment's leader; a line of code is left as it is.
 */
function wrapComment(line: string): string[] {
  const whole = /^([ \t]*(?:--|\*|\/\/|#)[ \t]?)/.exec(line);
  const trailing = whole ? null : /^(.*?[^ \t])([ \t]+)(--|\/\/)[ \t]/.exec(line);
  if (!whole && !trailing) return [line];
  const leader = whole
    ? whole[1]
    : `${' '.repeat(trailing![1].length + trailing![2].length)}${trailing![3]} `;
  const start = whole ? whole[1].length : trailing![0].length;
  const out: string[] = [];
  let rest = line;
  let from = start;
  while (rest.length > WIDTH) {
    let ticks = 0;
    let cut = -1;
    for (let i = 0; i < rest.length; i++) {
      if (rest[i] === '`') ticks++;
      if (rest[i] === ' ' && ticks % 2 === 0 && i > from + 10) {
        if (i <= WIDTH || cut < 0) cut = i;
        if (i > WIDTH) break;
      }
    }
    if (cut < 0) break;
    out.push(rest.slice(0, cut).trimEnd());
    rest = leader + rest.slice(cut + 1).trimStart();
    from = leader.length;
  }
  out.push(rest);
  return out;
}

/** Each old-style citation left in `text`, as its 1-based line and the line itself. */
export function oldCitations(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  text.split('\n').forEach((line, i) => {
    if (OLD.test(line)) out.push({ line: i + 1, text: line.trim() });
    OLD.lastIndex = 0;
  });
  return out;
}

/** Every old-style citation of the kit outside immutable files, as `file:line: text`. */
export async function citationProblems(kitDir: string = KIT_ROOT): Promise<string[]> {
  const released = await releasedMigrations(kitDir);
  const problems: string[] = [];
  for (const path of await citingFiles(kitDir)) {
    if (isImmutable(path, released)) continue;
    const text = await Deno.readTextFile(join(kitDir, path));
    for (const c of oldCitations(text)) problems.push(`${path}:${c.line}: ${c.text}`);
  }
  return problems;
}

/**
 * The anchors of a Markdown document as GitHub makes them: each heading's slug (outside code
 * blocks), a repeated one with `-1`, `-2`, … after it, and any HTML `id` or `name`.
 *
 * @example
 * ```ts
 * import { markdownAnchors } from './design_citations.ts';
 * const anchors = markdownAnchors('# Read\n\n## The `start_tasks` call\n\n## Read\n');
 * console.assert(['read', 'the-start_tasks-call', 'read-1'].every((a) => anchors.has(a)));
 * ```
 */
export function markdownAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence = false;
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) fence = !fence;
    if (fence) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const base = headingSlug(heading[1].replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1'));
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]);
  }
  return anchors;
}

/** Where a link or citation points and where it stands. */
interface Pointer {
  readonly path: string;
  readonly line: number;
  readonly target: string;
}

/** The relative links of a Markdown document (outside code), as 1-based line and target. */
export function markdownLinks(text: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  let fence = false;
  text.split('\n').forEach((raw, i) => {
    if (/^\s*```/.test(raw)) fence = !fence;
    if (fence) return;
    const line = raw.replace(/`[^`]*`/g, '');
    const targets = [
      ...[...line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]),
      ...[...line.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/g)].map((m) => m[1]),
    ];
    for (const target of targets) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      out.push({ line: i + 1, target });
    }
  });
  return out;
}

const DESIGN_CITATION = /docs\/design\/([\w.-]+\.md)(?:#([\w-]+))?/g;

/**
 * Every design citation (`docs/design/<page>.md#<anchor>`, in any file the citations may be in)
 * and every relative Markdown link (in any `*.md`) that points nowhere: a missing file, or an
 * anchor its Markdown target lacks. Each problem names file:line and the target.
 */
export async function linkProblems(kitDir: string = KIT_ROOT): Promise<string[]> {
  const released = await releasedMigrations(kitDir);
  const texts = new Map<string, string | null>();
  const read = async (path: string): Promise<string | null> => {
    if (!texts.has(path)) {
      texts.set(path, await Deno.readTextFile(join(kitDir, path)).catch(() => null));
    }
    return texts.get(path)!;
  };
  const exists = async (path: string) =>
    await Deno.stat(join(kitDir, path)).then(() => true, () => false);
  const problems: string[] = [];
  const pointsTo = async (p: Pointer, file: string, anchor: string | undefined) => {
    if (file.startsWith('..')) {
      problems.push(`${p.path}:${p.line}: ${p.target}: outside the kit`);
    } else if (!(await exists(file))) {
      problems.push(`${p.path}:${p.line}: ${p.target}: no file ${file}`);
    } else if (anchor !== undefined && file.endsWith('.md')) {
      const text = await read(file);
      if (text !== null && !markdownAnchors(text).has(decodeURIComponent(anchor))) {
        problems.push(`${p.path}:${p.line}: ${p.target}: ${file} has no heading #${anchor}`);
      }
    }
  };
  for (const path of await citingFiles(kitDir)) {
    if (isImmutable(path, released)) continue;
    const text = (await read(path)) ?? '';
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      for (const m of lines[i].matchAll(DESIGN_CITATION)) {
        const p = { path, line: i + 1, target: m[0] };
        await pointsTo(p, `docs/design/${m[1]}`, m[2]);
      }
    }
    if (!path.endsWith('.md')) continue;
    for (const link of markdownLinks(text)) {
      const p = { path, line: link.line, target: link.target };
      const hash = link.target.indexOf('#');
      const file = hash < 0 ? link.target : link.target.slice(0, hash);
      const anchor = hash < 0 ? undefined : link.target.slice(hash + 1);
      const resolved = file === ''
        ? path
        : join(dirname(path), decodeURIComponent(file)).replace(/\\/g, '/').replace(/\/$/, '');
      await pointsTo(p, resolved, anchor);
    }
  }
  // A Markdown link to a design page is a citation too: one problem, said once.
  return [...new Set(problems)];
}

if (import.meta.main) {
  helpOption(
    `usage: deno task docs:cite [--check | --fix] [path…]

The design's citations: old ones by docs/ARCHITECTURE.md section number against the pages of
docs/design/ they moved to.

  --check   (the default) list each old-style citation left (file:line); exit 1 when any is
  --fix     rewrite them in the given files (kit-relative), or in every file of the kit but
            the released SQL, docs/ARCHITECTURE.md and generated files (regenerate those)`,
  );
  const fix = Deno.args.includes('--fix');
  const paths = Deno.args.filter((a) => !a.startsWith('--'));
  if (fix) {
    const released = await releasedMigrations();
    const files = paths.length > 0 ? paths : await citingFiles();
    let total = 0;
    for (const path of files) {
      if (isImmutable(path, released) || (paths.length === 0 && isGenerated(path, released))) {
        continue;
      }
      const full = join(KIT_ROOT, path);
      const before = await Deno.readTextFile(full);
      const { text, count } = rewriteCitations(before, path);
      if (text !== before) {
        await Deno.writeTextFile(full, text);
        console.log(`${path}: ${count} citation${count === 1 ? '' : 's'}`);
        total += count;
      }
    }
    console.log(`${total} citations rewritten`);
  }
  const problems = (await citationProblems()).filter((p) =>
    paths.length === 0 || paths.some((path) => p.startsWith(`${path}:`))
  );
  for (const p of problems) console.log(p);
  if (problems.length > 0) {
    console.error(
      `${problems.length} old-style citation${problems.length === 1 ? '' : 's'} of ` +
        'docs/ARCHITECTURE.md: `deno task docs:cite --fix` rewrites them',
    );
    Deno.exit(1);
  }
  if (!fix) console.log('no old-style citation of docs/ARCHITECTURE.md');
}
