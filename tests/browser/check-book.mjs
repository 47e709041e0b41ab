// Browser test of the built book: serves target/book on localhost, loads every page in headless
// Chromium and checks that it works offline. Run after `kernelbook build`:
//
//   node tests/browser/check-book.mjs [BOOK_DIR] [ARTEFACT_DIR]
//
// For every page: no console error, no request leaving localhost, every mermaid block drawn as an
// SVG, every math span rendered by KaTeX (no error, no raw `$$` left), every internal link and
// anchor resolving, every warp-access and bank diagram drawn with its numbers agreeing with the
// drawing, the sentence beside it and the counters table under it. Lab chapters must show their
// tables; search must find a word; the dark theme must draw diagrams too, their text legible.
// Every lab section must have its chart, drawn at a size, with marks, its text legible and its
// marks visible on the page's background, in the light theme and in each dark theme (coal, navy,
// ayu). No lab table is wider than the text column in a 1280 px window. Screenshots of the transpose lab, of a diagram in the dark theme, and of the Lab 2 and
// memory-wall charts in the light and the coal theme are kept as artefacts.

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

// The pages whose chapters place warp-access or bank diagrams, and how many figures each has at
// least (issue #16: coalescing, drill 1, the naive transpose and the 64-wide tile, banks, the
// practice problems, drill 2; issue #20: the stride sweep and the XOR swizzle).
const diagramPages = {
  'hierarchy/coalescing.html': 3,
  'hierarchy/shared-memory.html': 6,
  'exercises/practice-problems.html': 3,
  'exercises/drill-coalesce.html': 2,
  'exercises/drill-bank-conflict.html': 4,
  'labs/lab2-transpose.html': 4,
  // issue #29: the reduction ladder's bank pictures, the layout lab's offsets and structures.
  'labs/reduction.html': 2,
  'labs/layout.html': 3,
};

// What the model's counters agree within (preprocessor/src/diagram/compare.rs).
const agrees = (predicted, measured) => {
  const gap = Math.abs(measured - predicted);
  return gap <= 0.15 || gap <= 0.05 * Math.abs(predicted);
};

// Each panel of each diagram on the page, as the browser drew it (worked answers opened first:
// a diagram in a closed <details> is laid out only when it is opened).
const readDiagrams = () => {
  for (const details of document.querySelectorAll('main details')) details.open = true;
  return [...document.querySelectorAll('figure.kernelbook-diagram')].map((figure) => ({
    id: figure.id,
    kind: figure.dataset.kind,
    caption: figure.querySelector('figcaption')?.textContent ?? '',
    panels: [...figure.querySelectorAll('.kernelbook-diagram-panel')].map((panel) => {
      const svg = panel.querySelector('svg');
      const box = svg?.getBoundingClientRect();
      return {
        data: { ...panel.dataset },
        width: box?.width ?? 0,
        height: box?.height ?? 0,
        title: svg?.querySelector(':scope > title')?.textContent ?? '',
        svgText: svg ? [...svg.querySelectorAll('text')].map((t) => t.textContent).join(' | ') : '',
        fetched: svg?.querySelectorAll('rect.fetched:not(.swatch)').length ?? 0,
        passes: svg ? [...svg.querySelectorAll('text.row-label')].filter((t) => t.textContent.startsWith('pass ')).length : 0,
        numbers: panel.querySelector('.kernelbook-diagram-numbers')?.textContent ?? '',
        verdict: panel.querySelector('table[data-verdict]')?.dataset.verdict ?? null,
        verdictText: panel.querySelector('.kernelbook-diagram-verdict')?.textContent ?? '',
        rows: [...panel.querySelectorAll('tr[data-metric]')].map((tr) => ({
          metric: tr.dataset.metric,
          predicted: tr.dataset.predicted,
          measured: tr.dataset.measured,
          predictedCell: tr.querySelector('.predicted')?.textContent,
          measuredCell: tr.querySelector('.measured')?.textContent,
        })),
      };
    }),
  }));
};

