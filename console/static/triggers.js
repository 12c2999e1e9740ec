// The triggers pages: every trigger with its enabled state, cursor, lag
// (rows and age), lease holder and deliveries by status; one trigger with
// enable, disable, replay from a seq, and a backtest of a changed `when`
// before saving it.

import { api, enc, query } from "./api.js";
import { ago, append, badge, compact, duration, errorNotice, field, fill, h, link, notice, pretty, table, time } from "./dom.js";

function source(t) {
  if (t.source && t.source.cron) {
    return `cron ${t.source.cron.schedule}`;
  }
  const c = (t.source && t.source.changes) || {};
  const parts = [];
  if (c.types) {
    parts.push(`types ${c.types.join(",")}`);
  }
  if (c.ops) {
    parts.push(`ops ${c.ops.join(",")}`);
  }
  if (c.when) {
    parts.push(`when ${c.when}`);
  }
  return parts.join(" · ") || "every row";
}

// lagAge is how long the oldest row the trigger has not judged has
// waited ("" when it is caught up or that row is not readable).
async function lagAge(ctx, st) {
  if (!st || st.lag <= 0) {
    return "";
  }
  try {
    const page = await api(`/spaces/${enc(ctx.space)}/changes${query({ from: st.cursor, limit: 1 })}`, { signal: ctx.signal });
    return page.changes.length ? duration(Date.now() - new Date(page.changes[0].ts).getTime()) : "";
  } catch {
    return "";
  }
}

function deliveryBadges(ctx, name, st) {
  const counts = (st && st.deliveries) || {};
  return Object.entries(counts).map(([status, n]) =>
    link(`${ctx.base}/deliveries${query({ trigger: name, status })}`, badge(status, "count"), ` ${n}`, " "));
}

// switchButton enables or disables a trigger (admin).
function switchButton(ctx, name, enabled, done) {
  const op = enabled ? "disable" : "enable";
  return h("button", { type: "button", class: `small admin ${op}`, "data-op": op, "data-trigger": name,
    onclick: async (ev) => {
      ev.target.disabled = true;
      try {
        await api(`/spaces/${enc(ctx.space)}/triggers/${enc(name)}/${op}`, { method: "POST" });
        done();
      } catch (err) {
        ev.target.replaceWith(errorNotice(err));
      }
    } }, op);
}

async function triggerRow(ctx, t, reload) {
  let full = t;
  try {
    full = await api(`/spaces/${enc(ctx.space)}/triggers/${enc(t.name)}`, { signal: ctx.signal });
  } catch {
    // show the definition without its status
  }
  const st = full.status;
  const age = await lagAge(ctx, st);
  return h("tr", { "data-trigger": t.name, "data-enabled": String(t.enabled) },
    h("td", {}, link(`${ctx.base}/triggers/${enc(t.name)}`, t.name)),
    h("td", { class: "source" }, source(t)),
    h("td", {}, t.function),
    h("td", {}, badge(t.enabled ? "enabled" : "disabled"), ctx.can.admin ? [" ", switchButton(ctx, t.name, t.enabled, reload)] : null),
    h("td", { class: "num" }, st ? String(st.cursor) : ""),
    h("td", { class: "num lag" }, st ? String(st.lag) : ""),
    h("td", {}, st ? age || (st.lag > 0 ? "" : "caught up") : ""),
    h("td", {}, st && st.owner ? [st.owner, st.leaseExpires ? h("div", { class: "muted" }, `until ${time(st.leaseExpires)}`) : null] : ""),
    h("td", {}, deliveryBadges(ctx, t.name, st)));
}

export async function renderList(ctx) {
  const { el, signal, space } = ctx;
  append(el, h("h1", {}, "Triggers"));
  const body = h("div", {});
  append(el, body);
  const load = async () => {
    let list;
    try {
      list = await api(`/spaces/${enc(space)}/triggers`, { signal });
    } catch (err) {
      fill(body, errorNotice(err, "read the triggers"));
      return;
    }
    if (list.triggers.length === 0) {
      fill(body, notice("info", "No trigger in this space yet. See docs/triggers.md to save one."));
      return;
    }
    const rows = await Promise.all(list.triggers.map((t) => triggerRow(ctx, t, load)));
    fill(body, table("triggers", ["name", "source", "function", "state", "cursor", "lag (rows)", "lag (age)", "lease holder", "deliveries"], rows));
  };
  await load();
}

