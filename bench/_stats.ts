/**
 * Small statistics and formatting helpers for the benchmark.
 *
 * @module
 */

/** The median of a non-empty list. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of an empty list');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * The median of the per-round ratios of paired samples (each round measures both sides back
 * to back, so a burst of load from elsewhere hits both), with the lowest and highest.
 */
export function roundRatio(
  numerator: readonly number[],
  denominator: readonly number[],
): { ratio: number; low: number; high: number } {
  const perRound = numerator.map((n, i) => n / denominator[i]);
  return { ratio: median(perRound), low: Math.min(...perRound), high: Math.max(...perRound) };
}

/** mulberry32: a small seeded generator of numbers in [0, 1), so a rerun repeats its draws. */
export function seededRandom(seed: number): () => number {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The least-squares slope of `values` over their index (per position). */
export function slope(values: readonly number[]): number {
  const n = values.length;
  const mx = (n - 1) / 2;
  const my = values.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  values.forEach((y, x) => {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  });
  return den === 0 ? 0 : num / den;
}

/** The medians of `parts` consecutive, nearly equal parts of `values`, in order. */
export function partMedians(values: readonly number[], parts = 4): number[] {
  const out: number[] = [];
  for (let p = 0; p < parts; p++) {
    const part = values.slice(
      Math.floor((p * values.length) / parts),
      Math.floor(((p + 1) * values.length) / parts),
    );
    if (part.length > 0) out.push(median(part));
  }
  return out;
}

/** Formats a number with a fixed count of significant decimals. */
export function fmt(value: number, decimals = 2): string {
  return Number.isFinite(value) ? value.toFixed(decimals) : String(value);
}

/** Renders rows as a Markdown table (the same text prints well in a terminal). */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [
    line(header),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...rows.map(line),
  ].join('\n');
}

/** Milliseconds since an earlier `performance.now()`. */
export function since(start: number): number {
  return performance.now() - start;
}
