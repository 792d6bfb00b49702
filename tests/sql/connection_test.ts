/**
 * The one connection resolver and the kit's own connection-string parser
 * (docs/design/supabase.md): precedence of `SWITCHYARD_DB_URL`, the URL shapes Supabase hands
 * out (direct, session pooler, transaction pooler), percent-encoding, `sslmode`, refusals that
 * never echo the password, and real connections made from the parsed options.
 */
import assert from 'node:assert/strict';
import { ConnectionStringError } from '../../lib/errors.ts';
import { defineDeployedFlow, EdgeWorker, Flow, routeFlow } from '../../lib/mod.ts';
import { createMemoryPlatform } from '../../lib/platform/platform.ts';
import {
  CONNECTION_ENV_VARS,
  parseConnectionString,
  resolveConnectionString,
  TRANSACTION_POOLER_MAX_CONNECTIONS,
} from '../../lib/sql/connection.ts';
import { openSql } from '../../lib/sql/connection.ts';
import { adminUrl } from '../_helpers/db.ts';
import { createTestDatabase } from '../_helpers/db.ts';
import { FAST, waitFor } from '../_helpers/wait.ts';

const REF = 'abcdefghijklmnopqrst';

Deno.test('resolver: connectionString, then SWITCHYARD_DB_URL, SUPABASE_DB_URL, DATABASE_URL', () => {
  assert.deepEqual(CONNECTION_ENV_VARS, ['SWITCHYARD_DB_URL', 'SUPABASE_DB_URL', 'DATABASE_URL']);
  const all: Record<string, string> = {
    SWITCHYARD_DB_URL: 'postgres://switchyard@h/db',
    SUPABASE_DB_URL: 'postgres://supabase@h/db',
    DATABASE_URL: 'postgres://database@h/db',
  };
  const from = (vars: Record<string, string>) => (name: string) => vars[name];
  assert.equal(
    resolveConnectionString('postgres://option@h/db', from(all)),
    'postgres://option@h/db',
  );
  assert.equal(resolveConnectionString(undefined, from(all)), all.SWITCHYARD_DB_URL);
  const { SWITCHYARD_DB_URL: _s, ...noKit } = all;
  assert.equal(resolveConnectionString(undefined, from(noKit)), all.SUPABASE_DB_URL);
  assert.equal(
    resolveConnectionString(undefined, from({ DATABASE_URL: all.DATABASE_URL })),
    all.DATABASE_URL,
  );
  // An empty value is unset (a secret set to '' must not hide the next one).
  assert.equal(
    resolveConnectionString(undefined, from({ ...all, SWITCHYARD_DB_URL: '' })),
    all.SUPABASE_DB_URL,
  );
  assert.equal(resolveConnectionString(undefined, from({})), undefined);
});

Deno.test('parser: the direct connection db.<ref>.supabase.co:5432', () => {
  const s = parseConnectionString(
    `postgresql://postgres:s3cr%2Ft%40%3A%3F%23x@db.${REF}.supabase.co:5432/postgres`,
  );
  assert.deepEqual(s, {
    host: `db.${REF}.supabase.co`,
    port: 5432,
    user: 'postgres',
    password: 's3cr/t@:?#x',
    database: 'postgres',
    sslmode: 'prefer',
    kind: 'direct',
    ignoredParameters: [],
  });
});

Deno.test('parser: the session pooler aws-0-<region>.pooler.supabase.com:5432', () => {
  const s = parseConnectionString(
    `postgres://postgres.${REF}:pa%20ss@aws-0-eu-central-1.pooler.supabase.com:5432/postgres?sslmode=require`,
  );
  assert.equal(s.user, `postgres.${REF}`, 'the dot stays in the user name');
  assert.equal(s.password, 'pa ss');
  assert.equal(s.host, 'aws-0-eu-central-1.pooler.supabase.com');
  assert.equal(s.port, 5432);
  assert.equal(s.sslmode, 'require');
  assert.equal(s.kind, 'session_pooler');
});

