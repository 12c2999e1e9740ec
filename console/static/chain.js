// The causal chain picture: a row's whole causal tree as SVG, from the
// root write down through each trigger's delivery to the rows it wrote,
// with every row's depth, and the park point (a delivery parked at the
// causality cap or by the causal budget, and the engine's park row)
// marked. Every node links to
// its row or its deliveries.

import { api, enc } from "./api.js";
import { append, errorNotice, h, link, notice, s, table, time } from "./dom.js";

const colW = 210;
const rowBox = { w: 190, h: 46 };
const pill = { w: 170, h: 30 };
const levelH = 78;
const left = 70;
const top = 20;

// graph turns a tree answer into nodes with children.
function graph(tree) {
  const nodes = new Map();
  for (const r of tree.rows) {
    nodes.set(`r${r.seq}`, { key: `r${r.seq}`, kind: "row", row: r, children: [] });
  }
  for (const d of tree.deliveries) {
    nodes.set(`d${d.id}`, { key: `d${d.id}`, kind: "delivery", d, children: [] });
  }
  let root = null;
  for (const n of nodes.values()) {
    let parent = null;
    if (n.kind === "delivery") {
      parent = nodes.get(`r${n.d.seq}`);
    } else {
      const viaDelivery = n.row.delivery && nodes.get(`d${n.row.delivery}`);
      parent = viaDelivery && viaDelivery.d.seq === n.row.causedBy ? viaDelivery : nodes.get(`r${n.row.causedBy}`);
      if (n.row.seq === tree.root) {
        parent = null;
        root = n;
      }
    }
    if (parent) {
      parent.children.push(n);
    }
  }
  const order = (n) => (n.kind === "row" ? n.row.seq : n.d.seq + 0.5);
  for (const n of nodes.values()) {
    n.children.sort((a, b) => order(a) - order(b) || (a.key < b.key ? -1 : 1));
  }
  return root;
}

// layout gives every node a level (its distance from the root) and a
// column: leaves take the next free column, a parent sits over the middle
// of its children.
function layout(root) {
  let next = 0;
  let maxLevel = 0;
  const place = (n, level) => {
    n.level = level;
    maxLevel = Math.max(maxLevel, level);
    for (const c of n.children) {
      place(c, level + 1);
    }
    n.col = n.children.length === 0 ? next++ : (n.children[0].col + n.children[n.children.length - 1].col) / 2;
  };
  place(root, 0);
  return { cols: Math.max(next, 1), levels: maxLevel + 1 };
}

const cx = (n) => left + n.col * colW + colW / 2;
const cy = (n) => top + n.level * levelH + (n.kind === "row" ? rowBox.h : pill.h) / 2;
const halfH = (n) => (n.kind === "row" ? rowBox.h : pill.h) / 2;

function each(n, fn) {
  fn(n);
  for (const c of n.children) {
    each(c, fn);
  }
}

function rowNode(base, n, focus) {
  const r = n.row;
  const w = r.row; // the wire row, absent when hidden
  const x = cx(n) - rowBox.w / 2;
  const y = cy(n) - rowBox.h / 2;
  const cls = ["node", "row", r.seq === focus ? "focus" : "", w && w.op === "park" ? "park-row" : "", w ? "" : "hidden"].join(" ").trim();
  const line1 = w ? `#${r.seq} ${w.op}` : `#${r.seq} (hidden)`;
  const line2 = w ? `${w.type}/${w.entityId}` : "not readable by this token";
  return s("a", { href: `${base}/rows/${r.seq}`, "data-nav": "", class: cls, "data-seq": String(r.seq), "data-depth": String(r.depth) },
    s("title", {}, w ? `row ${r.seq}: ${w.op} ${w.type}/${w.entityId} by ${w.actor} at ${time(w.ts)} (depth ${r.depth})` : `row ${r.seq}`),
    s("rect", { x, y, width: rowBox.w, height: rowBox.h, rx: 4 }),
    s("text", { x: x + 8, y: y + 18, class: "l1" }, line1),
    s("text", { x: x + rowBox.w - 8, y: y + 18, class: "depth", "text-anchor": "end" }, `depth ${r.depth}`),
    s("text", { x: x + 8, y: y + 36, class: "l2" }, clip(line2, 28)));
}

