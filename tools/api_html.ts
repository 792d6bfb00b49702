/**
 * `deno task docs:api-html [--keep] [--output DIR]`: builds the API reference as JSR renders it,
 * `deno doc --html` of every entry of deno.json's `exports` in one run, into a temporary folder
 * (removed afterwards unless `--keep`, or into `--output DIR`), then checks that every internal
 * link of the generated pages resolves: each `href` and `src` that is not a web address names a
 * file the build wrote (or, for the source links `deno doc` writes as `file://`, a file of the
 * kit), and each `#fragment` names an `id` (or `name`) of its target page. Exits 1 naming every
 * broken link (page, link, why), 0 when there is none. `.ci/run` runs it with the static checks.
 *
 * @module
 */
import { dirname, join, normalize, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KIT_ROOT } from '../cli/_project.ts';
import { helpOption } from '../cli/_help.ts';

const USAGE = `usage: deno task docs:api-html [--keep] [--output DIR]

Builds deno doc --html of deno.json's exports into a temporary folder (kept with --keep, or
written to --output DIR) and fails naming every internal link that resolves to nothing.`;

/** A link of a generated page that resolves to nothing. */
export interface BrokenLink {
  /** The page, relative to the output folder. */
  page: string;
  /** The link as written (entities decoded). */
  link: string;
  /** Why it is broken: no such file, or no such anchor in it. */
  why: string;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Decodes the character references of an attribute value (`&#x2F;`, `&#47;`, `&amp;`). */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);/g, (whole, ref: string) => {
    if (ref.startsWith('#x')) return String.fromCodePoint(parseInt(ref.slice(2), 16));
    if (ref.startsWith('#')) return String.fromCodePoint(parseInt(ref.slice(1), 10));
    return ENTITIES[ref] ?? whole;
  });
}

/** The `href` and `src` values of a page, decoded. */
function linksOf(html: string): string[] {
  return [...html.matchAll(/\s(?:href|src)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)]
    .map((m) => decodeEntities(m[1] ?? m[2]));
}

/** The anchors of a page: its `id` and `name` values, decoded. */
function anchorsOf(html: string): Set<string> {
  return new Set(
    [...html.matchAll(/\s(?:id|name)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)]
      .map((m) => decodeEntities(m[1] ?? m[2])),
  );
}

/**
 * Whether `#type_param_<name>` is the generator's link to a mapped type's key (`[K in ...]`)
 * bound on the page (see {@linkcode brokenLinks}).
 */
