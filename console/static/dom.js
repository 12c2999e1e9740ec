// Small DOM helpers. Every text goes in as a text node (never as HTML),
// so nothing the server sends can become markup.

// h builds an element: h("a", {href: "/x", class: "y"}, "text", child).
// Attributes starting with "on" are event listeners; null and false
// attributes are left out; children may be strings, nodes, arrays or
// null.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  return append(el, ...children);
}

const svgNS = "http://www.w3.org/2000/svg";

// s builds an SVG element like h.
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(svgNS, tag);
  setAttrs(el, attrs);
  return append(el, ...children);
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) {
      continue;
    }
    if (k.startsWith("on") && typeof v === "function") {
      el.addEventListener(k.slice(2), v);
    } else if (k === "value" && "value" in el) {
      el.value = v;
    } else if (k === "checked" && "checked" in el) {
      el.checked = Boolean(v);
    } else {
      el.setAttribute(k, v === true ? "" : String(v));
    }
  }
}

// append adds children to el like h does (arrays flattened, null and
// false left out, strings as text); use it instead of Element.append,
// which would show null and arrays as text.
export function append(el, ...children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) {
      continue;
    }
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// fill empties an element and fills it with children.
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, ...children);
}

// link is an in-console link: the router handles its clicks.
export function link(href, ...children) {
  return h("a", { href, "data-nav": "" }, ...children);
}

// compact renders JSON on one line.
export function compact(v) {
  return v === undefined ? "" : JSON.stringify(v);
}

// pretty renders JSON indented.
export function pretty(v) {
  return JSON.stringify(v, null, 2);
}

// ago says how long before now t (an RFC 3339 time or Date) was.
export function ago(t) {
  const ms = Date.now() - new Date(t).getTime();
  if (!Number.isFinite(ms)) {
    return "";
  }
  return `${duration(Math.max(0, ms))} ago`;
}

// duration renders milliseconds as 850ms, 12s, 4m 10s, 3h 5m, 2d 4h.
export function duration(ms) {
  if (ms < 1000) {
    return `${Math.round(ms)}ms`;
  }
  const s = Math.floor(ms / 1000);
  if (s < 60) {
    return `${s}s`;
  }
  const m = Math.floor(s / 60);
  if (m < 60) {
    return `${m}m ${s % 60}s`;
  }
  const hr = Math.floor(m / 60);
  if (hr < 48) {
    return `${hr}h ${m % 60}m`;
  }
  return `${Math.floor(hr / 24)}d ${hr % 24}h`;
}

// time renders an RFC 3339 time as local date and time with milliseconds.
export function time(t) {
  if (!t) {
    return "";
  }
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) {
    return String(t);
  }
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

// notice is a message box: kind "error", "info" or "ok".
export function notice(kind, ...children) {
  return h("div", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, ...children);
}

// errorNotice renders an API error; a 403 says what the token may not
// see instead of failing the page.
export function errorNotice(err, what = "") {
  if (err && err.status === 403) {
    return notice("info", `This token may not ${what || "see this"}: `, err.message);
  }
  return notice("error", (err && err.message) || String(err));
}

// table builds a table from a header list and rows of cells.
export function table(cls, head, rows) {
  return h("table", { class: cls },
    h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows));
}

// field is a labelled form input.
export function field(label, input, hint = "") {
  return h("label", { class: "field" }, h("span", {}, label), input, hint ? h("small", {}, hint) : null);
}

// status renders a delivery or stance status as a badge.
export function badge(text, extra = "") {
  return h("span", { class: `badge ${text} ${extra}`.trim() }, text);
}
