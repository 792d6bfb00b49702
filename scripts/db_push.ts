/**
 * `deno task db:push [--project DIR]`: applies the migrations of a project (default: the kit's
 * own `supabase/migrations`) to the database of the one resolver (`SWITCHYARD_DB_URL`,
 * `SUPABASE_DB_URL` or `DATABASE_URL`) through the Supabase CLI, loading the
 * PGMQ-compatible layer first when PGMQ is absent (never on a server with the extension).
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { migrate, MigrationError, resolveConnectionString } from '../lib/ops.ts';
import { projectPath } from './_kit.ts';
import { commandArgs } from './_help.ts';

const USAGE = `usage: DATABASE_URL=postgres://… deno task db:push [--project DIR]

Applies DIR/supabase/migrations (default: the kit's own) with \`supabase db push --db-url …\`
(Supabase CLI 2.117.0), after making sure PGMQ exists (PGMQ_MODE=auto|compat|extension).
The database is SWITCHYARD_DB_URL, else SUPABASE_DB_URL, else DATABASE_URL.

  --project DIR  a project with supabase/migrations (for example one the installer wrote to)
  -h, --help     this text`;

let values;
try {
  ({ values } = parseArgs({
    args: commandArgs(),
    options: {
      project: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  }));
} catch (e) {
  console.error(`error: ${(e as Error).message}\n\n${USAGE}`);
  Deno.exit(2);
}
if (values.help) {
  console.log(USAGE);
  Deno.exit(0);
}
const url = resolveConnectionString();
try {
  if (!url) {
    throw new MigrationError(
      'DATABASE_URL is not set (nor SWITCHYARD_DB_URL or SUPABASE_DB_URL): point it at a ' +
        'PostgreSQL database',
    );
  }
  await migrate(url, {
    log: (line) => console.log(line),
    ...(values.project === undefined ? {} : { workdir: projectPath(values.project) }),
  });
  console.log('migrations applied');
} catch (e) {
  console.error(`error: ${(e as Error).message}`);
  Deno.exit(1);
}
