/**
 * The `.env` reader of `deno task serve` and `deno task dashboard` (`parseEnvText` in
 * cli/serve.ts) against npm's `dotenv` (its `parse`), the well-kept library it could be
 * (issue 28): the same values for every line both read alike, and the differences that keep the
 * kit's own reader, each shown here. The one that decides it: `dotenv` (like Deno's `--env-file`)
 * ends an unquoted value at any `#`, so `SWITCHYARD_WORKER_SECRET=s3cr#t` would become `s3cr`,
 * silently, and the worker would refuse the bearer it was given; the kit's reader keeps it
 * whole.
 */
import assert from 'node:assert/strict';
import { parse } from 'dotenv';
import { parseEnvText, readEnvFile } from '../../../cli/serve.ts';

const ALIKE: [string, Record<string, string>][] = [
  ['A=b', { A: 'b' }],
  ['A = b c ', { A: 'b c' }],
  ['export A=b', { A: 'b' }],
  ['# a comment\n\n  # another\nA=b', { A: 'b' }],
  ['A=b # a comment', { A: 'b' }],
  ['A="b # not a comment"', { A: 'b # not a comment' }],
  ["A='b # not a comment'", { A: 'b # not a comment' }],
  ['A="b" # a comment', { A: 'b' }],
  ["A='b' # a comment", { A: 'b' }],
  ['A="x\\ny"', { A: 'x\ny' }],
  ["A='x\\ny'", { A: 'x\\ny' }],
  ['A="x\ny"\nB=c', { A: 'x\ny', B: 'c' }],
  ["KEY='-----BEGIN-----\nabc\n-----END-----'", { KEY: '-----BEGIN-----\nabc\n-----END-----' }],
  ['A=b\r\nB=c\r\n', { A: 'b', B: 'c' }],
  [
    'DATABASE_URL=postgres://postgres.ref:p%23ss@aws-0.pooler.supabase.com:5432/postgres?sslmode=require',
    {
      DATABASE_URL:
        'postgres://postgres.ref:p%23ss@aws-0.pooler.supabase.com:5432/postgres?sslmode=require',
    },
  ],
  ['A=', { A: '' }],
  ['A=1\nA=2', { A: '2' }],
  ['A=b=c', { A: 'b=c' }],
  ['A="b=c"', { A: 'b=c' }],
];

Deno.test('.env: the kit reads every line as dotenv does where both are defined', () => {
  for (const [text, expected] of ALIKE) {
    assert.deepEqual(parseEnvText(text, '.env'), expected, JSON.stringify(text));
    assert.deepEqual({ ...parse(text) }, expected, `dotenv: ${JSON.stringify(text)}`);
  }
});

Deno.test('.env: where the kit and dotenv differ, and why the kit keeps its reader', () => {
  // The reason: a `#` inside an unquoted value is part of it (a secret may hold one).
  const secret = 'SWITCHYARD_WORKER_SECRET=s3cr#t';
  assert.deepEqual(parseEnvText(secret, '.env'), { SWITCHYARD_WORKER_SECRET: 's3cr#t' });
  assert.deepEqual({ ...parse(secret) }, { SWITCHYARD_WORKER_SECRET: 's3cr' });
  // dotenv reads more than environment names: keys with dots, `KEY: value`, backtick quotes.
  // The kit skips the first two (no such environment variable can be given to a function) and
  // keeps backticks as written.
  assert.deepEqual(parseEnvText('A.B=c\nD: e', '.env'), {});
  assert.deepEqual({ ...parse('A.B=c\nD: e') }, { 'A.B': 'c', D: 'e' });
  assert.deepEqual(parseEnvText('A=`b`', '.env'), { A: '`b`' });
  assert.deepEqual({ ...parse('A=`b`') }, { A: 'b' });
  // An unclosed quote: dotenv keeps the quote in the value; the kit refuses, naming the file,
  // the line and the key, never the value.
  assert.deepEqual({ ...parse('A=1\nB="hunter2\nC=3') }, { A: '1', B: '"hunter2', C: '3' });
  assert.throws(
    () => parseEnvText('A=1\nB="hunter2\nC=3', 'supabase/functions/.env'),
    (e: Error) =>
      e.message.startsWith(
        'supabase/functions/.env, line 2: the value of B opens a " quote that never closes',
      ) && !e.message.includes('hunter2'),
  );
});

Deno.test('.env: a missing file reads as empty; a file reads as its text does', async () => {
  const dir = await Deno.makeTempDir({ prefix: 'switchyard-env-file-' });
  try {
    assert.deepEqual(await readEnvFile(`${dir}/missing.env`), {});
    await Deno.writeTextFile(`${dir}/.env`, 'export DATABASE_URL=postgres://x/y # local\n');
    assert.deepEqual(await readEnvFile(`${dir}/.env`), { DATABASE_URL: 'postgres://x/y' });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
