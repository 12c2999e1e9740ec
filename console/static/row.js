// The row page: one row's commit (each change with a before/after diff;
// the receipt and provenance for trusted tokens), every trigger's stance
// on it with the delivery, and its causal chain.

import { api, enc } from "./api.js";
import { append, badge, compact, errorNotice, fill, h, link, notice, pretty, table, time } from "./dom.js";
import { chainPicture } from "./chain.js";
import { deliveryActions } from "./deliveries.js";

export async function render(ctx) {
  const { el, signal, space, base } = ctx;
  const seq = Number(ctx.params[1]);
  const sp = `/spaces/${enc(space)}`;
  append(el, h("h1", {}, `Row ${seq}`),
    h("p", { class: "muted" },
      link(`${base}/stream?mode=history&before=${seq + 1}`, "Open the log here"), " · ",
      link(`${base}/rows/${seq}/chain`, "Causal chain"),
      seq > 1 ? [" · ", link(`${base}/rows/${seq - 1}`, "← previous row")] : null, " · ",
      link(`${base}/rows/${seq + 1}`, "next row →")));
  const commitEl = h("section", { id: "commit" });
  const stancesEl = h("section", { id: "stances" }, h("h2", {}, "Stances"));
  const chainEl = h("section", { id: "chain" }, h("h2", {}, "Causal chain"));
  append(el, commitEl, stancesEl, chainEl);

  const loads = [
    api(`${sp}/changes/${seq}`, { signal }).then((c) => renderCommit(commitEl, base, c), (err) => append(commitEl, errorNotice(err, "read this row"))),
    loadStances(ctx, stancesEl, seq),
  ];
  if (ctx.can.trusted) {
    loads.push(api(`${sp}/changes/${seq}/tree`, { signal })
      .then((t) => append(chainEl, chainPicture(base, t)), (err) => append(chainEl, errorNotice(err, "read this chain"))));
  } else {
    append(chainEl, notice("info", "Causal chains are shown to trusted tokens (admin, or scope log:read)."));
  }
  await Promise.all(loads);
}

async function loadStances(ctx, el, seq) {
  const { space, base, signal } = ctx;
  const body = h("div", {});
  append(el, body);
  const reload = () => loadStances(ctx, fill(el, h("h2", {}, "Stances")), seq);
  try {
    const st = await api(`/spaces/${enc(space)}/changes/${seq}/stances`, { signal });
    if (st.stances.length === 0) {
      append(body, notice("info", "No trigger judges this space's rows."));
      return;
    }
    append(body, table("stances", ["trigger", "stance", "delivery", "status", "attempts", "", ""],
      st.stances.map((s) => h("tr", { "data-trigger": s.trigger },
        h("td", {}, link(`${base}/triggers/${enc(s.trigger)}`, s.trigger)),
        h("td", {}, badge(s.stance)),
        h("td", { class: "mono" }, s.delivery ? link(`${base}/deliveries?trigger=${enc(s.trigger)}`, s.delivery.id) : ""),
        h("td", {}, s.delivery ? badge(s.delivery.status) : ""),
        h("td", {}, s.delivery ? String(s.delivery.attempts) : ""),
        h("td", { class: "error" }, s.error || ""),
        h("td", {}, s.delivery && ctx.can.admin ? deliveryActions(ctx, { id: s.delivery.id, status: s.delivery.status }, reload) : "")))));
  } catch (err) {
    append(body, errorNotice(err, "read the stances"));
  }
}

function renderCommit(el, base, c) {
  const entity = c.type.startsWith("eddy.") ? c.entityId : link(`${base}/entities/${enc(c.type)}/${enc(c.entityId)}`, `${c.type}/${c.entityId}`);
  append(el, 
    h("dl", { class: "facts" },
      h("dt", {}, "seq"), h("dd", {}, String(c.seq)),
      h("dt", {}, "time"), h("dd", {}, time(c.ts), " ", h("span", { class: "muted" }, c.ts)),
      h("dt", {}, "actor"), h("dd", {}, c.actor),
      h("dt", {}, "op"), h("dd", {}, c.op),
      h("dt", {}, "entity"), h("dd", {}, entity),
      h("dt", {}, "payload"), h("dd", { class: "mono" }, compact(c.payload))),
    h("h2", {}, "Changes"),
    c.changes.length === 0 ? notice("info", "An engine row: it changes no entity.") : c.changes.map((ch) => changeDiff(base, ch)));
  if (c.receipt) {
    append(el, h("h2", {}, "Receipt"), h("pre", { id: "receipt" }, pretty(c.receipt)));
  }
  if (c.provenance) {
    const p = c.provenance;
    append(el, h("h2", {}, "Provenance"),
      h("dl", { class: "facts", id: "provenance" },
        Object.entries(p).map(([k, v]) => [h("dt", {}, k),
          h("dd", {}, k === "causedBy" ? link(`${base}/rows/${v}`, String(v)) : String(v))])));
  }
}

// changeDiff renders one change: every property before and after, the
// changed ones marked, and the links added and removed.
export function changeDiff(base, ch) {
  const before = (ch.before && ch.before.properties) || {};
  const after = (ch.after && ch.after.properties) || {};
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  const rows = keys.map((k) => {
    const inB = Object.hasOwn(before, k);
    const inA = Object.hasOwn(after, k);
    const b = inB ? compact(before[k]) : "";
    const a = inA ? compact(after[k]) : "";
    const kind = !inB ? "added" : !inA ? "removed" : a === b ? "same" : "changed";
    return h("tr", { class: `diff-${kind}`, "data-property": k },
      h("td", { class: "prop" }, k), h("td", { class: "before" }, b), h("td", { class: "after" }, a), h("td", { class: "muted" }, kind === "same" ? "" : kind));
  });
  const linkKey = (l) => `${l.rel} → ${l.target.type}/${l.target.id}`;
  const lb = new Set(((ch.before && ch.before.links) || []).map(linkKey));
  const la = new Set(((ch.after && ch.after.links) || []).map(linkKey));
  const linkRows = [...new Set([...lb, ...la])].sort().map((k) => {
    const kind = !lb.has(k) ? "added" : !la.has(k) ? "removed" : "same";
    return h("tr", { class: `diff-${kind}` }, h("td", { class: "prop" }, "link"), h("td", { class: "before" }, lb.has(k) ? k : ""),
      h("td", { class: "after" }, la.has(k) ? k : ""), h("td", { class: "muted" }, kind === "same" ? "" : kind));
  });
  return h("div", { class: "change", "data-ordinal": String(ch.ordinal) },
    h("h3", {}, `${ch.kind} `, ch.kind === "deleted" ? `${ch.type}/${ch.id}` : link(`${base}/entities/${enc(ch.type)}/${enc(ch.id)}`, `${ch.type}/${ch.id}`),
      h("span", { class: "muted" }, ` version ${ch.version}`)),
    table("diff", ["property", "before", "after", ""], [...rows, ...linkRows]));
}