// editable is a trigger definition as PUT takes it.
function editable(t) {
  const def = structuredClone(t);
  delete def.name;
  delete def.status;
  delete def.warnings;
  return def;
}

// backtest judges def over (from, to] in chunks, reporting progress, and
// sums the answers.
async function backtest(ctx, name, def, from, to, onProgress) {
  const chunk = 5000;
  const sum = { scanned: 0, matched: 0, notMatched: 0, echo: 0, errors: 0, coalesced: 0, projectedDepth: 0, samples: [] };
  let at = from;
  while (at < to) {
    if (ctx.signal.aborted) {
      return sum;
    }
    const res = await api(`/spaces/${enc(ctx.space)}/triggers/${enc(name)}/backtest`, {
      method: "POST", body: { from: at, to: Math.min(at + chunk, to), samples: 10, trigger: def }, signal: ctx.signal,
    });
    for (const k of ["scanned", "matched", "notMatched", "echo", "errors", "coalesced"]) {
      sum[k] += res[k];
    }
    sum.projectedDepth = Math.max(sum.projectedDepth, res.projectedDepth);
    if (sum.samples.length < 20) {
      sum.samples.push(...res.samples.slice(0, 20 - sum.samples.length));
    }
    at = res.to > at ? res.to : Math.min(at + chunk, to);
    onProgress(at - from, to - from);
  }
  return sum;
}

function backtestPanel(ctx, t, head) {
  const name = t.name;
  const when = h("textarea", { id: "bt-when", rows: 3, spellcheck: "false" }, (t.source.changes && t.source.changes.when) || "");
  const from = h("input", { id: "bt-from", value: "0", inputmode: "numeric" });
  const to = h("input", { id: "bt-to", value: String(head), inputmode: "numeric" });
  const progress = h("progress", { id: "bt-progress", max: 1, value: 0, hidden: true });
  const out = h("div", { id: "bt-result" });
  const changed = () => {
    const def = editable(t);
    def.source.changes.when = when.value.trim() || undefined;
    return def;
  };
  const run = h("button", { type: "button", class: "primary", id: "bt-run" }, "Backtest");
  run.addEventListener("click", async () => {
    run.disabled = true;
    progress.hidden = false;
    fill(out);
    try {
      const sum = await backtest(ctx, name, changed(), Number(from.value), Number(to.value), (done, all) => {
        progress.max = all || 1;
        progress.value = done;
      });
      fill(out,
        h("dl", { class: "facts" },
          ["scanned", "matched", "notMatched", "echo", "errors", "coalesced", "projectedDepth"].map((k) =>
            [h("dt", {}, k), h("dd", { "data-count": k }, String(sum[k]))])),
        sum.samples.length ? table("rows", ["seq", "stance", "op", "entity", "error"], sum.samples.map((x) => h("tr", {},
          h("td", {}, link(`${ctx.base}/rows/${x.seq}`, String(x.seq))), h("td", {}, badge(x.stance)), h("td", {}, x.op),
          h("td", {}, `${x.type}/${x.entityId}`), h("td", { class: "error" }, x.error || "")))) : null,
        save());
    } catch (err) {
      fill(out, errorNotice(err));
    } finally {
      run.disabled = false;
    }
  });
  const save = () => {
    const b = h("button", { type: "button", class: "admin", id: "bt-save" }, "Save this when");
    b.addEventListener("click", async () => {
      b.disabled = true;
      try {
        const saved = await api(`/spaces/${enc(ctx.space)}/triggers/${enc(name)}`, { method: "PUT", body: changed() });
        b.replaceWith(notice("ok", "Saved.", saved.warnings && saved.warnings.length ? ` Warnings: ${saved.warnings.map(compact).join("; ")}` : ""));
      } catch (err) {
        b.replaceWith(errorNotice(err));
      }
    });
    return b;
  };
  return h("section", { id: "backtest", class: "admin" }, h("h2", {}, "Backtest a changed when"),
    h("p", { class: "muted" }, "Judge the committed rows (from, to] with this when, as the live trigger would; nothing is delivered or saved."),
    field("when (CEL over row, entity, before)", when),
    h("div", { class: "grid" }, field("from", from), field("to", to)),
    h("div", { class: "actions" }, run, progress), out);
}

