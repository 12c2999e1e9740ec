// The console's shell: sign-in, the navigation bar and the router that
// renders the page a path names. Each page is a module with a render
// function taking the page context (see context below).

import { api, setToken, setUnauthorized, token } from "./api.js";
import { append, errorNotice, fill, h, link, notice } from "./dom.js";
import * as chain from "./chain.js";
import * as deliveries from "./deliveries.js";
import * as entities from "./entities.js";
import * as row from "./row.js";
import * as stream from "./stream.js";
import * as triggers from "./triggers.js";
import * as views from "./views.js";

const seg = "([^/]+)";
const routes = [
  { re: new RegExp(`^/spaces/${seg}/stream$`), nav: "stream", title: "Stream", render: stream.render },
  { re: new RegExp(`^/spaces/${seg}/rows/(\\d+)$`), nav: "stream", title: "Row", render: row.render },
  { re: new RegExp(`^/spaces/${seg}/rows/(\\d+)/chain$`), nav: "stream", title: "Causal chain", render: chain.renderPage },
  { re: new RegExp(`^/spaces/${seg}/triggers$`), nav: "triggers", title: "Triggers", render: triggers.renderList },
  { re: new RegExp(`^/spaces/${seg}/triggers/${seg}$`), nav: "triggers", title: "Trigger", render: triggers.renderOne },
  { re: new RegExp(`^/spaces/${seg}/deliveries$`), nav: "deliveries", title: "Deliveries", render: deliveries.render },
  { re: new RegExp(`^/spaces/${seg}/entities$`), nav: "entities", title: "Entities", render: entities.renderTypes },
  { re: new RegExp(`^/spaces/${seg}/entities/${seg}$`), nav: "entities", title: "Entities", render: entities.renderType },
  { re: new RegExp(`^/spaces/${seg}/entities/${seg}/${seg}$`), nav: "entities", title: "Entity", render: entities.renderOne },
  { re: new RegExp(`^/spaces/${seg}/views$`), nav: "views", title: "Views", render: views.renderList },
  { re: new RegExp(`^/spaces/${seg}/views/${seg}$`), nav: "views", title: "View", render: views.renderOne },
];

const navItems = [
  ["stream", "Stream"],
  ["triggers", "Triggers"],
  ["deliveries", "Deliveries"],
  ["entities", "Entities"],
  ["views", "Views"],
];

// session is the signed-in token's identity (GET /api/v1/whoami) and the
// spaces it sees (GET /api/v1); null when signed out.
let session = null;
let current = null; // AbortController of the page on screen

const bar = () => document.getElementById("bar");
const main = () => document.getElementById("main");

// can says what the session's token may do. The API decides; the console
// only hides what would be refused.
function can(me) {
  const admin = me.role === "admin";
  return {
    admin,
    write: admin || me.role === "writer",
    trusted: admin || (me.scopes || []).includes("log:read"),
  };
}

export function navigate(href, { replace = false } = {}) {
  if (replace) {
    history.replaceState(null, "", href);
  } else {
    history.pushState(null, "", href);
  }
  window.scrollTo(0, 0);
  route();
}

async function signIn(secret) {
  setToken(secret);
  const [me, disc] = await Promise.all([api("/whoami"), api("")]);
  session = { me, spaces: disc.spaces.map((sp) => sp.space), version: disc.version, can: can(me) };
}

function signOut() {
  setToken("");
  session = null;
  route();
}

