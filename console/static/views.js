// The views pages: every view the token may read (its types, filter and
// size) and one view with its definition and a backtest of a changed
// filter before saving it. Sizes and backtests are the server's view
// backtest (admin); the console computes nothing itself.

import { api, enc } from "./api.js";
import { append, compact, errorNotice, field, fill, h, link, notice, pretty, table, time } from "./dom.js";

// filterText summarises a view's filter in one line.
function filterText(f) {
  if (!f) {
    return "every entity";
  }
  if (f.fieldEquals) {
    return `fieldEquals ${f.fieldEquals.field} = ${compact(f.fieldEquals.expected)}`;
  }
  if (f.cel) {
    return `cel ${f.cel}`;
  }
  if (f.currentState) {
    return `currentState ${f.currentState.cel}`;
  }
  return compact(f);
}

// size asks the server how many entities the view holds at seq at (a
// backtest over the empty range (at, at]); null when it cannot say.
async function size(ctx, name, at) {
  try {
    const res = await api(`/spaces/${enc(ctx.space)}/views/${enc(name)}/backtest`, {
      method: "POST", body: { from: at, to: at, samples: 1 }, signal: ctx.signal,
    });
    return res.sizeAtTo;
  } catch {
    return null;
  }
}

function sizeCell(ctx, n) {
  if (!ctx.can.admin) {
    return h("span", { class: "muted" }, "admin only");
  }
  return n === null ? h("span", { class: "muted" }, "unknown") : String(n);
}

export async function renderList(ctx) {
  const { el, signal, space } = ctx;
  append(el, h("h1", {}, "Views"));
  const body = h("div", {});
  append(el, body);
  let list;
  let sp;
  try {
    [list, sp] = await Promise.all([api(`/spaces/${enc(space)}/views`, { signal }), api(`/spaces/${enc(space)}`, { signal })]);
  } catch (err) {
    fill(body, errorNotice(err, "read the views"));
    return;
  }
  if (list.views.length === 0) {
    fill(body, notice("info", "No view in this space that this token may read. See docs/views.md to declare one."));
    return;
  }
  const rows = await Promise.all(list.views.map(async (v) => {
    const n = ctx.can.admin ? await size(ctx, v.name, sp.head) : null;
    return h("tr", { "data-view": v.name },
      h("td", {}, link(`${ctx.base}/views/${enc(v.name)}`, v.name)),
      h("td", {}, v.version),
      h("td", {}, (v.types || []).join(", ")),
      h("td", { class: "source" }, filterText(v.filter)),
      h("td", {}, v.fields ? v.fields.join(", ") : h("span", { class: "muted" }, "all")),
      h("td", { class: "num size" }, sizeCell(ctx, n)),
      h("td", {}, v.updatedAt ? time(v.updatedAt) : ""));
  }));
  fill(body, h("p", { class: "muted" }, `Sizes as of seq ${sp.head}, the head.`),
    table("views", ["name", "version", "types", "filter", "fields", "size", "updated"], rows));
}

// editable is a view definition as PUT takes it.
function editable(v) {
  const def = structuredClone(v);
  for (const k of ["name", "filterSignature", "updatedAt", "schemaVersion"]) {
    delete def[k];
  }
  return def;
}

function counts(res) {
  const keys = ["scanned", "sizeAtFrom", "sizeAtTo", "entered", "left", "updated", "deleted"];
  return h("dl", { class: "facts" }, keys.map((k) => [h("dt", {}, k), h("dd", { "data-count": k }, String(res[k] ?? ""))]),
    res.truncated ? [h("dt", {}, "truncated"), h("dd", {}, `at seq ${res.to}`)] : null);
}

function samples(ctx, res) {
  const rows = [];
  for (const [kind, list] of Object.entries(res.samples || {})) {
    for (const x of list) {
      rows.push(h("tr", {}, h("td", {}, link(`${ctx.base}/rows/${x.seq}`, String(x.seq))), h("td", {}, kind),
        h("td", {}, link(`${ctx.base}/entities/${enc(x.type)}/${enc(x.id)}`, `${x.type}/${x.id}`))));
    }
  }
  rows.sort((a, b) => Number(a.firstChild.textContent) - Number(b.firstChild.textContent));
  return rows.length ? table("samples", ["seq", "transition", "entity"], rows) : null;
}

