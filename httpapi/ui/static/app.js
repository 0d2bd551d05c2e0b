// The web inspector's script: it makes the server's pages live. Object
// contents reach the page only through textContent, never as HTML.

const api = (path) => new URL("../v1/" + path, document.baseURI).toString();
const $ = (id) => document.getElementById(id);

function setStatus(text) {
  const s = $("status");
  if (s) s.textContent = text;
}

async function getJSON(url, opts) {
  const r = await fetch(url, opts);
  const body = await r.json();
  return { status: r.status, body, headers: r.headers };
}

function flash(el) {
  el.classList.remove("flash");
  void el.offsetWidth; // restart the animation
  el.classList.add("flash");
  el.dataset.flashes = String(Number(el.dataset.flashes || 0) + 1);
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---- Overview: counts and plots, refreshed every second.

const SVG = "http://www.w3.org/2000/svg";

function svgEl(name, attrs) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  return el;
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function formatNumber(v) {
  if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (v >= 1e4) return (v / 1e3).toFixed(0) + "k";
  if (v >= 100 || Number.isInteger(v)) return String(Math.round(v));
  return v.toFixed(1);
}

// plot draws series ([{name, values}]) over times (Unix ms) into svg.
function plot(svg, times, series) {
  const W = 600, H = 180, L = 44, R = 8, T = 8, B = 20;
  svg.replaceChildren();
  let max = 0;
  for (const s of series) for (const v of s.values) max = Math.max(max, v);
  max = niceMax(max);
  const t0 = times.length ? times[0] : 0;
  const t1 = times.length ? times[times.length - 1] : 1;
  const span = Math.max(t1 - t0, 1);
  const x = (t) => L + ((t - t0) / span) * (W - L - R);
  const y = (v) => T + (1 - v / max) * (H - T - B);
  svg.append(svgEl("line", { class: "axis", x1: L, y1: y(0), x2: W - R, y2: y(0) }));
  svg.append(svgEl("line", { class: "axis", x1: L, y1: y(max), x2: W - R, y2: y(max) }));
  for (const v of [0, max]) {
    const label = svgEl("text", { class: "tick", x: L - 6, y: y(v) + 4, "text-anchor": "end" });
    label.textContent = formatNumber(v);
    svg.append(label);
  }
  const ago = svgEl("text", { class: "tick", x: L, y: H - 4 });
  ago.textContent = times.length ? "-" + Math.round(span / 1000) + "s" : "";
  const now = svgEl("text", { class: "tick", x: W - R, y: H - 4, "text-anchor": "end" });
  now.textContent = "now";
  svg.append(ago, now);
  series.forEach((s, i) => {
    const pts = s.values.map((v, j) => x(times[j]).toFixed(1) + "," + y(v).toFixed(1)).join(" ");
    const line = svgEl("polyline", { class: "c" + (i % 6), points: pts });
    line.dataset.series = s.name;
    const title = svgEl("title");
    title.textContent = s.name;
    line.append(title);
    svg.append(line);
  });
  svg.dataset.samples = String(times.length);
  svg.dataset.last = series.map((s) => s.values[s.values.length - 1] ?? 0).join(",");
}

function legend(el, names) {
  el.replaceChildren(
    ...names.map((name, i) => {
      const item = document.createElement("span");
      const sw = document.createElement("span");
      sw.className = "swatch c" + (i % 6);
      item.append(sw, document.createTextNode(name));
      return item;
    }),
  );
}

function updateTables(tables) {
  const rows = new Map();
  for (const tr of document.querySelectorAll("#tables tbody tr")) rows.set(tr.dataset.table, tr);
  for (const t of tables) {
    const tr = rows.get(t.name);
    if (!tr) continue;
    for (const td of tr.querySelectorAll("[data-field]")) {
      const f = td.dataset.field;
      let v = t[f];
      if (f === "initialized") v = t.initialized ? "yes" : "no: " + (t.pendingInitializers || []).join(", ");
      const text = v === undefined || v === null ? "" : String(v);
      if (td.textContent !== text) {
        td.textContent = text;
        flash(td);
      }
    }
  }
}

// ---- Overview: the Cluster panel, on the page only when the handler has
// Options.Cluster, shown while /v1/cluster answers.

const dash = (v) => (v === undefined || v === null ? "-" : String(v));

function agoText(ms) {
  if (ms === undefined || ms === null) return "-";
  return (ms < 1000 ? ms + "ms" : (ms / 1000).toFixed(1) + "s") + " ago";
}

function clusterRow(st, m) {
  const tr = document.createElement("tr");
  tr.dataset.member = m.id;
  tr.classList.toggle("leader", !!m.leader);
  tr.classList.toggle("unreachable", m.state === "unreachable");
  const id = document.createElement("td");
  id.className = "mono";
  id.append(document.createTextNode(m.id));
  for (const [on, text, cls] of [[m.leader, "leader", "badge"], [m.self, "this node", "badge self"]]) {
    if (!on) continue;
    const b = document.createElement("span");
    b.className = cls;
    b.textContent = text;
    id.append(b);
  }
  let contact = m.lastContactMillis;
  if (m.leader && !m.self) contact = st.leaderContactMillis; // a follower's view
  const state = m.state + (m.heartbeatFailures ? " (" + m.heartbeatFailures + " failed heartbeats)" : "");
  const cells = [
    [m.address, "mono", "address"],
    [m.suffrage, "", "suffrage"],
    [state, "", "state"],
    [dash(m.appliedIndex), "num", "applied"],
    [dash(m.lag), "num", "lag"],
    [agoText(contact), "", "contact"],
  ];
  tr.append(id);
  for (const [text, cls, field] of cells) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    td.dataset.field = field;
    td.textContent = text;
    tr.append(td);
  }
  return tr;
}

