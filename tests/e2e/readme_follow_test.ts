/**
 * The client guide's "Live progress, followed from a browser" (docs/guide/client.md), written as it is into an installed
 * project (issue 37, item 6): the run-events Edge Function (its `ts` block, at the path its first
 * line names) with its `toml` section in `supabase/config.toml`, `deno task serve` serving it
 * beside the example's queue function, and the guide's page (its `html` block) on a site of
 * another origin, with `browser.js` copied from the installed runtime as the guide says, in
 * headless chromium: the page follows a signed-in user's run (the user's access token, as the
 * block's `token` gets it from supabase-js) from its start to its end, every event once, in
 * order, as the database has them. The function type-checks as written against the installed
 * runtime. What the test supplies is what a page has around the block: `runId`, `supabase`
 * (`auth.getSession()`), `showStep` and `showProgress`, and the project's URL for
 * `https://<project>.supabase.co`.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { freePort } from '../../cli/_util.ts';
import { startChromium } from '../_helpers/chromium.ts';
import {
  ServeProcess,
  startQueueWorker,
  withInstalledProject,
} from '../_helpers/installed_project.ts';
import { ok, run } from '../_helpers/project.ts';
import { FAST_ENV, waitFor } from '../_helpers/wait.ts';
import { sectionBlocks as docSection } from '../_helpers/docs.ts';

const SECTION = ['docs/guide/client.md', '## Live progress, followed from a browser'] as const;
const SECRET = 'readme-follow-secret';
const JWT_SECRET = 'readme-follow-jwt-secret-of-at-least-32-characters';

/** The fenced blocks of the section, with their languages. */
const sectionBlocks = () => docSection(...SECTION);

function base64Url(bytes: Uint8Array | string): string {
  const b = typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes;
  return btoa(String.fromCharCode(...b)).replaceAll('+', '-').replaceAll('/', '_')
    .replace(/=+$/, '');
}

/** A Supabase access token (HS256) of the signed-in user `sub`. */
async function accessToken(sub: string): Promise<string> {
  const head = base64Url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const claims = base64Url(
    JSON.stringify({ sub, role: 'authenticated', exp: Math.floor(Date.now() / 1000) + 3600 }),
  );
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(JWT_SECRET),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${head}.${claims}`));
  return `${head}.${claims}.${base64Url(new Uint8Array(mac))}`;
}

Deno.test("the client guide: the run-events function and the page's followRun, in an installed project, from another origin", async () => {
  const blocks = sectionBlocks();
  const fn = blocks.filter((b) => b.lang === 'ts' && /^\/\/ supabase\/functions\//.test(b.body));
  assert.equal(fn.length, 1, `"${SECTION}": one ts block naming its function file`);
  const fnPath = fn[0].body.split('\n')[0].replace(/^\/\/ /, '');
  const toml = blocks.filter((b) => b.lang === 'toml');
  assert.equal(toml.length, 1, `"${SECTION}": the function's config.toml section`);
  const html = blocks.filter((b) => b.lang === 'html');
  assert.equal(html.length, 1, `"${SECTION}": the page`);

  await withInstalledProject('switchyard-readme-follow-', async (project) => {
    // Written as the guide has them.
    await Deno.mkdir(join(project.dir, fnPath, '..'), { recursive: true });
    await Deno.writeTextFile(join(project.dir, fnPath), fn[0].body + '\n');
    const config = join(project.dir, 'supabase/config.toml');
    await Deno.writeTextFile(config, `\n${toml[0].body}\n`, { append: true });
    ok(
      await run(['check', '--config', 'supabase/functions/deno.json', fnPath], project.dir),
      `deno check ${fnPath}`,
    );
    // "copy it where your site serves its files, beside the page"
    const site = await Deno.makeTempDir({ prefix: 'switchyard-site-' });
    await Deno.copyFile(
      join(project.dir, 'supabase/functions/_switchyard/browser.js'),
      join(site, 'browser.js'),
    );

    const serve = new ServeProcess(project.dir, ['--port', String(freePort())], {
      DATABASE_URL: project.url,
      SWITCHYARD_WORKER_SECRET: SECRET,
      SWITCHYARD_JWT_SECRET: JWT_SECRET,
      SWITCHYARD_LOG: 'warn',
      ...FAST_ENV,
    });
    const browser = await startChromium();
    let pageServer: Deno.HttpServer | undefined;
    try {
      const gateway = await serve.url();
      const user = crypto.randomUUID();
      const runId = crypto.randomUUID();
      // A run of the signed-in user, queued: the worker starts once the page follows.
      await project.sql`
        select switchyard.start_flow('greet', '{"name": "Ada"}'::jsonb, ${runId}::uuid,
                                     ${user}::uuid)`;

      const around = `<script>
  window.seen = [];
  const runId = ${JSON.stringify(runId)};
  const supabase = { auth: { getSession: async () =>
    ({ data: { session: { access_token: ${JSON.stringify(await accessToken(user))} } } }) } };
  const showStep = (step, event) => window.seen.push(step + ' ' + event);
  const showProgress = (step, data) => window.seen.push(step + ' progress ' + JSON.stringify(data));
</script>`;
      const page = `<!doctype html><html><head><meta charset="utf-8"><title>my app</title></head>
<body>${around}\n${
        html[0].body.replaceAll('https://<project>.supabase.co', gateway)
      }</body></html>`;
      const sitePort = freePort();
      pageServer = Deno.serve({ hostname: '127.0.0.1', port: sitePort, onListen() {} }, (r) => {
        const path = new URL(r.url).pathname;
        if (path === '/browser.js') {
          return new Response(Deno.readTextFileSync(join(site, 'browser.js')), {
            headers: { 'content-type': 'text/javascript' },
          });
        }
        return new Response(page, { headers: { 'content-type': 'text/html' } });
      });
      const b = await chromium.connectOverCDP(browser.cdp);
      const tab = await b.newPage();
      const errors: string[] = [];
      tab.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      tab.on('pageerror', (e) => errors.push(String(e)));
      // Another origin than the functions' (another port): the browser asks CORS.
      await tab.goto(`http://127.0.0.1:${sitePort}/`);
      const seen = () => tab.evaluate(() => (globalThis as unknown as { seen: string[] }).seen);
      const report = async () =>
        `page saw ${JSON.stringify(await seen())}; errors ${
          errors.join(' | ')
        }\nserve:\n${serve.log}`;
      await waitFor('the page to follow the queued run', async () => {
        return (await seen()).includes('run started');
      }, { timeoutMs: 60_000 }).catch(async (e) => {
        throw new Error(`${(e as Error).message}\n${await report()}`);
      });

      const started = await startQueueWorker(`${gateway}/functions/v1/greetings-worker`, SECRET);
      assert.equal(started.status, 200, started.body);
      await waitFor('the page to see the run complete', async () => {
        return (await seen()).includes('run completed');
      }, { timeoutMs: 60_000 }).catch(async (e) => {
        throw new Error(`${(e as Error).message}\n${await report()}`);
      });
      const events = await project.sql<{ step_slug: string | null; event: string }[]>`
        select step_slug, event from switchyard.run_events where run_id = ${runId}
         order by event_id`;
      assert.deepEqual(
        await seen(),
        events.map((e) => `${e.step_slug ?? 'run'} ${e.event}`),
        'every event once, in order',
      );
      assert.deepEqual(errors, []);
      await b.close();
    } finally {
      await pageServer?.shutdown();
      await browser.stop();
      await serve.stop();
      await Deno.remove(site, { recursive: true });
    }
  });
});
