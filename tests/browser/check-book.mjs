// Browser test of the built book: serves target/book on localhost, loads every page in headless
// Chromium and checks that it works offline. Run after `kernelbook build`:
//
//   node tests/browser/check-book.mjs [BOOK_DIR] [ARTEFACT_DIR]
//
// For every page: no console error, no request leaving localhost, every mermaid block drawn as an
// SVG, every math span rendered by KaTeX (no error, no raw `$$` left), every internal link and
// anchor resolving. Lab chapters must show their tables; search must find a word; the dark theme
// must draw diagrams too. A screenshot of the transpose lab is kept as an artefact.

import { chromium } from 'playwright-core';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';

const bookDir = path.resolve(process.argv[2] ?? 'target/book');
const artefacts = path.resolve(process.argv[3] ?? 'target/browser-test');
const browserPath = process.env.CHROMIUM ?? '/usr/bin/chromium';

const types = {
  '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml',
  '.png': 'image/png', '.woff2': 'font/woff2', '.woff': 'font/woff', '.ttf': 'font/ttf', '.json': 'application/json',
};

function serve(root) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    let file = path.join(root, decodeURIComponent(url.pathname));
    if (!file.startsWith(root)) { res.writeHead(403); res.end(); return; }
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    if (!fs.existsSync(file)) { res.writeHead(404); res.end('not found'); return; }
    res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function htmlPages(dir, base = dir) {
  const pages = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) pages.push(...htmlPages(full, base));
    else if (entry.name.endsWith('.html') && !['print.html', 'toc.html', '404.html'].includes(entry.name)) {
      pages.push(path.relative(base, full).split(path.sep).join('/'));
    }
  }
  return pages.sort();
}

const failures = [];
const fail = (page, message) => failures.push(`${page}: ${message}`);

const server = await serve(bookDir);
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({
  executablePath: browserPath,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--no-first-run'],
});
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
fs.mkdirSync(artefacts, { recursive: true });

const pages = htmlPages(bookDir);
let diagrams = 0;
let formulas = 0;
let tables = 0;
for (const name of pages) {
  const page = await context.newPage();
  const problems = [];
  page.on('console', (msg) => { if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`); });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('request', (req) => {
    const url = new URL(req.url());
    if (!['data:', 'blob:', 'about:'].includes(url.protocol) && url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') {
      problems.push(`request leaves localhost: ${req.url()}`);
    }
  });
  page.on('requestfailed', (req) => problems.push(`request failed: ${req.url()}`));
  page.on('response', (res) => { if (res.status() >= 400) problems.push(`HTTP ${res.status()}: ${res.url()}`); });
  await page.goto(`${origin}/${name}`, { waitUntil: 'load' });

  // Mermaid renders after load: wait until every block holds an SVG (or time out).
  const mermaid = await page.locator('pre.mermaid, div.mermaid').count();
  if (mermaid > 0) {
    try {
      await page.waitForFunction(() => [...document.querySelectorAll('pre.mermaid, div.mermaid')]
        .every((el) => el.querySelector('svg')), null, { timeout: 15000 });
    } catch {
      const drawn = await page.locator('pre.mermaid svg, div.mermaid svg').count();
      problems.push(`only ${drawn} of ${mermaid} mermaid diagrams became an SVG`);
    }
    diagrams += mermaid;
  }

  const math = await page.evaluate(() => {
    const main = document.querySelector('main');
    const text = main ? main.innerText : '';
    return {
      rendered: document.querySelectorAll('main .katex').length,
      errors: document.querySelectorAll('main .katex-error').length,
      raw: (text.match(/\$\$/g) ?? []).length,
    };
  });
  formulas += math.rendered;
  if (math.errors) problems.push(`${math.errors} formulas failed to render`);
  if (math.raw) problems.push(`${math.raw} raw $$ left in the text`);

  const labs = await page.evaluate(() => ({
    directives: (document.querySelector('main')?.innerText.match(/\{\{#lab/g) ?? []).length,
    results: document.querySelectorAll('.kernelbook-results tbody tr').length,
    sections: document.querySelectorAll('.kernelbook-lab').length,
  }));
  if (labs.directives) problems.push('a {{#lab}} directive was left unrendered');
  if (/^labs\/lab[12]-/.test(name) && labs.results < 3) problems.push(`the lab table has ${labs.results} rows`);
  tables += labs.sections;

  // Internal links: the target page exists and so does the anchor.
  const links = await page.evaluate(() => [...document.querySelectorAll('main a[href]')].map((a) => a.getAttribute('href')));
  for (const href of links) {
    if (/^[a-z]+:/i.test(href) || href.startsWith('//')) continue;
    const [target, anchor] = href.split('#');
    const file = target ? path.join(path.dirname(path.join(bookDir, name)), target) : path.join(bookDir, name);
    if (!fs.existsSync(file)) { problems.push(`broken link: ${href}`); continue; }
    if (anchor && !fs.readFileSync(file, 'utf8').includes(`id="${anchor}"`)) problems.push(`broken anchor: ${href}`);
  }

  if (name === 'labs/lab2-transpose.html') {
    await page.locator('.kernelbook-lab').first().scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(artefacts, 'lab2-transpose.png'), fullPage: true });
  }
  for (const problem of problems) fail(name, problem);
  await page.close();
}

// Search: the index is built and finds a word.
{
  const page = await context.newPage();
  await page.goto(`${origin}/index.html`, { waitUntil: 'load' });
  await page.keyboard.press('s');
  // mdBook searches on key events, so type rather than fill.
  await page.locator('#mdbook-searchbar').click();
  await page.keyboard.type('coalescing');
  try {
    await page.waitForFunction(() => document.querySelectorAll('#mdbook-searchresults li').length > 0, null, { timeout: 10000 });
  } catch {
    fail('index.html', 'search for "coalescing" found nothing');
  }
  await page.close();
}

// Dark theme: diagrams are drawn there too.
{
  const page = await context.newPage();
  await page.addInitScript(() => localStorage.setItem('mdbook-theme', 'coal'));
  const withDiagram = pages.find((name) => fs.readFileSync(path.join(bookDir, name), 'utf8').includes('class="mermaid"'));
  if (withDiagram) {
    await page.goto(`${origin}/${withDiagram}`, { waitUntil: 'load' });
    const dark = await page.evaluate(() => document.documentElement.classList.contains('coal'));
    if (!dark) fail(withDiagram, 'the coal theme did not apply');
    try {
      await page.waitForFunction(() => document.querySelector('.mermaid svg'), null, { timeout: 15000 });
      await page.locator('.mermaid').first().screenshot({ path: path.join(artefacts, 'dark-theme-diagram.png') });
    } catch {
      fail(withDiagram, 'no diagram drawn in the coal theme');
    }
  }
  await page.close();
}

await browser.close();
server.close();
console.log(`browser test: ${pages.length} pages, ${diagrams} diagrams, ${formulas} formulas, ${tables} lab sections; artefacts in ${artefacts}`);
if (failures.length) {
  for (const failure of failures) console.log(`FAIL ${failure}`);
  console.log(`${pages.length - new Set(failures.map((f) => f.split(':')[0])).size} passed, ${new Set(failures.map((f) => f.split(':')[0])).size} failed`);
  process.exit(1);
}
console.log(`${pages.length} passed, 0 failed`);
