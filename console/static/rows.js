// A list of wire rows, newest first, kept in chunks of chunkRows rows.
// The browser skips the style and layout of every chunk off screen
// (content-visibility), so a page holding thousands of rows costs, per
// update, about what the rows on screen cost. Every row is rowHeight
// pixels high (console.css says so too), so a chunk knows its height
// without being laid out, and a page scrolled down keeps its place when
// rows are added above.

import { h } from "./dom.js";

export const rowHeight = 29;
const chunkRows = 50;

export class Rows {
  constructor(el) {
    this.el = el;
    this.count = 0;
  }

  // addNewest adds row elements, oldest first, at the top.
  addNewest(rows) {
    let c = this.el.firstElementChild;
    for (const r of rows) {
      if (!c || c.childElementCount >= chunkRows) {
        sized(c);
        c = chunk();
        this.el.prepend(c);
      }
      c.prepend(r);
    }
    sized(c);
    this.count += rows.length;
  }

  // addOldest adds row elements, newest first, at the bottom.
  addOldest(rows) {
    let c = this.el.lastElementChild;
    for (const r of rows) {
      if (!c || c.childElementCount >= chunkRows) {
        sized(c);
        c = chunk();
        this.el.append(c);
      }
      c.append(r);
    }
    sized(c);
    this.count += rows.length;
  }

  // trim drops rows beyond keep from the bottom and returns the seq of
  // the last row kept (undefined when it dropped none).
  trim(keep) {
    if (this.count <= keep) {
      return undefined;
    }
    while (this.count > keep) {
      const last = this.el.lastElementChild;
      const drop = Math.min(this.count - keep, last.childElementCount);
      if (drop === last.childElementCount) {
        last.remove();
      } else {
        for (let i = 0; i < drop; i++) {
          last.lastElementChild.remove();
        }
        sized(last);
      }
      this.count -= drop;
    }
    const last = this.el.lastElementChild;
    return last ? Number(last.lastElementChild.dataset.seq) : undefined;
  }
}

function chunk() {
  return h("div", { class: "chunk" });
}

// sized tells a chunk the height its rows take, for when it is skipped.
function sized(c) {
  if (c) {
    c.style.containIntrinsicSize = `0 ${c.childElementCount * rowHeight}px`;
  }
}
