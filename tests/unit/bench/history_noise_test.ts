/**
 * Figure 7's trend check (bench/figures/07_history.ts noiseCheck): per-round ratios that only scatter
 * pass it, the same ratios with a decline of 15 % over the run fail it (a tenth is about what
 * this scatter resolves).
 */
import assert from 'node:assert/strict';
import { noiseCheck, worstWindowMedian } from '../../../bench/figures/07_history.ts';
import { partMedians } from '../../../bench/_stats.ts';

/** 100 ratios around 1.0 scattered by ±25 % (a fixed sequence, no trend). */
function scattered(): number[] {
  let seed = 7;
  return Array.from({ length: 100 }, () => {
    seed = (seed * 48271) % 2147483647;
    return 0.75 + 0.5 * (seed / 2147483647);
  });
}

Deno.test('noiseCheck: scatter alone is no trend, though its worst window is low', () => {
  const r = scattered();
  const c = noiseCheck(r);
  assert.ok(c.steeper >= 0.05, `steeper ${c.steeper}`);
  // The worst 5-round median of pure scatter is far below the median, and random orders of
  // the same values reach about as low: the statistic alone cannot tell noise from history.
  assert.ok(worstWindowMedian(r) < 0.9);
  assert.ok(c.worstP5 <= worstWindowMedian(r) + 0.05 && c.worstP95 >= worstWindowMedian(r) - 0.05);
  assert.deepEqual(noiseCheck(r), c, 'seeded: the same values give the same numbers');
});

Deno.test('noiseCheck: a decline of 15 % over the run is a trend', () => {
  const r = scattered().map((x, i) => x * (1 - (0.15 * i) / 100));
  const c = noiseCheck(r);
  assert.ok(c.steeper < 0.05, `steeper ${c.steeper}`);
  assert.ok(c.slopePer < 0);
  const q = partMedians(r);
  assert.equal(q.length, 4);
  assert.ok(q[3] < q[0]);
});
