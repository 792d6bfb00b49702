/**
 * The user docs' sections a newcomer follows, run as written (issues 28, 38, 39, 44): README.md's
 * "Add Switchyard to your Supabase project" (its quick path), docs/guide/client.md's "From Deno"
 * and "From a Node app", and docs/guide/testing.md's "A flow with a wait, a sleep, a retry and a
 * rate limit" and "Replaying a run from your database". The test reads each section by file and
 * heading (up to the next heading of its level: tests/_helpers/docs.ts), takes the
 * sections' code blocks in order and runs them, in a project made by the real `supabase init` of
 * CLI 2 and of CLI 3, with the npm package this checkout builds (`deno task build-npm`, packed
 * with `npm pack`): no command runs from the kit's checkout.
 *
 * - An `sh` block runs line by line in bash from the project's directory, with only what a reader
 *   substitutes: the package's tarball for `switchyard@npm:@switchyard/switchyard` (as the npm
 *   registry would serve it), exact versions for the Node tools the README installs, the `export
 *   DATABASE_URL=…` line names this suite's database and `<port>` is the one `serve` prints. The
 *   line running `serve` keeps running, as in its own terminal, until the test ends. A comment
 *   line holding JSON is the output the previous command must print (`…`: any text).
 * - A plain block right after an `sh` block is that block's output: its lines must appear, in
 *   order and consecutively, in what the block's commands printed. A line starting with `…`
 *   stands for any lines; in a line, a word holding `…` stands for any word, a 14-digit migration
 *   timestamp for any, and `/home/me/my-app` for the project.
 * - A `ts` or `json` block is a file, written where the paragraph before it says (its last
 *   `….ts`, `….mts` or `….json`).
 *
 * Two paths per CLI, the two the first section offers: by hand (install, the flow and its
 * registry, scaffold-queue, compile, db:push, a start from psql while no worker has ever run,
 * serve and the curl that starts the worker, then the Deno app of the second section and, for
 * CLI 3, the Node app of the third, whose `tsc` also refuses a wrong input and an unknown alias)
 * and the example (install, then `install --example` and the commands it prints next, the flow's
 * tests among them; then, with CLI 2, the testing guide: a flow's test with a wait, a sleep, a
 * retry and a rate limit, and the example's run exported from the database and replayed). Each
 * ends with `npx switchyard doctor` finding nothing wrong. Docs drift — a block that no longer
 * runs, an output that is no longer printed — fails this test.
 *
 * The test files `readme_cli2_test.ts` and `readme_cli3_test.ts` each register one CLI's two paths
 * (`defineReadmeTests`), so the two CLIs run side by side; they install the one tarball the run
 * builds (tests/_helpers/npm_package.ts).
 *
 * @module
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import postgres from 'postgres';
import { DEFAULT_PG_BIN } from '../../tools/_cluster.ts';
import { adminUrl, urlFor } from '../_helpers/db.ts';
import { packedKit } from '../_helpers/npm_package.ts';
import { ok, run, SUPABASE_CLIS, supabaseInit } from '../_helpers/project.ts';
import { waitFor } from '../_helpers/wait.ts';
import { type Output, runCommand, Spawned } from '../_helpers/process.ts';
import { type DocBlock, sectionBlocks as docSection } from '../_helpers/docs.ts';

/** `SWITCHYARD_README_TRANSCRIPT=1` prints each README command (as written) and its output. */
const TRANSCRIPT = Deno.env.get('SWITCHYARD_README_TRANSCRIPT') === '1';
/** A section of a user doc: its file (relative to the kit) and its heading. */
type Section = readonly [file: string, heading: string];
const ADD: Section = ['README.md', '## Add Switchyard to your Supabase project'];
const APP: Section = ['docs/guide/client.md', '## From Deno'];
const NODE: Section = ['docs/guide/client.md', '## From a Node app'];
const TESTING: readonly Section[] = [
  ['docs/guide/testing.md', '## A flow with a wait, a sleep, a retry and a rate limit'],
  ['docs/guide/testing.md', '## Replaying a run from your database'],
];
/** What `npm install --save-dev tsx typescript @types/node` gets, pinned for the suite. */
const NODE_TOOLS = 'tsx@4.23.15 typescript@7.0.2 @types/node@22.19.1';

/** One fenced block of a doc. */
type Block = DocBlock;

