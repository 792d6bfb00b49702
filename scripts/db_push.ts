/**
 * `deno task db:push`: applies supabase/migrations to `DATABASE_URL` through the
 * Supabase CLI (loading the PGMQ-compatible layer first when PGMQ is absent).
 *
 * @module
 */
import { migrate, MigrationError } from '../lib/ops.ts';

const url = Deno.env.get('DATABASE_URL');
try {
  if (!url) throw new MigrationError('DATABASE_URL is not set: point it at a PostgreSQL database');
  await migrate(url, { log: (line) => console.log(line) });
  console.log('migrations applied');
} catch (e) {
  console.error(`error: ${(e as Error).message}`);
  Deno.exit(1);
}
