/**
 * `deno task rerun`: see cli/_run_controls.ts (docs/design/rerun.md).
 *
 * Needs `DATABASE_URL`. Exit codes: 0 done (or counted, in a dry run), 1 refused, 2 bad usage.
 *
 * @module
 */
import { runControlCommand } from './_run_controls.ts';

await runControlCommand('rerun');
