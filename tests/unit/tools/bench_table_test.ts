/**
 * The current table of BENCHMARKS.md is built from the bench's JSON result
 * (tools/bench_table.ts, bench/_result.ts): the rows of each figure's latest run, the runs they
 * come from, the figures without a result; a run replaces its figures and keeps the others; a
 * malformed result is refused, naming what is wrong; and the committed page is what
 * `deno task bench:table` writes from the committed `bench/results/latest.json`. No database.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KIT_ROOT } from '../../../cli/_project.ts';
import { mergeResult, parseResult } from '../../../bench/_result.ts';
import {
  benchmarksPage,
  type FigureFile,
  figureFiles,
  PAGE,
  pageWithTable,
  renderTable,
  TABLE_BEGIN,
  TABLE_END,
} from '../../../tools/bench_table.ts';

const fixture = parseResult(
  await Deno.readTextFile(join(KIT_ROOT, 'tests/fixtures/bench_result.json')),
  'tests/fixtures/bench_result.json',
);
const seventeen: FigureFile[] = Array.from({ length: 17 }, (_, i) => ({
  number: i + 1,
  file: `${String(i + 1).padStart(2, '0')}_figure.ts`,
}));

Deno.test('the table renders from a committed result: rows by figure, the runs, what is missing', () => {
  const lines = renderTable(fixture, seventeen).split('\n');
  assert.equal(lines[0], TABLE_BEGIN);
  assert.equal(lines.at(-1), TABLE_END);
  assert.deepEqual(lines.slice(2, 7), [
    '| figure | measured | side by side | ratio (range) | target | result |',
    '| --- | --- | --- | --- | --- | --- |',
    '| 1 queue throughput, 1 worker vs 1 loop | engine 1300 tasks/s | raw PGMQ 4000 msgs/s | ' +
    '0.33x (0.30-0.40) | >= 0.40x | MISSED |',
    '| 2 end to end (3 steps, 2 queues, 2 workers) | 400 runs/s = 1200 tasks/s | ' +
    'raw PGMQ (1 loop) 4000 msgs/s | 0.30x tasks/msgs (0.25-0.35) | >= 0.25x | met |',
    '| 9 vs pgflow | (skipped) | npm pack failed \\| offline | - | (none) | - |',
  ]);
  assert.ok(
    lines.includes(
      '- Figures 1, 2: `deno task bench --only=1,2 --quick` on 2026-12-01, commit abc1234; ' +
        'throwaway cluster: PostgreSQL 15.20, PGMQ extension 1.4.4; Deno 2.9.6; 2 CPU(s).',
    ),
    'the figures of one run share a line',
  );
  assert.ok(
    lines.includes(
      '- Figure 9: `deno task bench --only=9` on 2026-12-02, commit (unknown); DATABASE_URL: ' +
        'PostgreSQL 15.20, PGMQ extension 1.4.4; Deno 2.9.6; 8 CPU(s).',
    ),
  );
  assert.ok(
    lines.some((l) => l.startsWith('Not in bench/results/latest.json yet: figures 3-8, 10-17 ')),
  );
  assert.ok(!lines.some((l) => l.includes('a note kept in the JSON')), 'notes stay in the JSON');
  assert.match(renderTable({ figures: [] }, seventeen), /Nothing in .* yet: figures 1-17 /);
});

Deno.test('the table goes between the markers, formatted as deno fmt formats the page', async () => {
  const page = `# Benchmarks\n\nBefore.\n\n${TABLE_BEGIN}\nstale\n${TABLE_END}\n\nAfter.\n`;
  const written = await pageWithTable(page, fixture, seventeen);
  assert.match(written, /^# Benchmarks\n\nBefore\.\n\n<!-- bench:table begin/);
  assert.match(written, /\n<!-- bench:table end -->\n\nAfter\.\n$/);
  assert.ok(!written.includes('stale'));
  // Columns padded to the widest cell (the label of figure 2, 43 characters), as deno fmt does.
  assert.match(written, /\n\| -{43} \| -+ \|/);
  assert.match(written, /\n\| 9 vs pgflow {33}\| \(skipped\) +\|/);
  await assert.rejects(
    () => pageWithTable('# Benchmarks\n', fixture, seventeen),
    /BENCHMARKS\.md has no table markers/,
  );
});

Deno.test('a run replaces the records of its figures and keeps the others', () => {
  const [two, one, nine] = fixture.figures;
  const again = { ...one, ranAt: '2026-12-03T00:00:00.000Z', commit: 'def5678' };
  const merged = mergeResult(fixture, [again]);
  assert.deepEqual(merged.figures.map((f) => [f.figure, f.commit]), [
    [1, 'def5678'],
    [2, 'abc1234'],
    [9, null],
  ]);
  assert.deepEqual(mergeResult(null, [nine, two]).figures.map((f) => f.figure), [2, 9]);
});

Deno.test('a malformed result is refused, naming the file and the field', () => {
  assert.throws(() => parseResult('{', 'r.json'), /r\.json is not JSON/);
  assert.throws(() => parseResult('{}', 'r.json'), /r\.json: "figures" must be an array/);
  const row = { label: '1 x', measured: 'm', sideBySide: 's', ratio: 'r', target: 't' };
  const record = {
    figure: 1,
    name: 'x',
    ranAt: '2026-12-01T00:00:00Z',
    commit: null,
    arguments: [],
    environment: 'e',
    notes: [],
    rows: [row],
  };
  assert.throws(
    () => parseResult(JSON.stringify({ figures: [record] }), 'r.json'),
    /r\.json: figures\[0\]\.rows\[0\]\.result must be a string/,
  );
  assert.throws(
    () => parseResult(JSON.stringify({ figures: [{ ...record, figure: 0 }] }), 'r.json'),
    /figures\[0\]\.figure must be a figure number \(1 or more\), got 0/,
  );
});

Deno.test('bench/figures/ holds one module per figure, numbered 1 to N without a gap', async () => {
  const figures = await figureFiles();
  assert.deepEqual(figures.map((f) => f.number), figures.map((_, i) => i + 1));
  assert.ok(figures.length >= 17);
});

Deno.test(`${PAGE}'s current table is what deno task bench:table writes from bench/results/latest.json`, async () => {
  const page = await Deno.readTextFile(join(KIT_ROOT, PAGE));
  assert.ok(
    page === await benchmarksPage(),
    `${PAGE} is not built from bench/results/latest.json: run \`deno task bench:table\``,
  );
});
