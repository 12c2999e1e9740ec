// The deliveries page: every trigger's deliveries (or one trigger's),
// filtered by status and a CEL filter over the row, parked chains first;
// retry, release or discard one, or all that match (bulk: the server
// counts them first, the operator confirms that count).

import { api, enc, query } from "./api.js";
import { ago, append, badge, errorNotice, field, fill, h, link, notice, table, time } from "./dom.js";

export const statuses = ["pending", "running", "succeeded", "retrying", "failed", "parked", "discarded"];

// actionsFrom mirrors the engine's rule of which statuses each action
// applies to (engine.RetryFrom, ReleaseFrom, DiscardFrom); it only decides
// which buttons to show: the server judges every request.
const actionsFrom = {
  retry: ["failed"],
  release: ["parked"],
  discard: ["pending", "retrying", "failed", "parked"],
};

const pageSize = 50;

// deliveryActions renders the admin buttons for one delivery; done runs
// after an action succeeded.
export function deliveryActions(ctx, d, done) {
  const out = h("span", { class: "row-actions" });
  for (const [action, from] of Object.entries(actionsFrom)) {
    if (!from.includes(d.status)) {
      continue;
    }
    append(out, h("button", { type: "button", class: `small admin ${action}`, "data-action": action, "data-delivery": d.id,
      onclick: async (ev) => {
        ev.target.disabled = true;
        try {
          await api(`/spaces/${enc(ctx.space)}/deliveries/${enc(d.id)}/${action}`, { method: "POST" });
          done();
        } catch (err) {
          out.replaceChildren(errorNotice(err));
        }
      } }, action));
  }
  return out;
}

function filterForm(ctx, f, triggerNames) {
  const trig = h("select", { name: "trigger", id: "d-trigger" },
    h("option", { value: "" }, "every trigger"),
    triggerNames.map((n) => h("option", { value: n, selected: n === f.trigger }, n)));
  const boxes = statuses.map((st) => h("label", { class: "check" },
    h("input", { type: "checkbox", name: "status", value: st, checked: f.status.includes(st), id: `d-status-${st}` }), st));
  const when = h("textarea", { name: "when", id: "d-when", rows: 2, spellcheck: "false", placeholder: "row.type == 'task'" }, f.when);
  const form = h("form", { id: "delivery-filters", class: "filters" },
    h("div", { class: "grid" }, field("trigger", trig), field("status", h("div", { class: "checks" }, boxes))),
    field("when (CEL over the delivery's row)", when),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", id: "d-apply" }, "Apply"),
      link(`${ctx.base}/deliveries`, "Clear")));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const data = new FormData(form);
    ctx.navigate(`${ctx.base}/deliveries${query({
      trigger: data.get("trigger") || "",
      status: data.getAll("status"),
      when: String(data.get("when") || "").trim(),
    })}`);
  });
  return form;
}

function deliveryRow(ctx, d, reload) {
  const { base } = ctx;
  return h("tr", { "data-delivery": d.id, "data-status": d.status },
    h("td", { class: "mono" }, d.id),
    h("td", {}, link(`${base}/triggers/${enc(d.trigger)}`, d.trigger)),
    h("td", {}, link(`${base}/rows/${d.seq}`, String(d.seq))),
    h("td", {}, d.entity.type.startsWith("eddy.") ? `${d.entity.type}/${d.entity.id}`
      : link(`${base}/entities/${enc(d.entity.type)}/${enc(d.entity.id)}`, `${d.entity.type}/${d.entity.id}`)),
    h("td", { class: "status" }, badge(d.status)),
    h("td", {}, String(d.attempts)),
    h("td", {}, String(d.depth)),
    h("td", { class: "error" }, d.lastError || ""),
    h("td", { title: d.updatedAt }, ago(d.updatedAt), d.nextAttemptAt ? h("div", { class: "muted" }, `next ${time(d.nextAttemptAt)}`) : null),
    h("td", {}, ctx.can.admin ? deliveryActions(ctx, d, reload) : ""));
}

const head = ["id", "trigger", "row", "entity", "status", "attempts", "depth", "last error", "updated", ""];

// section lists one set of deliveries with a More button.
function section(ctx, id, title, params, reload) {
  const tbody = h("tbody", {});
  const more = h("button", { type: "button", class: "more", hidden: true }, "More");
  const info = h("div", {});
  const el = h("section", { id }, h("h2", {}, title), info,
    h("table", { class: "deliveries" }, h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))), tbody), more);
  let after = "";
  let shown = 0;
  const load = async () => {
    more.disabled = true;
    try {
      const page = await api(`/spaces/${enc(ctx.space)}/deliveries${query({ ...params, limit: pageSize, after })}`, { signal: ctx.signal });
      for (const d of page.deliveries) {
        append(tbody, deliveryRow(ctx, d, reload));
      }
      shown += page.deliveries.length;
      after = page.next || "";
      more.hidden = !page.next;
      fill(info, shown === 0 && !page.next ? notice("info", "None match.") : null);
    } catch (err) {
      fill(info, errorNotice(err, "list these deliveries"));
    } finally {
      more.disabled = false;
    }
  };
  more.addEventListener("click", load);
  return { el, load };
}