// The problems with one diagram: not drawn, or a number that the drawing, the sentence beside
// it or the counters table says otherwise.
function diagramProblems(figure) {
  const problems = [];
  const say = (message) => problems.push(`diagram ${figure.id}: ${message}`);
  if (!figure.panels.length) say('has no panel');
  if (!figure.caption.includes('t = 0 … 31')) say('the caption does not say what was drawn');
  for (const [i, panel] of figure.panels.entries()) {
    const where = `panel ${i + 1}`;
    if (panel.width < 200 || panel.height < 60) say(`${where}: drawn ${panel.width}×${panel.height}`);
    if (!panel.title) say(`${where}: the SVG has no <title>`);
    const d = panel.data;
    const expect = (text, fragment, what) => {
      if (!text.includes(fragment)) say(`${where}: ${what} lacks "${fragment}": ${text}`);
    };
    let model = {};
    if (figure.kind === 'warp-access') {
      const sectors = `${d.sectors} sector${d.sectors === '1' ? '' : 's'}`;
      for (const fragment of [sectors, `${d.sectorBytes} B ${d.moved}`, `in ${d.lines} line`, `${d.usedBytes} B used`,
        `${d.sectorEfficiency} % of the sectors`, `${d.lineEfficiency} % of the lines`]) expect(panel.numbers, fragment, 'the sentence beside it');
      for (const fragment of [sectors, `${d.usedBytes} B used of ${d.sectorBytes} B ${d.moved} (${d.sectorEfficiency} %)`]) expect(panel.svgText, fragment, 'the drawing');
      if (String(panel.fetched) !== d.sectors) say(`${where}: ${panel.fetched} sectors drawn ${d.moved}, ${d.sectors} counted`);
      const efficiency = (100 * Number(d.usedBytes)) / Number(d.sectorBytes);
      if (Math.abs(efficiency - Number(d.sectorEfficiency)) > 0.01) say(`${where}: ${d.usedBytes} of ${d.sectorBytes} B is not ${d.sectorEfficiency} %`);
      model = { 'sectors-per-request': d.sectors };
    } else if (figure.kind === 'banks') {
      const degree = d.degree === '1' ? 'No conflict' : `${d.degree}-way conflict`;
      for (const fragment of [degree, `${d.wavefronts} wavefront`, `${d.conflicts} conflict`, `${d.banksUsed} of 32 banks`]) expect(panel.numbers, fragment, 'the sentence beside it');
      for (const fragment of [degree, `${d.wavefronts} wavefront`]) expect(panel.svgText, fragment, 'the drawing');
      if (String(panel.passes) !== d.wavefronts) say(`${where}: ${panel.passes} passes drawn, ${d.wavefronts} wavefronts counted`);
      if (d.degree !== d.wavefronts || Number(d.conflicts) !== Number(d.wavefronts) - 1) say(`${where}: degree ${d.degree}, wavefronts ${d.wavefronts} and conflicts ${d.conflicts} disagree`);
      model = { 'conflicts-per-request': d.conflicts, 'wavefronts-per-request': d.wavefronts };
    } else {
      say(`unknown kind ${figure.kind}`);
    }
    for (const row of panel.rows) {
      if (row.predictedCell !== row.predicted || row.measuredCell !== row.measured) say(`${where}: the ${row.metric} cells do not show their figures`);
      if (model[row.metric] !== row.predicted) say(`${where}: the table predicts ${row.predicted} ${row.metric}, the diagram ${model[row.metric]}`);
      if (row.measured !== '–') {
        const verdict = agrees(Number(row.predicted), Number(row.measured));
        if (verdict && !['agree', 'differ'].includes(panel.verdict)) say(`${where}: verdict ${panel.verdict} beside a counter`);
        if (!verdict && panel.verdict !== 'differ') say(`${where}: ${row.metric} ${row.measured} against ${row.predicted} is not called a difference`);
      }
    }
    if (panel.verdict === 'agree' && !panel.verdictText.includes('agree')) say(`${where}: the verdict does not say they agree`);
    if (panel.verdict === 'differ' && !panel.verdictText.includes('differ')) say(`${where}: the verdict does not name the difference`);
  }
  return problems;
}

