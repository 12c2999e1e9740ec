// The stream page: a space's log, newest first. Live mode pages the
// history back from the head and watches from that same head, so every
// row shows exactly once; history mode pages back from a seq. Both take
// the API's filters and a `when` CEL expression, which the server
// applies (the console never filters rows itself).

import { api, enc, query, watch } from "./api.js";
import { append, compact, errorNotice, field, fill, h, link, notice, time } from "./dom.js";
import { Rows } from "./rows.js";

// filterNames are the stream's query parameters that go to the API as is.
export const filterNames = ["types", "ops", "actors", "excludeTypes", "excludeOps", "excludeActors", "q", "entityType", "entityId", "when"];

const pageSize = 50;
// keepRows bounds the rows a live page keeps while the operator has not
// paged back; older rows are dropped from the bottom (Older reloads them).
const keepRows = 500;

// filtersOf reads the filters of a stream URL's query.
export function filtersOf(q) {
  const out = {};
  for (const n of filterNames) {
    const v = q.get(n);
    if (v) {
      out[n] = v;
    }
  }
  return out;
}

// rowShape is the element every row is cloned from: a live page adds
// rows many times a second, and cloning is the cheapest way to build one.
// Only constant markup is parsed here; a row's data goes in as text.
const rowShape = (() => {
  const t = document.createElement("template");
  t.innerHTML = '<div class="row"><span class="seq"><a data-nav></a></span><span class="ts"></span>' +
    '<span class="actor"></span><span class="op"></span><span class="type"></span><span class="entity"></span>' +
    '<span class="payload"></span></div>';
  return t.content.firstElementChild;
})();

// rowElement is one wire row of a row list.
export function rowElement(base, r) {
  const el = rowShape.cloneNode(true);
  const [seq, ts, actor, op, type, entity, payload] = el.children;
  el.dataset.seq = String(r.seq);
  if (r.op === "park") {
    el.classList.add("park");
  }
  seq.firstChild.href = `${base}/rows/${r.seq}`;
  seq.firstChild.textContent = String(r.seq);
  ts.textContent = time(r.ts);
  actor.textContent = r.actor;
  op.textContent = r.op;
  type.textContent = r.type;
  if (r.type.startsWith("eddy.")) {
    entity.textContent = r.entityId;
  } else {
    entity.append(link(`${base}/entities/${enc(r.type)}/${enc(r.entityId)}`, r.entityId));
  }
  payload.textContent = compact(r.payload);
  return el;
}

const rowHead = ["seq", "time", "actor", "op", "type", "entity", "payload"];

// rowList is a list of wire rows: a header and body, the element a Rows
// (rows.js) fills. Rows are grid lines of a fixed height, not table rows.
export function rowList(id, body) {
  return h("div", { class: "rowlist", id },
    h("div", { class: "row head" }, rowHead.map((c) => h("span", {}, c))), body);
}

function filterForm(ctx, mode, filters) {
  const input = (name, placeholder) => h("input", { name, id: `f-${name}`, value: filters[name] || "", placeholder, autocomplete: "off" });
  const when = h("textarea", { name: "when", id: "f-when", rows: 1, placeholder: "row.type == 'task' && row.payload.created == true", spellcheck: "false" }, filters.when || "");
  const modeSel = h("select", { name: "mode", id: "f-mode" },
    h("option", { value: "live", selected: mode === "live" }, "live (watch)"),
    h("option", { value: "history", selected: mode === "history" }, "history (paged back)"));
  const before = h("input", { name: "before", id: "f-before", value: ctx.query.get("before") || "", placeholder: "head+1", inputmode: "numeric" });
  const more = ["excludeTypes", "excludeOps", "excludeActors", "entityType", "entityId"].some((n) => filters[n]) || mode === "history";
  const form = h("form", { id: "stream-filters", class: "filters" },
    h("div", { class: "grid" },
      field("types", input("types", "task,note")),
      field("ops", input("ops", "put,patch")),
      field("actors", input("actors", "owner")),
      field("q (free text)", input("q", ""))),
    field("when (CEL over row)", when),
    h("details", { open: more },
      h("summary", {}, "More filters and history"),
      h("div", { class: "grid" },
        field("exclude types", input("excludeTypes", "")),
        field("exclude ops", input("excludeOps", "")),
        field("exclude actors", input("excludeActors", "")),
        field("entity type", input("entityType", "")),
        field("entity id", input("entityId", "")),
        field("mode", modeSel),
        field("before seq", before, "history mode starts below it"))),
    h("div", { class: "actions" },
      h("button", { type: "submit", class: "primary", id: "apply" }, "Apply"),
      link(`${ctx.base}/stream`, "Clear")));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const data = new FormData(form);
    const params = {};
    for (const n of filterNames) {
      const v = String(data.get(n) || "").trim();
      if (v) {
        params[n] = v;
      }
    }
    if (data.get("mode") === "history") {
      params.mode = "history";
      const b = String(data.get("before") || "").trim();
      if (b) {
        params.before = b;
      }
    }
    ctx.navigate(`${ctx.base}/stream${query(params)}`);
  });
  return form;
}