export function mappedKeyLink(html: string, fragment: string): boolean {
  const m = /^type_param_(.+)$/.exec(fragment);
  if (!m) return false;
  const keys = html.matchAll(
    /class="td-tp">([^<]+)<\/span><span><span class="td-kw"> in <\/span>/g,
  );
  return [...keys].some((k) => k[1].toLowerCase() === m[1]);
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) out.push(...await filesUnder(path));
    else if (e.isFile) out.push(path);
  }
  return out.sort();
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The broken internal links of the HTML pages under `dir` (see the module docs). A link with a
 * scheme (`https:`, `mailto:`, `data:`, `javascript:`) or starting with `//` is external and not
 * followed; `file://` links must name an existing file under `kitDir`. One link is the
 * generator's, not the kit's, and is excused (pushed to `excused` when given): `deno doc --html`
 * links each use of a mapped type's key (`[K in keyof T]: T[K]`) to `#type_param_k` of its page,
 * an anchor it writes only for declared type parameters; such a link is excused only on the page
 * that binds that key.
 *
 * @example
 * ```ts
 * import { brokenLinks } from './api_html.ts';
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/index.html`, '<a href="./missing.html">x</a>');
 * console.assert((await brokenLinks(dir)).length === 1);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function brokenLinks(
  dir: string,
  kitDir: string = KIT_ROOT,
  excused?: string[],
): Promise<BrokenLink[]> {
  const root = resolve(dir);
  const pages = (await filesUnder(root)).filter((f) => f.endsWith('.html'));
  const anchors = new Map<string, Set<string>>();
  const anchorsAt = async (page: string) => {
    let found = anchors.get(page);
    if (!found) {
      found = anchorsOf(await Deno.readTextFile(page));
      anchors.set(page, found);
    }
    return found;
  };
  const broken: BrokenLink[] = [];
  for (const page of pages) {
    const html = await Deno.readTextFile(page);
    anchors.set(page, anchorsOf(html));
    for (const link of new Set(linksOf(html))) {
      const report = (why: string) => broken.push({ page: relative(root, page), link, why });
      if (link.startsWith('file:')) {
        let path: string;
        try {
          path = fileURLToPath(link.split('#')[0]);
        } catch {
          report('not a file URL');
          continue;
        }
        const inKit = !relative(resolve(kitDir), path).startsWith('..');
        if (!inKit) report('a source link outside the kit');
        else if (!(await exists(path))) report('no such source file');
        continue;
      }
      if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(link) || link.startsWith('//')) continue;
      const hash = link.indexOf('#');
      const pathPart = (hash === -1 ? link : link.slice(0, hash)).split('?')[0];
      const fragment = hash === -1 ? null : decodeURIComponent(link.slice(hash + 1));
      let target = pathPart === '' ? page : normalize(join(dirname(page), decodeURI(pathPart)));
      if (relative(root, target).startsWith('..')) {
        report('outside the generated reference');
        continue;
      }
      if (pathPart.endsWith('/') || (await Deno.stat(target).catch(() => null))?.isDirectory) {
        target = join(target, 'index.html');
      }
      if (!(await exists(target))) {
        report(`no such file ${relative(root, target)}`);
        continue;
      }
      if (fragment !== null && fragment !== '' && target.endsWith('.html')) {
        if (!(await anchorsAt(target)).has(fragment)) {
          if (target === page && mappedKeyLink(html, fragment)) excused?.push(link);
          else report(`no anchor #${fragment} in ${relative(root, target)}`);
        }
      }
    }
  }
  return broken;
}

/**
 * Writes `deno doc --html` of deno.json's exports into `output` (one run, so a type one entry
 * names and another exports links across them).
 *
 * @example
 * ```ts ignore
 * import { buildApiHtml } from './api_html.ts';
 * await buildApiHtml(await Deno.makeTempDir());
 * ```
 */
export async function buildApiHtml(output: string, kitDir: string = KIT_ROOT): Promise<void> {
  const config = JSON.parse(await Deno.readTextFile(join(kitDir, 'deno.json'))) as {
    name: string;
    exports: Record<string, string>;
  };
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      'doc',
      '--html',
      `--name=${config.name}`,
      `--output=${output}`,
      ...Object.values(config.exports),
    ],
    cwd: kitDir,
    stdout: 'piped',
    stderr: 'piped',
  }).output();
  if (!out.success) {
    throw new Error(`deno doc --html failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
}

if (import.meta.main) {
  helpOption(USAGE);
  const args = [...Deno.args];
  const keep = args.includes('--keep');
  const at = args.indexOf('--output');
  const given = at === -1 ? null : args[at + 1];
  if (at !== -1 && !given) {
    console.error(`--output needs a folder\n${USAGE}`);
    Deno.exit(2);
  }
  const unknown = args.filter((a, i) => a !== '--keep' && i !== at && i !== at + 1);
  if (unknown.length > 0) {
    console.error(`unknown argument ${unknown[0]}\n${USAGE}`);
    Deno.exit(2);
  }
  const output = given ?? await Deno.makeTempDir({ prefix: 'switchyard-api-html-' });
  try {
    await buildApiHtml(output);
    const pages = (await filesUnder(output)).filter((f) => f.endsWith('.html')).length;
    const excused: string[] = [];
    const broken = await brokenLinks(output, KIT_ROOT, excused);
    for (const b of broken) console.error(`broken link in ${b.page}: ${b.link} (${b.why})`);
    const note = excused.length === 0
      ? ''
      : ` (${excused.length} link(s) of the generator to a mapped type's key excused)`;
    console.log(
      broken.length === 0
        ? `api reference: ${pages} pages, every internal link resolves${note}`
        : `api reference: ${broken.length} broken link(s) in ${pages} pages${note}`,
    );
    if (keep || given) console.log(`written to ${output}`);
    Deno.exitCode = broken.length === 0 ? 0 : 1;
  } finally {
    if (!keep && !given) await Deno.remove(output, { recursive: true });
  }
}