/** The fenced blocks of `section`, each of a language this test runs. */
function sectionBlocks([file, heading]: Section): Block[] {
  const blocks = docSection(file, heading);
  for (const b of blocks) {
    assert.ok(
      ['sh', 'ts', 'json', ''].includes(b.lang),
      `${file} line ${b.line}: a "${b.lang}" block in "${heading}", which this test cannot run`,
    );
  }
  return blocks;
}

/** `b`'s place, for messages: `README.md line 12`. */
const at = (b: Block): string => `${b.file} line ${b.line}`;

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Asserts the README's output `expected` appears in `actual` (see the module doc). */
function assertPrinted(expected: string, actual: string, project: string, where: string): void {
  const pattern = expected.split('\n').map((line) =>
    line.startsWith('…') ? null : new RegExp(
      `^${
        line.trimEnd().split(/( +)/).map((word) =>
          /^ +$/.test(word)
            ? word
            : word.includes('…')
            ? '\\S+'
            : escape(word).replaceAll('/home/me/my-app', escape(project)).replace(
              /\d{14}/g,
              '\\d{14}',
            )
        ).join('')
      }$`,
    )
  );
  const got = actual.split('\n').map((l) => l.trimEnd());
  const matchAt = (p: number, a: number): boolean => {
    if (p === pattern.length) return true;
    const re = pattern[p];
    if (re === null) {
      for (let k = a; k <= got.length; k++) if (matchAt(p + 1, k)) return true;
      return false;
    }
    return a < got.length && re.test(got[a]) && matchAt(p + 1, a + 1);
  };
  assert.ok(
    got.some((_, a) => matchAt(0, a)),
    `${where}: the doc's output\n${expected}\nis not what the commands printed:\n${actual}`,
  );
}

/** The commands of an `sh` block: continuation lines joined, blank lines dropped. */
const commands = (body: string): string[] =>
  body.replace(/\\\n\s*/g, '').split('\n').filter((l) => l.trim() !== '');

/** One reader's run through the blocks: the project, the database and what is still running. */
class Reader {
  env: Record<string, string>;
  port: string | null = null;
  background: Spawned[] = [];
  /** What each command of the last `sh` block printed, in order. */
  outputs: string[] = [];
  get printed(): string {
    return this.outputs.join('');
  }

  constructor(readonly project: string, readonly url: string, readonly tarball: string) {
    // This process's environment (HOME, the Deno cache, proxies) without what would change
    // what the README's commands do; psql from the suite's server binaries when not on PATH.
    this.env = Object.fromEntries(
      Object.entries(Deno.env.toObject()).filter(([name]) =>
        name !== 'DATABASE_URL' && name !== 'SLACK_WEBHOOK_URL' &&
        !/^(SWITCHYARD|SUPABASE)_/.test(name)
      ),
    );
    const pgBin = Deno.env.get('PG_BIN') ?? DEFAULT_PG_BIN;
    Object.assign(this.env, {
      NO_COLOR: '1',
      DO_NOT_TRACK: '1',
      SUPABASE_TELEMETRY_DISABLED: '1',
      PATH: `${Deno.env.get('PATH') ?? '/usr/bin:/bin'}:${pgBin}`,
    });
  }

  /** The README's line with the reader's substitutions. */
  substitute(line: string): string {
    let out = line.replace(
      /switchyard@npm:@switchyard\/switchyard(@latest)?\b/,
      `switchyard@file:${this.tarball}`,
    ).replace(
      /^npm install --save-dev tsx typescript @types\/node$/,
      `npm install --save-dev ${NODE_TOOLS}`,
    );
    if (out.includes('<port>')) {
      assert.ok(this.port, `"${line}" needs the port of a serve that has not started`);
      out = out.replaceAll('<port>', this.port);
    }
    return out;
  }

