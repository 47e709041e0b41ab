// Browser test of `kernelbook serve`: starts it on a copy of the fixture book tests/serve-book
// with the fake device (KERNELBOOK_DEVICE=fake, which only a test build of kernelbook has: the
// one `cargo test` builds), then in headless Chromium:
//   - the lab is measured in the background and the page reloads with its numbers;
//   - editing a chapter reloads the page with the edit;
//   - the exercise's starter kernel is an editor: a correct edit gets PASS, a line with `#error`
//     gets FAIL with the compile error at that line of the editor, and the last version is kept
//     in exercises/NAME.cu (it is there again after a reload);
//   - a broken lab file and a broken chapter show their error in the page, and the next good
//     save recovers;
//   - on a machine without the device asked for, the button is disabled and says why.
// No console error and no request leaving localhost on any page.
//
//   node tests/browser/check-serve.mjs [KERNELBOOK] [ARTEFACT_DIR]

import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const kernelbook = path.resolve(process.argv[2] ?? 'target/debug/kernelbook');
const artefacts = path.resolve(process.argv[3] ?? 'target/browser-test');
const browserPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const fixture = path.resolve('tests/serve-book');
const EXERCISE = 'copy_exercise';

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'kernelbook-serve-test-'));
const servers = [];
const failures = [];
const fail = (message) => { failures.push(message); console.log(`FAIL ${message}`); };