// bulkBar offers retry, release and discard of everything that matches:
// a dry run counts, the operator confirms that count, the server acts
// only if the count still holds.
function bulkBar(ctx, f, reload) {
  const panel = h("div", { id: "bulk-panel" });
  const body = (action, extra) => ({ action, trigger: f.trigger || undefined, status: f.status.length ? f.status : undefined, when: f.when || undefined, ...extra });
  const start = async (action) => {
    fill(panel, notice("info", `Counting the deliveries ${action} applies to…`));
    let dry;
    try {
      dry = await api(`/spaces/${enc(ctx.space)}/deliveries/bulk`, { method: "POST", body: body(action, { dryRun: true }) });
    } catch (err) {
      fill(panel, errorNotice(err));
      return;
    }
    if (dry.matched === 0) {
      fill(panel, notice("info", `No delivery that matches can be ${action === "retry" ? "retried" : `${action}d`}.`));
      return;
    }
    const confirm = h("button", { type: "button", class: "primary danger", id: "bulk-confirm" }, `${action} ${dry.matched}`);
    const cancel = h("button", { type: "button", id: "bulk-cancel", onclick: () => fill(panel) }, "Cancel");
    confirm.addEventListener("click", async () => {
      confirm.disabled = true;
      try {
        const res = await api(`/spaces/${enc(ctx.space)}/deliveries/bulk`, { method: "POST", body: body(action, { expect: dry.matched }) });
        fill(panel, notice("ok", h("span", { id: "bulk-result" }, `${action}: ${res.done} done, ${res.skipped} skipped`),
          res.more ? " (more matched: run it again)" : "",
          res.errors ? h("ul", {}, res.errors.map((e) => h("li", {}, `${e.id}: ${e.error.message}`))) : null));
        reload();
      } catch (err) {
        fill(panel, errorNotice(err));
      }
    });
    fill(panel, h("div", { class: "confirm", id: "bulk-confirmation" },
      h("p", {}, h("strong", { id: "bulk-count" }, String(dry.matched)), dry.more ? "+" : "",
        ` deliveries match and can be ${action === "retry" ? "retried" : `${action}d`} (parked chains first):`),
      h("ul", { class: "mono" }, dry.sample.map((d) => h("li", {}, `${d.id} · ${d.trigger} · row ${d.seq} · ${d.status}`))),
      dry.matched > dry.sample.length ? h("p", { class: "muted" }, `… and ${dry.matched - dry.sample.length} more.`) : null,
      h("div", { class: "actions" }, confirm, cancel)));
  };
  return h("div", { class: "bulk admin", id: "bulk" },
    h("span", {}, "All that match: "),
    Object.keys(actionsFrom).map((action) => h("button", { type: "button", id: `bulk-${action}`, class: "admin", onclick: () => start(action) }, `${action} all…`)),
    panel);
}

export async function render(ctx) {
  const { el, signal, space } = ctx;
  const q = ctx.query;
  const f = {
    trigger: q.get("trigger") || "",
    status: (q.get("status") || "").split(",").filter((st) => statuses.includes(st)),
    when: q.get("when") || "",
  };
  let names = [];
  try {
    names = (await api(`/spaces/${enc(space)}/triggers`, { signal })).triggers.map((t) => t.name);
  } catch {
    // the filter form offers "every trigger" alone
  }
  append(el, h("h1", {}, "Deliveries"), filterForm(ctx, f, names));
  const lists = h("div", { id: "delivery-lists" });
  const reload = () => {
    fill(lists);
    show();
  };
  if (ctx.can.admin) {
    append(el, bulkBar(ctx, f, reload));
  }
  append(el, lists);
  const show = () => {
    const base = { trigger: f.trigger, when: f.when };
    const wanted = f.status.length ? f.status : statuses;
    const loads = [];
    if (wanted.includes("parked")) {
      const parked = section(ctx, "parked", "Parked chains", { ...base, status: ["parked"] }, reload);
      append(lists, parked.el);
      loads.push(parked.load());
    }
    const rest = wanted.filter((st) => st !== "parked");
    if (rest.length) {
      const others = section(ctx, "others", f.status.length ? `Deliveries: ${rest.join(", ")}` : "Other deliveries", { ...base, status: rest }, reload);
      append(lists, others.el);
      loads.push(others.load());
    }
    return Promise.all(loads);
  };
  await show();
}
