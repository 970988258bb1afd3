// The sessions page of trace-eval: each session's two channels drawn on one time axis (speech, turns, pauses,
// overlaps, backchannel candidates, words, the user's end of each turn with the measured latency, barge-ins),
// its audio played from any point of the drawing, and pairs of systems with their interaction verdicts. It reads
// window.TRACE_SESSIONS, written by `python -m trace_eval sessions DIR --page PAGE` into data.js (its fields are
// described in trace_eval/sessions/page.py), and nothing else.
"use strict";

(function () {
  const DATA = window.TRACE_SESSIONS;
  const DETAIL = document.getElementById("detail");
  const SIDEBAR = document.getElementById("sidebar");
  if (!DATA || DATA.version !== 1) {
    DETAIL.append(message("This page has no data (data.js is missing or was written by another version). " +
      "Write it again: python -m trace_eval sessions DIR --page PAGE"));
    return;
  }
  const SESSIONS = DATA.sessions;
  const PAIRS = DATA.pairs;
  const WHO = ["user", "system"];
  const LEFT = 64; // px before the time axis's zero: the channels' names
  const RIGHT = 16;
  const FONT = "11px system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";
  let drawn = []; // the drawings on screen, redrawn when the window's width or the zoom changes
  let zoom = 1; // the drawings' width, in widths of the page

  // ------------------------------------------------------------------ building elements

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
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) el.setAttribute(key, value);
    }
    for (const child of children) {
      if (child !== null && child !== undefined) el.append(child);
    }
    return el;
  }

  function titled(el, text) {
    el.append(svg("title", {}, text));
    return el;
  }

  function message(text) {
    return h("p", { class: "message" }, text);
  }

  function seconds(t) {
    return `${t.toFixed(2)} s`;
  }

  function labelText(label) {
    if (label === null || label === undefined) return "undetermined";
    return { both_good: "both good", both_bad: "both bad" }[label] || String(label);
  }

  function chip(label) {
    return h("span", { class: `chip l-${label === null || label === undefined ? "none" : label}` }, labelText(label));
  }

  function sessionName(s) {
    return s.system ? `${s.system} · ${s.sample}` : s.sample;
  }

  const measure = document.createElement("canvas").getContext("2d");
  function textWidth(text, font) {
    measure.font = font || FONT;
    return measure.measureText(text).width;
  }

  // ------------------------------------------------------------------ the drawing

  // Where each row of the drawing lies, top to bottom (px); a channel without words has no words row.
  function rows(timeline, lanes) {
    const words = timeline.words || {};
    const r = {};
    let y = 2;
    r.label = y + 11; y += 16; // "barge-in" over its line
    if (words.user) { r.userWords = y + 11; y += 16; }
    r.user = [y, y + 24]; y += 24;
    r.answer = y + 8; r.answerText = y + 20; // user's end -> system's start
    r.stop = y + 29; r.stopText = y + 41; y += 46; // barge-in -> the system falls silent
    r.system = [y, y + 24]; y += 24;
    if (words.system) { r.systemWords = y + 13; y += 17; }
    r.axis = y + 6; r.ticks = y + 19; y += 24;
    r.events = y; y += lanes * 16;
    r.height = y + 4;
    return r;
  }

  // Texts placed at their x in as few lanes as keep them apart: [{x, width, ...}] -> each with its lane.
  function pack(items, right) {
    const ends = [];
    for (const item of items.sort((a, b) => a.x - b.x)) {
      item.x = Math.max(LEFT, Math.min(item.x, right - item.width));
      let lane = ends.findIndex((end) => end + 10 <= item.x);
      if (lane < 0) { lane = ends.length; ends.push(0); }
      ends[lane] = item.x + item.width;
      item.lane = lane;
    }
    return ends.length;
  }

  function tickStep(scale) {
    return [0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300].find((s) => s * scale >= 48) || 600;
  }

  // One session drawn into `box`, `width` px wide. `events`: the verdict's per-event reasons for this session
  // ([{kind, at_s, ok, why}]), written under the axis at each event's time. `audio`: played from a click.
  function drawing(session, width, events, audio) {
    const tl = session.timeline;
    const duration = Math.max(tl.duration_s, 0.01);
    const scale = (width - LEFT - RIGHT) / duration;
    const x = (t) => LEFT + t * scale;
    const reasons = (events || []).map((e) => {
      const at = typeof e.at_s === "number" ? e.at_s : null;
      const text = `${e.kind}: ${e.why}`;
      return { ...e, at, text, x: at === null ? LEFT : x(at) - 4, width: textWidth(text) + 8 };
    });
    const lanes = pack(reasons, width - RIGHT);
    const r = rows(tl, lanes);
    const root = svg("svg", {
      class: "drawing",
      width,
      height: r.height,
      "data-x0": LEFT,
      "data-px-per-s": scale,
      role: "img",
      "aria-label": `${sessionName(session)}: the user's channel above the system's, ${seconds(tl.duration_s)}`,
    });
    const marks = svg("g", { class: "marks" });
    root.append(marks);
    const mark = (tag, attrs, title) => {
      const el = svg(tag, attrs);
      if (title) titled(el, title);
      marks.append(el);
      return el;
    };
    const text = (attrs, content, title) => {
      const el = svg("text", attrs, content);
      marks.append(title ? svg("g", {}, svg("title", {}, title), el) : el); // its textContent: what is drawn
      return el;
    };

    // the axis
    mark("line", { class: "axis", x1: x(0), x2: x(duration), y1: r.axis, y2: r.axis });
    const step = tickStep(scale);
    for (let t = 0; t <= duration + 1e-9; t += step) {
      mark("line", { class: "tick", x1: x(t), x2: x(t), y1: r.axis, y2: r.axis + 4 });
      text({ class: "tick-label", x: x(t), y: r.ticks, "text-anchor": "middle" }, `${+t.toFixed(1)} s`);
    }

    // the overlaps, under everything else
    const top = r.user[0];
    const bottom = r.system[1];
    for (const [start, end] of tl.overlaps) {
      mark("rect", { class: "overlap", x: x(start), y: top, width: Math.max((end - start) * scale, 1),
                     height: bottom - top, "data-start": start, "data-end": end },
           `both speak ${start.toFixed(2)}–${end.toFixed(2)} s (${seconds(end - start)})`);
    }

    // each channel: its turns, the speech in them, the pauses, and its name
    const backchannel = new Set(tl.backchannels.map(([s, e]) => `${s},${e}`));
    for (const who of WHO) {
      const [y0, y1] = r[who];
      text({ class: `lane-name ${who}`, x: LEFT - 8, y: (y0 + y1) / 2 + 4, "text-anchor": "end" }, who);
      mark("line", { class: "lane-base", x1: x(0), x2: x(duration), y1: (y0 + y1) / 2, y2: (y0 + y1) / 2 });
      for (const [start, end] of tl.turns[who]) {
        const bc = who === "system" && backchannel.has(`${start},${end}`);
        mark("rect", { class: `turn ${who}${bc ? " backchannel" : ""}`, x: x(start), y: y0 - 2,
                       width: Math.max((end - start) * scale, 1), height: y1 - y0 + 4, rx: 3,
                       "data-start": start, "data-end": end },
             `${who}'s turn ${start.toFixed(2)}–${end.toFixed(2)} s${bc ? ": a backchannel candidate" : ""}`);
        if (bc) {
          text({ class: "backchannel-label", x: x(start), y: y0 - 5 }, "backchannel?",
               "a short system turn begun while the user spoke: a backchannel candidate (\"mm-hm\")");
        }
      }
      for (const [start, end] of tl.speech[who]) {
        mark("rect", { class: `speech ${who}`, x: x(start), y: y0 + 3, width: Math.max((end - start) * scale, 1),
                       height: y1 - y0 - 6, "data-start": start, "data-end": end },
             `${who} speaks ${start.toFixed(2)}–${end.toFixed(2)} s`);
      }
      for (const [start, end] of tl.pauses[who]) {
        const wide = (end - start) * scale;
        const label = (end - start).toFixed(1);
        const p = mark("g", { class: `pause ${who}`, "data-start": start, "data-end": end },
                       `${who} pauses ${start.toFixed(2)}–${end.toFixed(2)} s (${seconds(end - start)})`);
        if (wide >= textWidth(label) + 4) {
          p.append(svg("text", { x: x((start + end) / 2), y: (y0 + y1) / 2 + 4, "text-anchor": "middle" }, label));
        }
      }
    }

    // the words, each at its start; a word that would run into the one before is drawn as a tick alone
    for (const who of WHO) {
      const said = (tl.words || {})[who];
      if (!said) continue;
      const y = who === "user" ? r.userWords : r.systemWords;
      let free = -Infinity;
      for (const w of said) {
        const at = x(w.start);
        const title = `${w.word.trim()} ${w.start.toFixed(2)}–${w.end.toFixed(2)} s` +
          (w.probability === null || w.probability === undefined ? "" : `, p ${w.probability.toFixed(2)}`);
        const [y1, y2] = who === "user" ? [y + 1, y + 5] : [y - 12, y - 9]; // between the words and the lane
        mark("line", { class: `word-tick ${who}`, x1: at, x2: at, y1, y2 }, title);
        const width = textWidth(w.word.trim());
        if (at + 2 >= free) {
          text({ class: `word ${who}`, x: at + 2, y, "data-start": w.start, "data-end": w.end }, w.word.trim(), title);
          free = at + 2 + width + 4;
        }
      }
    }

    // A measure written under its bracket from `from` to `to`: in the middle where it fits, else just after it,
    // clear of the lines at both ends.
    const beside = (from, to, label, font) => (x(to) - x(from) >= textWidth(label, font) + 8
      ? { x: (x(from) + x(to)) / 2, "text-anchor": "middle" }
      : { x: x(to) + 4, "text-anchor": "start" });

    // the user's end of each turn, and how long the system took to start (negative: it jumped in)
    for (const a of tl.answers) {
      const end = a.user_turn[1];
      mark("line", { class: "user-end", x1: x(end), x2: x(end), y1: r.user[0] - 3, y2: r.system[1],
                     "data-t": end }, `the user's turn ends at ${end.toFixed(2)} s`);
      if (a.latency_s === null) {
        text({ class: "latency none", x: x(end) + 4, y: r.answerText, "data-t": end }, "no answer",
             "no system turn before the user spoke again or the session ended");
        continue;
      }
      const start = a.system_turn[0];
      const jump = a.latency_s < 0;
      const [from, to] = jump ? [start, end] : [end, start];
      mark("path", { class: `bracket answer${jump ? " jump" : ""}`,
                     d: `M${x(from)},${r.answer - 4}v4H${x(to)}v${jump ? -4 : 4}` });
      if (!jump) mark("line", { class: "answer-drop", x1: x(to), x2: x(to), y1: r.answer, y2: r.system[0] });
      const label = jump ? `jump-in ${seconds(-a.latency_s)} early` : seconds(a.latency_s);
      text({ class: `latency${jump ? " jump" : ""}`, ...beside(from, to, label, `bold 12px ${FONT.slice(5)}`),
             y: r.answerText, "data-t": end, "data-t-system": start, "data-latency": a.latency_s }, label,
           `from the user's end (${end.toFixed(2)} s) to the system's start (${start.toFixed(2)} s): ` +
           `${a.latency_s.toFixed(3)} s`);
    }

    // barge-ins: where the user began over the system, and how long the system went on
    for (const b of tl.barge_ins) {
      const start = b.user_turn[0];
      const stop = b.system_turn[1];
      mark("line", { class: "barge-in", x1: x(start), x2: x(start), y1: r.label + 3, y2: r.system[1],
                     "data-t": start }, `the user starts over the system at ${start.toFixed(2)} s`);
      text({ class: "barge-in-label", x: x(start), y: r.label, "text-anchor": "middle", "data-t": start },
           "barge-in");
      mark("path", { class: "bracket stop", d: `M${x(start)},${r.stop - 4}v4H${x(stop)}v-4` });
      const label = `${b.stopped ? "stops after" : "goes on"} ${seconds(b.stop_latency_s)}`;
      text({ class: `stop-latency${b.stopped ? "" : " late"}`, ...beside(start, stop, label),
             y: r.stopText, "data-t": start, "data-latency": b.stop_latency_s }, label,
           `the system spoke ${b.stop_latency_s.toFixed(3)} s more after the user began at ${start.toFixed(2)} s`);
    }

    // the verdict's reasons, event by event, under the axis at each event's time
    for (const e of reasons) {
      const y = r.events + e.lane * 16 + 12;
      if (e.at !== null) {
        mark("line", { class: `event-stem${e.ok ? "" : " bad"}`, x1: x(e.at), x2: x(e.at), y1: r.axis, y2: y - 9 });
      }
      text({ class: `event-reason ${e.ok ? "ok" : "bad"}`, x: e.x + 6, y, "data-t": e.at, "data-kind": e.kind,
             "data-at": e.at }, e.text);
    }

    const head = svg("line", { class: "playhead", x1: x(0), x2: x(0), y1: 0, y2: r.axis, visibility: "hidden" });
    root.append(head);
    const place = () => {
      const t = audio.currentTime;
      head.setAttribute("x1", x(t));
      head.setAttribute("x2", x(t));
      head.setAttribute("visibility", t > 0 || !audio.paused ? "visible" : "hidden");
    };
    if (audio) {
      root.classList.add("playable");
      root.addEventListener("click", (event) => {
        const left = root.getBoundingClientRect().left;
        const t = Math.max(0, Math.min(duration, (event.clientX - left - LEFT) / scale));
        audio.currentTime = t;
        audio.play().catch(() => {}); // a browser that refuses to play unasked: the position is still set
        place();
      });
      place();
    }
    return { root, place };
  }

  // A session's card: its name, audio, drawing and what to know about it. `events`, `side`: within a pair.
  function sessionCard(session, role, events) {
    const card = h("section", { class: `card session${role ? ` r${role}` : ""}`, "data-session": session.index });
    const title = session.system || session.sample;
    card.append(h("h3", {},
      role ? h("span", { class: "role" }, `Response ${role}`) : null,
      h("span", { class: "system-name" }, title),
      h("span", { class: "duration" }, `${session.sample} · ${seconds(session.timeline.duration_s)}`)));
    let audio = null;
    if (session.audio) {
      audio = h("audio", { controls: true, preload: "auto", src: session.audio });
      card.append(audio, h("p", { class: "hint" }, "Click the drawing to play from that point (user left, system right)."));
    } else {
      card.append(h("p", { class: "problem" }, `No audio: ${session.problem || "not written"}`));
    }
    const box = h("div", { class: "drawing-box" });
    card.append(box);
    const notes = [...session.timeline.notes];
    const words = session.timeline.words || {};
    const without = WHO.filter((who) => !words[who]);
    if (without.length === 2) notes.push("no words: neither channel was transcribed");
    else if (without.length === 1) notes.push(`no words on the ${without[0]}'s channel: not transcribed`);
    if (notes.length) card.append(h("p", { class: "notes" }, notes.join("; ")));
    const draw = () => {
      const width = Math.max(box.clientWidth * zoom, 480);
      const made = drawing(session, width, events, audio);
      box.replaceChildren(made.root);
      if (audio) {
        audio.ontimeupdate = made.place;
        audio.onseeked = made.place;
        audio.onplay = () => {
          const follow = () => { made.place(); if (!audio.paused) requestAnimationFrame(follow); };
          requestAnimationFrame(follow);
        };
      }
    };
    drawn.push(draw);
    return card;
  }

  // Wider drawings to read the words of a long session, scrolled sideways.
  function zoomControl() {
    const buttons = [1, 2, 4, 8].map((z) => h("button", {
      class: z === zoom ? "current" : null, "data-zoom": z, title: z === 1 ? "the whole session in view" : null,
      onclick: () => {
        zoom = z;
        for (const b of buttons) b.classList.toggle("current", +b.dataset.zoom === zoom);
        for (const draw of drawn) draw();
      },
    }, z === 1 ? "fit" : `${z}×`));
    return h("div", { class: "zoom" }, h("span", {}, "zoom"), buttons);
  }

  function legend() {
    const item = (cls, text) => h("span", { class: "key" }, h("span", { class: `swatch ${cls}` }), text);
    return h("div", { class: "legend" },
      item("user", "user speaks"), item("system", "system speaks"), item("turn", "turn (pauses inside)"),
      item("overlap", "both speak"), item("user-end", "user's turn ends: latency to the system's start"),
      item("barge-in", "barge-in: user starts over the system"), item("backchannel", "backchannel candidate"),
      item("playhead", "playing"));
  }

  // ------------------------------------------------------------------ views

  function showSession(k) {
    const session = SESSIONS[k];
    DETAIL.replaceChildren(
      h("div", { class: "head" }, h("div", {}, h("h2", { id: "shown" }, sessionName(session)),
        session.folder ? h("div", { class: "meta" }, session.folder) : null), zoomControl()),
      sessionCard(session, null, null),
      legend());
  }

  function acceptable(label, side) {
    return label === "both_good" || label === String(side);
  }

  function showPair(k) {
    const pair = PAIRS[k];
    const verdict = h("section", { class: "card verdict" },
      h("h3", {}, "Interaction", h("span", { class: "judge" }, `judged by ${pair.judge || DATA.judge}`)),
      h("div", { class: "verdict-line" }, chip(pair.label), h("span", { class: "why" }, pair.why || "")),
      pair.reasoning ? h("p", { class: "reasoning" }, pair.reasoning) : null);
    if (pair.events && pair.events.length) {
      verdict.append(h("table", { class: "events" },
        h("thead", {}, h("tr", {}, h("th", {}, "event"), h("th", {}, "at"), h("th", {}, "label"),
          h("th", {}, `1 · ${pair.systems[0]}`), h("th", {}, `2 · ${pair.systems[1]}`))),
        h("tbody", {}, pair.events.map((e) => h("tr", {},
          h("td", {}, e.kind), h("td", {}, `${e.at_s.toFixed(2)} s`), h("td", {}, chip(e.label)),
          h("td", { class: acceptable(e.label, 1) ? "ok" : "bad" }, e.why_1),
          h("td", { class: acceptable(e.label, 2) ? "ok" : "bad" }, e.why_2))))));
    }
    const cards = pair.sessions.map((index, side) => {
      if (index === null || index === undefined) {
        return h("section", { class: `card session r${side + 1}` },
          h("p", { class: "problem" }, `${pair.systems[side]}: this session is not in the result`));
      }
      const events = (pair.events || []).map((e) => ({
        kind: e.kind, at_s: e.at_s, ok: acceptable(e.label, side + 1), why: side ? e.why_2 : e.why_1,
      }));
      return sessionCard(SESSIONS[index], side + 1, events);
    });
    DETAIL.replaceChildren(
      h("div", { class: "head" }, h("div", {}, h("h2", { id: "shown" }, pair.sample),
        h("div", { class: "meta" }, h("span", { class: "r1-name" }, `1 · ${pair.systems[0]}`), " against ",
          h("span", { class: "r2-name" }, `2 · ${pair.systems[1]}`))), zoomControl()),
      verdict, ...cards, legend());
  }

  function show() {
    const hash = new URLSearchParams(location.hash.slice(1));
    drawn = [];
    let current = null;
    if (hash.has("pair") && PAIRS[+hash.get("pair")]) current = ["pair", +hash.get("pair")];
    else if (hash.has("session") && SESSIONS[+hash.get("session")]) current = ["session", +hash.get("session")];
    else if (PAIRS.length) current = ["pair", 0];
    else if (SESSIONS.length) current = ["session", 0];
    for (const row of SIDEBAR.querySelectorAll(".row")) {
      row.classList.toggle("current", !!current && row.dataset.kind === current[0] && +row.dataset.index === current[1]);
    }
    if (!current) {
      DETAIL.replaceChildren(message("No session in this result."));
      return;
    }
    if (current[0] === "pair") showPair(current[1]);
    else showSession(current[1]);
    for (const draw of drawn) draw();
  }

  // ------------------------------------------------------------------ the list

  function sidebar() {
    const groups = [];
    if (DATA.ranking && DATA.ranking.length) {
      groups.push(h("section", { class: "group ranking" }, h("h3", {}, `Ranking · ${DATA.judge}`),
        h("table", {},
          h("thead", {}, h("tr", {}, h("td", {}), h("th", {}, "system"), h("th", { class: "num" }, "score"),
            h("th", { class: "tally", title: "pairs won, both good, both bad, lost" }, "won·good·bad·lost"))),
          h("tbody", {}, DATA.ranking.map((row) => h("tr", {},
            h("td", {}, String(row.rank)), h("th", {}, row.system), h("td", { class: "num" }, row.score.toFixed(0)),
            h("td", { class: "tally" }, `${row.wins}·${row.both_good}·${row.both_bad}·${row.losses}`)))))));
    }
    if (PAIRS.length) {
      groups.push(h("section", { class: "group" }, h("h3", {}, `Pairs (${PAIRS.length})`),
        PAIRS.map((p, k) => h("a", { class: "row", href: `#pair=${k}`, "data-kind": "pair", "data-index": k },
          h("span", { class: "id" }, p.sample), h("span", { class: "systems" }, `${p.systems[0]} vs ${p.systems[1]}`),
          chip(p.label)))));
    }
    groups.push(h("section", { class: "group" }, h("h3", {}, `Sessions (${SESSIONS.length})`),
      SESSIONS.map((s, k) => h("a", { class: "row", href: `#session=${k}`, "data-kind": "session", "data-index": k },
        h("span", { class: "id" }, s.sample), h("span", { class: "systems" }, s.system || ""),
        s.audio ? null : h("span", { class: "badge", title: s.problem || "" }, "no audio")))));
    if (DATA.failed.length) {
      groups.push(h("section", { class: "group failed" }, h("h3", {}, `Not read (${DATA.failed.length})`),
        DATA.failed.map((f) => h("p", {}, h("strong", {}, f.session || f.sample || ""), `: ${f.reason}`))));
    }
    SIDEBAR.replaceChildren(...groups);
  }

  SESSIONS.forEach((s, k) => { s.index = k; });
  const judged = PAIRS.length ? ` · ${PAIRS.length} pairs judged by ${DATA.judge}` : "";
  document.getElementById("summary").textContent = `${SESSIONS.length} sessions${judged}`;
  sidebar();
  window.addEventListener("hashchange", show);
  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => { for (const draw of drawn) draw(); }, 150);
  });
  show();
  performance.mark("trace-sessions-ready");
})();
