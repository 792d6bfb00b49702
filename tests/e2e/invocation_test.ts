/**
 * How the kit's commands find the project and what they print (cli/_invocation.ts,
 * docs/design/local-runs.md): `--project` or the nearest directory upward with
 * `supabase/config.toml`; every next step and fix written as the user runs the kit (the npm
 * package's `npx switchyard`, the compiled `switchyard`, a checkout's `npx -y deno@2 task`);
 * the remote flag of the user's Supabase CLI, checked against the real CLI 2 and CLI 3; and the
 * commands run from inside a project made by the real `supabase init`, without `--project`.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import postgres from 'postgres';
import { SUPABASE_CLI } from '../../lib/sql/migrate.ts';
import { KIT_ROOT } from '../../cli/_project.ts';
import {
  atProjectRoot,
  commandName,
  denoCommand,
  findProject,
  ProjectNotFoundError,
  remoteFlag,
  supabaseCli,
  supabaseRemote,
  userCommand,
} from '../../cli/_invocation.ts';
import { MANIFEST_PATH } from '../../cli/install.ts';
import { adminUrl, urlFor } from '../_helpers/db.ts';
import { ok, run, supabaseInit } from '../_helpers/project.ts';
import { runCommand } from '../_helpers/process.ts';

const CLI = join(KIT_ROOT, 'cli', 'cli.ts');
const INVOCATION = 'SWITCHYARD_INVOCATION';

/** A temp directory with `app/` (a project, with `src/deep/`), `other/` (one too) and `empty/`. */
async function layout(): Promise<{ root: string; app: string; deep: string; other: string }> {
  const root = await Deno.makeTempDir({ prefix: 'sy-invocation-' });
  for (const project of ['app', 'other']) {
    await Deno.mkdir(join(root, project, 'supabase'), { recursive: true });
    await Deno.writeTextFile(join(root, project, 'supabase', 'config.toml'), '');
  }
  await Deno.mkdir(join(root, 'app', 'src', 'deep'), { recursive: true });
  await Deno.mkdir(join(root, 'empty', 'supabase', 'config.toml'), { recursive: true });
  return {
    root,
    app: join(root, 'app'),
    deep: join(root, 'app', 'src', 'deep'),
    other: join(root, 'other'),
  };
}

/** Runs `fn` with `SWITCHYARD_INVOCATION` set to `value` (unset for undefined), then restores it. */
function withInvocation<T>(value: string | undefined, fn: () => T): T {
  const saved = Deno.env.get(INVOCATION);
  if (value === undefined) Deno.env.delete(INVOCATION);
  else Deno.env.set(INVOCATION, value);
  try {
    return fn();
  } finally {
    if (saved === undefined) Deno.env.delete(INVOCATION);
    else Deno.env.set(INVOCATION, saved);
  }
}

/** Runs `fn` as inside the compiled binary: `Deno.build.standalone` true (what `deno compile` sets). */
function asCompiled<T>(fn: () => T): T {
  const build = Deno.build;
  Object.defineProperty(Deno, 'build', {
    value: Object.freeze({ ...build, standalone: true }),
    configurable: true,
    writable: true,
  });
  try {
    return withInvocation(undefined, fn);
  } finally {
    Object.defineProperty(Deno, 'build', { value: build, configurable: true, writable: true });
  }
}

