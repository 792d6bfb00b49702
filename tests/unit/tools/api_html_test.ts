/**
 * The API reference's link check (tools/api_html.ts, `deno task docs:api-html`, which `.ci/run`
 * runs on the real `deno doc --html` build): on pages written here, it finds a link to a missing
 * page, to a missing anchor, out of the reference, and a source link to a missing file; it follows
 * entity-encoded, directory and same-page links; and it excuses only the generator's links to a
 * mapped type's key on the page that binds it. No database.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { brokenLinks, decodeEntities, mappedKeyLink } from '../../../tools/api_html.ts';

/** A page binding `K` as a mapped type's key, as deno doc writes it. */
const MAPPED = '[<span><span class="td-tp">K</span><span><span class="td-kw"> in </span>' +
  '<span class="td-kw">keyof</span> T]: <a href="#type_param_k" class="link td-ref">K</a>';

async function withPages(
  pages: Record<string, string>,
  fn: (dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: 'api-html-test-' });
  try {
    for (const [name, html] of Object.entries(pages)) {
      await Deno.mkdir(join(dir, name, '..'), { recursive: true });
      await Deno.writeTextFile(join(dir, name), html);
    }
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test('decodeEntities undoes what deno doc encodes in attributes', () => {
  assert.equal(decodeEntities('..&#x2F;..&#x2F;a.html?x=1&amp;y=2&#47;'), '../../a.html?x=1&y=2/');
  assert.equal(decodeEntities('&unknown;'), '&unknown;');
});

Deno.test('brokenLinks names each broken internal link and follows the good ones', async () => {
  await withPages({
    'index.html': [
      '<a href="">self</a> <a href="#top" id="top">top</a>',
      '<a href="sub&#x2F;">a folder</a> <a href="./sub/page.html#there">anchor</a>',
      '<a href="https://jsr.io/x">web</a> <a href="mailto:a@b.c">mail</a> <a href="//cdn/x">cdn</a>',
      '<script src="./script.js"></script>',
      '<a href="./missing.html">gone</a> <a href="./sub/page.html#nowhere">bad anchor</a>',
      '<a href="../outside.html">out</a>',
    ].join('\n'),
    'script.js': '',
    'sub/index.html': '<a href="..&#x2F;index.html#top">back</a>',
    'sub/page.html': `<h2 id="there">x</h2> ${MAPPED} <a href="#type_param_v">V</a>`,
  }, async (dir) => {
    const broken = await brokenLinks(dir);
    assert.deepEqual(broken.map((b) => `${b.page} ${b.link}: ${b.why}`).sort(), [
      'index.html ../outside.html: outside the generated reference',
      'index.html ./missing.html: no such file missing.html',
      'index.html ./sub/page.html#nowhere: no anchor #nowhere in sub/page.html',
      // V is bound by no mapped type on the page: not excused.
      'sub/page.html #type_param_v: no anchor #type_param_v in sub/page.html',
    ]);
  });
});

Deno.test('the mapped type key excuse holds only on the page that binds the key', async () => {
  assert.ok(mappedKeyLink(MAPPED, 'type_param_k'));
  assert.ok(!mappedKeyLink(MAPPED, 'type_param_t'));
  assert.ok(!mappedKeyLink(MAPPED, 'examples'));
  await withPages({
    'a.html': MAPPED,
    'b.html': '<a href="a.html#type_param_k">K of another page</a> <a href="#type_param_k">K</a>',
  }, async (dir) => {
    const excused: string[] = [];
    const broken = await brokenLinks(dir, undefined, excused);
    assert.deepEqual(excused, ['#type_param_k']);
    assert.deepEqual(broken.map((b) => `${b.page} ${b.link}`).sort(), [
      'b.html #type_param_k',
      'b.html a.html#type_param_k',
    ]);
  });
});

Deno.test('source links must name a file of the kit', async () => {
  const kit = await Deno.makeTempDir({ prefix: 'api-html-kit-' });
  try {
    await Deno.writeTextFile(join(kit, 'mod.ts'), '');
    const here = pathToFileURL(join(kit, 'mod.ts')).href;
    const gone = pathToFileURL(join(kit, 'gone.ts')).href;
    await withPages({
      'index.html': `<a href="${here}">ok</a> <a href="${gone}">gone</a> ` +
        '<a href="file:///etc/hostname">outside</a>',
    }, async (dir) => {
      const broken = await brokenLinks(dir, kit);
      assert.deepEqual(
        broken.map((b) => `${b.link}: ${b.why}`).sort(),
        [
          `${gone}: no such source file`,
          'file:///etc/hostname: a source link outside the kit',
        ].sort(),
      );
    });
  } finally {
    await Deno.remove(kit, { recursive: true });
  }
});
