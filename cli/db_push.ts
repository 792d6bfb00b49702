/**
 * `deno task db:push [--project DIR]` (`npx switchyard db:push` from the npm package): applies
 * the migrations of a project (`--project DIR`, else the one the user is in, found by
 * `cli/_invocation.ts`: in the kit's checkout, the kit's own `supabase/migrations`) to the
 * database of the one resolver (`SWITCHYARD_DB_URL`, `SUPABASE_DB_URL` or `DATABASE_URL`)
 * through the Supabase CLI, loading the PGMQ-compatible layer first when PGMQ is absent (never on
 * a server with the extension).
 *
 * @module
 */
import { parseArgs } from 'node:util';
import { MigrationError } from '../lib/errors.ts';
import { resolveConnectionString } from '../lib/sql/connection.ts';
import { migrate } from '../lib/sql/migrate.ts';
import { commandArgs } from './_help.ts';
import { commandName, findProject } from './_invocation.ts';

const USAGE = `usage: DATABASE_URL=postgres://… ${commandName('db:push')} [--project DIR]

Applies the project's supabase/migrations with \`supabase db push --db-url …\`
(Supabase CLI 2.117.0), after making sure PGMQ exists (PGMQ_MODE=auto|compat|extension).
The database is SWITCHYARD_DB_URL, else SUPABASE_DB_URL, else DATABASE_URL.

  --project DIR  the Supabase project; default: the project you are in (the nearest directory
                 upward with supabase/config.toml)
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
  const workdir = findProject(values.project);
  await migrate(url, { log: (line) => console.log(line), workdir });
  console.log('migrations applied');
} catch (e) {
  console.error(`error: ${(e as Error).message}`);
  Deno.exit(1);
}
