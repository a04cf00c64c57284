// ksweep report --html: the page's own script. It inflates the charting library and the
// page's data (both inlined, gzip and base64), then fills each section's tables (sortable,
// filtered by status, a page of rows at a time) and draws its charts. When everything is
// drawn, body's data-ready is "1" and window.ksweepReady resolves to what was drawn.
'use strict';
(function () {
  const ROWS = 100; // rows of a table shown at a time
  const STORE = 'ksweep:' + location.pathname; // the reader's choices, kept across a live page's reloads
  let saved = {};
  try { saved = JSON.parse(sessionStorage.getItem(STORE) || '{}') || {}; } catch (e) { saved = {}; }
  function keep(key, value) {
    saved[key] = value;
    try { sessionStorage.setItem(STORE, JSON.stringify(saved)); } catch (e) { /* no storage: not kept */ }
  }

  function bytesOf(b64) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(b64);
    const text = atob(b64);
    const out = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
    return out;
  }
  function inflate(id) {
    const packed = document.getElementById(id).textContent.trim();
    const stream = new Blob([bytesOf(packed)]).stream().pipeThrough(new DecompressionStream('gzip'));
    return new Response(stream).text();
  }
  function loadScript(code) {
    return new Promise((done, fail) => {
      const s = document.createElement('script');
      s.src = URL.createObjectURL(new Blob([code], {type: 'text/javascript'}));
      s.onload = done;
      s.onerror = () => fail(new Error('the charting library did not load'));
      document.head.appendChild(s);
    });
  }
  function h(tag, attrs, children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'text') e.textContent = v; else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children || []) e.append(c);
    return e;
  }
  function num(v) { // as the terminal shows a number: 4 significant digits, every digit of the integer part
    if (v === null || v === undefined) return '-';
    const a = Math.abs(v);
    if (a >= 1000 && a < 1e15) return v.toFixed(1);
    return String(Number(v.toPrecision(a < 1000 ? 4 : 6)));
  }
  function better(direction) { return direction === 'min' ? 'lower is better' : 'higher is better'; }

  // -- tables ----------------------------------------------------------------------------
  function compare(a, b) {
    if (a === null || a === undefined) return (b === null || b === undefined) ? 0 : 1;
    if (b === null || b === undefined) return -1;
    if (typeof a === 'number' && typeof b === 'number') return a - b;
    return String(a).localeCompare(String(b), undefined, {numeric: true});
  }
  function tableView(box, t, key) {
    const n = t.status.length;
    const width = t.headers.length - 2; // the cells; then STATUS, NOTE
    const own = saved[key] || {};
    let sortCol = Number.isInteger(own.sortCol) ? own.sortCol : null;
    let desc = !!own.desc;
    let page = own.page || 0;
    const hidden = new Set(own.hidden || []);
    const counts = {};
    for (const s of t.status) counts[s] = (counts[s] || 0) + 1;

    const filter = h('div', {class: 'filter'}, [h('span', {text: 'show: '})]);
    for (const s of t.statuses) {
      const box_ = h('input', {type: 'checkbox', 'data-status': s, checked: !hidden.has(s)});
      box_.addEventListener('change', () => {
        if (box_.checked) hidden.delete(s); else hidden.add(s);
        page = 0;
        draw();
      });
      filter.append(h('label', {class: 'status-' + cls(s)}, [box_, ' ' + s + ' (' + counts[s] + ')']));
    }
    const info = h('span', {class: 'info'});
    const prev = h('button', {type: 'button', text: '‹ previous'});
    const next = h('button', {type: 'button', text: 'next ›'});
    prev.addEventListener('click', () => { page -= 1; draw(); });
    next.addEventListener('click', () => { page += 1; draw(); });
    const head = h('tr');
    t.headers.forEach((name, j) => {
      const th = h('th', {'data-col': j, title: 'sort by ' + name, class: j < width ? 'num' : null}, [name]);
      th.addEventListener('click', () => {
        if (sortCol === j) desc = !desc; else { sortCol = j; desc = false; }
        page = 0;
        draw();
      });
      head.append(th);
    });
    const body = h('tbody');
    const table = h('table', {class: 'results'}, [h('thead', {}, [head]), body]);
    box.append(filter, h('div', {class: 'pager'}, [prev, next, info]), h('div', {class: 'scroll'}, [table]));

    function sortKeys(j) {
      if (t.nums[j]) return t.nums[j];
      if (j === width) return t.status.map((s) => t.statuses.indexOf(s));
      if (j === width + 1) return t.note.map((k) => (k < 0 ? null : t.notes[k]));
      return t.cols[j].map((x) => (x === '-' ? null : x));
    }
    function draw() {
      const rows = [];
      for (let i = 0; i < n; i++) if (!hidden.has(t.status[i])) rows.push(i);
      if (sortCol !== null) {
        const k = sortKeys(sortCol);
        const sign = desc ? -1 : 1;
        rows.sort((a, b) => {
          const nullA = k[a] === null || k[a] === undefined;
          const nullB = k[b] === null || k[b] === undefined;
          if (nullA !== nullB) return nullA ? 1 : -1; // no value last, either way
          return sign * compare(k[a], k[b]) || a - b;
        });
      }
      const pages = Math.max(1, Math.ceil(rows.length / ROWS));
      page = Math.min(Math.max(page, 0), pages - 1);
      const shown = rows.slice(page * ROWS, (page + 1) * ROWS);
      body.replaceChildren(...shown.map((i) => {
        const tr = h('tr', {'data-row': i, 'data-status': t.status[i], class: 'status-' + cls(t.status[i])});
        for (let j = 0; j < width; j++) tr.append(h('td', {class: 'num', text: t.cols[j][i]}));
        tr.append(h('td', {class: 'status', text: t.status[i]}));
        tr.append(h('td', {class: 'note', text: t.note[i] < 0 ? '' : t.notes[t.note[i]]}));
        return tr;
      }));
      for (const th of head.children) {
        const j = Number(th.dataset.col);
        th.setAttribute('aria-sort', j === sortCol ? (desc ? 'descending' : 'ascending') : 'none');
      }
      const off = n - rows.length;
      info.textContent = (rows.length ? 'rows ' + (page * ROWS + 1) + '–' + (page * ROWS + shown.length) + ' of '
        + rows.length : 'no row') + (off ? ' (' + off + ' hidden by the status filter)' : '');
      prev.disabled = page === 0;
      next.disabled = page >= pages - 1;
      keep(key, {sortCol: sortCol, desc: desc, page: page, hidden: [...hidden]});
    }
    draw();
    return n;
  }
  function cls(status) {
    if (status === 'BEST' || status === 'TIE') return status.toLowerCase();
    if (status === 'ok') return 'ok';
    if (status === 'OK') return 'unranked';
    return status === 'PRUNED' ? 'pruned' : 'failed';
  }

  // -- charts ----------------------------------------------------------------------------
  const CONFIG = {displaylogo: false, responsive: true};
  function layout(extra) {
    return Object.assign({margin: {l: 70, r: 20, t: 30, b: 60}, height: 420, font: {size: 12}}, extra);
  }
  function empty(div, text) {
    div.dataset.drawn = 'empty';
    div.append(h('p', {class: 'muted', text: text}));
    return null;
  }
  function plotted(div, promise) {
    return promise.then(() => { div.dataset.drawn = '1'; });
  }

  function heatView(div, s, objective) {
    const heat = s.heat;
    if (!heat || !heat.values.length) return empty(div, 'no config succeeded: no heat-map');
    if (heat.varying.length < 2) return empty(div, 'fewer than two knobs vary among the valid configs: no heat-map');
    const key = div.id;
    const own = saved[key] || {};
    const pick = (name, fallback) => (heat.varying.includes(name) ? name : fallback);
    let x = pick(own.x, heat.varying[0]);
    let y = pick(own.y, heat.varying[1]);
    if (x === y) y = heat.varying.find((k) => k !== x);
    const select = (value) => h('select', {}, heat.varying.map((k) => h('option', {value: k, selected: k === value}, [k])));
    const sx = select(x);
    const sy = select(y);
    const plot = h('div', {class: 'plot'});
    div.append(h('div', {class: 'controls'}, ['x: ', sx, ' y: ', sy,
      h('span', {class: 'muted', text: ' best ' + objective.metric + ' over the other knobs (' + better(objective.direction) + ')'})]), plot);
    function draw() {
      const X = heat.knobs[x];
      const Y = heat.knobs[y];
      const z = Y.labels.map(() => X.labels.map(() => null));
      const min = objective.direction === 'min';
      heat.values.forEach((v, i) => {
        const cur = z[Y.codes[i]][X.codes[i]];
        if (cur === null || (min ? v < cur : v > cur)) z[Y.codes[i]][X.codes[i]] = v;
      });
      const cells = X.labels.length * Y.labels.length;
      const trace = {type: 'heatmap', x: X.labels, y: Y.labels, z: z, colorscale: 'Viridis', reversescale: min,
        hoverongaps: false, colorbar: {title: {text: objective.metric}},
        hovertemplate: x + '=%{x}<br>' + y + '=%{y}<br>best ' + objective.metric + '=%{z:~.4g}<extra></extra>'};
      if (cells <= 400) trace.texttemplate = '%{z:~.4g}';
      const shapes = [];
      const notes = [];
      const b = s.best;
      if (b && X.labels.includes(b.labels[x]) && Y.labels.includes(b.labels[y])) {
        const i = X.labels.indexOf(b.labels[x]);
        const j = Y.labels.indexOf(b.labels[y]);
        shapes.push({type: 'rect', x0: i - 0.5, x1: i + 0.5, y0: j - 0.5, y1: j + 0.5, line: {color: 'red', width: 3}});
        notes.push({x: i, y: j + 0.5, yanchor: 'top', text: 'BEST' + (b.value === null ? '' : ' ' + num(b.value) + (b.confirmed ? ' (median)' : '')),
          showarrow: false, font: {color: 'red', size: 10}});
      }
      keep(key, {x: x, y: y});
      return Plotly.react(plot, [trace], layout({xaxis: {type: 'category', title: {text: x}},
        yaxis: {type: 'category', title: {text: y}}, shapes: shapes, annotations: notes}), CONFIG);
    }
    const change = (which) => () => {
      if (which === 'x') { x = sx.value; if (x === y) { y = heat.varying.find((k) => k !== x); sy.value = y; } }
      else { y = sy.value; if (x === y) { x = heat.varying.find((k) => k !== y); sx.value = x; } }
      draw();
    };
    sx.addEventListener('change', change('x'));
    sy.addEventListener('change', change('y'));
    return plotted(div, draw());
  }

  function convergenceView(div, s, objective) {
    const c = s.convergence;
    if (!c || !c.y.some((v) => v !== null)) return empty(div, 'no config succeeded: no convergence line');
    return plotted(div, Plotly.newPlot(div, [{type: 'scatter', mode: 'lines', x: c.x, y: c.y, line: {shape: 'hv'},
      connectgaps: false, name: 'best so far'}], layout({
      xaxis: {title: {text: 'evaluations (in the order the sweep ran them: ' + c.n + ')'}},
      yaxis: {title: {text: 'best ' + objective.metric + ' so far (' + better(objective.direction) + ')'}}}), CONFIG));
  }

  function paretoView(div, p) {
    const [a, b] = p.axes;
    const names = p.objectives.map((o) => o.metric + ' (' + o.direction + ')').join(', ');
    const traces = [
      {type: 'scatter', mode: 'markers', x: p.others.x, y: p.others.y, name: 'other configs'
        + (p.others.x.length < p.others_total ? ' (' + p.others.x.length + ' of ' + p.others_total + ')' : ''),
        marker: {color: '#9aa5b1', size: 5}, hoverinfo: 'x+y'},
      {type: 'scatter', mode: 'lines+markers', x: p.front.x, y: p.front.y, text: p.front.text,
        name: 'front (' + p.front.x.length + ')', marker: {color: '#d62728', size: 8}, line: {shape: 'hv', color: '#d62728'},
        hovertemplate: '%{text}<br>' + a.metric + '=%{x:.4g} ' + b.metric + '=%{y:.4g}<extra></extra>'},
    ];
    div.append(h('p', {class: 'muted', text: 'the front over ' + names + (p.objectives.length > 2 ? ', drawn on the first two' : '')
      + (p.title ? ' · ' + p.title : '')}));
    const plot = h('div', {class: 'plot'});
    div.append(plot);
    return plotted(div, Plotly.newPlot(plot, traces, layout({
      xaxis: {title: {text: a.metric + ' (' + better(a.direction) + ')'}},
      yaxis: {title: {text: b.metric + ' (' + better(b.direction) + ')'}}, legend: {orientation: 'h', y: -0.2}}), CONFIG));
  }

  function historyView(div, hist, objective) {
    if (!hist.values.some((v) => v !== null)) return empty(div, 'no revision has a valid result');
    const text = hist.labels.map((label, i) => label + '<br>' + hist.config[i] + '<br>' + hist.evaluated[i]
      + ' configs evaluated' + (hist.speedup[i] === null ? '' : '<br>' + hist.speedup[i].toFixed(3) + '× the revision before')
      + (hist.regression[i] ? '<br>REGRESSION' : ''));
    const up = hist.values.map((v, i) => (v === null || hist.hi[i] === null ? 0 : hist.hi[i] - v));
    const down = hist.values.map((v, i) => (v === null || hist.lo[i] === null ? 0 : v - hist.lo[i]));
    const trace = {type: 'scatter', mode: 'lines+markers', x: hist.labels, y: hist.values, text: text,
      hovertemplate: '%{text}<br>' + objective.metric + '=%{y:.4g}<extra></extra>', name: 'best per revision',
      error_y: {type: 'data', array: up, arrayminus: down, visible: true},
      marker: {size: 10, color: hist.regression.map((r) => (r ? '#d62728' : '#1f77b4'))}};
    const notes = hist.labels.map((label, i) => (hist.regression[i]
      ? {x: label, y: hist.values[i], text: 'regression', showarrow: true, arrowhead: 2, font: {color: '#d62728'}} : null))
      .filter((a) => a !== null);
    return plotted(div, Plotly.newPlot(div, [trace], layout({xaxis: {type: 'category', title: {text: 'source revision'}},
      yaxis: {title: {text: 'best ' + objective.metric + ' (' + better(objective.direction) + ')'}}, annotations: notes}), CONFIG));
  }

  // -- the page ----------------------------------------------------------------------------
  async function main() {
    const stages = {}; // when each stage ended, ms from the navigation's start
    const mark = (name) => { stages[name] = Math.round(performance.now()); };
    mark('script');
    const inflated = inflate('ksweep-library');
    const data = JSON.parse(await inflate('ksweep-data'));
    mark('data');
    // the library compiles while the tables are filled (they do not need it); not at all when
    // there is nothing to draw (no config succeeded)
    const drawable = data.sections.some((s) => (s.heat && s.heat.values.length) || s.pareto.length || s.history);
    const library = drawable ? inflated.then(loadScript).then(() => mark('library')) : Promise.resolve();
    let rows = 0;
    for (const s of data.sections) {
      s.tables.forEach((t, j) => { rows += tableView(document.getElementById(s.id + '-t' + j), t, s.id + '-t' + j); });
    }
    mark('tables');
    await library;
    const drawing = [];
    for (const s of data.sections) {
      drawing.push(heatView(document.getElementById(s.id + '-heat'), s, data.objective));
      drawing.push(convergenceView(document.getElementById(s.id + '-conv'), s, data.objective));
      s.pareto.forEach((p, k) => drawing.push(paretoView(document.getElementById(s.id + '-pareto' + k), p)));
      if (s.history) drawing.push(historyView(document.getElementById(s.id + '-history'), s.history, data.objective));
    }
    await Promise.all(drawing);
    mark('charts');
    const charts = [...document.querySelectorAll('[data-chart]')].map((d) => ({id: d.id, kind: d.dataset.chart, drawn: d.dataset.drawn || '0'}));
    if (typeof saved.scroll === 'number' && data.live) window.scrollTo(0, saved.scroll);
    return {ms: performance.now(), rows: rows, charts: charts, stages: stages};
  }
  window.addEventListener('scroll', () => { saved.scroll = window.scrollY; keep('scroll', window.scrollY); }, {passive: true});
  window.ksweepReady = main().then((done) => {
    document.body.dataset.ready = '1';
    return done;
  }, (error) => {
    document.body.dataset.ready = 'error';
    document.querySelector('header').append(h('p', {class: 'banner', text: 'this page could not draw its tables and charts: ' + error}));
    return {error: String(error), ms: performance.now()};
  });
})();