export async function render(ctx) {
  const { el, signal, space, base } = ctx;
  const mode = ctx.query.get("mode") === "history" ? "history" : "live";
  const filters = filtersOf(ctx.query);
  const status = h("div", { id: "stream-status", class: "status-line" });
  const problems = h("div", { id: "stream-problems" });
  const body = h("div", { id: "rows" });
  const rows = new Rows(body);
  const older = h("button", { type: "button", id: "older" }, "Older rows");
  const end = h("div", { id: "stream-end", class: "muted" });
  append(el, 
    h("h1", {}, mode === "live" ? "Stream" : "History"),
    filterForm(ctx, mode, filters),
    status, problems,
    rowList("stream", body),
    h("div", { class: "actions" }, older, end));

  const path = `/spaces/${enc(space)}/changes`;
  const sp = await api(`/spaces/${enc(space)}`, { signal });
  const head = sp.head;
  const st = { cursor: head + 1, exhausted: false, pagedBack: false, received: 0, last: head, state: "" };
  if (mode === "history" && ctx.query.get("before")) {
    st.cursor = Number(ctx.query.get("before"));
  }
  const showStatus = () => {
    status.dataset.lastSeq = String(st.last);
    status.dataset.state = st.state;
    fill(status,
      h("span", { class: `dot ${st.state}` }),
      mode === "live" ? `${st.state} · head ${Math.max(head, st.last)} · ${st.received} new rows since opening` : `history below ${ctx.query.get("before") || head + 1}`);
  };

  async function loadOlder() {
    if (st.exhausted) {
      return;
    }
    older.disabled = true;
    try {
      const page = await api(path + query({ ...filters, before: st.cursor, limit: pageSize }), { signal });
      rows.addOldest(page.changes.map((r) => rowElement(base, r)));
      if (page.cursor === undefined) {
        st.exhausted = true;
        older.hidden = true;
        fill(end, "Start of the retained history.");
      } else {
        st.cursor = page.cursor;
        if (page.changes.length === 0) {
          fill(end, `No match in the rows scanned; older rows below ${page.cursor} remain.`);
        } else {
          fill(end);
        }
      }
    } catch (err) {
      if (!signal.aborted) {
        fill(problems, errorNotice(err, "read this log"));
      }
    } finally {
      older.disabled = false;
    }
  }
  older.addEventListener("click", () => {
    st.pagedBack = true;
    loadOlder();
  });

  await loadOlder();
  if (mode !== "live" || signal.aborted) {
    showStatus();
    return;
  }
  const live = liveRows(rows, base, st, showStatus);
  st.state = "connecting";
  showStatus();
  follow(path, filters, st, signal, live, showStatus, problems);
}

// flushGap is the least time between two updates of a live page: rows
// that arrive faster are added together, so a busy log costs the browser
// a few layouts a second rather than one per frame.
const flushGap = 50;

// liveRows returns the function that takes rows from the watch: it
// queues them and adds them at the top, at most once per flushGap, in an
// animation frame. When the operator has scrolled down, the page scrolls
// by the added height, so the rows being read stay where they are.
function liveRows(rows, base, st, showStatus) {
  let queue = [];
  let scheduled = false;
  let last = 0;
  const flush = () => {
    scheduled = false;
    if (queue.length === 0) {
      return;
    }
    last = performance.now();
    const els = queue.map((r) => rowElement(base, r));
    queue = [];
    if (window.scrollY > 0) {
      const before = document.documentElement.scrollHeight;
      rows.addNewest(els);
      window.scrollBy(0, document.documentElement.scrollHeight - before);
    } else {
      rows.addNewest(els);
    }
    if (!st.pagedBack) {
      const kept = rows.trim(keepRows);
      if (kept !== undefined) {
        // Older resumes below the last row kept.
        st.cursor = kept;
        st.exhausted = false;
        document.getElementById("older").hidden = false;
      }
    }
    showStatus();
  };
  return (row) => {
    queue.push(row);
    st.received++;
    if (!scheduled) {
      scheduled = true;
      const wait = Math.max(0, last + flushGap - performance.now());
      setTimeout(() => requestAnimationFrame(flush), wait);
      setTimeout(flush, wait + 100); // a hidden tab gets no animation frames
    }
  };
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
});

// follow keeps a watch open from st.last, resuming after the last row or
// bookmark seen whenever the stream ends, until the page goes away.
async function follow(path, filters, st, signal, onRow, showStatus, problems) {
  let backoff = 500;
  while (!signal.aborted) {
    let failure = null;
    try {
      await watch(path + query({ ...filters, watch: 1, from: st.last }), (f) => {
        if (f.seq !== undefined) {
          st.last = f.seq;
          onRow(f);
          backoff = 500;
        } else if (f.bookmark !== undefined) {
          st.last = Math.max(st.last, f.bookmark);
          if (st.state !== "live") {
            st.state = "live";
            fill(problems);
            showStatus();
          }
        } else if (f.error) {
          failure = f.error;
        }
      }, signal);
    } catch (err) {
      if (signal.aborted) {
        return;
      }
      if (err.status && err.status !== 429 && err.status < 500) {
        st.state = "stopped";
        showStatus();
        fill(problems, errorNotice(err, "watch this log"));
        return;
      }
      failure = { message: err.message };
    }
    if (signal.aborted) {
      return;
    }
    st.state = "reconnecting";
    showStatus();
    fill(problems, notice("info", `The watch ended${failure ? `: ${failure.message}` : ""}; reconnecting from ${st.last}.`));
    await sleep(backoff, signal);
    backoff = Math.min(backoff * 2, 10000);
  }
}
