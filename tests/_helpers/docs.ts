/**
 * The user docs' fenced blocks, by file and heading: README.md and docs/guide/*.md, for the tests
 * that run or type-check what the docs say (tests/e2e/_readme.ts, tests/unit/docs_examples_test.ts
 * and the suites that run one section's example as written).
 *
 * A block's `lead` is the paragraph right before it ('' when another block or a heading came
 * after that paragraph): the tests write a `ts` or `json` block to the last `….ts`, `….mts` or
 * `….json` path its lead names. A block marked as a fragment has the line
 * `<!-- fragment: why -->` right before its fence (blank lines aside): the type check skips it.
 *
 * @module
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';

/** The kit's checkout (this file is tests/_helpers/docs.ts). */
export const KIT = decodeURIComponent(new URL('../../', import.meta.url).pathname);

/** One fenced block of a doc. */
export interface DocBlock {
  /** The doc, relative to the kit (`README.md`, `docs/guide/client.md`). */
  file: string;
  lang: string;
  body: string;
  /** The paragraph right before it ('' when another block or a heading came after it). */
  lead: string;
  /** The line of its opening fence (1-based). */
  line: number;
  /** The fragment marker's reason when the block is marked as a fragment, else null. */
  fragment: string | null;
}

/** The user docs, README.md first, then docs/guide/*.md by name. */
export function userDocs(): string[] {
  const guides = [...Deno.readDirSync(join(KIT, 'docs/guide'))]
    .filter((e) => e.isFile && e.name.endsWith('.md'))
    .map((e) => `docs/guide/${e.name}`)
    .sort();
  return ['README.md', ...guides];
}

const FRAGMENT = /^<!-- fragment: (.+) -->$/;

/**
 * Every fenced block of `text` (the doc `file`); `from`/`to` bound the lines read (0-based,
 * `to` excluded).
 */
export function docBlocks(file: string, text: string, from = 0, to?: number): DocBlock[] {
  const lines = text.split('\n');
  const end = to ?? lines.length;
  const blocks: DocBlock[] = [];
  // The last paragraph since the previous block, and the one being read.
  let lead: string[] = [];
  let paragraph: string[] = [];
  let marker: string | null = null;
  for (let i = from; i < end; i++) {
    const line = lines[i];
    const fence = line.match(/^```(\w*)$/);
    if (!fence) {
      const m = line.match(FRAGMENT);
      if (m) {
        marker = m[1];
        if (paragraph.length) [lead, paragraph] = [paragraph, []];
      } else if (/^#{1,6} /.test(line)) {
        [lead, paragraph, marker] = [[], [], null];
      } else if (line.trim() !== '') {
        paragraph.push(line);
        marker = null;
      } else if (paragraph.length) [lead, paragraph] = [paragraph, []];
      continue;
    }
    if (paragraph.length) [lead, paragraph] = [paragraph, []];
    const close = lines.indexOf('```', i + 1);
    assert.ok(close > i, `${file} line ${i + 1}: an unclosed block`);
    blocks.push({
      file,
      lang: fence[1],
      body: lines.slice(i + 1, close).join('\n'),
      lead: lead.join(' '),
      line: i + 1,
      fragment: marker,
    });
    [lead, marker] = [[], null];
    i = close;
  }
  return blocks;
}

/** The text of the doc `file` (relative to the kit). */
export function readDoc(file: string): string {
  return Deno.readTextFileSync(join(KIT, file));
}

/** The lines of `heading`'s section in `text`: up to the next heading of its level or higher. */
function sectionRange(file: string, text: string, heading: string): [number, number] {
  const lines = text.split('\n');
  const start = lines.indexOf(heading);
  assert.ok(start >= 0, `${file} has no heading "${heading}"`);
  const level = heading.match(/^#+/)?.[0].length ?? 0;
  assert.ok(level > 0, `"${heading}" is not a heading`);
  let end = start + 1;
  while (end < lines.length) {
    const h = lines[end].match(/^(#{1,6}) /);
    if (h && h[1].length <= level) break;
    // A fence's body is not a heading: skip to its end.
    if (/^```\w*$/.test(lines[end])) {
      const close = lines.indexOf('```', end + 1);
      assert.ok(close > end, `${file} line ${end + 1}: an unclosed block`);
      end = close;
    }
    end++;
  }
  return [start, end];
}

/** The fenced blocks under `heading` in the doc `file`, up to the next heading of its level. */
export function sectionBlocks(file: string, heading: string): DocBlock[] {
  const text = readDoc(file);
  const [start, end] = sectionRange(file, text, heading);
  return docBlocks(file, text, start + 1, end);
}

/** The text of `heading`'s section in the doc `file`, the heading excluded. */
export function sectionText(file: string, heading: string): string {
  const text = readDoc(file);
  const [start, end] = sectionRange(file, text, heading);
  return text.split('\n').slice(start + 1, end).join('\n');
}

/** Every block of every user doc. */
export function allDocBlocks(): DocBlock[] {
  return userDocs().flatMap((file) => docBlocks(file, readDoc(file)));
}