Deno.test('parser: the transaction pooler on port 6543', () => {
  const s = parseConnectionString(
    `postgresql://postgres.${REF}:x@aws-0-us-east-1.pooler.supabase.com:6543/postgres?sslmode=verify-full&application_name=my%20app&connect_timeout=5&pgbouncer=true`,
  );
  assert.equal(s.kind, 'transaction_pooler');
  assert.equal(s.user, `postgres.${REF}`);
  assert.equal(s.port, 6543);
  assert.equal(s.sslmode, 'verify-full');
  assert.equal(s.applicationName, 'my app');
  assert.equal(s.connectTimeoutSeconds, 5);
  assert.deepEqual(s.ignoredParameters, ['pgbouncer']);
  // The dedicated pooler on the database host is a transaction pooler too.
  assert.equal(
    parseConnectionString(`postgresql://postgres:x@db.${REF}.supabase.co:6543/postgres`).kind,
    'transaction_pooler',
  );
  assert.ok(TRANSACTION_POOLER_MAX_CONNECTIONS <= 5);
});

Deno.test('parser: defaults, loopback, IPv6, sslrootcert=system', () => {
  assert.deepEqual(parseConnectionString('postgres://localhost'), {
    host: 'localhost',
    port: 5432,
    user: 'postgres',
    password: '',
    database: 'postgres',
    sslmode: 'disable',
    kind: 'direct',
    ignoredParameters: [],
  });
  const v6 = parseConnectionString('postgresql://u@[::1]:6000/app%20db');
  assert.equal(v6.host, '::1');
  assert.equal(v6.sslmode, 'disable');
  assert.equal(v6.database, 'app db');
  assert.equal(
    parseConnectionString('postgres://u@127.0.0.1/db?sslmode=require').sslmode,
    'require',
    'an explicit sslmode wins on loopback too',
  );
  assert.equal(
    parseConnectionString('postgres://u@example.com/db?sslrootcert=system').sslmode,
    'verify-full',
  );
  assert.equal(parseConnectionString('postgres://u@example.com/db?sslmode=allow').sslmode, 'allow');
});

Deno.test('parser: refusals name the rule and never the password', () => {
  const secret = 'Very$ecretPassw0rd';
  const cases: [string, RegExp][] = [
    ['not a url', /not a URL/],
    [`mysql://u:${secret}@h/db`, /scheme "mysql:" is invalid/],
    [`postgres://u:${secret}@h/db?sslmode=maybe`, /sslmode "maybe" is invalid/],
    [`postgres://u:${secret}@h/db?sslrootcert=/etc/ca.pem`, /sslrootcert .* not supported/],
    [`postgres://u:${secret}@h/db?connect_timeout=0`, /connect_timeout "0" is invalid/],
    [`postgres://u:${secret}%zz@h/db`, /password is not percent-encoded correctly/],
    [`postgres://u:pa/ss${secret}@h/db`, /./],
    [`postgres://u:${secret}@h1,h2/db`, /several hosts/],
    [`postgres://u:${secret}@h:99999/db`, /not a URL|port/],
  ];
  for (const [url, pattern] of cases) {
    assert.throws(
      () => parseConnectionString(url),
      (e: Error) => {
        assert.ok(e instanceof ConnectionStringError, `${url}: ${e}`);
        assert.match(e.message, pattern);
        assert.ok(!e.message.includes(secret), `the message names the password: ${e.message}`);
        return true;
      },
    );
  }
  // An unencoded "/" in a password pushes the rest into the path: the message says to encode it.
  assert.throws(
    () => parseConnectionString('postgres://u:a/b@h:5432/db'),
    /percent-encoded|not a URL/,
  );
});

