/**
 * docs/guide/troubleshooting.md against the catalogue extracted from the kit's sources
 * (tools/error_catalogue.ts): every error class, SQLSTATE, refusal rule, refusal kind, HTTP error,
 * doctor check and connection code has an entry, and no entry names a code the kit lacks. Then the
 * extraction is shown finding a known code of each kind and of each SQL shape, and the check
 * failing on a page that breaks it. No database needed.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KIT_ROOT } from '../../cli/_project.ts';
import {
  type Catalogue,
  catalogueProblems,
  documentedCodes,
  errorCatalogue,
  KINDS,
  sqlRaises,
  TROUBLESHOOTING_PAGE,
} from '../../tools/error_catalogue.ts';

const catalogue = await errorCatalogue();
const codes = (kind: keyof Catalogue) => catalogue[kind].map((e) => e.code);

Deno.test('the troubleshooting page has an entry for every code of the kit, and only those', async () => {
  const page = await Deno.readTextFile(join(KIT_ROOT, TROUBLESHOOTING_PAGE));
  const problems = catalogueProblems(catalogue, page);
  assert.deepEqual(problems, [], `\n${problems.join('\n')}`);
});

Deno.test('the extraction finds a known code of each kind', () => {
  const expected: Record<keyof Catalogue, string[]> = {
    class: ['SwitchyardError', 'FunctionPausedError', 'RunNotFoundError', 'UnstorableValueError'],
    sqlstate: ['22023', '23505', '42501', '55000', 'PT429', 'SY001', 'SY004', 'SY020'],
    rule: [
      'run_unknown', // a literal
      'queue_name_reserved_separator', // a case expression
      'debounce_start_at', // a variable assigned literals (_check_start_key)
      'wait_timed_out', // a case over two lines
      'run_family_grew', // a hand-built detail of an SY code
      'text_nul', // the TypeScript side's detail
    ],
    refusal: ['coverage', 'unsupported_work', 'start_failed'],
    http: ['signature_mismatch', 'timestamp_outside_tolerance', 'body_too_large', 'shutting_down'],
    doctor: ['migrations', 'sql core', 'keep-alive'],
    connection: ['ECONNREFUSED', '28P01', '3D000'],
  };
  for (const kind of KINDS) {
    for (const code of expected[kind]) {
      assert.ok(codes(kind).includes(code), `${kind} ${code} is extracted`);
    }
  }
  // The SQL side is most of it: a regression of the parser would drop many at once.
  assert.ok(codes('rule').length >= 150, `${codes('rule').length} rules`);
  assert.ok(codes('class').length >= 25, `${codes('class').length} classes`);
});

Deno.test('sqlRaises reads literals, case expressions, variables and hand-built details', () => {
  const sql = `
    -- perform switchyard._refuse('22023', 'in_a_comment', 'x', null, 'no');
    create or replace function switchyard.f(a text) returns void language plpgsql as $$
    declare problem text;
    begin
      perform switchyard._refuse('22023', 'plain_rule', 'a', a, 'it''s (bad), really');
      perform switchyard._refuse('55000',
        case when a is null then 'rule_when' else 'rule_else' end, 'a', a, format('x %s', a));
      if a = 'x' then problem := 'var_one'; else problem := 'var_two'; end if;
      perform switchyard._refuse('22023', problem, 'a', a, '_refuse(''not'', ''a call'')');
      raise exception using errcode = 'SY099', message = 'm',
        detail = jsonb_build_object('rule', 'hand_built')::text;
      raise notice '%', 'switchyard._refuse(''23505'', ''in_a_string'')';
    end $$;`;
  const r = sqlRaises(sql, 'f.sql');
  assert.deepEqual(
    r.rules.map((x) => `${x.sqlstate} ${x.rule}`).sort(),
    [
      '22023 plain_rule',
      '22023 var_one',
      '22023 var_two',
      '55000 rule_else',
      '55000 rule_when',
      'SY099 hand_built',
    ],
  );
  assert.deepEqual([...new Set(r.sqlstates)].sort(), ['22023', '55000', 'SY099']);
});

Deno.test('sqlRaises refuses a refusal whose rule or code it cannot read, naming the file', () => {
  assert.throws(
    () => sqlRaises(`perform switchyard._refuse('22023', lower(x), 'a', null, 'm');`, 'g.sql'),
    /g\.sql: a _refuse call whose rule cannot be read \(lower \( x \)\)/,
  );
  assert.throws(
    () => sqlRaises(`perform switchyard._refuse('22023', unassigned, 'a', null, 'm');`, 'g.sql'),
    /g\.sql: a _refuse call whose rule cannot be read/,
  );
  assert.throws(
    () => sqlRaises(`perform switchyard._refuse(code, 'r', 'a', null, 'm');`, 'h.sql'),
    /h\.sql: a _refuse call whose SQLSTATE is not a literal/,
  );
});

Deno.test('the check names a code with no entry, an unknown code, and a malformed page', () => {
  const small: Catalogue = {
    class: [{ kind: 'class', code: 'AError', files: ['lib/errors.ts'] }],
    sqlstate: [{ kind: 'sqlstate', code: 'SY001', files: ['a.sql'] }],
    rule: [
      { kind: 'rule', code: 'rule_a', files: ['a.sql'] },
      { kind: 'rule', code: 'rule_b', files: ['b.sql'] },
    ],
    refusal: [],
    http: [],
    doctor: [],
    connection: [],
  };
  const page = [
    '<!-- catalogue: class -->',
    '',
    '| class | meaning |',
    '| ----- | ------- |',
    '| `AError` | a |',
    '',
    'text with `rule_b` outside any table is no entry',
    '',
    '<!-- catalogue: rule -->',
    '',
    '| rule | meaning |',
    '| ---- | ------- |',
    '| `rule_a`, `rule_gone` | a and a removed one |',
    '| no code here | x |',
    '',
    '<!-- catalogue: colour -->',
    '',
    '<!-- catalogue: sqlstate -->',
    'no table follows',
  ].join('\n');
  assert.deepEqual(catalogueProblems(small, page), [
    'line 14: a rule entry names no code',
    'line 16: unknown catalogue kind "colour" (class, sqlstate, rule, refusal, http, doctor, connection)',
    'line 18: catalogue marker "sqlstate" is followed by no table',
    'sqlstate SY001 (from a.sql) has no entry',
    'rule rule_b (from b.sql) has no entry',
    'an entry names rule rule_gone, which the kit does not have',
  ]);
  const documented = documentedCodes(page).codes;
  assert.deepEqual([...documented.rule].sort(), ['rule_a', 'rule_gone']);
  assert.deepEqual([...documented.class], ['AError']);
});
