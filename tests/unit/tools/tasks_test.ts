/**
 * `deno task` explains itself: every task is a Deno 2 task object with a description (the user
 * commands first, then the maintainer tasks, each saying so), every
 * command answers `--help` with its usage (and starts nothing), and a fresh machine without
 * PostgreSQL server binaries gets them installed (root with apt-get) or exact instructions, and
 * the same for Chromium when the run includes the dashboard's browser test.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KIT_ROOT } from '../../../cli/_project.ts';
import { DEFAULT_PG_BIN } from '../../../tools/_cluster.ts';
import {
  BROWSER_TEST,
  CHROMIUM_PACKAGES,
  chromiumPlan,
  DEFAULT_CHROMIUM,
  PG_PACKAGES,
  provisionPlan,
  runsBrowserTest,
} from '../../../tools/_provision.ts';

const config = JSON.parse(await Deno.readTextFile(join(KIT_ROOT, 'deno.json'))) as {
  tasks: Record<string, string | { description?: string; command?: string }>;
};

Deno.test('every task has a description', () => {
  for (const [name, task] of Object.entries(config.tasks)) {
    assert.equal(typeof task, 'object', `task ${name} is a task object`);
    const { description, command } = task as { description?: string; command?: string };
    assert.ok(description && description.length > 20, `task ${name} has a description`);
    assert.ok(command, `task ${name} has a command`);
  }
});

Deno.test('the tasks by audience: the user commands (cli/) first, then the maintainer tasks', () => {
  const runs = (command: string) => command.match(/\b(cli|tools|bench)\/[\w/]+\.ts\b/)?.[0];
  const entries = Object.entries(config.tasks).map(([name, task]) => {
    const { description = '', command = '' } = task as { description?: string; command?: string };
    return { name, maintainers: description.startsWith('Maintainers: '), script: runs(command) };
  });
  const firstMaintainer = entries.findIndex((e) => e.maintainers);
  assert.ok(firstMaintainer > 0, 'user tasks come first');
  for (const [i, e] of entries.entries()) {
    if (i < firstMaintainer) {
      assert.match(e.script ?? '', /^cli\//, `user task ${e.name} runs a module of cli/`);
    } else {
      assert.ok(
        e.maintainers,
        `task ${e.name}, after the maintainer tasks began, says Maintainers:`,
      );
      assert.doesNotMatch(
        e.script ?? '',
        /^cli\//,
        `maintainer task ${e.name} runs no cli/ module`,
      );
    }
  }
});

Deno.test('missing server binaries: installed as root with apt-get, else exact instructions', () => {
  assert.deepEqual(
    provisionPlan({ binDir: DEFAULT_PG_BIN, haveBinaries: true, root: false, aptGet: false }),
    { action: 'ready' },
  );
  const install = provisionPlan({
    binDir: DEFAULT_PG_BIN,
    haveBinaries: false,
    root: true,
    aptGet: true,
  });
  assert.equal(install.action, 'install');
  assert.deepEqual(
    install.action === 'install' ? install.commands.at(-1)?.slice(-PG_PACKAGES.length) : [],
    [...PG_PACKAGES],
  );
  const user = provisionPlan({
    binDir: DEFAULT_PG_BIN,
    haveBinaries: false,
    root: false,
    aptGet: true,
  });
  assert.equal(user.action, 'instruct');
  assert.match(
    user.action === 'instruct' ? user.message : '',
    /apt-get install -y postgresql-15 postgresql-15-cron/,
  );
  // Binaries expected elsewhere (PG_BIN) are never installed by apt-get.
  const custom = provisionPlan({
    binDir: '/opt/pg/bin',
    haveBinaries: false,
    root: true,
    aptGet: true,
  });
  assert.equal(custom.action, 'instruct');
  assert.match(custom.action === 'instruct' ? custom.message : '', /\/opt\/pg\/bin/);
});

Deno.test('missing chromium: installed as root with apt-get when the browser test runs, else exact instructions', () => {
  const plan = (path: string, have: boolean, root: boolean, aptGet: boolean) =>
    chromiumPlan({ path, have, root, aptGet });
  assert.deepEqual(plan(DEFAULT_CHROMIUM, true, false, false), { action: 'ready' });
  const install = plan(DEFAULT_CHROMIUM, false, true, true);
  assert.deepEqual(install, {
    action: 'install',
    commands: [
      ['apt-get', 'update', '-qq'],
      ['apt-get', 'install', '-y', '-q', '--no-install-recommends', ...CHROMIUM_PACKAGES],
    ],
  });
  assert.deepEqual([...CHROMIUM_PACKAGES], ['chromium']);
  const user = plan(DEFAULT_CHROMIUM, false, false, true);
  assert.equal(user.action, 'instruct');
  assert.match(
    user.action === 'instruct' ? user.message : '',
    /^chromium not found at \/usr\/bin\/chromium .*`sudo apt-get install -y chromium` \(as root this command installs it itself\)/,
  );
  // Root without apt-get: instructions, no promise to install.
  const noApt = plan(DEFAULT_CHROMIUM, false, true, false);
  assert.equal(noApt.action, 'instruct');
  assert.doesNotMatch(noApt.action === 'instruct' ? noApt.message : '', /as root/);
  // A CHROMIUM elsewhere is never installed by apt-get.
  const custom = plan('/opt/chrome/chrome', false, true, true);
  assert.equal(custom.action, 'instruct');
  assert.match(
    custom.action === 'instruct' ? custom.message : '',
    /\/opt\/chrome\/chrome.*CHROMIUM/,
  );
  // Only runs that include the browser test provision it.
  const kit = '/kit';
  assert.ok(runsBrowserTest([], kit), 'the whole suite');
  assert.ok(runsBrowserTest(['--filter', 'upgrade'], kit), 'options only: tests/');
  assert.ok(runsBrowserTest(['tests/ops/dashboard_charts_browser_test.ts'], kit), 'another one');
  assert.ok(runsBrowserTest(['tests/'], kit));
  assert.ok(runsBrowserTest(['tests/ops'], kit));
  assert.ok(runsBrowserTest([BROWSER_TEST], kit));
  assert.ok(runsBrowserTest(['tests/ops/follow_run_browser_test.ts'], kit), 'the follow test');
  assert.ok(runsBrowserTest([`./${BROWSER_TEST}`, 'tests/sql/'], kit));
  assert.ok(runsBrowserTest(['/kit/tests/ops/'], kit));
  assert.ok(!runsBrowserTest(['tests/sql/'], kit));
  assert.ok(!runsBrowserTest(['tests/unit/tools/tasks_test.ts'], kit));
  assert.ok(!runsBrowserTest(['tests/ops/operations_test.ts'], kit));
  assert.ok(!runsBrowserTest(['tests/op'], kit), 'a prefix of the name is not its folder');
});

Deno.test('deno.json is a package: its version is the kit version, its exports the entry points', async () => {
  const { KIT_VERSION } = await import('../../../cli/_kit.ts');
  const pkg = config as unknown as { name: string; version: string; exports: unknown };
  assert.equal(pkg.version, KIT_VERSION);
  assert.equal(pkg.name, '@switchyard/switchyard');
  assert.deepEqual(pkg.exports, {
    '.': './lib/mod.ts',
    './client': './lib/client.ts',
    './ops': './lib/ops.ts',
    './errors': './lib/errors.ts',
    './testing': './lib/testing.ts',
    './browser': './lib/browser.ts',
  });
});