function replayPanel(ctx, name, reload) {
  const from = h("input", { id: "replay-from", inputmode: "numeric", placeholder: "seq" });
  const go = h("button", { type: "button", class: "danger admin", id: "replay" }, "Replay");
  const out = h("div", {});
  go.addEventListener("click", async () => {
    const n = Number(from.value);
    if (!Number.isInteger(n) || n < 0) {
      fill(out, notice("error", "from must be a seq (an integer >= 0)."));
      return;
    }
    go.disabled = true;
    try {
      await api(`/spaces/${enc(ctx.space)}/triggers/${enc(name)}/replay`, { method: "POST", body: { from: n } });
      reload(notice("ok", `Replaying the rows after ${n}.`));
    } catch (err) {
      fill(out, errorNotice(err));
    } finally {
      go.disabled = false;
    }
  });
  return h("section", { id: "replay-panel", class: "admin" }, h("h2", {}, "Replay"),
    h("p", { class: "muted" }, "Evaluate the rows after a seq again; identical writes leave no wake."),
    h("div", { class: "actions" }, field("from seq", from), go), out);
}

export async function renderOne(ctx) {
  const { el, signal, space } = ctx;
  const name = ctx.params[1];
  append(el, h("h1", {}, `Trigger ${name}`), h("p", {}, link(`${ctx.base}/triggers`, "← every trigger"), " · ",
    link(`${ctx.base}/deliveries${query({ trigger: name })}`, "its deliveries")));
  const body = h("div", {});
  append(el, body);
  // load renders the trigger, with flash (a notice) over it when given.
  const load = async (flash) => {
    let t;
    let sp;
    try {
      [t, sp] = await Promise.all([api(`/spaces/${enc(space)}/triggers/${enc(name)}`, { signal }), api(`/spaces/${enc(space)}`, { signal })]);
    } catch (err) {
      fill(body, errorNotice(err, "read this trigger"));
      return;
    }
    const st = t.status;
    const age = await lagAge(ctx, st);
    fill(body, flash instanceof Node ? h("div", { id: "flash" }, flash) : null,
      h("dl", { class: "facts", id: "trigger-status" },
        h("dt", {}, "state"), h("dd", {}, badge(t.enabled ? "enabled" : "disabled"), ctx.can.admin ? [" ", switchButton(ctx, name, t.enabled, load)] : null),
        h("dt", {}, "source"), h("dd", {}, source(t)),
        h("dt", {}, "function"), h("dd", {}, t.function),
        st ? [
          h("dt", {}, "cursor"), h("dd", {}, `${st.cursor} (head ${st.head})`),
          h("dt", {}, "lag"), h("dd", { id: "trigger-lag" }, `${st.lag} rows`, age ? `, oldest waiting ${age}` : ""),
          h("dt", {}, "lease"), h("dd", {}, st.owner ? `${st.owner}, epoch ${st.epoch}${st.leaseExpires ? `, until ${time(st.leaseExpires)}` : ""}` : "none"),
          h("dt", {}, "deliveries"), h("dd", {}, deliveryBadges(ctx, name, st)),
          st.oldestOpen ? [h("dt", {}, "oldest open"), h("dd", {}, ago(st.oldestOpen))] : null,
          st.skipped && st.skipped.length ? [h("dt", {}, "skipped"), h("dd", {}, st.skipped.map((r) => `${r.lo}..${r.hi}`).join(", "))] : null,
        ] : null),
      ctx.can.admin && t.source.changes ? backtestPanel(ctx, t, sp.head) : null,
      ctx.can.admin ? replayPanel(ctx, name, load) : null,
      h("h2", {}, "Definition"), h("pre", { id: "trigger-def" }, pretty(editable(t))));
  };
  await load();
}