// WCAG contrast ratio of two computed colours ("rgb(r, g, b)").
function contrast(a, b) {
  const luminance = (rgb) => {
    const [r, g, bl] = rgb.match(/[\d.]+/g).slice(0, 3).map(Number).map((c) => {
      const s = c / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

// Each chart of the page as the browser drew it: its size, how many marks it has, and its
// text's and its marks' colours against the background they are drawn on.
const readCharts = () => {
  const parse = (colour) => {
    const m = colour.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const [r, g, b, a = 1] = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return { r, g, b, a };
  };
  // The colour an element is drawn on: the first ancestor with an opaque background.
  const background = (el) => {
    for (let node = el; node; node = node.parentElement) {
      const colour = parse(getComputedStyle(node).backgroundColor);
      if (colour && colour.a > 0) return `rgb(${colour.r}, ${colour.g}, ${colour.b})`;
    }
    return 'rgb(255, 255, 255)';
  };
  return [...document.querySelectorAll('figure.kernelbook-chart')].map((figure) => {
    const svg = figure.querySelector('svg');
    const box = svg?.getBoundingClientRect();
    const texts = svg ? [...svg.querySelectorAll('text')] : [];
    // Solid marks only: a hatched or translucent one is read by its outline.
    const solid = svg ? [...svg.querySelectorAll('rect.bar, rect.part, circle.point')].filter((el) => {
      const style = getComputedStyle(el);
      return /^rgb/.test(style.fill) && Number(style.fillOpacity) === 1;
    }) : [];
    return {
      id: figure.id,
      kind: figure.dataset.kind,
      width: box?.width ?? 0,
      height: box?.height ?? 0,
      title: svg?.querySelector(':scope > title')?.textContent ?? '',
      // A bar or point carries its figure; a timeline's part its events' times.
      marks: svg ? svg.querySelectorAll('[data-value], rect.part').length : 0,
      background: background(figure),
      textColours: [...new Set(texts.map((t) => getComputedStyle(t).fill))],
      markColours: [...new Set(solid.map((el) => getComputedStyle(el).fill))],
      hidden: texts.filter((t) => getComputedStyle(t).visibility === 'hidden' || Number(getComputedStyle(t).opacity) === 0).length,
    };
  });
};

// The problems with the charts of a page drawn in `theme`.
function chartProblems(charts, theme) {
  const problems = [];
  for (const chart of charts) {
    const say = (message) => problems.push(`chart ${chart.id} (${theme}): ${message}`);
    if (chart.width < 300 || chart.height < 80) say(`drawn ${chart.width}×${chart.height}`);
    if (!chart.title) say('the SVG has no <title>');
    if (!chart.marks) say('has no marks');
    if (chart.hidden) say(`${chart.hidden} hidden labels`);
    for (const fill of chart.textColours) {
      if (contrast(fill, chart.background) < 4.5) say(`text ${fill} on ${chart.background} is hard to read`);
    }
    for (const fill of chart.markColours) {
      if (contrast(fill, chart.background) < 3) say(`marks ${fill} on ${chart.background} are hard to see`);
    }
  }
  return problems;
}

// What it is doing, as it goes: loading 30-odd pages takes minutes, which must not look like a hang.
const started = Date.now();
const progress = (what) => console.log(`browser test: ${((Date.now() - started) / 1000).toFixed(0)} s: ${what}`);
progress(`serving ${bookDir}, starting ${browserPath}`);
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
progress(`${pages.length} pages to load`);
let diagrams = 0;
let figures = 0;
let formulas = 0;
let tables = 0;
let labTables = 0;
let charts = 0;
const chartPages = [];
// The charts kept as screenshots, in the light and the coal theme (and checked in every theme).
const chartShots = { 'labs/lab2-transpose.html': 'chart-lab2', 'practice/memory-wall.html': 'chart-memory-wall' };
for (const [index, name] of pages.entries()) {
  progress(`page ${index + 1} of ${pages.length}: ${name}`);
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

  // Every lab section with results has its chart, drawn in the light theme.
  const drawnCharts = await page.evaluate(readCharts);
  const withResults = await page.evaluate(() => document.querySelectorAll('.kernelbook-lab .kernelbook-provenance').length);
  // A timeline ({{#timeline}}) draws one run's events beside the prose, and the GPUs'
  // comparison charts are checked like a lab's but stand beside no lab table.
  const labCharts = drawnCharts.filter((chart) => chart.kind !== 'timeline' && chart.kind !== 'gpus').length;
  if (labCharts !== withResults) problems.push(`${labCharts} charts for ${withResults} lab tables`);
  const theme = await page.evaluate(() => document.documentElement.className);
  if (drawnCharts.length && !/\blight\b/.test(theme)) problems.push(`charts checked in "${theme}", not the light theme`);
  problems.push(...chartProblems(drawnCharts, 'light'));
  if (drawnCharts.length) chartPages.push(name);
  charts += drawnCharts.length;

  const drawn = await page.evaluate(readDiagrams);
  for (const figure of drawn) problems.push(...diagramProblems(figure));
  if (drawn.length < (diagramPages[name] ?? 0)) problems.push(`${drawn.length} diagrams, expected at least ${diagramPages[name]}`);
  const leftOver = await page.evaluate(() => (document.querySelector('main')?.innerText.match(/\{\{#(warp-access|banks|gpus-compared)/g) ?? []).length);
  if (leftOver) problems.push('a diagram or comparison directive was left unrendered');
  if (name === 'gpus-compared') {
    const compared = await page.evaluate(() => ({
      tables: document.querySelectorAll('table.kernelbook-compare').length,
      charts: document.querySelectorAll('figure.kernelbook-chart-gpus svg rect.bar').length,
    }));
    if (compared.tables < 10 || compared.charts === 0) problems.push(`the GPUs' comparison has ${compared.tables} tables and ${compared.charts} bars`);
  }
  figures += drawn.length;

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
  if (chartShots[name] && drawnCharts.length) {
    await page.locator('figure.kernelbook-chart').first().screenshot({ path: path.join(artefacts, `${chartShots[name]}-light.png`) });
  }
  // Lab tables read without horizontal scrolling in this 1280 px window: no table (the launch
  // statistics opened) is wider than its lab's column, and no lab section scrolls sideways.
  const overflows = await page.evaluate(() => {
    document.querySelectorAll('.kernelbook-lab details').forEach((d) => { d.open = true; });
    const wide = [];
    for (const lab of document.querySelectorAll('.kernelbook-lab')) {
      const column = lab.clientWidth;
      for (const table of lab.querySelectorAll('table')) {
        const width = table.getBoundingClientRect().width;
        if (width > column + 1) {
          const what = table.querySelector('caption')?.textContent.slice(0, 40) ?? table.className ?? 'table';
          wide.push(`${lab.id}: a table (${what || 'launch statistics'}) is ${Math.round(width)} px wide in a ${column} px column`);
        }
      }
      if (lab.scrollWidth > column + 1) wide.push(`${lab.id}: scrolls sideways (${lab.scrollWidth} px in ${column} px)`);
    }
    return { wide, tables: document.querySelectorAll('.kernelbook-lab table').length };
  });
  problems.push(...overflows.wide);
  labTables += overflows.tables;
  for (const problem of problems) fail(name, problem);
  await page.close();
}
if (labTables === 0) fail('book', 'no lab table was measured for overflow at 1280 px');

// Search: the index is built and finds a word.
progress('search');
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
progress('diagrams in the coal theme');
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

// Dark theme: the warp-access and bank diagrams take the theme's colours, and their text reads
// on its background.
{
  const page = await context.newPage();
  await page.addInitScript(() => localStorage.setItem('mdbook-theme', 'coal'));
  const name = 'hierarchy/shared-memory.html';
  await page.goto(`${origin}/${name}`, { waitUntil: 'load' });
  const colours = await page.evaluate(() => {
    const text = document.querySelector('.kernelbook-diagram-svg text');
    const background = (el) => {
      for (let node = el; node; node = node.parentElement) {
        const colour = getComputedStyle(node).backgroundColor;
        if (colour && !/rgba\(0, 0, 0, 0\)|transparent/.test(colour)) return colour;
      }
      return 'rgb(255, 255, 255)';
    };
    return text ? { fill: getComputedStyle(text).fill, background: background(text.closest('figure')) } : null;
  });
  if (!colours) {
    fail(name, 'no diagram text in the coal theme');
  } else if (contrast(colours.fill, colours.background) < 4.5) {
    fail(name, `diagram text ${colours.fill} on ${colours.background} is hard to read in the coal theme`);
  }
  await page.locator('figure.kernelbook-diagram').nth(1).screenshot({ path: path.join(artefacts, 'dark-theme-bank-diagram.png') });
  await page.close();
}

// Dark themes: every chart is drawn in coal, its text legible and its marks visible; navy and ayu
// on the pages of Lab 2 and the memory wall.
for (const theme of ['coal', 'navy', 'ayu']) {
  progress(`charts in the ${theme} theme`);
  const names = theme === 'coal' ? chartPages : chartPages.filter((n) => chartShots[n]);
  for (const name of names) {
    const page = await context.newPage();
    await page.addInitScript((t) => localStorage.setItem('mdbook-theme', t), theme);
    await page.goto(`${origin}/${name}`, { waitUntil: 'load' });
    const applied = await page.evaluate((t) => document.documentElement.classList.contains(t), theme);
    if (!applied) fail(name, `the ${theme} theme did not apply`);
    for (const problem of chartProblems(await page.evaluate(readCharts), theme)) fail(name, problem);
    if (theme === 'coal' && chartShots[name]) {
      await page.locator('figure.kernelbook-chart').first().screenshot({ path: path.join(artefacts, `${chartShots[name]}-coal.png`) });
    }
    await page.close();
  }
}
if (chartPages.length < 10) fail('book', `charts on only ${chartPages.length} pages`);

await browser.close();
server.close();
console.log(`browser test: ${pages.length} pages, ${diagrams} mermaid diagrams, ${figures} warp-access and bank diagrams, ${formulas} formulas, ${tables} lab sections, ${labTables} lab tables within the column at 1280 px, ${charts} charts; artefacts in ${artefacts}`);
if (failures.length) {
  for (const failure of failures) console.log(`FAIL ${failure}`);
  console.log(`${pages.length - new Set(failures.map((f) => f.split(':')[0])).size} passed, ${new Set(failures.map((f) => f.split(':')[0])).size} failed`);
  process.exit(1);
}
console.log(`${pages.length} passed, 0 failed`);
