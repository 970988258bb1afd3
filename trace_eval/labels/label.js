// The labelling page of trace-eval: one pair at a time, keyboard first. Labels are sent in the order shown
// (A, B); the server stores them in the benchmark's numbering, with the order shown, and answers only once
// the label is on disk. A save the server did not receive (it stopped) stays on the page and is sent again
// every few seconds until the server is back: it keeps its token and port across restarts.
(() => {
  'use strict';
  const token = new URLSearchParams(location.search).get('token') || '';
  // This page's own id: a team's link labels from one page at a time, and the server tells pages apart by it.
  const pageId = (crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random()}`).replace(/[^\w-]/g, '');
  const $ = (id) => document.getElementById(id);
  const timings = { saves: [] }; // keypress to "saved" (the server replies after fsync), in ms
  window.TRACE_LABEL = timings;
  let state = null;
  let current = -1;
  let pair = null;
  let chosen = {};
  let active = 'a';
  // Keys pressed while a pair is being saved or fetched wait for it and then act on the new pair, so a quick
  // labeller loses no keystroke.
  let busy = false;
  const queued = [];
  const RETRY_MS = 2000;
  let pending = null; // a save the server did not receive: { n, skip } (skip: sent as a skip)
  let retryTimer = null;
  // What the labeller did on the pair in view, sent with the answer: the time on it, and what was played.
  let shownAt = performance.now();
  let played = new Set();

  class ServerGone extends Error {}

  async function api(path, options = {}) {
    let response;
    try {
      response = await fetch(path, {
        ...options,
        headers: { 'X-Trace-Token': token, 'X-Trace-Page': pageId, 'Content-Type': 'application/json' },
      });
    } catch (error) {
      throw new ServerGone(error.message); // no answer at all: the server is not running
    }
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(body.error || response.statusText);
    return body;
  }

  // What to say when the server does not answer: it stopped, how to start it, and that nothing typed is lost.
  function stopped(what) {
    const restart = state && state.restart ? state.restart : 'python -m trace_eval label BENCH --annotator NAME';
    return [`${what}: the labelling server has stopped. This page keeps its labels and saves them as soon as `
      + 'the server is back; start it again with', restart];
  }

  const title = (name) => (state.fields.find((f) => f.name === name) || { title: name }).title;

  const audioUrl = (n, role) => `/audio/${n}/${role}?token=${encodeURIComponent(token)}`;
  const player = (role) => $(`audio-${role}`);

  // text, or [text, command]: the command shown as code.
  function setStatus(text, kind = '') {
    const status = $('status');
    const [words, command] = Array.isArray(text) ? text : [text, null];
    status.textContent = words;
    if (command) {
      const code = document.createElement('code');
      code.textContent = command;
      status.append(' ', code);
    }
    status.className = `status ${kind}`;
  }

  function buildFields() {
    const form = $('fields');
    form.replaceChildren();
    for (const field of state.fields) {
      const box = document.createElement('div');
      box.className = `field${field.name === 'overall' ? ' overall' : ''}`;
      box.dataset.field = field.name;
      const title = document.createElement('h2');
      title.textContent = field.title;
      const asks = document.createElement('p');
      asks.className = 'asks';
      asks.textContent = field.asks;
      const choices = document.createElement('div');
      choices.className = 'choices';
      choices.tabIndex = 0;
      choices.setAttribute('role', 'radiogroup');
      choices.setAttribute('aria-label', field.title);
      choices.dataset.field = field.name;
      field.values.forEach((value, i) => {
        const button = document.createElement('button');
        button.type = 'button';
        button.className = 'choice';
        button.tabIndex = -1;
        button.dataset.value = JSON.stringify(value);
        const key = document.createElement('kbd');
        key.textContent = field.digits[i];
        button.append(key, document.createTextNode(field.names[i]));
        button.addEventListener('click', () => { choose(field.name, value); choices.focus(); });
        choices.append(button);
      });
      const reason = document.createElement('input');
      reason.dir = 'auto';  // typed in any script, read in its own direction
      reason.className = 'reason';
      reason.type = 'text';
      reason.maxLength = 2000;
      reason.placeholder = 'reason (optional)';
      reason.dataset.field = field.name;
      reason.setAttribute('aria-label', `${field.title}: reason`);
      box.append(title, asks, choices, reason);
      form.append(box);
    }
    $('skip-reason').replaceChildren(...state.skip_reasons.map((r, i) => new Option(`${i + 1} ${r}`, r)));
  }

  function choose(name, value) {
    chosen[name] = value;
    const box = document.querySelector(`.field[data-field="${name}"]`);
    box.classList.remove('missing');
    for (const button of box.querySelectorAll('.choice')) {
      button.classList.toggle('chosen', button.dataset.value === JSON.stringify(value));
    }
  }

  function progress() {
    const answered = state.done.filter(Boolean).length;
    if (state.team) { // a team's pairs are handed out one at a time: how many the team has left, not a total
      const shown = current < state.total ? `pair ${current + 1}` : `${answered} pairs`;
      $('progress').textContent = `${shown} · ${answered} answered · ${state.team.left} label(s) left for the team`;
      const planned = answered + state.team.left / Math.max(1, state.team.overlap);
      $('bar').style.width = `${(100 * answered) / Math.max(1, planned)}%`;
      return;
    }
    const shown = current < state.total ? `pair ${current + 1} of ${state.total}` : `${state.total} pairs`;
    $('progress').textContent = `${shown} · ${answered} answered`;
    $('bar').style.width = `${(100 * answered) / Math.max(1, state.total)}%`;
  }

  function showDone() {
    current = state.total;
    $('pair').hidden = true;
    $('done').hidden = false;
    $('actions').hidden = true;
    progress();
  }

  async function show(n) {
    if (n < 0) return;
    for (const role of ['a', 'b']) player(role).pause();
    $('instruction').pause();
    if (n >= state.total) {
      showDone();
      return;
    }
    const got = await api(`/api/pair/${n}`);
    if (got.done) { // a team's last places went to others meanwhile
      state.total = got.total;
      showDone();
      return;
    }
    pair = got;
    current = n;
    shownAt = performance.now();
    played = new Set();
    $('pair').hidden = false;
    $('done').hidden = true;
    $('actions').hidden = false;
    $('instruction-text').textContent = pair.instruction.text || '';
    $('instruction-text').lang = pair.instruction.language || '';  // fonts follow the language
    $('instruction').hidden = !pair.instruction.audio;
    if (pair.instruction.audio) $('instruction').src = audioUrl(n, 'instruction');
    for (const role of ['a', 'b']) {
      const has = pair.responses.includes(role);
      $(`play-${role}`).hidden = !has;
      if (has) player(role).src = audioUrl(n, role);
    }
    drawTimelines(pair.timelines);
    switchTo('a', false);
    chosen = {};
    for (const box of document.querySelectorAll('.field')) {
      box.hidden = !pair.fields.includes(box.dataset.field); // a dimension this item is not asked about
      box.classList.remove('missing');
      box.querySelectorAll('.choice').forEach((b) => b.classList.remove('chosen'));
      box.querySelector('.reason').value = (pair.reasons || {})[box.dataset.field] || '';
    }
    for (const [name, value] of Object.entries(pair.labels || {})) choose(name, value);
    setStatus(pair.skip ? `skipped: ${pair.skip}` : pair.labels ? 'saved earlier: change and press Enter' : '');
    progress();
    document.querySelector('.field:not([hidden]) .choices').focus();
  }

  function switchTo(role, keepPlaying = true) {
    if (!pair || !pair.responses.includes(role)) return;
    const from = player(active);
    const to = player(role);
    if (from !== to) {
      const playing = !from.paused;
      from.pause();
      if (keepPlaying) to.currentTime = from.currentTime; // the same position in the other response
      from.hidden = true;
      to.hidden = false;
      if (playing) to.play().catch(() => {});
    }
    active = role;
    $('play-a').classList.toggle('current', role === 'a');
    $('play-b').classList.toggle('current', role === 'b');
    for (const line of document.querySelectorAll('.timeline')) {
      line.classList.toggle('current', line.dataset.role === role);
    }
  }

  // An interaction pair (sessions --pairs): each session drawn from its timeline, the user's speech above and the
  // system's below, its backchannels lighter and the user's barge-ins marked; a click plays that session there.
  const SVG = 'http://www.w3.org/2000/svg';
  function drawTimelines(timelines) {
    const box = $('timelines');
    box.replaceChildren();
    box.hidden = !timelines;
    if (!timelines) return;
    const span = Math.max(...timelines.map((t) => t.duration_s), 0.001);
    timelines.forEach((timeline, k) => {
      const role = ['a', 'b'][k];
      const row = document.createElement('div');
      row.className = 'timeline';
      row.dataset.role = role;
      const name = document.createElement('span');
      name.className = 'role';
      name.textContent = role.toUpperCase();
      const svg = document.createElementNS(SVG, 'svg');
      svg.setAttribute('viewBox', '0 0 1000 34');
      svg.setAttribute('preserveAspectRatio', 'none');
      const bar = (kind, [start, end], y) => {
        const rect = document.createElementNS(SVG, 'rect');
        rect.setAttribute('class', kind);
        rect.setAttribute('x', (1000 * start) / span);
        rect.setAttribute('width', Math.max(1, (1000 * (end - start)) / span));
        rect.setAttribute('y', y);
        rect.setAttribute('height', 13);
        svg.appendChild(rect);
      };
      for (const s of timeline.speech.user) bar('user', s, 2);
      for (const s of timeline.speech.system) bar('system', s, 19);
      for (const s of timeline.backchannels) bar('backchannel', s, 19);
      for (const at of timeline.barge_ins) {
        const mark = document.createElementNS(SVG, 'line');
        mark.setAttribute('class', 'barge');
        for (const [key, value] of [['x1', (1000 * at) / span], ['x2', (1000 * at) / span], ['y1', 0], ['y2', 34]]) {
          mark.setAttribute(key, value);
        }
        svg.appendChild(mark);
      }
      const head = document.createElementNS(SVG, 'line');
      head.setAttribute('class', 'playhead');
      head.setAttribute('y1', 0);
      head.setAttribute('y2', 34);
      svg.appendChild(head);
      const audio = player(role);
      const follow = () => {
        const x = (1000 * (audio.currentTime || 0)) / span;
        head.setAttribute('x1', x);
        head.setAttribute('x2', x);
      };
      audio.ontimeupdate = follow;
      follow();
      row.addEventListener('click', (event) => {
        const box = svg.getBoundingClientRect();
        switchTo(role, false);
        audio.currentTime = (span * (event.clientX - box.left)) / box.width;
        audio.play().catch(() => {});
      });
      row.append(name, svg);
      box.appendChild(row);
    });
    const legend = document.createElement('p');
    legend.className = 'legend';
    legend.innerHTML = '<b class="user">user</b> above, <b class="system">system</b> below, ' +
      '<b class="backchannel">backchannels</b> lighter, a line where the user spoke over the system';
    box.appendChild(legend);
  }

  function toggle(audio) {
    if (audio.paused) audio.play().catch(() => {});
    else audio.pause();
  }

  async function save(startedAt) {
    if (pair.timelines && !(played.has('a') && played.has('b'))) { // an interaction is heard, not read off a chart
      setStatus('play both sessions (A and B) before labelling this pair', 'error');
      return;
    }
    const missing = pair.fields.filter((name) => !(name in chosen));
    if (missing.length) {
      for (const name of missing) document.querySelector(`.field[data-field="${name}"]`).classList.add('missing');
      document.querySelector(`.choices[data-field="${missing[0]}"]`).focus();
      setStatus(`label ${missing.map(title).join(', ')} first (or skip the pair: S)`, 'error');
      return;
    }
    const reasons = {};
    for (const input of document.querySelectorAll('.reason')) {
      if (input.value.trim()) reasons[input.dataset.field] = input.value.trim();
    }
    await send({ labels: chosen, reasons }, startedAt);
  }

  // The time on the pair and what was played before the answer, for the annotator's quality report.
  const measured = () => ({ played: [...played], seconds: Math.round(performance.now() - shownAt) / 1000 });

  async function send(body, startedAt) {
    const n = current;
    busy = true;
    clearTimeout(retryTimer);
    try {
      const reply = await api(`/api/pair/${n}`, { method: 'POST', body: JSON.stringify({ ...body, ...measured() }) });
      pending = null;
      timings.saves.push(performance.now() - startedAt);
      state.done[n] = true;
      if (reply.total !== undefined) { // a team's page: the pairs handed out so far, and one more if any is left
        state.total = reply.total;
        while (state.done.length < state.total) state.done.push(false);
        state.team.left = reply.left;
      }
      setStatus('saved', 'saved');
      await show(n + 1);
      if (current === n + 1) setStatus(`pair ${n + 1} saved`, 'saved');
    } catch (error) {
      if (error instanceof ServerGone) {
        pending = { n, skip: 'skip' in body };
        retryTimer = setTimeout(retry, RETRY_MS);
        setStatus(stopped(`pair ${n + 1} not saved yet`), 'error');
      } else {
        setStatus(`not saved: ${error.message}`, 'error');
      }
    } finally {
      busy = false;
      drain();
    }
  }

  // Send the pending save again, as the page shows it now (labels changed meanwhile are what is saved).
  function retry() {
    if (!pending || pending.n !== current) return;
    if (busy) {
      retryTimer = setTimeout(retry, RETRY_MS);
      return;
    }
    if (pending.skip) skip(performance.now());
    else save(performance.now());
  }

  async function go(n) {
    busy = true;
    try {
      await show(n);
    } catch (error) {
      const what = `could not load pair ${n + 1}`;
      setStatus(error instanceof ServerGone ? stopped(what) : `${what}: ${error.message}`, 'error');
    } finally {
      busy = false;
      drain();
    }
  }

  function moveFocus(step) {
    const stops = [
      ...document.querySelectorAll('.field:not([hidden]) .choices, .field:not([hidden]) .reason'),
      $('skip-reason'),
    ];
    const at = stops.indexOf(document.activeElement);
    stops[(at + step + stops.length) % stops.length].focus();
  }

  function drain() {
    while (!busy && queued.length) {
      const key = queued.shift();
      if (key.key === 'Tab') moveFocus(key.shiftKey ? -1 : 1);
      else onKey({ ...key, target: document.activeElement, preventDefault() {} });
    }
  }

  function skip(startedAt) {
    send({ skip: $('skip-reason').value }, startedAt);
  }

  // S: the skip reason in focus, chosen with its number or the arrows; S again or Enter skips, Escape goes back.
  function askSkip() {
    $('skip-reason').focus();
    const reasons = state.skip_reasons.map((r, i) => `${i + 1} ${r}`).join(', ');
    setStatus(`skip this pair because: ${reasons} (number or ↑/↓), then Enter or S; Esc: back to the labels`);
  }

  function onSkipReason(event) {
    const select = event.target;
    const key = event.key;
    if (/^[1-9]$/.test(key) && Number(key) <= select.options.length) {
      event.preventDefault();
      select.selectedIndex = Number(key) - 1;
    } else if (key === 'Enter' || key.toLowerCase() === 's') {
      event.preventDefault();
      if (current < state.total) skip(event.timeStamp);
    } else if (key === 'Escape') {
      event.preventDefault();
      setStatus('');
      document.querySelector('.field:not([hidden]) .choices').focus();
    }
    // Anything else (the arrows, a letter that picks a reason) the list handles itself.
  }

  function onKey(event) {
    if (!state) return;
    const target = event.target;
    const typing = target instanceof HTMLInputElement && target.type === 'text';
    const key = event.key;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (busy && !typing) {
      event.preventDefault();
      queued.push({ key, shiftKey: event.shiftKey, timeStamp: event.timeStamp });
      return;
    }
    if (target === $('skip-reason')) {
      onSkipReason(event);
      return;
    }
    if (key === 'Enter') {
      if (target instanceof HTMLSelectElement || target instanceof HTMLButtonElement) return;
      event.preventDefault();
      if (current < state.total) save(event.timeStamp);
      return;
    }
    if (typing) {
      if (key === 'Escape') target.previousElementSibling.focus();
      return;
    }
    const group = target.closest ? target.closest('.choices') : null;
    if (group && /^[0-9]$/.test(key)) {
      const field = state.fields.find((f) => f.name === group.dataset.field);
      const i = field.digits.indexOf(key);
      if (i >= 0) {
        event.preventDefault();
        choose(field.name, field.values[i]);
      }
      return;
    }
    const lower = key.toLowerCase();
    if (key === ' ') {
      event.preventDefault();
      toggle(player(active));
    } else if (lower === 'a' || lower === 'b') {
      switchTo(lower);
    } else if (lower === 'i') {
      toggle($('instruction'));
    } else if (lower === 'p') {
      if (current > 0) go(current - 1);
    } else if (lower === 'n') {
      if (current < state.total) go(current + 1);
    } else if (lower === 's') {
      if (current < state.total) askSkip();
    }
  }

  async function start() {
    state = await api('/api/state');
    $('who').textContent = `annotator ${state.annotator} · ${state.rubric} rubric`;
    buildFields();
    for (const audio of document.querySelectorAll('audio')) audio.tabIndex = -1;
    for (const [id, role] of [['audio-a', 'a'], ['audio-b', 'b'], ['instruction', 'instruction']]) {
      $(id).addEventListener('play', () => played.add(role));
    }
    if (state.team) {
      // Still here: the link stays this page's while it is open (and is free again soon after it closes).
      setInterval(() => { api('/api/ping').catch(() => {}); }, 5000);
      addEventListener('pagehide', () => {
        navigator.sendBeacon(`/api/bye?token=${encodeURIComponent(token)}&page=${encodeURIComponent(pageId)}`);
      });
    }
    $('play-a').addEventListener('click', () => switchTo('a'));
    $('play-b').addEventListener('click', () => switchTo('b'));
    $('loop').addEventListener('change', (e) => { player('a').loop = player('b').loop = e.target.checked; });
    $('save').addEventListener('click', () => save(performance.now()));
    $('back').addEventListener('click', () => { if (current > 0) go(current - 1); });
    $('skip').addEventListener('click', () => skip(performance.now()));
    document.addEventListener('keydown', onKey);
    busy = true;
    try {
      await show(state.first_open);
    } finally {
      busy = false;
    }
    performance.mark('trace-label-ready');
    drain();
  }

  start().catch((error) => {
    setStatus(error instanceof ServerGone ? stopped('could not load') : `could not load: ${error.message}`, 'error');
  });
})();
