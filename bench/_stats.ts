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
