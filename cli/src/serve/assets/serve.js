// kernelbook serve: the page's side. `kernelbook serve` adds this script to every page it
// serves (never to the book `kernelbook build` writes). It
//   - follows the server's status over a websocket: reloads the page when a newer book is in
//     place, shows a build's error, marks the labs the GPU is measuring;
//   - turns each exercise's starter kernel into an editor with a "Check on my GPU" button: the
//     learner's version is kept on the server (exercises/NAME.cu) as they type, and the verdict,
//     the table and the compiler's errors (at their lines in the editor) appear beside it.
// Everything the server sends is put in the page as text, never as HTML.
(() => {
  'use strict';
  const meta = document.querySelector('meta[name="kernelbook-serve"]');
  if (!meta) return;
  const context = JSON.parse(meta.content);
  const api = '/__kernelbook/api/';

  // Requests that change or run anything carry the token in a header (the server refuses
  // them otherwise); the page's cookie carries it for the rest.
  async function request(method, path, body, options = {}) {
    const headers = { 'X-Kernelbook-Token': context.token };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let response;
    try {
      response = await fetch(api + path, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body), ...options,
      });
    } catch (err) {
      return { ok: false, status: 0, data: { error: `kernelbook serve cannot be reached (${err.message})` } };
    }
    let data = null;
    try { data = await response.json(); } catch { data = null; }
    return { ok: response.ok, status: response.status, data };
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // ---- the status: a bar at the bottom, the error panel, the labs being measured ----

  const bar = element('div', 'kernelbook-serve-bar');
  bar.hidden = true;
  const errorPanel = element('div', 'kernelbook-serve-error');
  errorPanel.setAttribute('role', 'alert');
  errorPanel.append(element('strong', '', 'The book does not build. The last good version is shown; fix this and save:'));
  const errorText = element('pre');
  errorPanel.append(errorText);
  errorPanel.hidden = true;
  document.body.append(errorPanel, bar);

  function barText(status) {
    const doing = status.progress ? `: ${status.progress}` : '';
    if (status.building) return 'Rebuilding the book…';
    if (status.checking) return `Checking ${status.checking} on your GPU${doing}`;
    if (status.measuring.length) return `Measuring ${status.measuring.join(', ')} on your GPU${doing}`;
    if (status.counting.length) return `Collecting the counters of ${status.counting.join(', ')} on your GPU${doing}`;
    return '';
  }

  function markMeasuring(status) {
    for (const section of document.querySelectorAll('.kernelbook-lab[id^="lab-"]')) {
      const lab = section.id.slice('lab-'.length);
      let banner = section.querySelector(':scope > .kernelbook-serve-measuring');
      if (!status.measuring.includes(lab)) {
        banner?.remove();
        continue;
      }
      if (!banner) {
        banner = element('p', 'kernelbook-serve-measuring');
        section.prepend(banner);
      }
      const doing = status.progress ? ` (${status.progress})` : '';
      banner.textContent = `Being measured on your GPU${doing}: the numbers below are the recorded ones until the page reloads with yours.`;
    }
  }

  let reloading = false;
  function show(status) {
    lastStatus = status;
    if (status.version > context.version && !status.building) {
      reloadWhenIdle();
    }
    errorPanel.hidden = !status.error;
    errorText.textContent = status.error ?? '';
    const text = barText(status);
    bar.hidden = !text;
    bar.textContent = text;
    markMeasuring(status);
    for (const exercise of exercises) exercise.gpu(status);
  }

  // Reloads once nothing of the learner's is in flight: their edit saved, their check answered.
  async function reloadWhenIdle() {
    if (reloading) return;
    reloading = true;
    await Promise.all(exercises.map((exercise) => exercise.idle()));
    location.reload();
  }

  let lastStatus = null;
  function connect() {
    // The labs this page shows: the GPU measures them first after a save.
    const labs = [...document.querySelectorAll('.kernelbook-lab[id^="lab-"]')]
      .map((section) => section.id.slice('lab-'.length));
    const shown = encodeURIComponent(labs.join(','));
    const socket = new WebSocket(`ws://${location.host}/__kernelbook/events?token=${context.token}&labs=${shown}`);
    socket.onmessage = (event) => show(JSON.parse(event.data));
    socket.onclose = () => {
      bar.hidden = false;
      bar.textContent = 'kernelbook serve has stopped (or restarted: open the address it printed).';
      setTimeout(connect, 2000);
    };
  }

  // ---- exercises: the starter kernel as an editor, with the Check button ----

  const exercises = [];

  // The editor: mdBook's Ace where the book ships it (book.toml: `[output.html.playground]
  // editable = true`), a plain text area otherwise.
  function makeEditor(holder, source) {
    if (window.ace) {
      const editor = window.ace.edit(holder);
      // Ace's C++ mode is not shipped with mdBook; Rust's highlights C's comments, strings,
      // numbers and most keywords, and nothing is fetched.
      const mode = ['ace/mode/c_cpp', 'ace/mode/rust'].find((name) => window.ace.require(name));
      if (mode) editor.session.setMode(mode);
      const dark = ['coal', 'navy', 'ayu'].some((theme) => document.documentElement.classList.contains(theme));
      editor.setTheme(dark ? 'ace/theme/tomorrow_night' : 'ace/theme/dawn');
      editor.setOptions({
        maxLines: Infinity, showPrintMargin: false, highlightActiveLine: false,
        showLineNumbers: true, showGutter: true, fontSize: '0.875em', tabSize: 4, useSoftTabs: true,
        fontFamily: 'var(--mono-font), monospace',
      });
      editor.setValue(source, -1);
      // Ace measures its lines with the font it finds first; once the book's code font has
      // loaded, it measures again (or underscores fall below the line).
      document.fonts?.ready.then(() => editor.renderer.updateFontSize());
      // mdBook's theme switcher re-themes every editor listed here.
      (window.editors ??= []).push(editor);
      return {
        value: () => editor.getValue(),
        set: (text) => editor.setValue(text, -1),
        onChange: (callback) => editor.session.on('change', callback),
        mark: (errors) => editor.session.setAnnotations(errors.map((e) => ({
          row: e.line - 1, column: 0, text: e.message, type: 'error',
        }))),
        go: (line) => { editor.gotoLine(line, 0, true); editor.focus(); },
      };
    }
    const area = element('textarea', 'kernelbook-exercise-text');
    area.spellcheck = false;
    area.value = source;
    area.rows = Math.max(8, source.split('\n').length + 1);
    holder.append(area);
    return {
      value: () => area.value,
      set: (text) => { area.value = text; },
      onChange: (callback) => area.addEventListener('input', callback),
      mark: () => {},
      go: (line) => {
        const start = area.value.split('\n').slice(0, line - 1).join('\n').length + (line > 1 ? 1 : 0);
        area.focus();
        area.setSelectionRange(start, start);
      },
    };
  }

  function resultsTable(report) {
    const table = element('table', 'kernelbook-results');
    const head = table.createTHead().insertRow();
    for (const name of report.header) head.append(element('th', '', name));
    const body = table.createTBody();
    for (const row of report.rows) {
      const tr = body.insertRow();
      if (row[0] === 'yours') tr.className = 'kernelbook-exercise-yours';
      for (const cell of row) tr.insertCell().textContent = cell;
    }
    return table;
  }

  async function setUpExercise(exercise, pre, machine) {
    const saved = await request('GET', `exercises/${encodeURIComponent(exercise.name)}`);
    if (!saved.ok) return;
    const panel = element('div', 'kernelbook-exercise');
    panel.dataset.exercise = exercise.name;
    const holder = element('div', 'kernelbook-exercise-editor');
    const actions = element('div', 'kernelbook-exercise-actions');
    const check = element('button', 'kernelbook-check', 'Check on my GPU');
    check.type = 'button';
    const reset = element('button', 'kernelbook-reset', 'Back to the starter');
    reset.type = 'button';
    const note = element('span', 'kernelbook-exercise-note');
    actions.append(check, reset, note);
    const result = element('div', 'kernelbook-exercise-result');
    result.hidden = true;
    panel.append(holder, actions, result);
    pre.after(panel);
    pre.hidden = true;
    const editor = makeEditor(holder, saved.data.source);
    const kept = `Your version is kept in ${saved.data.file}.`;
    note.textContent = kept;

    // Saves a moment after the last keystroke, so that closing the tab loses nothing.
    let timer = null;
    let saving = Promise.resolve();
    let checking = Promise.resolve();
    const save = () => {
      clearTimeout(timer);
      timer = null;
      saving = request('PUT', `exercises/${encodeURIComponent(exercise.name)}`, { source: editor.value() })
        .then((answer) => { note.textContent = answer.ok ? kept : `Not kept: ${answer.data?.error ?? answer.status}`; });
      return saving;
    };
    editor.onChange(() => {
      clearTimeout(timer);
      timer = setTimeout(save, 600);
    });
    window.addEventListener('pagehide', () => {
      if (timer !== null) {
        clearTimeout(timer);
        request('PUT', `exercises/${encodeURIComponent(exercise.name)}`, { source: editor.value() }, { keepalive: true });
      }
    });
    reset.addEventListener('click', () => { editor.set(saved.data.starter); save(); });

    let noGpu = machine.no_gpu;
    let running = false;
    const gpu = (status) => {
      noGpu = status.no_gpu;
      check.disabled = running || Boolean(noGpu);
      check.textContent = noGpu ? 'No GPU to check on' : 'Check on my GPU';
      check.title = noGpu ? `This machine cannot grade it: ${noGpu}` : 'Compile, verify and time your kernel beside the starter and the solution';
      if (noGpu) note.textContent = `This machine cannot grade it: ${noGpu}. ${kept}`;
    };
    gpu(machine);

    check.addEventListener('click', () => {
      clearTimeout(timer);
      timer = null;
      running = true;
      check.disabled = true;
      result.hidden = false;
      result.replaceChildren(element('p', 'kernelbook-verdict', 'Checking on your GPU…'));
      editor.mark([]);
      checking = request('POST', `exercises/${encodeURIComponent(exercise.name)}/check`, { source: editor.value() })
        .then((answer) => {
          running = false;
          gpu(lastStatus ?? machine);
          showVerdict(result, answer, editor);
        });
    });

    exercises.push({
      gpu,
      idle: async () => {
        if (timer !== null) await save();
        await saving;
        await checking;
      },
    });
  }

  // A list of messages at lines of the learner's kernel, each line a link into the editor.
  function lineList(className, lines, editor) {
    const list = element('ul', className);
    for (const error of lines) {
      const item = element('li');
      const link = element('a', '', `line ${error.line}`);
      link.href = '#';
      link.addEventListener('click', (event) => { event.preventDefault(); editor.go(error.line); });
      item.append(link, `: ${error.message}`);
      list.append(item);
    }
    return list;
  }

  function showVerdict(result, answer, editor) {
    if (!answer.ok) {
      result.replaceChildren(element('p', 'kernelbook-verdict kernelbook-verdict-error',
        answer.data?.error ?? `The server answered ${answer.status}.`));
      return;
    }
    const report = answer.data;
    const [first, ...rest] = report.message.split('\n');
    const verdict = element('p', `kernelbook-verdict kernelbook-verdict-${report.verdict}`, first);
    const parts = [verdict];
    if (report.errors.length) {
      parts.push(lineList('kernelbook-compile-errors', report.errors, editor));
      editor.mark(report.errors);
    } else if (rest.length) {
      parts.push(element('pre', 'kernelbook-verdict-detail', rest.join('\n')));
    }
    // Why the kernel is wrong, where compute-sanitizer could tell: its findings at the lines
    // of the editor, then its words.
    if (report.findings?.length) {
      parts.push(lineList('kernelbook-sanitizer-findings', report.findings, editor));
      editor.mark(report.findings);
    }
    if (report.sanitizer?.length) {
      parts.push(element('pre', 'kernelbook-sanitizer', report.sanitizer.join('\n')));
    }
    parts.push(resultsTable(report), element('p', 'kernelbook-measured-on', report.measured_on));
    result.replaceChildren(...parts);
  }

  async function setUpExercises() {
    if (location.pathname.endsWith('/print.html')) return;
    const captions = [...document.querySelectorAll('p.kernelbook-kernel[data-kernel]')];
    if (!captions.length) return;
    const list = await request('GET', 'exercises');
    if (!list.ok) return;
    for (const exercise of list.data.exercises) {
      const caption = captions.find((c) => c.dataset.kernel === exercise.kernel);
      const pre = caption?.nextElementSibling;
      if (pre?.tagName === 'PRE') await setUpExercise(exercise, pre, list.data);
    }
    if (lastStatus) show(lastStatus);
  }

  setUpExercises().finally(connect);
})();