function deliveryNode(base, n) {
  const d = n.d;
  const x = cx(n) - pill.w / 2;
  const y = cy(n) - pill.h / 2;
  const parked = d.status === "parked";
  const out = s("a", { href: `${base}/deliveries?trigger=${enc(d.trigger)}&status=${enc(d.status)}`, "data-nav": "",
    class: `node delivery status-${d.status}${parked ? " parked" : ""}`, "data-delivery": d.id, "data-status": d.status },
  s("title", {}, `delivery ${d.id} of ${d.trigger}: ${d.status}, ${d.attempts} attempts, depth ${d.depth}${d.lastError ? `: ${d.lastError}` : ""}`),
  s("rect", { x, y, width: pill.w, height: pill.h, rx: pill.h / 2 }),
  s("text", { x: x + pill.w / 2, y: y + 19, "text-anchor": "middle" }, clip(`${d.trigger} · ${d.status}`, 24)));
  if (parked) {
    append(out, s("text", { x: x + pill.w + 6, y: y + 19, class: "park-label", id: "park-point" }, parkLabel(d)));
  }
  return out;
}

// parkLabel says which limit parked a delivery: the causal budget (its
// lastError names it) or the depth cap.
function parkLabel(d) {
  if (/causal budget/.test(d.lastError || "")) {
    return "park point (causal budget spent)";
  }
  return `park point (depth ${d.depth} > cap)`;
}

function clip(t, n) {
  return t.length > n ? `${t.slice(0, n - 1)}…` : t;
}

// chainPicture renders a tree answer as an SVG picture with a legend.
export function chainPicture(base, tree) {
  const root = graph(tree);
  if (!root) {
    return notice("error", "The chain's root is missing from the answer.");
  }
  const { cols, levels } = layout(root);
  const width = left + cols * colW + 230; // room for the park label
  const height = top + levels * levelH;
  const svg = s("svg", { class: "chain", id: "chain-picture", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `causal chain of row ${tree.seq}` });
  const edges = s("g", { class: "edges" });
  const labels = s("g", { class: "depths" });
  const nodes = s("g", { class: "nodes" });
  const seen = new Set();
  each(root, (n) => {
    for (const c of n.children) {
      const x1 = cx(n), y1 = cy(n) + halfH(n), x2 = cx(c), y2 = cy(c) - halfH(c);
      const my = (y1 + y2) / 2;
      append(edges, s("path", { d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`,
        class: c.kind === "delivery" && c.d.status === "parked" ? "edge parked" : "edge" }));
    }
    if (n.kind === "row" && !seen.has(n.level)) {
      seen.add(n.level);
      append(labels, s("text", { x: 8, y: cy(n) + 4, class: "depth-axis" }, `depth ${n.row.depth}`));
    }
    append(nodes, n.kind === "row" ? rowNode(base, n, tree.seq) : deliveryNode(base, n));
  });
  append(svg, labels, edges, nodes);
  return h("div", { class: "chain-wrap" },
    tree.pruned ? notice("info", `The chain reaches below the horizon: it starts here at row ${tree.root}, its oldest retained row.`) : null,
    tree.truncated ? notice("info", `The tree is larger than shown (${tree.rows.length} rows read).`) : null,
    h("div", { class: "scroll" }, svg),
    h("p", { class: "legend muted" }, "Boxes are rows (depth in the corner), pills are deliveries (trigger · status) from the row above to the rows they wrote. ",
      "A red dashed pill is a delivery parked at the causality cap or by the causal budget: the park point."));
}

// renderPage is the causal chain page of a row.
export async function renderPage(ctx) {
  const { el, signal, space, base } = ctx;
  const seq = Number(ctx.params[1]);
  append(el, h("h1", {}, `Causal chain of row ${seq}`), h("p", {}, link(`${base}/rows/${seq}`, `← row ${seq}`)));
  if (!ctx.can.trusted) {
    append(el, notice("info", "Causal chains are shown to trusted tokens (admin, or scope log:read)."));
    return;
  }
  let tree;
  try {
    tree = await api(`/spaces/${enc(space)}/changes/${seq}/tree`, { signal });
  } catch (err) {
    append(el, errorNotice(err, "read this chain"));
    return;
  }
  append(el, chainPicture(base, tree),
    h("h2", {}, "Rows"),
    table("rows", ["seq", "depth", "op", "entity", "trigger", "delivery", "caused by"], tree.rows.map((r) => h("tr", {},
      h("td", {}, link(`${base}/rows/${r.seq}`, String(r.seq))),
      h("td", {}, String(r.depth)),
      h("td", {}, r.row ? r.row.op : "hidden"),
      h("td", {}, r.row ? `${r.row.type}/${r.row.entityId}` : ""),
      h("td", {}, r.trigger || ""),
      h("td", { class: "mono" }, r.delivery || ""),
      h("td", {}, r.causedBy ? link(`${base}/rows/${r.causedBy}`, String(r.causedBy)) : "")))));
}