async function updateCluster() {
  const panel = $("cluster");
  if (!panel) return;
  try {
    const r = await getJSON(api("cluster"));
    if (r.status !== 200) {
      panel.hidden = true;
      return;
    }
    const st = r.body;
    let node = "Node " + st.id + ": " + st.state + ", term " + st.term + "; ";
    if (!st.leaderId) node += "no known leader";
    else if (st.leaderId === st.id) node += "the leader";
    else node += "leader " + st.leaderId + " at " + st.leaderAddress;
    node += ". Commit index " + st.commitIndex + ", applied " + st.appliedIndex + ", published " + st.publishedIndex + ".";
    $("cluster-node").textContent = node;
    $("cluster-members").tBodies[0].replaceChildren(...st.members.map((m) => clusterRow(st, m)));
    panel.hidden = false;
  } catch (e) {
    panel.hidden = true;
  }
}

async function overview() {
  for (;;) {
    await updateCluster();
    try {
      const [sum, samples] = await Promise.all([getJSON(api("")), getJSON(api("samples"))]);
      $("commits").textContent = String(sum.body.commits);
      $("ntables").textContent = String(sum.body.tables.length);
      updateTables(sum.body.tables);
      const s = samples.body;
      plot($("plot-commits"), s.times, [{ name: "commits/s", values: s.commitsPerSec }]);
      const names = sum.body.tables.map((t) => t.name).filter((n) => s.objects[n]);
      plot($("plot-objects"), s.times, names.map((n) => ({ name: n, values: s.objects[n] })));
      legend($("legend-objects"), names);
      setStatus("updated " + new Date().toLocaleTimeString());
    } catch (e) {
      setStatus("cannot reach the server");
    }
    await sleep(1000);
  }
}

// ---- Table: a table of the objects' fields, each row opening on its
// JSON; the filter form; live mode follows the change stream.

// cellText renders a field's value as the server renders a cell
// (package columns): a string as its text, anything else as compact
// JSON, control characters escaped.
function cellText(v) {
  if (v === undefined) return "";
  let s = typeof v === "string" ? v : JSON.stringify(v);
  if (/[\u0000-\u001f\u007f\ufffd]/.test(s)) s = JSON.stringify(s).slice(1, -1);
  return s;
}

