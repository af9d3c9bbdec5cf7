// The hex view: builds the hex pane and the field tree from the embedded JSON dump (the exact
// `--format json` document) and links them both ways. Only the rows in sight are in the DOM, so
// a dump of 100,000 rows opens and scrolls at once. No network access, no dependencies.
(function () {
  "use strict";
  const doc = JSON.parse(document.getElementById("hexdump-json").textContent);
  const rules = JSON.parse(document.getElementById("hexdump-rules").textContent);
  const rows = doc.rows;
  const error = doc.error;
  const n = rows.length;
  const $ = (id) => document.getElementById(id);
  const css = getComputedStyle(document.documentElement);
  const HEX_ROW = parseInt(css.getPropertyValue("--hex-row"), 10);
  const TREE_ROW = parseInt(css.getPropertyValue("--tree-row"), 10);
  const PER_LINE = 16;
  const CAP = 2000000; // the tallest spacer we ask the browser for, in pixels (taller lists are scaled)
  const UNDECODED = /^\(.*\)$/; // (undecoded), (after descriptor_length): bytes no field covers
  const LONG = 240; // a value cell shows this many characters (the search sees them all)

  // --- the bytes, and the row that owns each byte --------------------------------------------
  let total = 0;
  for (let i = 0; i < n; i++) total = Math.max(total, rows[i].offset + rows[i].size);
  const bytes = new Uint8Array(total);
  const owner = new Int32Array(total).fill(-1);
  const nibble = (c) => (c <= 57 ? c - 48 : c - 55); // "0"-"9", "A"-"F"
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    const h = r.hex;
    for (let k = 0; k < r.size; k++) {
      bytes[r.offset + k] = (nibble(h.charCodeAt(3 * k)) << 4) | nibble(h.charCodeAt(3 * k + 1));
      owner[r.offset + k] = i;
    }
  }

  // The failing field: the row holding the error's offset, else the last row (as the text dump).
  let failRow = -1;
  if (error && error.offset !== null && error.offset !== undefined) {
    for (let i = 0; i < n; i++) {
      if (rows[i].offset <= error.offset && error.offset < rows[i].offset + rows[i].size) { failRow = i; break; }
    }
    if (failRow < 0) failRow = n - 1;
  }

  // --- the field tree: a group for every path prefix (buffers, buffers[0], ...) --------------
  const TOKEN = /[^.[]+|\[[^\]]*\]/g;
  const item = { row: [], depth: [], label: [], path: [], start: [], end: [], parent: [], last: [] };
  const rowItem = new Int32Array(n);
  const stack = [];
  const close = (upTo) => { while (stack.length > upTo) item.last[stack.pop()] = item.row.length; };
  const add = (row, depth, label, path, start, end) => {
    const it = item.row.length;
    item.row.push(row); item.depth.push(depth); item.label.push(label); item.path.push(path);
    item.start.push(start); item.end.push(end); item.parent.push(stack.length ? stack[stack.length - 1] : -1);
    item.last.push(it + 1);
    return it;
  };
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    const tokens = UNDECODED.test(r.field) ? [r.field] : (r.field.match(TOKEN) || [r.field]);
    const prefixes = [];
    let acc = "";
    for (let t = 0; t < tokens.length - 1; t++) {
      acc = t === 0 ? tokens[t] : (tokens[t][0] === "[" ? acc + tokens[t] : acc + "." + tokens[t]);
      prefixes.push(acc);
    }
    let d = 0;
    while (d < stack.length && d < prefixes.length && item.path[stack[d]] === prefixes[d]) d++;
    close(d);
    for (let k = d; k < prefixes.length; k++) stack.push(add(-1, k, tokens[k], prefixes[k], r.offset, r.offset + r.size));
    for (const g of stack) {
      item.start[g] = Math.min(item.start[g], r.offset);
      item.end[g] = Math.max(item.end[g], r.offset + r.size);
    }
    rowItem[i] = add(i, prefixes.length, tokens[tokens.length - 1], r.field, r.offset, r.offset + r.size);
  }
  close(0);
  const items = item.row.length;
  // offsets and sizes are shown whole: their columns as wide as the longest (7 and 6 at least)
  let widest = 0, largest = 0;
  for (let it = 0; it < items; it++) {
    widest = Math.max(widest, item.end[it]);
    largest = Math.max(largest, item.end[it] - item.start[it]);
  }
  document.documentElement.style.setProperty("--offset-width", Math.max(7, String(widest).length) + "ch");
  document.documentElement.style.setProperty("--size-width", Math.max(6, String(largest).length) + "ch");
  const isGroup = (it) => item.row[it] < 0;
  const collapsed = new Uint8Array(items);
  const failItem = failRow >= 0 ? rowItem[failRow] : -1;

  // --- state -----------------------------------------------------------------------------------
  let selected = -1; // an item
  let hoverRow = -1;
  let query = "";
  let visible = new Int32Array(0); // the items listed, in order
  let position = new Int32Array(items); // item -> index in visible, or -1
  let haystack = null; // lower-cased "path\nvalue" of each row, built on the first search

  function computeVisible() {
    const out = [];
    if (query) {
      if (!haystack) haystack = rows.map((r) => (r.field + "\n" + r.text).toLowerCase());
      for (let i = 0; i < n; i++) if (haystack[i].includes(query)) out.push(rowItem[i]);
    } else {
      for (let it = 0; it < items; it = isGroup(it) && collapsed[it] ? item.last[it] : it + 1) out.push(it);
    }
    visible = Int32Array.from(out);
    position = new Int32Array(items).fill(-1);
    for (let p = 0; p < visible.length; p++) position[visible[p]] = p;
  }

  // --- a virtual list: a tall spacer, and a layer holding only the rows in sight --------------
  class VirtualList {
    constructor(box, rowHeight, draw, restyle) {
      this.box = box; this.rowHeight = rowHeight; this.draw = draw; this.restyle = restyle;
      this.spacer = box.querySelector(".spacer"); this.layer = box.querySelector(".layer");
      this.count = 0; this.scale = 1; this.pending = false;
      box.addEventListener("scroll", () => this.schedule());
      window.addEventListener("resize", () => this.schedule());
    }
    setCount(count) { this.count = count; this.render(true); }
    schedule() {
      if (this.pending) return;
      this.pending = true;
      requestAnimationFrame(() => { this.pending = false; this.render(); });
    }
    geometry() {
      const view = this.box.clientHeight;
      const height = this.count * this.rowHeight;
      const shown = Math.min(height, CAP);
      this.spacer.style.height = shown + "px";
      this.scale = height > shown && shown > view ? (height - view) / (shown - view) : 1;
      return view;
    }
    // Draw the rows in sight; when they are the ones already drawn, only restyle them (unless forced).
    render(force = false) {
      const view = this.geometry();
      const top = this.box.scrollTop * this.scale;
      const first = Math.max(0, Math.floor(top / this.rowHeight));
      const last = Math.min(this.count, Math.ceil((top + view) / this.rowHeight) + 1);
      this.layer.style.transform = "translateY(" + (this.box.scrollTop - (top - first * this.rowHeight)) + "px)";
      if (!force && first === this.first && last === this.last) { this.restyle(this.layer); return; }
      this.first = first; this.last = last;
      this.layer.replaceChildren(this.draw(first, last));
    }
    // Bring [index, index + span) into sight; centre it when it is far away.
    reveal(index, span = 1, centre = false) {
      const view = this.geometry();
      const top = this.box.scrollTop * this.scale;
      const y = index * this.rowHeight;
      const h = Math.min(span * this.rowHeight, view);
      let want = top;
      if (centre || y < top || y + h > top + view) {
        want = centre || y < top - view || y > top + 2 * view ? y - (view - h) / 2 : (y < top ? y : y + h - view);
      }
      this.box.scrollTop = Math.max(0, want) / this.scale;
      this.render();
    }
  }

  // --- the hex pane ----------------------------------------------------------------------------
  const HEXDIGITS = "0123456789ABCDEF";
  const hex2 = (v) => HEXDIGITS[v >> 4] + HEXDIGITS[v & 15];
  const failStart = failRow >= 0 ? rows[failRow].offset : -1;
  const failEnd = failRow >= 0 ? failStart + rows[failRow].size : -1;

  function range(it) { return it < 0 ? [-1, -1] : [item.start[it], item.end[it]]; }

  function byteClass(o, base, sel, hov) {
    let c = base;
    if (owner[o] < 0) return c + " none";
    if (owner[o] & 1) c += " alt";
    if (o >= hov[0] && o < hov[1]) c += " hov";
    if (o >= failStart && o < failEnd) c += " err";
    if (o >= sel[0] && o < sel[1]) c += " sel";
    return c;
  }

  function drawHex(first, last) {
    const frag = document.createDocumentFragment();
    for (let line = first; line < last; line++) {
      const div = document.createElement("div");
      div.className = "line";
      const start = line * PER_LINE;
      const off = document.createElement("span");
      off.className = "off";
      off.textContent = start.toString(16).toUpperCase().padStart(8, "0");
      div.appendChild(off);
      const asc = document.createElement("span");
      asc.className = "asc";
      for (let k = 0; k < PER_LINE; k++) {
        const o = start + k;
        const b = document.createElement("span");
        const a = document.createElement("span");
        if (o < total) {
          b.dataset.o = o; a.dataset.o = o;
          b.textContent = owner[o] < 0 ? "--" : hex2(bytes[o]);
          a.textContent = bytes[o] >= 0x20 && bytes[o] < 0x7f ? String.fromCharCode(bytes[o]) : ".";
        } else {
          b.textContent = "  "; a.textContent = " ";
        }
        b.className = "b" + (k === 7 ? " mid" : "");
        a.className = "a";
        div.appendChild(b);
        asc.appendChild(a);
      }
      div.appendChild(asc);
      frag.appendChild(div);
    }
    restyleHex(frag);
    return frag;
  }

  function restyleHex(root) {
    const sel = range(selected);
    const hov = hoverRow >= 0 ? [rows[hoverRow].offset, rows[hoverRow].offset + rows[hoverRow].size] : [-1, -1];
    for (const el of root.querySelectorAll("[data-o]")) {
      const base = el.classList.contains("a") ? "a" : (el.classList.contains("mid") ? "b mid" : "b");
      el.className = byteClass(+el.dataset.o, base, sel, hov);
    }
  }

  // --- the field tree --------------------------------------------------------------------------
  function cell(cls, text) {
    const s = document.createElement("span");
    s.className = cls;
    s.textContent = text;
    return s;
  }

  function drawTree(first, last) {
    const frag = document.createDocumentFragment();
    for (let p = first; p < last; p++) {
      const it = visible[p];
      const r = item.row[it];
      const div = document.createElement("div");
      div.dataset.item = it;
      div.dataset.path = item.path[it];
      div.dataset.offset = item.start[it];
      div.dataset.size = item.end[it] - item.start[it];
      div.title = item.path[it];
      div.setAttribute("role", "option");
      div.appendChild(cell("num", String(item.start[it])));
      div.appendChild(cell("num", String(item.end[it] - item.start[it])));
      const name = cell("name", "");
      name.style.paddingLeft = (query ? 0 : item.depth[it] * 2) + "ch";
      name.appendChild(cell("tog", isGroup(it) ? (collapsed[it] ? "\u25b8" : "\u25be") : ""));
      name.appendChild(document.createTextNode(query ? item.path[it] : item.label[it]));
      div.appendChild(name);
      let rule = "";
      if (r >= 0) {
        div.dataset.row = r;
        const value = rows[r].text;
        div.appendChild(cell("value", value.length > LONG ? value.slice(0, LONG) + "\u2026" : value));
        if (r === failRow) { rule = error.code; div.dataset.code = error.code; }
      } else {
        div.appendChild(cell("value", ""));
        if (failStart >= item.start[it] && failStart < item.end[it]) rule = error.code;
      }
      div.appendChild(cell("rule", rule));
      frag.appendChild(div);
    }
    restyleTree(frag);
    return frag;
  }

  function restyleTree(root) {
    for (const div of root.querySelectorAll("[data-item]")) {
      const it = +div.dataset.item;
      const r = item.row[it];
      let c = "row" + (r < 0 ? " group" : "");
      if (r >= 0 && UNDECODED.test(rows[r].field)) c += " undecoded";
      if (r >= 0 && r === failRow) c += " fail";
      if (r < 0 && failStart >= item.start[it] && failStart < item.end[it]) c += " holds-fail";
      if (r >= 0 && r === hoverRow) c += " hov";
      if (it === selected) c += " sel";
      div.className = c;
      div.setAttribute("aria-selected", it === selected ? "true" : "false");
    }
  }

  const hexList = new VirtualList($("hex"), HEX_ROW, drawHex, restyleHex);
  const treeList = new VirtualList($("tree"), TREE_ROW, drawTree, restyleTree);
  const restyle = () => { restyleHex(hexList.layer); restyleTree(treeList.layer); };

  // --- selecting, folding, searching -----------------------------------------------------------
  function revealBytes(start, end) {
    if (start < 0 || end <= start) return;
    const line = Math.floor(start / PER_LINE);
    hexList.reveal(line, Math.floor((end - 1) / PER_LINE) - line + 1);
  }

  function expandTo(it) {
    let changed = false;
    for (let g = item.parent[it]; g >= 0; g = item.parent[g]) if (collapsed[g]) { collapsed[g] = 0; changed = true; }
    if (changed) { computeVisible(); treeList.setCount(visible.length); }
  }

  function select(it, fromHex = false) {
    selected = it;
    if (it >= 0) {
      if (!query) expandTo(it);
      if (position[it] >= 0) treeList.reveal(position[it]);
      if (!fromHex) revealBytes(item.start[it], item.end[it]);
    }
    restyle();
  }

  function setCollapsed(it, value) {
    if (!isGroup(it) || collapsed[it] === value) return;
    collapsed[it] = value;
    if (!query) { computeVisible(); treeList.setCount(visible.length); }
    if (selected >= 0 && position[selected] < 0) selected = it;
    if (selected >= 0 && position[selected] >= 0) treeList.reveal(position[selected]);
    restyle();
  }

  function foldAll(value) {
    for (let it = 0; it < items; it++) if (isGroup(it)) collapsed[it] = value;
    computeVisible();
    treeList.setCount(visible.length);
    if (selected >= 0) {
      if (position[selected] < 0) { let g = selected; while (item.parent[g] >= 0 && position[g] < 0) g = item.parent[g]; selected = g; }
      treeList.reveal(position[selected]);
    }
    restyle();
  }

  function search(text) {
    query = text.trim().toLowerCase();
    computeVisible();
    treeList.box.scrollTop = 0;
    treeList.setCount(visible.length);
    $("matches").textContent = query ? visible.length + " of " + n + " fields match \u201c" + text.trim() + "\u201d" : "";
    if (selected >= 0 && position[selected] >= 0) treeList.reveal(position[selected]);
  }

  function move(delta) {
    if (!visible.length) return;
    const p = selected >= 0 && position[selected] >= 0 ? position[selected] + delta : (delta > 0 ? 0 : visible.length - 1);
    select(visible[Math.max(0, Math.min(visible.length - 1, p))]);
  }

  const page = () => Math.max(1, Math.floor(treeList.box.clientHeight / TREE_ROW) - 1);

  function onTreeKey(e) {
    const it = selected;
    switch (e.key) {
      case "ArrowDown": case "j": move(1); break;
      case "ArrowUp": case "k": move(-1); break;
      case "PageDown": move(page()); break;
      case "PageUp": move(-page()); break;
      case "Home": move(-visible.length); break;
      case "End": move(visible.length); break;
      case "ArrowLeft": case "h":
        if (it >= 0 && isGroup(it) && !collapsed[it] && !query) setCollapsed(it, 1);
        else if (it >= 0 && item.parent[it] >= 0 && !query) select(item.parent[it]);
        break;
      case "ArrowRight": case "l":
        if (it >= 0 && isGroup(it) && collapsed[it]) setCollapsed(it, 0); else move(1);
        break;
      case "Enter": case " ":
        if (it >= 0 && isGroup(it)) setCollapsed(it, collapsed[it] ? 0 : 1);
        break;
      case "e": if (failItem >= 0) select(failItem); break;
      default: return;
    }
    e.preventDefault();
  }

  // --- events ----------------------------------------------------------------------------------
  const tree = $("tree");
  const hex = $("hex");
  tree.addEventListener("keydown", onTreeKey);
  tree.addEventListener("click", (e) => {
    const div = e.target.closest("[data-item]");
    if (!div) return;
    const it = +div.dataset.item;
    if (isGroup(it) && (e.target.classList.contains("tog") || it === selected)) setCollapsed(it, collapsed[it] ? 0 : 1);
    select(it);
    tree.focus({ preventScroll: true });
  });
  tree.addEventListener("mouseover", (e) => {
    const div = e.target.closest("[data-row]");
    const r = div ? +div.dataset.row : -1;
    if (r !== hoverRow) { hoverRow = r; restyle(); }
  });
  tree.addEventListener("mouseleave", () => { hoverRow = -1; restyle(); });
  hex.addEventListener("mouseover", (e) => {
    const el = e.target.closest("[data-o]");
    const r = el ? owner[+el.dataset.o] : -1;
    if (r !== hoverRow) { hoverRow = r; restyle(); }
  });
  hex.addEventListener("mouseleave", () => { hoverRow = -1; restyle(); });
  hex.addEventListener("click", (e) => {
    const el = e.target.closest("[data-o]");
    if (!el || owner[+el.dataset.o] < 0) return;
    select(rowItem[owner[+el.dataset.o]], true);
    tree.focus({ preventScroll: true });
  });
  hex.addEventListener("keydown", onTreeKey);
  let timer = 0;
  $("search").addEventListener("input", (e) => { clearTimeout(timer); timer = setTimeout(() => search(e.target.value), 60); });
  $("search").addEventListener("keydown", (e) => {
    if (e.key === "Escape") { e.target.value = ""; search(""); tree.focus(); }
    if (e.key === "Enter" || e.key === "ArrowDown") { clearTimeout(timer); search(e.target.value); tree.focus(); move(0); e.preventDefault(); }
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "/" && document.activeElement !== $("search")) { $("search").focus(); e.preventDefault(); }
  });
  $("fold").addEventListener("click", () => foldAll(1));
  $("unfold").addEventListener("click", () => foldAll(0));

  // --- the header, the problem panel, and the opening view -------------------------------------
  const head = document.createElement("div");
  head.className = "line";
  head.appendChild(cell("off", "offset".padEnd(8)));
  for (let k = 0; k < PER_LINE; k++) head.appendChild(cell("b" + (k === 7 ? " mid" : ""), hex2(k)));
  head.appendChild(cell("asc", "ASCII".padEnd(PER_LINE)));
  $("hexhead").replaceChildren(head);
  $("stats").textContent = total + " bytes, " + n + " rows";
  const verdict = $("verdict");
  if (error) {
    verdict.textContent = "invalid " + error.code;
    verdict.className = "verdict invalid";
    const problem = $("problem");
    problem.hidden = false;
    problem.querySelector(".code").textContent = error.code;
    const where = error.offset === null ? error.path : error.path + " at byte " + error.offset;
    problem.querySelector(".message").textContent = "[" + error.code + "] " + where + ": " + error.message;
    const rule = rules[error.code];
    problem.querySelector(".rule-text").textContent = rule ? rule.text : "(no text for " + error.code + " in RULES.md)";
    problem.querySelector(".source").textContent = rule && rule.source ? " (" + rule.source + ")" : "";
    const go = problem.querySelector("button");
    if (failItem >= 0) go.addEventListener("click", () => { select(failItem); tree.focus(); }); else go.hidden = true;
  } else {
    verdict.textContent = "valid";
    verdict.className = "verdict valid";
  }
  computeVisible();
  hexList.setCount(Math.ceil(total / PER_LINE));
  treeList.setCount(visible.length);
  if (failItem >= 0) {
    treeList.reveal(position[failItem], 1, true);
    const line = Math.floor(failStart / PER_LINE);
    hexList.reveal(line, Math.floor((failEnd - 1) / PER_LINE) - line + 1, true);
  }
  tree.focus({ preventScroll: true });
  document.documentElement.dataset.ready = String(performance.now());
})();