// Starts `kernelbook serve` on a fresh copy of the fixture book; resolves to its address once it
// printed it.
function startServer(name, device) {
  const root = path.join(scratch, name);
  fs.cpSync(fixture, root, { recursive: true });
  const child = spawn(kernelbook, ['--root', root, 'serve'], {
    env: { ...process.env, KERNELBOOK_DEVICE: device },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const server = { root, child, log: '' };
  servers.push(server);
  child.stderr.on('data', (chunk) => { server.log += chunk; });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no address after 60 s:\n${server.log}`)), 60000);
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const found = out.match(/http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]+/);
      if (found) {
        clearTimeout(timer);
        server.address = found[0];
        server.origin = new URL(found[0]).origin;
        resolve(server);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`kernelbook serve exited (${code}) before serving:\n${server.log}`));
    });
  });
}

// Polls `check` in the page until it is true; a reload in between is waited out.
async function until(page, what, check, timeout = 30000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    try {
      if (await page.evaluate(check)) return true;
    } catch {
      // The page is reloading: ask the next one.
    }
    if (Date.now() > deadline) {
      fail(`${what} (waited ${timeout / 1000} s)`);
      return false;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function edit(file, from, to) {
  const text = fs.readFileSync(file, 'utf8');
  if (!text.includes(from)) throw new Error(`${file} has no ${JSON.stringify(from)}`);
  fs.writeFileSync(file, text.replace(from, to));
}

function watchProblems(page, server) {
  page.on('console', (msg) => { if (msg.type() === 'error') fail(`console error: ${msg.text()}`); });
  page.on('pageerror', (err) => fail(`page error: ${err.message}`));
  page.on('request', (req) => {
    const url = new URL(req.url());
    if (!['data:', 'blob:', 'about:'].includes(url.protocol) && url.hostname !== '127.0.0.1') {
      fail(`request leaves localhost: ${req.url()}`);
    }
  });
  page.on('response', (res) => { if (res.status() >= 400) fail(`HTTP ${res.status()}: ${res.url()}\n${server.log}`); });
}

// The page survives a reload only where the page is the old one: a mark set now is gone after.
const mark = (page) => page.evaluate(() => { window.kernelbookTestMark = true; });
const reloaded = () => !window.kernelbookTestMark;

async function measuredAndReloaded(page) {
  await until(page, 'the lab shows the fake device\'s numbers', () =>
    document.querySelector('#lab-copy_exercise.kernelbook-live table.kernelbook-results tbody tr') !== null
      && document.querySelector('.kernelbook-serve-measuring') === null);
}

async function chapterEditReloads(page, server) {
  await page.goto(`${server.origin}/introduction.html`, { waitUntil: 'load' });
  await mark(page);
  const started = Date.now();
  edit(path.join(server.root, 'src/introduction.md'), 'reload it.', 'reload it. Edited by the browser test.');
  if (await until(page, 'the edited chapter reloads', () => !window.kernelbookTestMark
      && document.querySelector('main')?.innerText.includes('Edited by the browser test.'))) {
    console.log(`browser test (serve): a chapter edit reloaded the page in ${Date.now() - started} ms`);
  }
}

async function typeInEditor(page, keys) {
  await page.locator('.kernelbook-exercise .ace_content').click();
  for (const key of keys) {
    if (key.press) await page.keyboard.press(key.press);
    else await page.keyboard.type(key.type);
  }
}

async function exerciseIsGraded(page, server) {
  await page.goto(`${server.origin}/exercise.html`, { waitUntil: 'load' });
  await until(page, 'the exercise becomes an editor with an enabled button', () =>
    document.querySelector('.kernelbook-exercise .ace_editor') !== null
      && document.querySelector('.kernelbook-exercise .kernelbook-check')?.disabled === false);
  await typeInEditor(page, [{ press: 'Control+End' }, { type: '\n// my version' }]);
  await page.locator('.kernelbook-exercise .kernelbook-check').click();
  await until(page, 'PASS for a correct kernel', () =>
    document.querySelector('.kernelbook-verdict')?.textContent.startsWith('PASS'));
  const rows = await page.locator('.kernelbook-exercise-result tbody tr').count();
  if (rows !== 3) fail(`the verdict's table has ${rows} rows, not 3 (starter, yours, solution)`);

  // Line 3 becomes an `#error`: the fake compiler rejects the kernel at that line.
  await typeInEditor(page, [{ press: 'Control+Home' }, { press: 'ArrowDown' }, { press: 'ArrowDown' },
    { press: 'Home' }, { type: '#error not yet' }, { press: 'Enter' }]);
  await page.locator('.kernelbook-exercise .kernelbook-check').click();
  await until(page, 'FAIL for a kernel that does not compile', () =>
    document.querySelector('.kernelbook-verdict')?.textContent.startsWith('FAIL: your kernel does not compile'));
  const listed = await page.locator('.kernelbook-compile-errors li').allInnerTexts();
  if (!(listed.length === 1 && listed[0].startsWith('line 3: ') && listed[0].includes('#error not yet'))) {
    fail(`the compile errors listed are ${JSON.stringify(listed)}, not one at line 3`);
  }
  const gutter = await page.locator('.kernelbook-exercise .ace_gutter-cell.ace_error').allInnerTexts();
  if (!(gutter.length === 1 && gutter[0].trim() === '3')) {
    fail(`the editor marks lines ${JSON.stringify(gutter)} as errors, not line 3`);
  }
  await page.locator('.kernelbook-exercise').screenshot({ path: path.join(artefacts, 'serve-exercise-fail.png') });

  const file = path.join(server.root, 'exercises', `${EXERCISE}.cu`);
  const kept = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  if (!(kept.includes('// my version') && kept.split('\n')[2] === '#error not yet')) {
    fail(`exercises/${EXERCISE}.cu does not hold the last version:\n${kept}`);
  }
  await page.reload({ waitUntil: 'load' });
  await until(page, 'the editor shows the kept version after a reload', () =>
    window.ace && document.querySelector('.kernelbook-exercise .ace_editor')
      && window.ace.edit(document.querySelector('.kernelbook-exercise .ace_editor')).getValue().includes('#error not yet'));
}

async function errorsShowAndRecover(page, server) {
  await page.goto(`${server.origin}/introduction.html`, { waitUntil: 'load' });
  const lab = path.join(server.root, 'labs', `${EXERCISE}.toml`);
  const good = fs.readFileSync(lab, 'utf8');
  fs.writeFileSync(lab, good.replace('block = [256]', 'block = [256'));
  await until(page, 'a broken lab file shows its error, at its file', () => {
    const panel = document.querySelector('.kernelbook-serve-error');
    return panel && !panel.hidden && panel.innerText.includes('copy_exercise.toml');
  });
  await page.screenshot({ path: path.join(artefacts, 'serve-build-error.png') });
  await mark(page);
  fs.writeFileSync(lab, good);
  await until(page, 'the next good save reloads the page without the error', () =>
    !window.kernelbookTestMark && document.querySelector('.kernelbook-serve-error')?.hidden === true);

  const chapter = path.join(server.root, 'src/introduction.md');
  edit(chapter, '# Introduction', '# Introduction\n\n{{#lab no_such_lab}}');
  await until(page, 'a broken chapter shows its error, at its line', () =>
    document.querySelector('.kernelbook-serve-error')?.innerText.includes('introduction.md:3'));
  await mark(page);
  edit(chapter, '\n\n{{#lab no_such_lab}}', '');
  await until(page, 'the chapter fixed, the page reloads without the error', () =>
    !window.kernelbookTestMark && document.querySelector('.kernelbook-serve-error')?.hidden === true);
}

async function withoutTheDeviceTheButtonSaysWhy(context) {
  const server = await startServer('no-gpu', 'hip');
  const page = await context.newPage();
  watchProblems(page, server);
  await page.goto(server.address, { waitUntil: 'load' });
  await page.goto(`${server.origin}/exercise.html`, { waitUntil: 'load' });
  const noGpu = await page.evaluate(async () => (await (await fetch('/__kernelbook/api/exercises')).json()).no_gpu);
  if (noGpu === null) {
    console.log('browser test (serve): this machine has a HIP GPU: the no-GPU button was not checked');
  } else {
    await until(page, 'without a GPU the button is disabled and says why', () => {
      const button = document.querySelector('.kernelbook-exercise .kernelbook-check');
      const note = document.querySelector('.kernelbook-exercise .kernelbook-exercise-note');
      return button?.disabled === true && note?.textContent.includes('cannot grade');
    });
  }
  await page.close();
}

let browser;
try {
  fs.mkdirSync(artefacts, { recursive: true });
  const server = await startServer('book', 'fake');
  const userData = fs.mkdtempSync(path.join(scratch, 'chromium-'));
  browser = await chromium.launchPersistentContext(userData, {
    executablePath: browserPath,
    viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage();
  watchProblems(page, server);
  await page.goto(server.address, { waitUntil: 'load' });
  if (new URL(page.url()).search.includes('token')) fail(`the token stayed in the address: ${page.url()}`);
  await page.goto(`${server.origin}/exercise.html`, { waitUntil: 'load' });
  await measuredAndReloaded(page);
  await chapterEditReloads(page, server);
  await exerciseIsGraded(page, server);
  await errorsShowAndRecover(page, server);
  await page.close();
  await withoutTheDeviceTheButtonSaysWhy(browser);
} catch (err) {
  fail(err.stack ?? String(err));
} finally {
  await browser?.close();
  for (const server of servers) server.child.kill('SIGTERM');
  fs.rmSync(scratch, { recursive: true, force: true });
}
if (failures.length) {
  for (const server of servers) console.log(`--- kernelbook serve (${path.basename(server.root)}) said:\n${server.log}`);
  console.log(`browser test (serve): ${failures.length} failed`);
  process.exit(1);
}
console.log('browser test (serve): reload, exercise PASS and FAIL at its line, errors shown and recovered: passed');