function backtestPanel(ctx, v, head) {
  const def = h("textarea", { id: "vb-def", rows: 8, spellcheck: "false" }, pretty(editable(v)));
  const from = h("input", { id: "vb-from", value: "0", inputmode: "numeric" });
  const to = h("input", { id: "vb-to", value: String(head), inputmode: "numeric" });
  const out = h("div", { id: "vb-result" });
  const parsed = () => JSON.parse(def.value);
  const run = h("button", { type: "button", class: "primary", id: "vb-run" }, "Backtest");
  run.addEventListener("click", async () => {
    run.disabled = true;
    fill(out);
    try {
      const res = await api(`/spaces/${enc(ctx.space)}/views/${enc(v.name)}/backtest`, {
        method: "POST", body: { from: Number(from.value), to: Number(to.value), samples: 10, definition: parsed() }, signal: ctx.signal,
      });
      fill(out, counts(res), samples(ctx, res), save());
    } catch (err) {
      fill(out, err instanceof SyntaxError ? notice("error", `The definition is not JSON: ${err.message}`) : errorNotice(err));
    } finally {
      run.disabled = false;
    }
  });
  const save = () => {
    const b = h("button", { type: "button", class: "admin", id: "vb-save" }, "Save this definition");
    b.addEventListener("click", async () => {
      b.disabled = true;
      try {
        await api(`/spaces/${enc(ctx.space)}/views/${enc(v.name)}`, { method: "PUT", body: parsed() });
        b.replaceWith(notice("ok", "Saved. Clients of the old definition get a typed reset on their next page."));
      } catch (err) {
        b.replaceWith(errorNotice(err));
      }
    });
    return b;
  };
  return h("section", { id: "view-backtest", class: "admin" }, h("h2", {}, "Backtest a changed definition"),
    h("p", { class: "muted" }, "Judge the committed rows (from, to] with this definition, as view sync would; nothing is saved and no client is reset."),
    field("definition (JSON, as PUT takes it)", def),
    h("div", { class: "grid" }, field("from", from), field("to", to)),
    h("div", { class: "actions" }, run), out);
}

export async function renderOne(ctx) {
  const { el, signal, space } = ctx;
  const name = ctx.params[1];
  append(el, h("h1", {}, `View ${name}`), h("p", {}, link(`${ctx.base}/views`, "← every view")));
  const body = h("div", {});
  append(el, body);
  let v;
  let sp;
  try {
    [v, sp] = await Promise.all([api(`/spaces/${enc(space)}/views/${enc(name)}`, { signal }), api(`/spaces/${enc(space)}`, { signal })]);
  } catch (err) {
    fill(body, errorNotice(err, "read this view"));
    return;
  }
  const n = ctx.can.admin ? await size(ctx, name, sp.head) : null;
  fill(body,
    h("dl", { class: "facts", id: "view-facts" },
      h("dt", {}, "version"), h("dd", {}, v.version),
      h("dt", {}, "types"), h("dd", {}, (v.types || []).join(", ")),
      h("dt", {}, "filter"), h("dd", {}, filterText(v.filter)),
      h("dt", {}, "fields"), h("dd", {}, v.fields ? v.fields.join(", ") : "all"),
      h("dt", {}, "filter signature"), h("dd", { class: "mono" }, v.filterSignature || ""),
      h("dt", {}, "size"), h("dd", { id: "view-size" }, sizeCell(ctx, n), ctx.can.admin ? ` at seq ${sp.head}` : ""),
      v.updatedAt ? [h("dt", {}, "updated"), h("dd", {}, time(v.updatedAt))] : null),
    ctx.can.admin ? backtestPanel(ctx, v, sp.head) : null,
    h("h2", {}, "Definition"), h("pre", { id: "view-def" }, pretty(editable(v))));
}
