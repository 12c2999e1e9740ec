// The views page. Views (definitions, size, backtest) come with the views
// API (issue 11); until it is served this page says so. When it lands,
// render lists GET /api/v1/spaces/{space}/views here, and each view's
// definition, size and a backtest, like the triggers pages do.

import { append, h, link, notice } from "./dom.js";

export async function render(ctx) {
  append(ctx.el, h("h1", {}, "Views"),
    notice("info", "Views are not served by this server yet: their definitions, sizes and backtests will show here once the views API lands. ",
      "Meanwhile, ", link(`${ctx.base}/entities`, "browse the entities"), " or ", link(`${ctx.base}/stream`, "watch the stream"), "."));
}