// The filter form: the second key only for a range, and a hint of what
// the chosen index takes as a key.
function filterForm() {
  const index = $("f-index");
  const op = $("f-op");
  if (!index || !op) return;
  const sync = () => {
    const o = index.selectedOptions[0];
    const range = op.value === "range";
    $("f-to-label").hidden = !range;
    $("f-key-name").textContent = range ? "From" : "Key";
    $("f-key").disabled = op.value === "all";
    $("f-to").disabled = !range;
    const hint = o && o.dataset.text === "true" ? o.dataset.keyType : "raw key (base64url): the index takes no text";
    $("f-key").placeholder = hint;
    $("f-to").placeholder = hint;
  };
  index.addEventListener("change", sync);
  op.addEventListener("change", () => {
    sync();
    if (op.value !== "all") $("f-key").focus();
  });
  sync();
}

function tablePage() {
  filterForm();
  const grid = $("rows");
  if (!grid) return; // the filter was refused: the page shows why
  const live = $("live");
  const state = $("live-state");
  const tbody = grid.tBodies[0];
  const table = grid.dataset.table;
  const all = grid.dataset.all === "true";
  const textKeys = grid.dataset.textKeys === "true";
  const countQuery = grid.dataset.countQuery;
  // tableRows: the columns are the objects' TableHeader, and an event's
  // cells its row (the object's TableRow), not its fields.
  const tableRows = grid.dataset.tableRows === "true";
  const columns = [...grid.tHead.querySelectorAll("th[data-column]")].map((th) => th.dataset.column);
  const rows = new Map();
  for (const tr of tbody.querySelectorAll("tr.obj")) rows.set(tr.dataset.key, tr);
  let es = null;
  let poll = null;

  // A click on a row (but on its key's link) shows or hides its JSON.
  function toggle(tr) {
    const json = tr.nextElementSibling;
    if (!json || !json.classList.contains("json")) return;
    json.hidden = !json.hidden;
    tr.setAttribute("aria-expanded", String(!json.hidden));
    tr.classList.toggle("open", !json.hidden);
  }
  tbody.addEventListener("click", (e) => {
    const tr = e.target.closest("tr.obj");
    if (tr && !e.target.closest("a")) toggle(tr);
  });
  tbody.addEventListener("keydown", (e) => {
    const tr = e.target.closest("tr.obj");
    if (tr && e.target === tr && (e.key === "Enter" || e.key === " ")) {
      e.preventDefault();
      toggle(tr);
    }
  });

  function render(tr, ev) {
    tr.querySelector("[data-field=rev]").textContent = String(ev.rev);
    const obj = ev.obj;
    const isObject = obj !== null && typeof obj === "object" && !Array.isArray(obj);
    const shown = obj === null || obj === undefined ? "(cannot be shown: " + (ev.error || "") + ")" : null;
    // The key and the revision come first, then a cell per column.
    columns.forEach((c, i) => {
      let v;
      if (tableRows) v = Array.isArray(ev.row) ? ev.row[i] : i === 0 ? "(no TableRow)" : "";
      else if (isObject) v = obj[c];
      else if (c === "object") v = shown !== null ? shown : obj;
      tr.cells[2 + i].textContent = cellText(v);
    });
    tr.nextElementSibling.querySelector("pre").textContent = shown !== null ? shown : JSON.stringify(obj, null, 2);
  }

  function newRow(ev) {
    const tr = document.createElement("tr");
    tr.dataset.key = ev.key;
    tr.className = "obj new";
    tr.tabIndex = 0;
    tr.setAttribute("aria-expanded", "false");
    const k = document.createElement("td");
    k.className = "mono key";
    if (textKeys) {
      const a = document.createElement("a");
      a.href = "object?" + new URLSearchParams({ table, key: ev.key }).toString();
      a.textContent = ev.key;
      k.append(a);
    } else {
      k.textContent = ev.key;
    }
    const rev = document.createElement("td");
    rev.className = "num";
    rev.dataset.field = "rev";
    tr.append(k, rev);
    for (let i = 0; i < columns.length; i++) tr.append(document.createElement("td"));
    const json = document.createElement("tr");
    json.className = "json";
    json.hidden = true;
    const td = document.createElement("td");
    td.colSpan = 2 + columns.length;
    td.append(document.createElement("pre"));
    json.append(td);
    const empty = tbody.querySelector("tr.empty");
    if (empty) empty.remove();
    tbody.prepend(tr, json);
    rows.set(ev.key, tr);
    $("shown").textContent = String(rows.size);
    return tr;
  }

  function apply(ev, deleted) {
    let tr = rows.get(ev.key);
    if (!tr) {
      if (deleted || !all) return;
      tr = newRow(ev);
    }
    render(tr, ev);
    tr.classList.toggle("deleted", deleted);
    flash(tr);
    $("revision").textContent = String(ev.rev);
  }

  // count refreshes the table's objects and the filter's count, from
  // the API's table and count endpoints.
  async function count() {
    try {
      const [info, n] = await Promise.all([
        getJSON(api("tables/" + encodeURIComponent(table))),
        getJSON(api("tables/" + encodeURIComponent(table) + "/count?" + countQuery)),
      ]);
      if (info.status === 200) $("count").textContent = String(info.body.objects);
      if (n.status === 200) $("matching").textContent = String(n.body.count);
      else if (n.body && n.body.error === "strata.ErrCannotCount") $("matching").textContent = "cannot count";
    } catch (e) {
      // The stream's state says it.
    }
  }

  function start() {
    const from = grid.dataset.revision;
    es = new EventSource(api("tables/" + encodeURIComponent(table) + "/changes?from=" + encodeURIComponent(from)));
    state.textContent = "connecting";
    es.onopen = () => (state.textContent = "live");
    es.addEventListener("upsert", (e) => apply(JSON.parse(e.data), false));
    es.addEventListener("delete", (e) => apply(JSON.parse(e.data), true));
    es.addEventListener("bookmark", (e) => {
      const ev = JSON.parse(e.data);
      grid.dataset.revision = String(ev.rev);
      $("revision").textContent = String(ev.rev);
    });
    es.addEventListener("problem", (e) => {
      const ev = JSON.parse(e.data);
      state.textContent = "stream ended: " + ev.problem.title;
    });
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED) {
        // Refused (the revision is gone): read the table again, live.
        state.textContent = "reloading";
        location.hash = "live";
        location.reload();
      } else {
        state.textContent = "reconnecting";
      }
    };
    poll = setInterval(count, 1000);
    history.replaceState(null, "", "#live");
  }

  function stop() {
    if (es) es.close();
    es = null;
    clearInterval(poll);
    state.textContent = "";
    history.replaceState(null, "", location.pathname + location.search);
  }

  live.addEventListener("change", () => (live.checked ? start() : stop()));
  if (location.hash === "#live") {
    live.checked = true;
    start();
  }
}