  /** Runs one `sh` block; `after` checks what a command did right after it ran. */
  async sh(block: Block, after: (command: string) => Promise<void> = async () => {}) {
    this.outputs = [];
    for (const line of commands(block.body)) {
      const where = `${at(block)}: ${line}`;
      if (line.startsWith('#')) {
        const json = line.match(/^# (\{.*\})/);
        if (json) {
          const re = new RegExp(`^${escape(json[1]).replaceAll('…', '[^"]*')}$`);
          assert.match(
            this.outputs.at(-1)?.trim() ?? '',
            re,
            `${where}: the previous command printed otherwise`,
          );
        }
        continue;
      }
      const exported = line.match(/^export DATABASE_URL=\S+( +#.*)?$/);
      if (exported) {
        this.env.DATABASE_URL = this.url;
        continue;
      }
      const command = this.substitute(line);
      if (/ switchyard serve\b/.test(line)) {
        await this.serve(command, where, line);
        continue;
      }
      const out = await this.bash(`set -eo pipefail\n${command}`);
      this.outputs.push(out.stdout);
      if (TRANSCRIPT) console.log(`$ ${line}\n${out.stdout}`);
      assert.equal(out.code, 0, `${where} failed:\n${out.stdout}\n${out.stderr}`);
      await after(line);
    }
  }

  /** A README line for bash, from the project's directory, in this run's environment only. */
  bash(script: string): Promise<Output> {
    // npm installs and the Supabase CLI's first download take long on a loaded machine.
    return runCommand('bash', ['-c', script], {
      cwd: this.project,
      env: this.env,
      clearEnv: true,
      timeoutMs: 600_000,
    });
  }

  /** The serve line, left running as in its own terminal; its printed port is `<port>`. */
  async serve(command: string, where: string, line: string): Promise<void> {
    const child = new Spawned('bash', ['-c', command], {
      cwd: this.project,
      env: this.env,
      clearEnv: true,
    });
    this.background.push(child);
    const [, port] = await child.waitFor(/http:\/\/127\.0\.0\.1:(\d+)\/functions\/v1\//, {
      timeoutMs: 90_000,
    }).catch((e) => {
      throw new Error(`${where}: ${(e as Error).message}`);
    });
    this.port = port;
    if (TRANSCRIPT) console.log(`$ ${line}   (left running)\n${child.stdout}`);
  }

  /** Ends what `serve` started (the task, serve.ts and its functions). */
  async stop(): Promise<void> {
    for (const child of this.background) await child.stop('SIGKILL');
  }

  /** Writes a `ts` or `json` block where its lead paragraph says. */
  async write(block: Block): Promise<string> {
    const names = [...block.lead.matchAll(/`([\w./-]+\.(?:m?ts|json))`/g)].map((m) => m[1]);
    assert.ok(names.length, `${at(block)}: the paragraph names no file`);
    const path = join(this.project, names[names.length - 1]);
    await Deno.mkdir(join(path, '..'), { recursive: true });
    await Deno.writeTextFile(path, block.body + '\n');
    return names[names.length - 1];
  }
}

/** The `sh` block `test` picks out of `blocks`, exactly one; its index. */
function find(blocks: Block[], what: string, test: (body: string) => boolean): number {
  const found = blocks.flatMap((b, i) => (b.lang === 'sh' && test(b.body) ? [i] : []));
  assert.equal(found.length, 1, `${ADD.join(' ')}: one block ${what}, found ${found.length}`);
  return found[0];
}

const add = sectionBlocks(ADD);
const testing = TESTING.flatMap(sectionBlocks);
const INSTALL = find(
  add,
  'installing',
  (b) =>
    /^npm install --save-dev switchyard@npm:@switchyard\/switchyard\nnpx switchyard install$/.test(
      b,
    ),
);
const EXAMPLE = find(add, 'installing the example', (b) => /switchyard install --example/.test(b));

/** The blocks at `indexes` (outputs aside), each `sh` block with the output block after it. */
function steps(blocks: Block[], indexes: number[]): { block: Block; output: Block | null }[] {
  return indexes.filter((i) => blocks[i].lang !== '').map((i) => ({
    block: blocks[i],
    output: blocks[i].lang === 'sh' && blocks[i + 1]?.lang === '' ? blocks[i + 1] : null,
  }));
}

/** A new database on the suite's server, for one reader. */
async function withDatabase(fn: (url: string, sql: postgres.Sql) => Promise<void>) {
  const database = `sy_readme_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${database}"`);
  const sql = postgres(urlFor(database), { max: 1, onnotice: () => {} });
  try {
    await fn(urlFor(database), sql);
  } finally {
    await sql.end();
    await admin.unsafe(`drop database if exists "${database}" with (force)`);
    await admin.end();
  }
}

/** Runs `steps`, matching each output block; `after` as in {@linkcode Reader.sh}. */
async function runSteps(
  reader: Reader,
  list: { block: Block; output: Block | null }[],
  after?: (command: string) => Promise<void>,
): Promise<void> {
  for (const { block, output } of list) {
    if (block.lang === 'ts' || block.lang === 'json') {
      await reader.write(block);
      continue;
    }
    await reader.sh(block, after);
    if (output) {
      assertPrinted(output.body, reader.printed, reader.project, at(output));
    }
  }
}

/** `npx switchyard doctor` in the project: nothing wrong, exit 0. */
async function doctorClean(reader: Reader): Promise<void> {
  const out = await reader.bash('npx switchyard doctor');
  const said = `${out.stdout}${out.stderr}`;
  assert.equal(out.code, 0, `npx switchyard doctor:\n${said}`);
  assert.match(said, /no problem found in /);
}

/** `npx tsc` in the project, with `start.mts` changed by `edit`: its exit code and output. */
async function tscWith(reader: Reader, edit: (ts: string) => string) {
  const path = join(reader.project, 'start.mts');
  const original = await Deno.readTextFile(path);
  const changed = edit(original);
  assert.notEqual(changed, original, 'the edit changes start.mts');
  await Deno.writeTextFile(path, changed);
  try {
    const out = await reader.bash('npx tsc');
    return { code: out.code, said: `${out.stdout}${out.stderr}` };
  } finally {
    await Deno.writeTextFile(path, original);
  }
}

/** Registers the README's two paths in a project of the named Supabase CLI (`'CLI 2'`, `'CLI 3'`). */
export function defineReadmeTests(cliName: string): void {
  const cli = SUPABASE_CLIS.find((c) => c.name === cliName);
  if (!cli) {
    throw new Error(
      `no Supabase CLI named "${cliName}": use one of ${
        SUPABASE_CLIS.map((c) => c.name).join(', ')
      }`,
    );
  }
  Deno.test(`README (${cli.name}): by hand, npm install → install → flow → scaffold → compile → push → a start with no worker → serve; then the apps`, async () => {
    const project = await supabaseInit('switchyard-readme-', cli);
    try {
      await withDatabase(async (url, sql) => {
        const reader = new Reader(project, url, await packedKit());
        try {
          const byHand = add.map((_, i) => i).filter((i) => i !== EXAMPLE);
          let firstStart: string | null = null;
          await runSteps(reader, steps(add, byHand), async (command) => {
            if (!/start_flow\('greet'/.test(command)) return;
            // The first start, right after the push: compiled by the migration, no worker yet.
            const runs = await sql<{ run_id: string; status: string }[]>`
            select run_id, status from switchyard.runs where started_as = 'greet'`;
            assert.equal(runs.length, 1);
            assert.equal(runs[0].status, 'started');
            const [{ n }] = await sql<
              { n: number }[]
            >`select count(*)::int as n from switchyard.workers`;
            assert.equal(n, 0, 'no worker ran before the first start');
            firstStart = runs[0].run_id;
          });
          assert.ok(firstStart, 'the section starts greet from psql');
          // "it runs the queued run": the worker the curl started finishes it.
          const done = await waitFor('the queued run to complete', async () => {
            const [r] = await sql<{ status: string; output: unknown }[]>`
            select status, output from switchyard.runs where run_id = ${firstStart!}`;
            return r.status === 'completed' ? r : null;
          }, { timeoutMs: 60_000 });
          assert.deepEqual(done.output, { deliver: 11 });

          const app = sectionBlocks(APP);
          assert.deepEqual(
            app.map((b) => b.lang),
            ['ts', 'sh', ''],
            `${APP.join(' ')}: app.ts, its run`,
          );
          assert.equal(await reader.write(app[0]), 'app.ts');
          await runSteps(reader, steps(app, [1]));
          const [grace] = await sql<{ status: string; output: unknown }[]>`
          select status, output from switchyard.runs
           where started_as = 'greet' and input->>'name' = 'Grace'`;
          assert.equal(grace?.status, 'completed');
          assert.deepEqual(grace.output, { deliver: 13 });
          if (cli === SUPABASE_CLIS[0]) {
            // Typed: the app type-checks as written against the installed runtime (once: the
            // types do not depend on the CLI that made the project).
            ok(
              await run(['check', '--config', 'supabase/functions/deno.json', 'app.ts'], project),
              'deno check app.ts',
            );
          } else {
            // The Node app (once: Node and its tools do not depend on the Supabase CLI either),
            // on the worker the curl started.
            const node = sectionBlocks(NODE);
            assert.deepEqual(
              node.map((b) => b.lang),
              ['ts', 'sh', '', 'json', 'sh'],
              `${NODE.join(' ')}: start.mts, its run, tsconfig.json, tsc`,
            );
            await runSteps(reader, steps(node, [0, 1, 3, 4]));
            const [ada] = await sql<{ n: number }[]>`
            select count(*)::int as n from switchyard.runs
             where started_as = 'greet' and input->>'name' = 'Ada' and status = 'completed'`;
            assert.equal(ada.n, 2, 'the psql start and the Node start of Ada, both completed');
            // "A wrong input or an alias the registry does not have fails there".
            const wrongInput = await tscWith(reader, (ts) => ts.replace("'Ada'", '42'));
            assert.notEqual(wrongInput.code, 0, 'tsc accepts { name: 42 }');
            assert.match(wrongInput.said, /start\.mts.*number.*not assignable to.*string/s);
            const unknownAlias = await tscWith(reader, (ts) => ts.replace("'greet'", "'gret'"));
            assert.notEqual(unknownAlias.code, 0, "tsc accepts the alias 'gret'");
            assert.match(unknownAlias.said, /start\.mts.*"gret"/s);
          }
          await doctorClean(reader);
        } finally {
          await reader.stop();
        }
      });
    } finally {
      await Deno.remove(project, { recursive: true });
    }
  });

  Deno.test(`README (${cli.name}): npm install, install, then install --example and the commands it prints next, to the typed output`, async () => {
    const project = await supabaseInit('switchyard-readme-example-', cli);
    try {
      await withDatabase(async (url, sql) => {
        const reader = new Reader(project, url, await packedKit());
        await runSteps(reader, steps(add, [INSTALL, INSTALL + 1]));
        await runSteps(reader, steps(add, [EXAMPLE]));
        const [install, ...next] = commands(add[EXAMPLE].body);
        const installed = reader.outputs[0];
        for (
          const path of [
            'supabase/functions/_shared/flows/greet.ts',
            'supabase/functions/_shared/registry.ts',
            'example.ts',
            'supabase/functions/greetings-worker/index.ts',
          ]
        ) {
          assert.match(installed, new RegExp(`^(created|updated)\\s+${path}$`, 'm'));
        }
        // "The installer prints the next three commands": the block's, as the README has them.
        const printed = installed.split('\nnext, test the flow (no database needed):\n')[1]
          ?.trim().split('\n').map((l) => l.trim())
          .filter((l) => l !== 'then run it against a PostgreSQL (DATABASE_URL):');
        assert.deepEqual(
          printed,
          next.filter((l) => !l.startsWith('export ')),
          `${install} prints the README's next commands`,
        );
        // "Running it again says nothing to do."
        const again = await reader.bash(install);
        const said = again.stdout;
        assert.equal(again.code, 0, `${install}, again:\n${said}`);
        assert.match(said, /nothing to do/);
        const [first] = await sql<{ run_id: string; started_at: Date; output: unknown }[]>`
        select run_id::text, started_at, output from switchyard.runs where started_as = 'greet'`;
        assert.deepEqual(first.output, { deliver: 11 });
        const [{ earliest }] = await sql<{ earliest: Date }[]>`
        select min(started_at) as earliest from switchyard.workers`;
        assert.ok(first.started_at < earliest, 'the run started before any worker did');
        if (cli === SUPABASE_CLIS[0]) {
          ok(
            await run(['check', '--config', 'supabase/functions/deno.json', 'example.ts'], project),
            'deno check example.ts',
          );
          // The testing guide: the refund flow and its test, then the greet run example.ts ran,
          // exported from the database and replayed by its test.
          await runSteps(reader, steps(testing, testing.map((_, i) => i)));
          const record = JSON.parse(
            await Deno.readTextFile(
              join(project, 'supabase/functions/_shared/flows/greet_run.json'),
            ),
          );
          assert.equal(record.format, 'switchyard-run/1');
          assert.equal(record.run.runId, first.run_id);
        }
        await doctorClean(reader);
      });
    } finally {
      await Deno.remove(project, { recursive: true });
    }
  });
}