Deno.test('openSql connects with the parsed options: a user name with a dot, encoded password', async () => {
  const admin = new URL(adminUrl());
  const role = `postgres.${REF}`;
  const password = 'p@ss:w/rd?#%';
  const setup = openSql(admin.toString(), { max: 1 });
  try {
    await setup.unsafe(`drop role if exists "${role}"`);
    await setup.unsafe(`create role "${role}" login password '${password.replaceAll("'", "''")}'`);
    const url = new URL(admin.toString());
    url.username = encodeURIComponent(role);
    url.password = encodeURIComponent(password);
    url.searchParams.set('application_name', 'switchyard-connection-test');
    const sql = openSql(url.toString(), { max: 1 });
    try {
      const [row] = await sql<{ user: string; app: string; ssl: boolean }[]>`
        select current_user as user, current_setting('application_name') as app,
               coalesce((select ssl from pg_stat_ssl where pid = pg_backend_pid()), false) as ssl`;
      assert.deepEqual(row, { user: role, app: 'switchyard-connection-test', ssl: false });
    } finally {
      await sql.end();
    }
    // sslmode=prefer falls back to plain text on a server without TLS.
    url.searchParams.set('sslmode', 'prefer');
    const preferred = openSql(url.toString(), { max: 1 });
    try {
      assert.equal((await preferred`select 1 as one`)[0].one, 1);
    } finally {
      await preferred.end();
    }
    // sslmode=require refuses a server without TLS rather than sending the password in clear.
    url.searchParams.set('sslmode', 'require');
    url.searchParams.set('connect_timeout', '3');
    const required = openSql(url.toString(), { max: 1 });
    try {
      await assert.rejects(required`select 1`);
    } finally {
      await required.end({ timeout: 0 });
    }
  } finally {
    await setup.unsafe(`drop role if exists "${role}"`);
    await setup.end();
  }
});

Deno.test('SWITCHYARD_DB_URL wins over SUPABASE_DB_URL and DATABASE_URL in a queue function', async () => {
  const db = await createTestDatabase();
  // Nothing listens on port 1: a worker that used either of these would fail to start.
  const unreachable = 'postgresql://postgres:x@127.0.0.1:1/postgres?connect_timeout=2';
  const flow = new Flow<{ n: number }>({ slug: 'precedenceV1' })
    .step({ slug: 'twice' }, (input) => input.n * 2);
  const registry = [
    defineDeployedFlow(routeFlow(flow, { queues: { twice: 'precedence_q' } }), {
      alias: 'precedence',
    }),
  ] as const;
  const platform = createMemoryPlatform({
    SWITCHYARD_DB_URL: db.url,
    SUPABASE_DB_URL: unreachable,
    DATABASE_URL: unreachable,
    SWITCHYARD_AUTH: 'disabled',
    SWITCHYARD_MAX_POLL_SECONDS: String(FAST.maxPollSeconds),
    SWITCHYARD_POLL_INTERVAL_MS: String(FAST.pollIntervalMs),
  });
  const handle = EdgeWorker.start(registry, { queueName: 'precedence_q', platform });
  try {
    const response = await platform.fetch('http://local/', { method: 'POST' });
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    assert.equal(body.state, 'started');
    const [{ id }] = await db.sql<{ id: string }[]>`
      select switchyard.start_flow('precedence', '{"n": 21}'::jsonb) as id`;
    const output = await waitFor('the run to complete', async () => {
      const [row] = await db.sql<{ status: string; output: unknown }[]>`
        select status, output from switchyard.runs where run_id = ${id}::uuid`;
      return row?.status === 'completed' ? row : null;
    });
    assert.deepEqual(output.output, { twice: 42 });
  } finally {
    await handle.stop();
  }
  // Without SWITCHYARD_DB_URL, SUPABASE_DB_URL comes before DATABASE_URL: here it is the
  // unreachable one, so the start fails although DATABASE_URL names the right database.
  const next = createMemoryPlatform({
    SUPABASE_DB_URL: unreachable,
    DATABASE_URL: db.url,
    SWITCHYARD_AUTH: 'disabled',
  });
  const second = EdgeWorker.start(registry, { queueName: 'precedence_q', platform: next });
  try {
    const response = await next.fetch('http://local/', { method: 'POST' });
    const body = await response.json();
    assert.equal(response.status, 500);
    assert.equal(body.error, 'start_failed');
    assert.match(body.message, /127\.0\.0\.1|ECONNREFUSED|connect/i);
  } finally {
    await second.stop();
    await db.close();
  }
});
