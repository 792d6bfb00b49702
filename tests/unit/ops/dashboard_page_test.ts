/**
 * The dashboard page is served from `lib/ops/dashboard_page.ts`, generated from its sources in
 * `lib/ops/dashboard_page/` by `deno task dashboard-page`: the module must be what the sources
 * make, with the style and script inlined and the handler's placeholders in place.
 */
import assert from 'node:assert/strict';
import { DASHBOARD_PAGE } from '../../../lib/ops/dashboard_page.ts';
import {
  dashboardPageModule,
  PAGE_MODULE,
  renderDashboardPage,
} from '../../../tools/dashboard_page.ts';

const ROOT = new URL('../../../', import.meta.url);

Deno.test('lib/ops/dashboard_page.ts is up to date with lib/ops/dashboard_page/', async () => {
  const current = await Deno.readTextFile(new URL(PAGE_MODULE, ROOT));
  assert.ok(
    current === (await dashboardPageModule()),
    `${PAGE_MODULE} is out of date: run deno task dashboard-page`,
  );
  assert.equal(DASHBOARD_PAGE, await renderDashboardPage());
});

Deno.test('the served page inlines its style and script and loads nothing else', () => {
  assert.ok(DASHBOARD_PAGE.startsWith('<!doctype html>'));
  assert.equal(DASHBOARD_PAGE.match(/<style>/g)?.length, 1);
  assert.equal(DASHBOARD_PAGE.match(/<script\b/g)?.length, 1);
  assert.ok(DASHBOARD_PAGE.includes('<script nonce="__NONCE__">\n(() => {\n'));
  assert.doesNotMatch(DASHBOARD_PAGE, /<link rel="stylesheet"|<script[^>]* src=|@ts-check/);
  assert.equal(DASHBOARD_PAGE.split('__BASE_PATH__').length, 2, 'one base path placeholder');
  assert.match(DASHBOARD_PAGE, /const BASE = __BASE_PATH__;/);
});
