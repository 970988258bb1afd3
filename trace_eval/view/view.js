// The audit page of trace-eval: the list of pairs (filtered, sorted, only the rows on screen drawn) and
// one pair in full. It reads window.TRACE_VIEW, written by `python -m trace_eval view` into data.js
// (its fields are described in trace_eval/view/data.py), and nothing else.
"use strict";

(function () {
  const DATA = window.TRACE_VIEW;
  const DETAIL = document.getElementById("detail");
  if (!DATA || DATA.version !== 1) {
    DETAIL.append(message("This page has no data (data.js is missing or was written by another version). " +
      "Write it again: python -m trace_eval view RUNDIR"));
    return;
  }

  const RUBRIC = DATA.rubric;
  const RUNS = DATA.runs;
  const PAIRS = DATA.pairs;
  const OVERALL = "overall";
  const KEYS = RUBRIC.dimensions.map((d) => d.name).concat(RUBRIC.fuses ? [OVERALL] : []);
  const TITLE = Object.fromEntries(RUBRIC.dimensions.map((d) => [d.name, d.title]).concat([[OVERALL, "Overall"]]));
  const KIND = Object.fromEntries(RUBRIC.dimensions.map((d) => [d.name, d.kind]));
  const SHORT = Object.fromEntries(RUBRIC.dimensions.map((d) => [d.name, d.short]).concat([[OVERALL, "All"]]));
  const LABEL_KEYS = RUBRIC.fuses ? [OVERALL] : RUBRIC.dimensions.map((d) => d.name);
  const ROW_HEIGHT = 60; // px, as .row in view.css
  PAIRS.forEach((pair, i) => { pair.index = i; });

  // ------------------------------------------------------------------ building elements and labels

  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "text") el.textContent = value;
      else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else el.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : String(child));
    }
    return el;
  }

  function svg(tag, attrs, ...children) {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, value);
    el.append(...children);
    return el;
  }

  function styled(el, style) {
    Object.assign(el.style, style);
    return el;
  }

  function message(text) {
    return h("p", { class: "message" }, text);
  }

  function reason(index) {
    return index === undefined || index === null ? "no reason recorded" : DATA.reasons[index];
  }

  // The first clause of a reason ("weights for X not found"), the whole of it one click away.
  function why(text, prefix) {
    const short = text.split(/; |\. To fix/)[0];
    const head = (prefix || "") + short;
    if (short === text) return h("span", { class: "why" }, head);
    return h("details", { class: "why" }, h("summary", {}, head), h("div", {}, text));
  }

  function labelText(label) {
    if (label === null || label === undefined) return "undetermined";
    return { both_good: "both good", both_bad: "both bad" }[label] || String(label);
  }

  // A label as a coloured chip: a pairwise label in the colour of the response it names (or of its tie),
  // a score plain.
  function chip(label, key, extra) {
    const pairwise = key === OVERALL || /^(typed-tie|win-lose-tie)$/.test(KIND[key]);
    const kind = label === null || label === undefined ? "none" : pairwise ? String(label) : "score";
    return h("span", { class: `chip l-${kind} ${extra || ""}`, title: labelText(label) }, labelText(label));
  }

  const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  // The judge model, when the run's name does not already say it.
  function modelOf(run) {
    return run.model && run.model !== run.name ? run.model : "";
  }

  function resultOf(pair, run) {
    return pair.results[run === undefined ? state.run : run];
  }

  function labelOf(result, key) {
    if (!result || result.status !== "ok") return undefined;
    return key === OVERALL ? result.overall : result.verdicts[key];
  }

  // decided | undetermined | failed | skipped | missing (no result in the run)
  function outcome(result) {
    if (!result) return "missing";
    if (result.status === "ok") return Object.keys(result.undetermined).length ? "undetermined" : "decided";
    return result.status === "skipped" ? "skipped" : "failed";
  }

  // ------------------------------------------------------------------ state, filters and sorting

  const state = {
    run: 0, query: "", disagree: "", outcome: "", label: "", system: "", differ: false,
    sort: RUNS.length > 1 ? "differ" : "manifest", current: null, view: "pairs",
  };
  let visible = [];

  const SORTS = {
    manifest: ["manifest order", (a, b) => a.index - b.index],
    id: ["id", (a, b) => collator.compare(a.id, b.id)],
    differ: ["runs differ first", (a, b) => b.differ.length - a.differ.length || a.index - b.index],
    disagree: ["most disagreements first",
      (a, b) => disagreements(b) - disagreements(a) || a.index - b.index],
    trouble: ["failed, then undetermined first", (a, b) => trouble(b) - trouble(a) || a.index - b.index],
  };

  function disagreements(pair) {
    const result = resultOf(pair);
    return result ? result.disagree.length : 0;
  }

  function trouble(pair) {
    return { failed: 3, missing: 2, undetermined: 1 }[outcome(resultOf(pair))] || 0;
  }

  function passes(pair) {
    const result = resultOf(pair);
    if (state.query && !pair.id.toLowerCase().includes(state.query)) return false;
    if (state.disagree) {
      const found = result ? result.disagree : [];
      if (state.disagree === "any" ? found.length === 0 : !found.includes(state.disagree)) return false;
    }
    if (state.outcome && outcome(result) !== state.outcome) return false;
    if (state.label) {
      const [who, key, value] = JSON.parse(state.label);
      const label = who === "judge" ? labelOf(result, key) : pair.human[key];
      if (label === undefined || String(label) !== value) return false;
    }
    if (state.system && !pair.systems.includes(state.system)) return false;
    if (state.differ && pair.differ.length === 0) return false;
    return true;
  }

  function refresh() {
    visible = PAIRS.filter(passes).sort(SORTS[state.sort][1]);
    const shown = visible.length === PAIRS.length ? `${PAIRS.length} pairs` :
      `${visible.length} of ${PAIRS.length} pairs`;
    COUNT.replaceChildren(shown, anyFilter() ? h("button", { class: "link", onclick: clearFilters }, "clear filters") :
      "");
    LIST.scrollTop = Math.min(LIST.scrollTop, Math.max(0, visible.length * ROW_HEIGHT - LIST.clientHeight));
    drawList();
    if (state.current === null || !visible.includes(state.current)) {
      if (visible.length) select(visible[0]);
      else showPair(null);
    } else {
      updateNav();
    }
  }

  function anyFilter() {
    return Boolean(state.query || state.disagree || state.outcome || state.label || state.system || state.differ);
  }

  function clearFilters() {
    Object.assign(state, { query: "", disagree: "", outcome: "", label: "", system: "", differ: false });
    buildControls();
    refresh();
  }

  // ------------------------------------------------------------------ controls

  const CONTROLS = document.getElementById("controls");
  const COUNT = document.getElementById("count");
  const LIST = document.getElementById("list");
  const SPACER = h("div", { class: "spacer" });
  LIST.append(SPACER);

  // options: [value, text] pairs, or {group: title, options: [[value, text], ...]}
  function dropdown(name, label, options, onchange) {
    const option = ([value, text]) => h("option", { value }, text);
    const el = h("select", { id: `filter-${name}`, "aria-label": label, onchange: (e) => onchange(e.target.value) },
      options.map((o) => (o.group ? h("optgroup", { label: o.group }, o.options.map(option)) : option(o))));
    return h("label", { class: "control" }, h("span", {}, label), el);
  }

  function counted(test) {
    return PAIRS.reduce((n, pair) => n + (test(pair) ? 1 : 0), 0);
  }

  // The filters, with how many pairs each choice keeps (for the run the filters apply to).
  function buildControls() {
    const search = h("input", {
      type: "search", id: "search", placeholder: "Search by id", "aria-label": "search by id", value: state.query,
      oninput: (e) => { state.query = e.target.value.trim().toLowerCase(); refresh(); },
      onkeydown: (e) => {
        if (e.key === "Enter" && visible.length) { select(visible[0]); e.target.blur(); }
        if (e.key === "Escape") e.target.blur();
      },
    });
    const controls = [search];
    if (RUNS.length > 1) {
      controls.push(dropdown("run", "Filters apply to", RUNS.map((r, i) => [String(i), r.name]),
        (v) => { state.run = Number(v); buildControls(); refresh(); }));
    }
    const disagrees = (key) => counted((p) => resultOf(p) && resultOf(p).disagree.includes(key));
    controls.push(dropdown("disagree", "Disagrees with people", [["", "any or none"],
      ["any", `on anything (${counted((p) => resultOf(p) && resultOf(p).disagree.length)})`],
      ...KEYS.map((k) => [k, `on ${TITLE[k]} (${disagrees(k)})`])], (v) => { state.disagree = v; refresh(); }));
    const outcomes = [["decided", "decided"], ["undetermined", "undetermined"], ["failed", "failed"],
      ["skipped", "skipped"], ["missing", "no result"]]
      .map(([v, t]) => [v, t, counted((p) => outcome(resultOf(p)) === v)])
      .filter(([v, , n]) => n || v === "undetermined" || v === "failed"); // the rare kinds only when present
    controls.push(dropdown("outcome", "Verdict", [["", "any"], ...outcomes.map(([v, t, n]) => [v, `${t} (${n})`])],
      (v) => { state.outcome = v; refresh(); }));
    const labels = [];
    for (const who of ["judge", "people"]) {
      for (const key of LABEL_KEYS) {
        const found = new Map();
        for (const pair of PAIRS) {
          const label = who === "judge" ? labelOf(resultOf(pair), key) : pair.human[key];
          if (label !== undefined && label !== null) found.set(String(label), (found.get(String(label)) || 0) + 1);
        }
        const options = [...found.entries()].sort((a, b) => collator.compare(a[0], b[0]))
          .map(([v, n]) => [JSON.stringify([who, key, v]), `${labelText(v)} (${n})`]);
        if (options.length) labels.push({ group: `${who === "judge" ? "Judge" : "People"}: ${TITLE[key]}`, options });
      }
    }
    controls.push(dropdown("label", "Label", [["", "any"], ...labels], (v) => { state.label = v; refresh(); }));
    const systems = [...new Set(PAIRS.flatMap((p) => p.systems).filter(Boolean))].sort(collator.compare);
    if (systems.length) {
      controls.push(dropdown("system", "System", [["", "any"],
        ...systems.map((s) => [s, `${s} (${counted((p) => p.systems.includes(s))})`])],
      (v) => { state.system = v; refresh(); }));
    }
    if (RUNS.length > 1) {
      controls.push(h("label", { class: "control check" },
        h("input", { type: "checkbox", id: "filter-differ", checked: state.differ,
          onchange: (e) => { state.differ = e.target.checked; refresh(); } }),
        h("span", {}, `only pairs where the runs differ (${counted((p) => p.differ.length)})`)));
    }
    const sorts = Object.entries(SORTS).filter(([k]) => k !== "differ" || RUNS.length > 1).map(([k, [t]]) => [k, t]);
    controls.push(dropdown("sort", "Sort", sorts, (v) => { state.sort = v; refresh(); }));
    CONTROLS.replaceChildren(...controls);
    for (const [name, value] of [["disagree", state.disagree], ["outcome", state.outcome], ["label", state.label],
      ["system", state.system], ["sort", state.sort], ["run", String(state.run)]]) {
      const el = document.getElementById(`filter-${name}`);
      if (el) el.value = value;
    }
  }

  // ------------------------------------------------------------------ the list: only the rows on screen

  function drawList() {
    SPACER.style.height = `${visible.length * ROW_HEIGHT}px`;
    const first = Math.max(0, Math.floor(LIST.scrollTop / ROW_HEIGHT) - 4);
    const last = Math.min(visible.length, Math.ceil((LIST.scrollTop + LIST.clientHeight) / ROW_HEIGHT) + 4);
    const rows = [];
    for (let i = first; i < last; i++) rows.push(row(visible[i], i));
    SPACER.replaceChildren(...rows);
  }

  function row(pair, position) {
    const result = resultOf(pair);
    const strip = KEYS.map((key) => {
      const label = labelOf(result, key);
      const human = pair.human[key];
      let kind = "nohuman";
      if (!result || result.status !== "ok") kind = "failed";
      else if (label === undefined) kind = "none";
      else if (label === null) kind = "undetermined";
      else if (result.disagree.includes(key)) kind = "disagree";
      else if (human !== undefined && human !== null) kind = "agree";
      const judged = kind === "none" ? "does not apply" : result && result.status === "ok" ? labelText(label) :
        outcome(result);
      const said = `${TITLE[key]}: judge ${judged}` + (human !== undefined ? `, people ${labelText(human)}` : "");
      return h("span", { class: `cell ${kind}`, title: said }, SHORT[key]);
    });
    const badges = [];
    if (result && result.status !== "ok") badges.push(h("span", { class: "badge failed" }, result.status));
    if (!result) badges.push(h("span", { class: "badge failed" }, "no result"));
    if (pair.differ.length) badges.push(h("span", { class: "badge differ", title: "the runs differ on: " +
      pair.differ.map((k) => TITLE[k] || k).join(", ") }, "runs differ"));
    const systems = pair.systems.filter(Boolean).join(" vs ");
    return styled(h("div", {
      class: "row" + (pair === state.current ? " current" : ""), role: "option", "data-id": pair.id,
      "aria-selected": pair === state.current ? "true" : "false", onclick: () => select(pair),
    },
    h("div", { class: "row-top" }, h("span", { class: "id" }, pair.id), badges),
    h("div", { class: "row-bottom" }, h("span", { class: "strip" }, strip), h("span", { class: "systems" }, systems))),
    { top: `${position * ROW_HEIGHT}px` });
  }

  let drawPending = false;
  LIST.addEventListener("scroll", () => {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(() => { drawPending = false; drawList(); });
  });
  window.addEventListener("resize", () => drawList());

  function select(pair) {
    state.current = pair;
    const position = visible.indexOf(pair);
    if (position >= 0) {
      const top = position * ROW_HEIGHT;
      if (top < LIST.scrollTop) LIST.scrollTop = top;
      else if (top + ROW_HEIGHT > LIST.scrollTop + LIST.clientHeight) {
        LIST.scrollTop = top + ROW_HEIGHT - LIST.clientHeight;
      }
    }
    drawList();
    if (state.view === "pairs") history.replaceState(null, "", `#pair=${encodeURIComponent(pair.id)}`);
    showPair(pair);
  }

  function step(delta) {
    if (!visible.length) return;
    const position = visible.indexOf(state.current);
    const next = position < 0 ? 0 : Math.min(visible.length - 1, Math.max(0, position + delta));
    select(visible[next]);
  }

  // ------------------------------------------------------------------ playback: the word being spoken

  let players = [];

  function wordAt(starts, ends, t) {
    let low = 0;
    let high = starts.length - 1;
    let found = -1;
    while (low <= high) {
      const mid = (low + high) >> 1;
      if (starts[mid] <= t) { found = mid; low = mid + 1; } else high = mid - 1;
    }
    return found >= 0 && t <= ends[found] + 0.15 ? found : -1;
  }

  // Word times in seconds from the clip's centiseconds (gap since the word before, length; see data.py):
  // an untimed word takes the time where the one before ended and is never lit.
  function timesOf(clip) {
    const starts = [];
    const ends = [];
    let end = 0;
    for (let i = 0; i < clip.times.length; i += 2) {
      const [gap, length] = [clip.times[i], clip.times[i + 1]];
      if (gap === null || length === null) {
        starts.push(end / 100);
        ends.push(-1);
        continue;
      }
      starts.push((end + gap) / 100);
      end += gap + length;
      ends.push(end / 100);
    }
    return { starts, ends };
  }

  // Keeps the transcript's current word and the plots' playheads on the audio's time while it plays.
  function follow(audio, clip, wordEls) {
    const { starts, ends } = clip && clip.words ? timesOf(clip) : { starts: [], ends: [] };
    const duration = clip && clip.duration;
    const player = { audio, heads: [], lit: -1, frame: 0 };
    function update() {
      const t = audio.currentTime;
      const i = starts.length ? wordAt(starts, ends, t) : -1;
      if (i !== player.lit) {
        if (player.lit >= 0) wordEls[player.lit].classList.remove("now");
        if (i >= 0) wordEls[i].classList.add("now");
        player.lit = i;
      }
      const length = audio.duration || duration || 0;
      const x = length ? Math.min(1, t / length) : 0;
      for (const head of player.heads) head.style.left = `${x * 100}%`;
      for (const head of player.heads) head.hidden = t === 0 && audio.paused;
    }
    function loop() {
      update();
      if (!audio.paused && !audio.ended) player.frame = requestAnimationFrame(loop);
    }
    audio.addEventListener("play", () => {
      for (const other of players) if (other.audio !== audio) other.audio.pause();
      cancelAnimationFrame(player.frame);
      loop();
    });
    for (const event of ["seeked", "timeupdate", "pause", "ended"]) audio.addEventListener(event, update);
    wordEls.forEach((el, i) => el.addEventListener("click", () => {
      audio.currentTime = starts[i];
      audio.play();
    }));
    if (wordEls.length) wordEls[0].closest(".transcript").title = "click a word to play from there";
    players.push(player);
    return player;
  }

  function togglePlay(index) {
    const player = players.find((p) => p.audio.dataset.role === index);
    if (!player) return;
    if (player.audio.paused) player.audio.play(); else player.audio.pause();
  }

  // ------------------------------------------------------------------ one clip: audio, transcript, cues

  function audioOf(slot, role, label) {
    if (!slot || !slot.audio) return { el: role === "i" ? "" : h("p", { class: "missing" }, "no audio in the manifest"),
      audio: null };
    if (slot.audio.missing) return { el: why(slot.audio.missing, "audio: "), audio: null };
    const audio = h("audio", { controls: true, preload: "metadata", src: slot.audio.src, "data-role": role,
      "aria-label": label });
    return { el: audio, audio };
  }

  // Text in any script: its direction from its own letters (dir="auto"), its language (lang) for the fonts.
  const langOf = (clip) => (clip && clip.language ? clip.language.code : null);
  const ARROWS = { rising: "↗", falling: "↘", level: "→" };

  // Prosody beside the words: a bar under each word as high as it stands out (prominent words bold), and after
  // each phrase its ending (↗ rising, ↘ falling, → level) and the pause that follows it.
  function prosodyMarks(clip, els) {
    const after = new Map();
    const p = clip.prosody;
    if (!p) return after;
    const prominent = new Set(p.prominent);
    els.forEach((el, i) => {
      const value = p.prominence[i];
      const height = value === null ? 0 : Math.max(0, Math.min(value, 2.5)) / 2.5;
      el.classList.add("pw");
      if (prominent.has(i)) el.classList.add("prominent");
      el.title = value === null ? "prominence not measured" : `prominence ${value.toFixed(2)}`;
      el.append(styled(h("span", { class: "pbar" + (value === null ? " none" : "") }), { height: `${2 + height * 7}px` }));
    });
    for (const [first, last, contour, change] of p.phrases) {
      const text = contour ? `${ARROWS[contour]}` : "·";
      const title = contour ? `phrase ${first + 1}-${last + 1} ends ${contour} ${change > 0 ? "+" : ""}${change} st` :
        `phrase ${first + 1}-${last + 1}: ending not measured`;
      after.set(last, [h("span", { class: "ending " + (contour || "none"), title }, text)]);
    }
    for (const [word, seconds] of p.pauses) {
      if (!after.has(word)) after.set(word, []);
      after.get(word).push(h("span", { class: "pause", title: `pause of ${seconds} s` }, `‖ ${seconds} s`));
    }
    return after;
  }

  function transcriptOf(clip) {
    const text = { class: "transcript", dir: "auto", lang: langOf(clip) };
    if (clip.words) {
      const els = clip.words.map((word) => h("span", { class: "w" }, word));
      const after = prosodyMarks(clip, els);
      const spaced = [];
      // Chinese, Japanese, Thai ... put no spaces between words.
      els.forEach((el, i) => {
        if (i && clip.spaced !== false) spaced.push(" ");
        spaced.push(after.has(i) ? h("span", { class: "wm" }, el, ...after.get(i)) : el);  // kept on one line
      });
      const changes = clip.prosody && clip.prosody.changes ?
        h("div", { class: "changes", title: "the last third of the answer against the first" },
          `last third against the first: ${clip.prosody.changes}`) : "";
      const missing = !clip.prosody && clip.why.prosody !== undefined && clip.cues ?
        why(reason(clip.why.prosody), "no prosody: ") : "";
      const legend = clip.prosody ? h("div", { class: "legend" },
        "bar under a word: how far it stands out (bold: prominent) · phrase ends ↗ rising, ↘ falling, → level") : "";
      return { el: h("div", { class: "spoken" }, h("p", text, spaced), changes, legend, missing), wordEls: els };
    }
    const said = clip.transcript;
    const el = said === null || said === undefined ?
      h("p", text, why(reason(clip.why.words), "no transcript: ")) :
      h("p", text, said === "" ? h("em", {}, "no speech recognised") : said);
    return { el, wordEls: [] };
  }

  // "es 0.93", "fr declared"; marked where a response is not in its instruction's language.
  function languageTag(clip, instructionCode) {
    if (!clip) return "";
    const found = clip.language;
    if (!found) {
      return clip.why.language !== undefined ?
        h("span", { class: "language", title: `language not known: ${reason(clip.why.language)}` }, "language ?") : "";
    }
    const sure = found.source === "declared" ? "declared" :
      found.probability !== null && found.probability !== undefined ? found.probability.toFixed(2) : "detected";
    const differs = instructionCode && found.code !== instructionCode;
    const title = `${found.name}, ${found.source === "declared" ? "declared in the manifest" :
      `detected with probability ${sure}`}${differs ? `; not the instruction's language (${instructionCode})` : ""}`;
    return h("span", { class: "language" + (differs ? " differs" : ""), title }, `${found.code} ${sure}`);
  }

  function instructionCode(pair) {
    const clip = clipOf(pair.instruction);
    return (pair.instruction && pair.instruction.lang) || langOf(clip);
  }

  // The language the answers are held to: declared, detected surely, or read from the instruction's text or
  // transcript; null where it is not known (then no answer is marked off its language).
  function expectedCode(pair) {
    return pair.instruction && pair.instruction.expect !== undefined ? pair.instruction.expect : instructionCode(pair);
  }

  function reliability(clip) {
    const q = clip.transcript_quality;
    if (!q) return h("div", { class: "reliability unknown" }, why(reason(clip.why.transcript_quality),
      "transcript reliability unknown: "));
    const numbers = [["log-prob", q.avg_logprob], ["compression", q.compression_ratio],
      ["no-speech", q.no_speech_prob], ["temperature", q.temperature]]
      .filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => `${k} ${v}`).join(" · ");
    if (q.reliable) {
      return h("div", { class: "reliability ok", title: "how far to trust the transcript" },
        h("strong", {}, "✓ transcript reliable"), numbers ? ` · ${numbers}` : "");
    }
    return h("div", { class: "reliability bad" }, h("strong", {}, "⚠ transcript unreliable: "),
      q.reason || "no reason recorded", numbers ? h("div", { class: "numbers" }, numbers) : "");
  }

  function format(value, cue) {
    return `${value}${cue.unit ? (cue.unit.startsWith("%") || cue.unit.startsWith("/") ? "" : " ") + cue.unit : ""}`;
  }

  function plot(values, range, cue, player) {
    const W = 200;
    const H = 40;
    const [low, high] = range;
    const span = high - low || 1;
    const x = (i) => ((i + 0.5) / values.length) * W;
    const y = (v) => H - 3 - ((v - low) / span) * (H - 6);
    const marks = [];
    let run = [];
    const flush = () => {
      if (run.length > 1) marks.push(svg("polyline", { points: run.join(" "), class: "line" }));
      else if (run.length === 1) {
        const [cx, cy] = run[0].split(",");
        marks.push(svg("circle", { cx, cy, r: 1.6, class: "dot" }));
      }
      run = [];
    };
    values.forEach((v, i) => { if (v === null) flush(); else run.push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`); });
    flush();
    const head = h("span", { class: "playhead", hidden: true });
    if (player) player.heads.push(head);
    const shown = values.filter((v) => v !== null);
    return h("div", { class: "plot", title: `${cue.label}: ${values.map((v) => v === null ? "–" : v).join(", ")}` },
      svg("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none", role: "img",
        "aria-label": `${cue.label} from ${Math.min(...shown)} to ${Math.max(...shown)} ${cue.unit}` }, ...marks),
      head);
  }

  function cueGroups(clip, ranges, player) {
    const groups = [];
    for (const cue of DATA.cues) {
      let group = groups[groups.length - 1];
      if (!group || group.name !== cue.group) groups.push(group = { name: cue.group, cues: [] });
      group.cues.push(cue);
    }
    return groups.map((group) => {
      const nulls = group.cues.filter((c) => clip.cues[c.key] === null);
      const reasons = new Set(nulls.map((c) => clip.why[c.key]));
      const body = [];
      if (nulls.length === group.cues.length && reasons.size === 1) {
        body.push(h("div", { class: "null" }, why(reason(nulls[0] && clip.why[nulls[0].key]), "not measured: ")));
      } else {
        for (const cue of group.cues) body.push(cueRow(cue, clip, ranges, player));
      }
      return h("section", { class: "cue-group" }, h("h4", {}, group.name), body);
    });
  }

  function cueRow(cue, clip, ranges, player) {
    const value = clip.cues[cue.key];
    const name = h("span", { class: "cue-name" }, cue.label);
    if (value === null) return h("div", { class: "cue null" }, name, why(reason(clip.why[cue.key]), "null: "));
    if (cue.kind === "contour") {
      const [low, high] = ranges[cue.key];
      return h("div", { class: "cue contour" },
        h("div", { class: "contour-head" }, name, h("span", { class: "axis" }, `${low} to ${format(high, cue)}`)),
        plot(value, ranges[cue.key], cue, player));
    }
    if (cue.kind === "scores") {
      return h("div", { class: "cue scores" }, value.map(([label, score]) => h("div", { class: "score" },
        h("span", { class: "score-label" }, label),
        h("span", { class: "bar" }, styled(h("span"), { width: `${Math.max(0, score) * 100}%` })),
        h("span", { class: "score-value" }, score.toFixed(2)))));
    }
    const filled = cue.range && Math.max(0, Math.min(1, (value - cue.range[0]) / (cue.range[1] - cue.range[0])));
    const bar = cue.range ? h("span", { class: "bar" }, styled(h("span"), { width: `${filled * 100}%` })) : null;
    return h("div", { class: "cue" + (bar ? " meter" : "") }, name, bar,
      h("span", { class: "cue-value" }, format(value, cue)));
  }

  // One scale per contour over the pair's answers, so the two plots compare at a glance.
  function contourRanges(clips) {
    const ranges = {};
    for (const cue of DATA.cues.filter((c) => c.kind === "contour")) {
      const values = clips.flatMap((c) => (c && c.cues[cue.key]) || []).filter((v) => v !== null);
      if (!values.length) continue;
      const [low, high] = [Math.min(...values), Math.max(...values)];
      ranges[cue.key] = high > low ? [low, high] : [low - 1, high + 1];
    }
    return ranges;
  }

  function clipOf(slot) {
    return slot && slot.clip !== null && slot.clip !== undefined ? DATA.clips[slot.clip] : null;
  }

  // ------------------------------------------------------------------ one pair

  function showPair(pair) {
    for (const player of players) { player.audio.pause(); cancelAnimationFrame(player.frame); }
    players = [];
    if (!pair) {
      DETAIL.replaceChildren(problems(), message("No pair matches these filters."));
      return;
    }
    // The confidence (and agreement, deciding judge) right under the verdicts it qualifies.
    DETAIL.replaceChildren(problems(), header(pair), instruction(pair), verdicts(pair), consistency(pair),
      responses(pair), fusedLabels(pair));
    updateNav();
    DETAIL.scrollTop = 0;
  }

  function problems() {
    if (!DATA.problems.length) return "";
    return h("details", { class: "card problems" },
      h("summary", {}, `${DATA.problems.length} thing(s) could not be shown`),
      h("ul", {}, DATA.problems.map((p) => h("li", {}, p))));
  }

  function header(pair) {
    const notes = [];
    const result = resultOf(pair);
    if (result && result.disagree.length) {
      notes.push(h("span", { class: "badge disagree" },
        `≠ people on ${result.disagree.map((k) => TITLE[k]).join(", ")}`));
    }
    if (pair.differ.length) {
      notes.push(h("span", { class: "badge differ" }, `runs differ on ${pair.differ.map((k) => TITLE[k] || k)
        .join(", ")}`));
    }
    return h("div", { class: "pair-head" },
      h("div", {},
        h("h2", { id: "pair-id" }, pair.id),
        h("div", { class: "pair-meta" }, pair.systems.filter(Boolean).join(" vs ") || "systems not named", notes)),
      h("div", { class: "nav" },
        h("span", { id: "position" }),
        h("button", { id: "previous", onclick: () => step(-1), title: "previous pair (k or ↑)" }, "‹"),
        h("button", { id: "next", onclick: () => step(1), title: "next pair (j or ↓)" }, "›")));
  }

  // Where the pair shown stands in the filtered list.
  function updateNav() {
    const position = visible.indexOf(state.current);
    const where = document.getElementById("position");
    if (!where) return;
    where.textContent = position >= 0 ? `${position + 1} of ${visible.length}` : "not in the filtered list";
    document.getElementById("previous").disabled = position <= 0;
    document.getElementById("next").disabled = position < 0 || position >= visible.length - 1;
  }

  function instruction(pair) {
    const slot = pair.instruction;
    const clip = clipOf(slot);
    const { el, audio } = audioOf(slot, "i", "instruction");
    const spoken = clip ? transcriptOf(clip) : null;
    if (audio) follow(audio, clip, spoken ? spoken.wordEls : []);
    const said = spoken ? h("div", { class: "heard" }, h("span", { class: "tag" }, "heard"), spoken.el) :
      slot && slot.why !== undefined ? why(reason(slot.why), "no cues: ") : "";
    const code = instructionCode(pair);
    return h("section", { class: "card instruction" },
      h("h3", {}, "Instruction", languageTag(clip, null),
        slot && slot.told ? h("span", { class: "language told", title: slot.told }, `${slot.expect} text`) : ""),
      slot && slot.text ? h("p", { class: "instruction-text", dir: "auto", lang: code }, slot.text) : "",
      el, said);
  }

  function responses(pair) {
    const clips = pair.responses.map(clipOf);
    const ranges = contourRanges(clips);
    return h("div", { class: `responses n${pair.responses.length}` }, pair.responses.map((slot, i) => {
      const clip = clips[i];
      const number = pair.responses.length > 1 ? String(i + 1) : "";
      const { el, audio } = audioOf(slot, number || "1", `response ${number}`);
      const spoken = clip ? transcriptOf(clip) : null;
      const player = audio ? follow(audio, clip, spoken ? spoken.wordEls : []) : null;
      const body = clip ? [
        spoken.el, reliability(clip),
        h("div", { class: "cues" }, cueGroups(clip, ranges, player)),
      ] : [why(reason(slot.why), "no cues: ")];
      return h("section", { class: `card response r${number || 1}` },
        h("h3", {}, number ? `Response ${number}` : "Response",
          pair.systems[i] ? h("span", { class: "system", dir: "auto" }, pair.systems[i]) : "",
          languageTag(clip, expectedCode(pair)),
          clip && clip.duration ? h("span", { class: "duration" }, `${clip.duration} s`) : ""),
        el, body);
    }));
  }

  // Reasoning in one text that names the dimensions in order ("Content: ... Voice quality: ...") is cut at
  // those names, so each part sits beside its verdict; anything else is shown whole.
  function reasoningParts(reasoning) {
    if (reasoning && typeof reasoning === "object" && !Array.isArray(reasoning)) {
      const parts = {};
      for (const [key, value] of Object.entries(reasoning)) {
        const name = RUBRIC.dimensions.find((d) => d.name === key || d.title.toLowerCase() === key.toLowerCase());
        if (!name) return null;
        parts[name.name] = typeof value === "string" ? value : JSON.stringify(value);
      }
      return parts;
    }
    if (typeof reasoning !== "string") return null;
    const starts = [];
    for (const d of RUBRIC.dimensions) {
      const match = new RegExp(`(^|[.;\\n]\\s*)${d.title.replace(/[_ ]/g, "[ _]")}\\s*:`, "i").exec(reasoning);
      if (!match) return null;
      starts.push([match.index + match[1].length, d.name]);
    }
    if (starts.some(([at], i) => i && at <= starts[i - 1][0])) return null;
    const parts = {};
    starts.forEach(([at, name], i) => {
      parts[name] = reasoning.slice(at, i + 1 < starts.length ? starts[i + 1][0] : undefined).trim();
    });
    return parts;
  }

  function reasoningBlock(reasoning) {
    if (reasoning === null || reasoning === undefined) return h("em", {}, "no reasoning given");
    if (typeof reasoning === "string") return h("p", { class: "reasoning", dir: "auto" }, reasoning);
    if (Array.isArray(reasoning)) {
      return h("ul", { class: "reasoning" },
        reasoning.map((r) => h("li", { dir: "auto" }, typeof r === "string" ? r : JSON.stringify(r))));
    }
    return h("pre", { class: "reasoning" }, JSON.stringify(reasoning, null, 2));
  }

  function verdicts(pair) {
    const head = h("tr", {}, h("th", {}, ""), h("th", {}, "People"),
      RUNS.map((run) => h("th", {}, run.name, h("span", { class: "run-model" }, modelOf(run)))));
    const parts = pair.results.map((r) => (r && r.status === "ok" ? reasoningParts(r.reasoning) : null));
    const rows = KEYS.map((key) => h("tr", { class: key === OVERALL ? "overall" : "" },
      h("th", {}, TITLE[key], key === OVERALL && RUNS.some((r) => r.fusion) ?
        h("span", { class: "policy" }, RUNS.map((r) => r.fusion).filter(Boolean)
          .filter((v, i, a) => a.indexOf(v) === i).join(", ")) : ""),
      h("td", { class: "people" }, peopleCell(pair, key)),
      pair.results.map((result, i) => {
        if (!result) return h("td", { class: "muted" }, "no result in this run");
        if (result.status !== "ok") return h("td", { class: "failed" }, key === KEYS[0] ? failure(result) : "");
        const label = labelOf(result, key);
        if (label === undefined) return h("td", { class: "muted" }, "does not apply to this item");
        const disagree = result.disagree.includes(key);
        const cell = [chip(label, key, disagree ? "disagree" : ""),
          disagree ? h("span", { class: "mark" }, "≠ people") : ""];
        if (label === null) {
          const because = key === OVERALL ? "a dimension is undetermined" : result.undetermined[key];
          cell.push(h("div", { class: "undetermined" }, "missing: ", because || "no reason recorded"));
        }
        if (parts[i] && parts[i][key]) cell.push(h("p", { class: "reasoning part", dir: "auto" }, parts[i][key]));
        return h("td", { class: disagree ? "disagree" : "" }, cell);
      })));
    const whole = pair.results.some((r, i) => r && r.status === "ok" && !parts[i]) ? h("tr", { class: "whole" },
      h("th", {}, "Reasoning"), h("td", {}),
      pair.results.map((r, i) => h("td", {}, r && r.status === "ok" && !parts[i] ? reasoningBlock(r.reasoning) : "")))
      : "";
    return h("section", { class: "card verdicts" }, h("h3", {}, "Verdicts and reasons"),
      h("table", { class: "verdict-table" }, h("thead", {}, head), h("tbody", {}, rows, whole)));
  }

  // People's label on one key: the majority; where they labelled it and tie (no majority), each one's label
  // right here, since "no label" would hide that they did.
  function peopleCell(pair, key) {
    if (pair.human[key] !== undefined) return chip(pair.human[key], key);
    const given = Object.entries(pair.people || {}).filter(([, got]) => got[key] !== undefined && got[key] !== null);
    if (!given.length) return h("span", { class: "muted" }, "no label");
    return h("div", { class: "people-tie" }, h("span", { class: "muted" }, "tie between people:"),
      given.map(([who, got]) => h("div", { class: "annotator" }, `${who} `, chip(got[key], key))));
  }

  function failure(result) {
    return h("div", {}, h("span", { class: "badge failed" }, result.status), " ", result.reason || "",
      result.raw ? h("details", { class: "raw" }, h("summary", {}, "raw answer"), h("pre", {}, result.raw)) : "");
  }

  function fusedLabels(pair) {
    if (!RUBRIC.fuses) return "";
    const human = pair.human[OVERALL];
    const rows = RUBRIC.policies.map((policy) => h("tr", {}, h("th", {}, policy),
      pair.results.map((result, i) => {
        if (!result || result.status !== "ok") return h("td", { class: "muted" }, "–");
        const label = result.fused[policy];
        const disagree = human !== undefined && label !== null && label !== undefined && label !== human;
        return h("td", {}, chip(label, OVERALL, disagree ? "disagree" : ""),
          disagree ? h("span", { class: "mark" }, "≠ people") : "",
          RUNS[i].fusion === policy ? h("span", { class: "own" }, "the run's policy") : "");
      })));
    return h("section", { class: "card fused" },
      h("h3", {}, "Overall label under each fusion policy"),
      h("p", { class: "muted" }, "People: ", human !== undefined ? chip(human, OVERALL) :
        Object.values(pair.people || {}).some((got) => got[OVERALL] !== undefined) ? "a tie between them:" :
          "no overall label",
        // Several annotators (a label store): each one's overall label beside the majority.
        Object.entries(pair.people || {}).filter(([, got]) => got[OVERALL] !== undefined)
          .map(([who, got]) => h("span", { class: "annotator" }, ` ${who} `, chip(got[OVERALL], OVERALL)))),
      h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "policy"), RUNS.map((r) => h("th", {}, r.name)))),
        h("tbody", {}, rows)));
  }

  function consistency(pair) {
    const blocks = pair.results.map((result, i) => {
      if (!result) return null;
      const lines = [];
      const c = result.consistency || {};
      if (c.swap) {
        lines.push(h("div", { class: "agree-line" }, h("span", { class: "what" }, "both orders agree"),
          Object.entries(c.swap).map(([key, same]) => h("span", { class: `cell ${same ? "agree" : "disagree"}`,
            title: `${TITLE[key]}: ${same ? "same label in both orders" : "the orders disagree"}` },
          `${SHORT[key]} ${same ? "✓" : "✗"}`))));
      }
      if (c.samples) {
        lines.push(h("div", { class: "agree-line" }, h("span", { class: "what" }, "answers giving the label"),
          Object.entries(c.samples).map(([key, [agree, of]]) => h("span", {
            class: `cell ${agree === of ? "agree" : "disagree"}`, title: `${TITLE[key]}: ${agree} of ${of} answers` },
          `${SHORT[key]} ${agree}/${of}`))));
      }
      if (result.confidence) {
        lines.push(h("div", { class: "agree-line" }, h("span", { class: "what" },
          `confidence (${result.confidence_source || "none"})`),
          Object.entries(result.confidence).map(([key, value]) => h("span", { class: "cell",
            title: `${TITLE[key] || key}: confidence ${value === null ? "none" : value}` },
          `${SHORT[key] || key} ${value === null ? "–" : value}`))));
      }
      if (result.cascade) {
        lines.push(h("div", { class: "agree-line" }, h("span", { class: "what" }, "decided by"),
          h("span", { class: "cell" }, result.decided_by || "no judge trusted it (undetermined)")));
      }
      const answered = result.cache_hit ? "answered from the cache" :
        result.latency_s ? `answered in ${result.latency_s} s` : "";
      const facts = [answered,
        result.cost_usd ? `$${result.cost_usd}` : ""].filter(Boolean).join(" · ");
      if (!lines.length && !facts) return null;
      return h("div", { class: "run-consistency" }, h("h4", {}, RUNS[i].name), lines.length ? lines :
        h("span", { class: "muted" }, "one answer (no --swap or --samples)"),
      facts ? h("div", { class: "muted" }, facts) : "");
    }).filter(Boolean);
    if (!blocks.length) return "";
    return h("section", { class: "card consistency" }, h("h3", {}, "Agreement, confidence and deciding judge"), blocks);
  }

  // ------------------------------------------------------------------ leaderboard

  // What `python -m trace_eval leaderboard` computes (data.py: leaderboard_panel), ranked on one dimension:
  // per label source its Bradley-Terry scores on one shared scale, then how far the judge ranks as people do.
  function showLeaderboard() {
    const panel = document.getElementById("leaderboard");
    const board = DATA.leaderboard;
    if (!board) {
      panel.replaceChildren(h("section", { class: "card" }, h("h3", {}, "Leaderboard"),
        message(`No leaderboard: ${(DATA.leaderboard_note || "none was computed").replace(/\.$/, "")}.`)));
      return;
    }
    const key = board.by[0];
    const rows = board.sources.flatMap((source) => source.tables[key].systems);
    const ends = rows.flatMap((r) => (r.score.ci95 || []).concat([r.score.value])).filter((v) => v !== null);
    const [low, high] = [Math.min(...ends), Math.max(...ends)];
    const at = (v) => `${4 + ((v - low) / (high - low || 1)) * 92}%`; // the ends inset: a dot stays in its cell
    panel.replaceChildren(boardIntro(board, key), agreementCard(board), scoresCard(board, key, at));
  }

  const percent = (v) => `${(v * 100).toFixed(0)}%`;
  // An open end (null: the data bound the score on one side only) shows as −∞ or ∞.
  const interval = (slot, show) => (slot.ci95 ?
    `${slot.ci95[0] === null ? "−∞" : show(slot.ci95[0])}–${slot.ci95[1] === null ? "∞" : show(slot.ci95[1])}` : "");
  const leftOut = (counts) => Object.entries(counts).map(([why, n]) => `${n} ${why.replace(/_/g, " ")}`).join(", ");

  function boardIntro(board, key) {
    const items = board.items;
    const skipped = [items.without_systems ? `${items.without_systems} name no two systems` : "",
      items.same_system ? `${items.same_system} pit a system against itself` : ""].filter(Boolean).join(", ");
    return h("section", { class: "card board-intro" },
      h("h3", {}, `Leaderboard: ${TITLE[key] || key}`),
      h("p", {}, `${items.ranked} of ${items.in_benchmark} items rank ${board.systems.length} systems` +
        (skipped ? ` (${skipped}: left out)` : "") + ". Score: Bradley-Terry, mean 1000, a lead of 400 points " +
        "is 10-to-1 odds; a tie counts half a win to each side. Win rate: (wins + ties / 2) / pairs. " +
        "Acceptable: share of a system's answers the label accepts, per dimension. Undetermined, failed and " +
        "skipped verdicts are left out, never scored as ties."),
      h("p", { class: "muted" }, `Intervals: 95%, ${board.bootstrap.resamples} bootstrap resamples of the pairs ` +
        `(seed ${board.bootstrap.seed}), the same pairs for every source. Every dimension and the win matrices: `,
      h("code", {}, "python -m trace_eval leaderboard RUNDIR --by all"), "."));
  }

  function correlation(slot) {
    if (slot.value === null) return h("td", { class: "muted", title: slot.reason }, "–");
    return h("td", { title: slot.reason || "" }, slot.value.toFixed(2), h("span", { class: "ci" },
      slot.ci95 ? `[${slot.ci95[0].toFixed(2)}, ${slot.ci95[1].toFixed(2)}]` : "no interval"));
  }

  function agreementCard(board) {
    if (!board.agreement.length) return "";
    return h("section", { class: "card board agreement" },
      h("h3", {}, "Judge and people: rank agreement"),
      h("table", {}, h("thead", {}, h("tr", {}, ["run", "systems", "Kendall τ", "Spearman ρ", "top system (run)",
        "top system (people)"].map((t) => h("th", {}, t)))),
      h("tbody", {}, board.agreement.map((a) => h("tr", {}, h("th", {}, a.run), h("td", {}, a.systems.length),
        correlation(a.kendall_tau), correlation(a.spearman_rho),
        h("td", { class: a.same_top === false ? "disagree" : "" }, a.top ? topText(a, "judge") : "–"),
        h("td", {}, a.top ? topText(a, "human") : "–"))))));
  }

  // "clear", or a tie at the top said as one: "clear and quiet (tied)".
  function topText(a, side) {
    const tied = (a.tied_top && a.tied_top[side]) || [a.top[side]];
    return tied.length === 1 ? tied[0] : `${tied.slice(0, -1).join(", ")} and ${tied[tied.length - 1]} (tied)`;
  }

  function tiedAtTop(table) {
    const first = table.systems.filter((r) => r.rank.value === 1).map((r) => r.system);
    return first.length > 1 ? `no single top system: ${first.slice(0, -1).join(", ")} and ` +
      `${first[first.length - 1]} tie at rank 1` : "";
  }

  // One table for every source, a section each: the columns line up and the scores share one scale.
  function scoresCard(board, key, at) {
    const accepted = board.dimensions;
    const columns = ["rank", "system", "score", "95% interval", "", "pairs", "wins", "both good", "both bad", "losses",
      "win rate"];
    const width = columns.length + accepted.length + 1;
    const head = h("thead", {},
      h("tr", {}, h("th", { colspan: columns.length }),
        h("th", { colspan: accepted.length, class: "group" }, "acceptable"), h("th", {})),
      h("tr", {}, columns.map((t) => h("th", {}, t)),
        accepted.map((d) => h("th", { title: TITLE[d] || d }, SHORT[d] || d)), h("th", {}, "left out")));
    const sections = board.sources.map((source) => {
      const table = source.tables[key];
      const about = source.kind === "human" ? "the benchmark's labels" :
        [source.model !== source.name ? source.model : "", source.fusion ? `fusion ${source.fusion}` : ""]
          .filter(Boolean).join(" · ");
      const unsure = table.systems.find((r) => r.score.value !== null && !r.score.ci95);
      const facts = [`${table.pairs} pairs scored`,
        Object.keys(table.left_out).length ? `left out: ${leftOut(table.left_out)}` : "",
        table.fit.defined ? "" : `no scores: ${table.fit.reason}`,
        table.fit.prior ? `prior: ${table.fit.prior}` : "",
        tiedAtTop(table),
        unsure ? `no intervals: ${unsure.score.reason}` : ""].filter(Boolean).join("; ");
      return h("tbody", { class: "source" },
        h("tr", { class: "source-head" }, h("th", { colspan: width },
          h("span", { class: "name" }, source.kind === "human" ? "People" : source.name),
          about ? h("span", { class: "about" }, about) : "", h("span", { class: "facts" }, facts))),
        table.systems.map((r) => systemRow(source, r, accepted, at)));
    });
    return h("section", { class: "card board" }, h("h3", {}, "Scores"), h("table", {}, head, sections));
  }

  function systemRow(source, r, accepted, at) {
    const score = r.score;
    return h("tr", {},
      h("td", { title: r.rank.reason || "" }, r.rank.value === null ? "–" : r.rank.value,
        r.rank.ci95 && r.rank.ci95[0] !== r.rank.ci95[1] ? h("span", { class: "ci" }, interval(r.rank, String)) : ""),
      h("th", {}, r.system),
      h("td", { class: score.value === null ? "muted" : "", title: score.reason || "" },
        score.value === null ? "–" : score.value.toFixed(1)),
      h("td", { class: "ci", title: score.reason || "" }, interval(score, (v) => v.toFixed(0)) || "–"),
      h("td", { class: "interval" },
        score.ci95 ? styled(h("span", { class: "range" }), { left: score.ci95[0] === null ? "0%" : at(score.ci95[0]),
          width: `calc(${score.ci95[1] === null ? "100%" : at(score.ci95[1])} - ` +
            `${score.ci95[0] === null ? "0%" : at(score.ci95[0])})` }) : "",
        score.value === null ? "" : styled(h("span", { class: "point" }), { left: at(score.value) })),
      h("td", {}, r.pairs), h("td", {}, r.wins), h("td", {}, r.ties.both_good), h("td", {}, r.ties.both_bad),
      h("td", {}, r.losses),
      h("td", { title: interval(r.win_rate, percent) }, r.win_rate.value === null ? "–" : percent(r.win_rate.value)),
      accepted.map((d) => {
        const slot = source.acceptability[r.system][d];
        return h("td", { title: `${TITLE[d] || d}: ${slot.acceptable} of ${slot.n} answers` +
          (slot.ci95 ? `, 95% ${interval(slot, percent)}` : "") },
        slot.value === null ? "–" : percent(slot.value));
      }),
      h("td", { class: "muted" }, leftOut(r.left_out) || "–"));
  }

  function showView(view) {
    state.view = view;
    const board = view === "leaderboard";
    document.getElementById("leaderboard").hidden = !board;
    DETAIL.hidden = board;
    document.getElementById("sidebar").hidden = board; // its filters are the pairs
    document.getElementById("tab-pairs").classList.toggle("current", !board);
    document.getElementById("tab-leaderboard").classList.toggle("current", board);
    if (board) {
      for (const player of players) player.audio.pause();
      showLeaderboard();
    }
  }

  document.getElementById("tab-pairs").addEventListener("click", (e) => {
    e.preventDefault();
    showView("pairs");
    if (state.current) history.replaceState(null, "", `#pair=${encodeURIComponent(state.current.id)}`);
  });
  document.getElementById("tab-leaderboard").addEventListener("click", (e) => {
    e.preventDefault();
    showView("leaderboard");
    history.replaceState(null, "", "#leaderboard");
  });

  // ------------------------------------------------------------------ keyboard

  // Letters act from anywhere but a text box; arrows leave a focused list control (select) its own.
  document.addEventListener("keydown", (e) => {
    const typing = e.target.tagName === "TEXTAREA" || (e.target.tagName === "INPUT" && e.target.type !== "checkbox");
    if (typing || e.altKey || e.ctrlKey || e.metaKey || state.view !== "pairs") return;
    const arrows = e.target.tagName !== "SELECT";
    const act = {
      "/": () => document.getElementById("search").focus(),
      j: () => step(1), k: () => step(-1), ArrowDown: arrows && (() => step(1)), ArrowUp: arrows && (() => step(-1)),
      i: () => togglePlay("i"), 1: () => togglePlay("1"), 2: () => togglePlay("2"),
    }[e.key];
    if (!act) return;
    e.preventDefault();
    if (e.target.tagName === "SELECT") e.target.blur();
    act();
  });

  // ------------------------------------------------------------------ start

  document.getElementById("runs").replaceChildren(...RUNS.map((run) => h("span", { class: "run", title: run.path },
    h("strong", {}, run.name), modelOf(run) ? ` · ${modelOf(run)}` : "", run.fusion ? ` · ${run.fusion}` : "",
    run.report ? h("a", { href: run.report }, "report") : "")));
  document.title = `${DATA.title}: trace-eval audit`;
  const wanted = /^#pair=(.*)$/.exec(location.hash);
  state.current = (wanted && PAIRS.find((p) => p.id === decodeURIComponent(wanted[1]))) || null;
  state.view = location.hash === "#leaderboard" ? "leaderboard" : "pairs";
  buildControls();
  refresh();
  if (state.current) select(state.current);
  showView(state.view);
  performance.mark("trace-view-ready"); // how long the page took to show its first pair (scripts/bench_view.py)
})();
