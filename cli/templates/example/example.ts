/**
 * The example's client script, written by `npx switchyard install --example`. From the project
 * root, after `npx switchyard db:push` (or `supabase db push`):
 *
 *     DATABASE_URL=postgres://… npx deno run -A --config supabase/functions/deno.json example.ts [name]
 *
 * (`npx deno`: the Deno the kit's npm package brings; without the package, `npx -y deno@2`.)
 *
 * It starts the flow with the typed client (the migrations compiled it: no worker has to run
 * first), then runs the queue's worker in this process (in production the queue function
 * `greetings-worker` does) and prints the run's typed output.
 *
 * @module
 */
import { startWorker } from 'switchyard';
import { createClient } from 'switchyard/client.ts';
import { registry } from './supabase/functions/_shared/registry.ts';

const connectionString = Deno.env.get('DATABASE_URL');
const client = createClient(registry, { connectionString });
const run = await client.start('greet', { name: Deno.args[0] ?? 'Ada' });
console.log(`started run ${run.runId} of greet`);
const worker = await startWorker(registry, { queueName: 'greetings', connectionString });
try {
  const { deliver } = await run.output({ timeoutMs: 30_000 });
  console.log(`completed: deliver = ${deliver} (the greeting's length)`);
} finally {
  await worker.stop();
  await client.close();
}
