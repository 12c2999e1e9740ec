// The entities pages: the space's types, one type's entities as of a head
// (every page of a browse is the same snapshot), and one entity with its
// history.

import { api, enc, query } from "./api.js";
import { append, compact, errorNotice, field, fill, h, link, notice, pretty, table, time } from "./dom.js";
import { Rows } from "./rows.js";
import { rowElement, rowList } from "./stream.js";

const pageSize = 50;

export async function renderTypes(ctx) {
  const { el, signal, space, base } = ctx;
  const input = h("input", { id: "type-name", placeholder: "task", autocomplete: "off", required: true });
  const form = h("form", { id: "type-form", class: "filters" }, field("type", input),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Browse")));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    ctx.navigate(`${base}/entities/${enc(input.value.trim())}`);
  });
  const list = h("div", { id: "types" });
  append(el, h("h1", {}, "Entities"), form, list);
  const seen = new Map();
  try {
    for (const t of (await api(`/spaces/${enc(space)}/types`, { signal })).types) {
      seen.set(t.type, "defined");
    }
  } catch (err) {
    append(list, errorNotice(err, "read the type definitions"));
  }
  try {
    const recent = await api(`/spaces/${enc(space)}/changes${query({ before: 0, limit: 500 })}`, { signal });
    for (const r of recent.changes) {
      if (!r.type.startsWith("eddy.") && !seen.has(r.type)) {
        seen.set(r.type, "seen in the last rows");
      }
    }
  } catch {
    // the defined types alone
  }
  if (seen.size === 0) {
    append(list, notice("info", "No type defined or written yet."));
    return;
  }
  append(list, table("types", ["type", ""], [...seen.entries()].sort().map(([t, how]) =>
    h("tr", {}, h("td", {}, link(`${base}/entities/${enc(t)}`, t)), h("td", { class: "muted" }, how)))));
}

export async function renderType(ctx) {
  const { el, signal, space, base } = ctx;
  const type = ctx.params[1];
  const q = ctx.query;
  const head = q.get("head") || "";
  const after = q.get("after") || "";
  const headInput = h("input", { id: "as-of", name: "head", value: head, placeholder: "current head", inputmode: "numeric" });
  const form = h("form", { class: "filters inline" }, field("as of head", headInput),
    h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    ctx.navigate(`${base}/entities/${enc(type)}${query({ head: headInput.value.trim() })}`);
  });
  append(el, h("h1", {}, `Entities of type ${type}`), form);
  let page;
  try {
    page = await api(`/spaces/${enc(space)}/entities/${enc(type)}${query({ limit: pageSize, head, after })}`, { signal });
  } catch (err) {
    append(el, errorNotice(err, `read type ${type}`));
    return;
  }
  append(el, h("p", { class: "muted", id: "snapshot", "data-head": String(page.head) },
    `As of head ${page.head}: every page of this browse shows the collection at that seq. `,
    link(`${base}/stream${query({ types: type })}`, "watch this type")));
  if (page.items.length === 0) {
    append(el, notice("info", "No entity."));
  } else {
    append(el, table("entities", ["id", "version", "updated", "properties", "links"], page.items.map((e) => h("tr", { "data-id": e.id },
      h("td", {}, link(`${base}/entities/${enc(type)}/${enc(e.id)}`, e.id)),
      h("td", {}, link(`${base}/rows/${e.version}`, String(e.version))),
      h("td", {}, time(e.updatedAt)),
      h("td", { class: "mono" }, compact(e.properties)),
      h("td", {}, String(e.links.length))))));
  }
  if (page.next) {
    append(el, h("p", {}, link(`${base}/entities/${enc(type)}${query({ head: page.head, after: page.next })}`, "Next page →")));
  }
}

export async function renderOne(ctx) {
  const { el, signal, space, base } = ctx;
  const [, type, id] = ctx.params;
  append(el, h("h1", {}, `${type}/${id}`), h("p", {}, link(`${base}/entities/${enc(type)}`, `← every ${type}`), " · ",
    link(`${base}/stream${query({ entityType: type, entityId: id })}`, "watch this entity")));
  const rec = h("section", { id: "record" });
  const hist = h("section", { id: "entity-history" }, h("h2", {}, "History"));
  append(el, rec, hist);
  try {
    const e = await api(`/spaces/${enc(space)}/entities/${enc(type)}/${enc(id)}`, { signal });
    append(rec, h("dl", { class: "facts" },
      h("dt", {}, "version"), h("dd", {}, link(`${base}/rows/${e.version}`, String(e.version))),
      h("dt", {}, "created"), h("dd", {}, time(e.createdAt)),
      h("dt", {}, "updated"), h("dd", {}, time(e.updatedAt))),
    h("h2", {}, "Properties"), h("pre", { id: "properties" }, pretty(e.properties)),
    e.links.length ? [h("h2", {}, "Links"), h("ul", {}, e.links.map((l) =>
      h("li", {}, `${l.rel} → `, link(`${base}/entities/${enc(l.target.type)}/${enc(l.target.id)}`, `${l.target.type}/${l.target.id}`))))] : null);
  } catch (err) {
    append(rec, err.status === 404 ? notice("info", "No live entity (never written, or deleted: its history is below).") : errorNotice(err, `read type ${type}`));
  }
  const tbody = h("div", { class: "rows" });
  const rows = new Rows(tbody);
  const more = h("button", { type: "button", hidden: true }, "Older");
  append(hist, rowList("history", tbody), more);
  let before = 0;
  const load = async () => {
    try {
      const page = await api(`/spaces/${enc(space)}/changes${query({ entityType: type, entityId: id, before, limit: pageSize })}`, { signal });
      rows.addOldest(page.changes.map((r) => rowElement(base, r)));
      more.hidden = page.cursor === undefined;
      before = page.cursor;
    } catch (err) {
      fill(hist, h("h2", {}, "History"), errorNotice(err, "read this entity's history"));
    }
  };
  more.addEventListener("click", load);
  await load();
}
