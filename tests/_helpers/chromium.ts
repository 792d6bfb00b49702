/**
 * Debian's chromium, headless, for the browser tests (driven over CDP by playwright-core): a
 * missing binary fails the test with how to install it, never skips it.
 */
import { exists, freePort } from '../../cli/_util.ts';
import { Spawned } from './process.ts';
import { waitFor } from './wait.ts';

/** The chromium binary: `CHROMIUM`, else Debian's. */
export const CHROMIUM = Deno.env.get('CHROMIUM') ?? '/usr/bin/chromium';

/** Starts chromium headless with remote debugging on a free port; returns its CDP URL. */
export async function startChromium() {
  if (!(await exists(CHROMIUM))) {
    throw new Error(
      `chromium is missing at ${CHROMIUM}: install it with \`apt-get install -y chromium\` ` +
        '(`deno task test` does as root), or point CHROMIUM at a Chromium binary',
    );
  }
  const port = freePort();
  const profile = await Deno.makeTempDir({ prefix: 'switchyard-chromium-' });
  const child = new Spawned(
    CHROMIUM,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--hide-scrollbars',
      `--user-data-dir=${profile}`,
      `--remote-debugging-port=${port}`,
      'about:blank',
    ],
    { stdout: 'null', stderr: 'null' },
  );
  const cdp = `http://127.0.0.1:${port}`;
  await waitFor('chromium to listen for CDP', async () => {
    const r = await fetch(`${cdp}/json/version`);
    await r.body?.cancel();
    return r.ok;
  }, {
    timeoutMs: 60_000,
    intervalMs: 100,
  });
  return {
    cdp,
    async stop() {
      await child.stop('SIGTERM'); // chromium and every process it started
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    },
  };
}