Deno.test('findProject: --project, else the nearest project upward; a clear error for neither', async () => {
  const { root, app, deep, other } = await layout();
  try {
    assert.equal(findProject(undefined, deep), app);
    assert.equal(findProject(undefined, app), app);
    assert.equal(findProject('../..', deep), app);
    assert.equal(findProject('../other', app), other);
    assert.equal(findProject(other, deep), other);
    assert.throws(
      () => findProject('../nope', app),
      (e: Error) =>
        e instanceof ProjectNotFoundError &&
        e.message.startsWith(`--project ../nope: ${join(root, 'nope/supabase/config.toml')} is`) &&
        /a Supabase project holds supabase\/config\.toml/.test(e.message) &&
        /supabase init/.test(e.message),
    );
    // A folder named config.toml is no project.
    assert.throws(
      () => findProject(undefined, join(root, 'empty')),
      (e: Error) =>
        e instanceof ProjectNotFoundError &&
        e.message.startsWith(`no Supabase project in ${join(root, 'empty')} or any directory`) &&
        /run the command from inside a Supabase project/.test(e.message) &&
        /`supabase init`/.test(e.message) && /--project DIR/.test(e.message),
    );
    assert.throws(() => findProject('', app), /--project "" is empty/);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test('where the user stands: INIT_CWD when deno task runs in the kit, else the current directory', async () => {
  const { root, app, deep } = await layout();
  const module = new URL('../../cli/_invocation.ts', import.meta.url).href;
  const probe = (cwd: string, env: Record<string, string>) =>
    run(
      [
        'eval',
        `import { findProject, userDirectory } from '${module}';` +
        'console.log(userDirectory()); console.log(findProject());',
      ],
      cwd,
      env,
    );
  try {
    // `deno task` of a checkout: the kit's directory, the caller's in INIT_CWD.
    const task = await probe(KIT_ROOT, { INIT_CWD: deep });
    ok(task, 'from the kit with INIT_CWD');
    assert.deepEqual(task.stdout.trim().split('\n'), [deep, app]);
    // npm's shim, `deno run`: the current directory, whatever INIT_CWD an outer tool left.
    const here = await probe(deep, { INIT_CWD: root });
    ok(here, 'from the project with a stale INIT_CWD');
    assert.deepEqual(here.stdout.trim().split('\n'), [deep, app]);
    const kit = await probe(KIT_ROOT, { INIT_CWD: '' });
    ok(kit, 'from the kit');
    assert.equal(kit.stdout.trim().split('\n')[1], KIT_ROOT.replace(/\/$/, ''));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test('userCommand: npx switchyard, the compiled switchyard, and a checkout', async () => {
  const { root, app, deep } = await layout();
  const example = 'run -A --config supabase/functions/deno.json example.ts';
  try {
    // The npm package: the project is found where the user stands, so no --project.
    withInvocation('npx switchyard', () => {
      findProject(undefined, deep);
      assert.equal(userCommand('db:push'), 'npx switchyard db:push');
      assert.equal(
        userCommand('scaffold-queue', ['<queue>', '--force']),
        'npx switchyard scaffold-queue <queue> --force',
      );
      assert.equal(
        userCommand('resume', ['greetings-worker']),
        'npx switchyard resume greetings-worker',
      );
      assert.equal(commandName('compile'), 'npx switchyard compile');
      assert.equal(denoCommand(example), `npx deno ${example}`);
      assert.equal(atProjectRoot(denoCommand(example)), `cd ../.. && npx deno ${example}`);
      findProject(undefined, app);
      assert.equal(atProjectRoot(denoCommand(example)), `npx deno ${example}`);
      // A project elsewhere keeps the --project the user gave.
      findProject('../other', app);
      assert.equal(userCommand('compile'), 'npx switchyard compile --project ../other');
      assert.equal(atProjectRoot('x'), 'cd ../other && x');
    });
    withInvocation('npx @switchyard/switchyard', () => {
      findProject(undefined, app);
      assert.equal(userCommand('doctor'), 'npx @switchyard/switchyard doctor');
    });

    // The compiled binary.
    asCompiled(() => {
      findProject(undefined, deep);
      assert.equal(userCommand('db:push'), 'switchyard db:push');
      assert.equal(userCommand('fence', ['end']), 'switchyard fence end');
      assert.equal(commandName('serve'), 'switchyard serve');
      assert.equal(denoCommand('--version'), 'npx -y deno@2 --version');
      findProject('../other', app);
      assert.equal(userCommand('serve'), 'switchyard serve --project ../other');
    });

    // A checkout: `deno task` runs in the kit, so every project but the kit's own is named.
    withInvocation(undefined, () => {
      findProject(undefined, deep);
      assert.equal(userCommand('db:push'), `npx -y deno@2 task db:push --project ${app}`);
      assert.equal(userCommand('drain'), 'npx -y deno@2 task drain');
      assert.equal(commandName('install'), 'deno task install');
      findProject('../other', app);
      assert.equal(
        userCommand('scaffold-queue', ['orders']),
        'npx -y deno@2 task scaffold-queue orders --project ../other',
      );
      findProject(undefined, KIT_ROOT);
      assert.equal(userCommand('compile'), 'npx -y deno@2 task compile');
      findProject('.', KIT_ROOT);
      assert.equal(userCommand('compile'), 'npx -y deno@2 task compile');
      // A project named by the caller (a library call), quoted for a shell when it must be.
      assert.equal(
        userCommand('install', [], { project: 'app' }),
        'npx -y deno@2 task install --project app',
      );
      assert.equal(
        userCommand('install', [], { project: '/tmp/my app' }),
        "npx -y deno@2 task install --project '/tmp/my app'",
      );
      assert.equal(userCommand('install', [], { project: '.' }), 'npx -y deno@2 task install');
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test('the remote flag: --linked up to CLI 2, --remote from CLI 3, --linked with a note when unknown', () => {
  assert.equal(remoteFlag(1), '--linked');
  assert.equal(remoteFlag(2), '--linked');
  assert.equal(remoteFlag(3), '--remote');
  assert.equal(remoteFlag(4), '--remote');
  assert.equal(remoteFlag(null), '--linked');
  const cli2 = { command: 'supabase', version: '2.117.0', major: 2 };
  const cli3 = { command: 'npx supabase', version: '3.1.0', major: 3 };
  const unknown = { command: 'supabase', version: null, major: null };
  assert.equal(supabaseRemote(cli2, 'db push'), 'supabase db push --linked');
  assert.equal(supabaseRemote(cli3, 'db push'), 'npx supabase db push --remote');
  assert.equal(
    supabaseRemote(unknown, 'db push'),
    'supabase db push --linked (Supabase CLI 3: --remote)',
  );
  assert.equal(
    supabaseRemote(cli3, 'migration repair', { then: '--status applied 1', aside: 'each' }),
    'npx supabase migration repair --remote --status applied 1 (each)',
  );
  assert.equal(
    supabaseRemote(unknown, 'db push', { then: '--include-all', aside: 'why' }),
    'supabase db push --linked --include-all (Supabase CLI 3: --remote; why)',
  );
});

/** `supabase` as a script running a real CLI: `command` with the script's arguments. */
async function wrapper(dir: string, command: string): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  const path = join(dir, 'supabase');
  await Deno.writeTextFile(path, `#!/bin/sh\ncd /tmp && exec ${command} "$@"\n`);
  await Deno.chmod(path, 0o755);
}

/** The real CLI's output of `args`, in an empty directory. */
async function supabase(command: string[], args: string[]): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: 'sy-supabase-' });
  try {
    const out = await runCommand(command[0], [...command.slice(1), ...args], {
      cwd: dir,
      env: { NO_COLOR: '1', DO_NOT_TRACK: '1', SUPABASE_TELEMETRY_DISABLED: '1' },
    });
    return out.stdout + out.stderr;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test('the real Supabase CLIs: detected with their major, and each takes the flag remoteFlag gives', async () => {
  const root = await Deno.makeTempDir({ prefix: 'sy-supabase-cli-' });
  const cli2 = [Deno.execPath(), 'run', '-A', SUPABASE_CLI];
  const cli3 = ['npx', '-y', 'supabase@3.1.0'];
  const path = Deno.env.get('PATH') ?? '';
  try {
    // CLI 3 as a project's npm package (what `npx supabase` runs there).
    const project = join(root, 'app');
    await wrapper(join(project, 'node_modules', '.bin'), cli3.join(' '));
    const found3 = await supabaseCli(join(project, 'supabase'));
    assert.deepEqual(found3, { command: 'npx supabase', version: '3.1.0', major: 3 });
    // Once per process: the answer stays when the CLI goes.
    await Deno.remove(join(project, 'node_modules'), { recursive: true });
    assert.equal(await supabaseCli(join(project, 'supabase')), found3);

    // CLI 2 on PATH; then none at all.
    await wrapper(join(root, 'bin'), cli2.map((a) => `'${a}'`).join(' '));
    Deno.env.set('PATH', `${join(root, 'bin')}:${path}`);
    const found2 = await supabaseCli(join(root, 'elsewhere'));
    assert.equal(found2.command, 'supabase');
    assert.equal(found2.major, 2);
    assert.match(found2.version ?? '', /^2\.\d+\.\d+$/);
    Deno.env.set('PATH', join(root, 'no-such-dir'));
    assert.deepEqual(await supabaseCli(join(root, 'nothing')), {
      command: 'supabase',
      version: null,
      major: null,
    });
    Deno.env.set('PATH', path);

    // What each real CLI's `db push` takes.
    const help2 = await supabase(cli2, ['db', 'push', '--help']);
    assert.ok(help2.includes(`${remoteFlag(2)} `), help2);
    assert.doesNotMatch(help2, /--remote/);
    assert.match(await supabase(cli2, ['db', 'push', '--remote']), /Unrecognized flag: --remote/);
    const help3 = await supabase(cli3, ['db', 'push', '--help']);
    assert.ok(help3.includes(`${remoteFlag(3)}[=`), help3);
    assert.match(help3, /Local by default/);
    // --linked, the form printed when the CLI is unknown, is still taken by CLI 3.
    const linked3 = await supabase(cli3, ['db', 'push', '--linked', '--dry-run']);
    assert.doesNotMatch(linked3, /Unrecognized flag/);
    assert.match(linked3, /--linked is deprecated/);
    const repair3 = await supabase(cli3, ['migration', 'repair', '--help']);
    assert.match(repair3, /--remote\[=/);
  } finally {
    Deno.env.set('PATH', path);
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test('install, compile, scaffold-queue, db:push and doctor from inside a project, without --project', async () => {
  const project = await supabaseInit('sy-invocation-project-');
  const database = `sy_inv_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => {} });
  const npm = { [INVOCATION]: 'npx switchyard' };
  const nested = join(project, 'supabase', 'functions');
  const next = (stdout: string) =>
    stdout.split('\nnext, test the flow (no database needed):\n')[1]?.trimEnd().split('\n');
  try {
    // As the npm package runs it, from a folder inside the project.
    const installed = await run(
      ['run', '-A', CLI, 'install', '--example'],
      join(project, 'supabase'),
      npm,
    );
    ok(installed, 'install --example from supabase/');
    await Deno.stat(join(project, MANIFEST_PATH));
    assert.deepEqual(next(installed.stdout), [
      '  cd .. && npx deno test -A --config supabase/functions/deno.json supabase/functions/',
      'then run it against a PostgreSQL (DATABASE_URL):',
      '  npx switchyard db:push',
      '  cd .. && npx deno run -A --config supabase/functions/deno.json example.ts',
    ]);
    const again = await run(['run', '-A', CLI, 'install', '--example'], project, npm);
    ok(again, 'install --example again, from the root');
    assert.match(again.stdout, /^nothing to do: Switchyard .* and its example are installed$/m);
    assert.deepEqual(next(again.stdout), [
      '  npx deno test -A --config supabase/functions/deno.json supabase/functions/',
      'then run it against a PostgreSQL (DATABASE_URL):',
      '  npx switchyard db:push',
      '  npx deno run -A --config supabase/functions/deno.json example.ts',
    ]);

    const scaffold = await run(['run', '-A', CLI, 'scaffold-queue', 'greetings'], nested, npm);
    ok(scaffold, 'scaffold-queue from supabase/functions/');
    assert.match(scaffold.stdout, /^nothing to do: greetings-worker is up to date/m);
    const unchanged = await run(['run', '-A', CLI, 'compile'], nested, npm);
    ok(unchanged, 'compile from supabase/functions/');
    assert.match(unchanged.stdout, /^nothing to do: the migrations compile every flow/m);
    // A runtime option changed: a migration, and the next step as the user runs things.
    const flow = join(project, 'supabase/functions/_shared/flows/greet.ts');
    const text = await Deno.readTextFile(flow);
    await Deno.writeTextFile(
      flow,
      text.replace("{ slug: 'greetV1' }", "{ slug: 'greetV1', maxAttempts: 5 }"),
    );
    assert.notEqual(await Deno.readTextFile(flow), text, 'the example flow has greetV1');
    const compiled = await run(['run', '-A', CLI, 'compile'], nested, npm);
    ok(compiled, 'compile of the change');
    // The user's CLI as the child found it: none found is `npx supabase` under the npm package.
    const found = await supabaseCli(project);
    const cli = found.version === null ? { ...found, command: 'npx supabase' } : found;
    assert.ok(
      compiled.stdout.includes(
        `\nnext: apply it with ${supabaseRemote(cli, 'db push')}, or against DATABASE_URL with ` +
          'npx switchyard db:push; flows start at once.',
      ),
      compiled.stdout,
    );

    await admin.unsafe(`create database "${database}"`);
    const env = { ...npm, DATABASE_URL: urlFor(database) };
    // Before the push: doctor's fixes name the commands without --project.
    const before = await run(['run', '-A', CLI, 'doctor'], nested, env);
    assert.equal(before.code, 1, before.stdout + before.stderr);
    assert.match(
      before.stdout,
      /^ {2}fix: .*\(.*a local database: DATABASE_URL=… npx switchyard db:push\)$/m,
    );
    assert.doesNotMatch(before.stdout, /--project|deno task/);
    const push = await run(['run', '-A', CLI, 'db:push'], nested, env);
    ok(push, 'db:push from supabase/functions/');
    assert.match(push.stdout, /migrations applied/);
    const after = await run(['run', '-A', CLI, 'doctor'], nested, env);
    ok(after, 'doctor after the push');
    assert.match(
      after.stdout,
      new RegExp(`^no problem found in ${project} and database "${database}"$`, 'm'),
    );

    // From a checkout: `deno task` in the kit with the caller's directory in INIT_CWD ...
    // (--check: were the kit's own project taken instead, nothing is written into the kit.)
    const task = await run(['task', '-q', 'compile', '--check'], KIT_ROOT, { INIT_CWD: nested });
    ok(task, 'deno task compile --check with INIT_CWD in the project');
    assert.match(task.stdout, /^nothing to do: the migrations compile every flow/m);
    // ... and `deno run` of the CLI from inside a fresh project: the kit's task, named with it.
    const fresh = await supabaseInit('sy-invocation-fresh-');
    try {
      const first = await run(['run', '-A', CLI, 'install'], join(fresh, 'supabase'));
      ok(first, 'install from a checkout, inside the project');
      const line = 'next: define flows in supabase/functions/_shared/registry.ts, then ' +
        `\`npx -y deno@2 task scaffold-queue <queue> --project ${fresh}\`; apply the migrations ` +
        `with ${
          supabaseRemote(await supabaseCli(fresh), 'db push', {
            aside: "the README's deploy steps",
          })
        }`;
      assert.ok(first.stdout.split('\n').includes(line), `${line}\nnot in:\n${first.stdout}`);
    } finally {
      await Deno.remove(fresh, { recursive: true });
    }
  } finally {
    await admin.unsafe(`drop database if exists "${database}" with (force)`);
    await admin.end();
    await Deno.remove(project, { recursive: true });
  }
});