// ---- Object: watch follows the object with blocking reads.

function objectPage() {
  const pre = $("object");
  const watch = $("watch");
  const state = $("watch-state");
  const table = pre.dataset.table;
  const query = pre.dataset.query;
  let ctl = null;

  async function loop(signal) {
    // rev is the table's revision the last read saw: the next read waits
    // until the object may have changed after it. The view changes only
    // when the object did (its own revision, or its existence).
    let rev = pre.dataset.revision;
    while (!signal.aborted) {
      try {
        const url = api("tables/" + encodeURIComponent(table) + "/object?" + query + "&waitRev=" + rev + "&wait=30s");
        const r = await getJSON(url, { signal });
        rev = r.headers.get("Strata-Revision") || rev;
        $("table-rev").textContent = rev;
        const objRev = r.status === 200 ? String(r.body.rev) : "none";
        if (objRev !== $("object-rev").textContent) {
          pre.textContent = r.status === 200 ? JSON.stringify(r.body.obj, null, 2) : "No such object.";
          $("object-rev").textContent = objRev;
          flash(pre);
        }
        state.textContent = "watching";
      } catch (e) {
        if (signal.aborted) return;
        state.textContent = "cannot reach the server";
        await sleep(2000);
      }
    }
  }

  watch.addEventListener("change", () => {
    if (ctl) ctl.abort();
    ctl = null;
    state.textContent = "";
    if (watch.checked) {
      ctl = new AbortController();
      loop(ctl.signal);
    }
  });
}

switch (document.body.dataset.page) {
  case "overview":
    overview();
    break;
  case "table":
    tablePage();
    break;
  case "object":
    objectPage();
    break;
}