function renderSignIn(message) {
  fill(bar(), h("span", { class: "brand" }, "eddy"));
  const input = h("input", { type: "password", name: "token", id: "token", autocomplete: "off", required: true, placeholder: "eddy_…" });
  const status = h("div", { id: "signin-status" }, message ? notice("error", message) : null);
  // POST, so that a submit that skips the handler never puts the token in
  // a URL (it gets the server's 405 instead).
  const form = h("form", { id: "signin", class: "card narrow", method: "post", action: "/" },
    h("h1", {}, "Sign in"),
    h("p", {}, "Paste an eddy token. ", h("code", {}, "eddy serve"), " prints the admin token at first start and keeps it in ",
      h("code", {}, "eddy-data/admin.token"), ". The console keeps it in this tab's session storage only."),
    h("label", { class: "field" }, h("span", {}, "Token"), input),
    h("button", { type: "submit", class: "primary" }, "Sign in"),
    status);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await signIn(input.value.trim());
      route();
    } catch (err) {
      setToken("");
      session = null;
      fill(status, errorNotice(err));
    }
  });
  fill(main(), form);
  document.title = "Sign in · eddy";
  input.focus();
}

function renderBar(space, nav) {
  const spaces = session.spaces.includes(space) || !space ? session.spaces : [space, ...session.spaces];
  const picker = h("select", { id: "space", "aria-label": "space" },
    spaces.map((sp) => h("option", { value: sp, selected: sp === space }, sp)));
  picker.addEventListener("change", () => {
    const page = nav === "views" || nav === "triggers" || nav === "deliveries" || nav === "entities" ? nav : "stream";
    navigate(`/spaces/${encodeURIComponent(picker.value)}/${page}`);
  });
  const base = `/spaces/${encodeURIComponent(space)}`;
  fill(bar(),
    link(`${base}/stream`, h("span", { class: "brand" }, "eddy")),
    picker,
    h("nav", {}, navItems.map(([key, label]) =>
      h("a", { href: `${base}/${key}`, "data-nav": "", class: key === nav ? "active" : null, id: `nav-${key}` }, label))),
    h("span", { class: "who", id: "who", title: `token ${session.me.id}` },
      `${session.me.actor} · ${session.me.role}`,
      session.me.types ? ` · types ${session.me.types.join(", ")}` : ""),
    h("button", { type: "button", id: "signout", onclick: signOut }, "Sign out"));
}

// route renders the page of the current path.
async function route() {
  if (current) {
    current.abort();
  }
  current = new AbortController();
  const signal = current.signal;
  if (!token()) {
    renderSignIn();
    return;
  }
  if (!session) {
    try {
      await signIn(token());
    } catch (err) {
      setToken("");
      renderSignIn(err.message);
      return;
    }
  }
  const path = location.pathname;
  if (path === "/" || path === "") {
    const space = session.spaces.includes("default") ? "default" : session.spaces[0];
    if (!space) {
      fill(main(), notice("info", "This token sees no space."));
      return;
    }
    navigate(`/spaces/${encodeURIComponent(space)}/stream`, { replace: true });
    return;
  }
  for (const r of routes) {
    const m = r.re.exec(path);
    if (!m) {
      continue;
    }
    const params = m.slice(1).map(decodeURIComponent);
    const space = params[0];
    renderBar(space, r.nav);
    document.title = `${r.title} · ${space} · eddy`;
    const el = h("div", { class: "page", id: `page-${r.nav}` });
    fill(main(), el);
    const ctx = {
      space, params, el, signal,
      query: new URLSearchParams(location.search),
      me: session.me, can: session.can,
      base: `/spaces/${encodeURIComponent(space)}`,
      navigate,
    };
    try {
      await r.render(ctx);
    } catch (err) {
      if (!signal.aborted) {
        append(el, errorNotice(err));
      }
    }
    return;
  }
  renderBar(session.spaces[0] || "default", "");
  fill(main(), notice("error", `No console page at ${path}.`));
}

setUnauthorized(() => {
  setToken("");
  session = null;
  renderSignIn("The token was refused (401): sign in again.");
});

document.addEventListener("click", (ev) => {
  const a = ev.target.closest && ev.target.closest("a[data-nav]");
  if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) {
    return;
  }
  ev.preventDefault();
  navigate(a.getAttribute("href"));
});

window.addEventListener("popstate", route);
route();
