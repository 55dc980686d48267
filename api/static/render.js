// Safe rendering of model output: a tiny markdown subset built with DOM nodes (never
// innerHTML), with `#chk_xxxxxxxx` citations as chips and `#web_N` citations as links.

/** Inline syntax: code, bold, italic, chunk citations, web citations, bare URLs. */
const INLINE =
  /(`+)([^`]+?)\1|\*\*(?=\S)(.+?)\*\*|\*(?=[^\s*])([^*]+?)\*|\[?#?\bchk_([0-9a-fA-F]{8})\b\]?|\[?#web_(\d+)\b\]?|(https?:\/\/[^\s<>()"']+[^\s<>()"'.,;:!?])/g;

const ROUTE_LABELS = {
  direct: "Direct reply",
  global_summary: "Pre-computed summary",
  chapter_summary: "Chapter summary",
  deep_reasoning: "Deep reasoning",
  general: "General answer",
  web_search: "Web search",
  hybrid: "Hybrid search",
};

export function routeLabel(route) {
  return ROUTE_LABELS[route] || (route ? String(route).replace(/_/g, " ") : "unknown");
}

/** An http(s) URL as a string, or null for anything else (javascript:, data:, ...). */
export function safeUrl(url) {
  if (typeof url !== "string") return null;
  try {
    const u = new URL(url, window.location.href);
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
  } catch {
    return null;
  }
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
    else if (v === true) node.setAttribute(k, "");
    else node.setAttribute(k, String(v));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Normalised citation ids in order of first appearance (same rule as the server). */
export function citedIds(text) {
  const seen = [];
  for (const m of String(text || "").matchAll(/\[?#?\bchk_([0-9a-fA-F]{8})\b\]?|#web_(\d+)\b/g)) {
    const id = m[1] ? `#chk_${m[1].toLowerCase()}` : `#web_${m[2]}`;
    if (!seen.includes(id)) seen.push(id);
  }
  return seen;
}

/**
 * A citation chip. ctx: {number(id) -> n, citation(id) -> object|undefined}.
 * Chunk citations are buttons (hover/focus: preview; click: the passage panel);
 * web citations are links to their URL.
 */
export function citationChip(id, ctx) {
  const n = ctx.number(id);
  const cite = ctx.citation(id);
  if (id.startsWith("#web_")) {
    const href = safeUrl(cite && cite.url);
    const label = cite && cite.title ? `Web source ${n}: ${cite.title}` : `Web source ${n}`;
    if (href) {
      return el(
        "a",
        {
          class: "cite web",
          href,
          target: "_blank",
          rel: "noopener noreferrer",
          "aria-label": `${label} (opens in a new tab)`,
          dataset: { ref: id },
        },
        String(n)
      );
    }
    return el("span", { class: "cite web pending", "aria-label": label, dataset: { ref: id } }, String(n));
  }
  const where = cite && cite.document ? `, ${cite.document}` : "";
  return el(
    "button",
    {
      type: "button",
      class: "cite",
      "aria-label": `Citation ${n}${where}: show the passage`,
      "aria-haspopup": "dialog",
      dataset: { ref: id },
    },
    String(n)
  );
}

function renderInline(parent, text, ctx) {
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) parent.append(document.createTextNode(text.slice(last, m.index)));
    last = m.index + m[0].length;
    if (m[2] !== undefined) parent.append(el("code", { text: m[2] }));
    else if (m[3] !== undefined) renderInline(parent.appendChild(el("strong")), m[3], ctx);
    else if (m[4] !== undefined) renderInline(parent.appendChild(el("em")), m[4], ctx);
    else if (m[5] !== undefined) parent.append(citationChip(`#chk_${m[5].toLowerCase()}`, ctx));
    else if (m[6] !== undefined) parent.append(citationChip(`#web_${m[6]}`, ctx));
    else if (m[7] !== undefined) {
      const href = safeUrl(m[7]);
      parent.append(
        href ? el("a", { href, target: "_blank", rel: "noopener noreferrer", text: m[7] }) : m[7]
      );
    }
  }
  if (last < text.length) parent.append(document.createTextNode(text.slice(last)));
}

function appendLines(parent, lines, ctx) {
  lines.forEach((line, i) => {
    if (i) parent.append(el("br"));
    renderInline(parent, line, ctx);
  });
}

/**
 * Render `text` (markdown subset: paragraphs, headings, lists, quotes, code) into a
 * DocumentFragment. Model output only ever reaches the page as text nodes.
 */
export function renderMarkdown(text, ctx) {
  const frag = document.createDocumentFragment();
  const lines = String(text || "").replace(/\r\n?/g, "\n").split("\n");
  let para = [];
  let list = null;
  let quote = null;
  const flushPara = () => {
    if (para.length) appendLines(frag.appendChild(el("p")), para, ctx);
    para = [];
  };
  const flushList = () => {
    list = null;
  };
  const flushQuote = () => {
    if (quote) appendLines(frag.appendChild(el("blockquote")), quote, ctx);
    quote = null;
  };
  const flushAll = () => {
    flushPara();
    flushList();
    flushQuote();
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*```/);
    if (fence) {
      flushAll();
      const body = [];
      i++;
      while (i < lines.length && !/^\s*```/.test(lines[i])) body.push(lines[i++]);
      frag.append(el("pre", {}, el("code", { text: body.join("\n") })));
      continue;
    }
    if (!line.trim()) {
      flushAll();
      continue;
    }
    const heading = line.match(/^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$/);
    if (heading) {
      flushAll();
      const level = Math.min(6, heading[1].length + 2);
      renderInline(frag.appendChild(el(`h${level}`)), heading[2], ctx);
      continue;
    }
    const bullet = line.match(/^\s*[-*\u2022]\s+(.*)$/);
    const numbered = line.match(/^\s*(\d{1,3})[.)]\s+(.*)$/);
    if (bullet || numbered) {
      flushPara();
      flushQuote();
      const tag = bullet ? "ul" : "ol";
      if (!list || list.tagName.toLowerCase() !== tag) {
        list = frag.appendChild(el(tag));
        if (numbered && numbered[1] !== "1") list.setAttribute("start", numbered[1]);
      }
      renderInline(list.appendChild(el("li")), bullet ? bullet[1] : numbered[2], ctx);
      continue;
    }
    const q = line.match(/^\s*>\s?(.*)$/);
    if (q) {
      flushPara();
      flushList();
      (quote ||= []).push(q[1]);
      continue;
    }
    if (list && /^\s{2,}\S/.test(line) && list.lastElementChild) {
      // a continuation line of the last list item
      const li = list.lastElementChild;
      li.append(el("br"));
      renderInline(li, line.trim(), ctx);
      continue;
    }
    flushList();
    flushQuote();
    para.push(line);
  }
  flushAll();
  return frag;
}

/** The first ~n characters of a passage, cut at a word boundary. */
export function previewText(text, n = 200) {
  const clean = String(text || "").replace(/\s+/g, " ").trim();
  if (clean.length <= n) return clean;
  const cut = clean.slice(0, n);
  const space = cut.lastIndexOf(" ");
  return `${(space > n * 0.6 ? cut.slice(0, space) : cut).trimEnd()}\u2026`;
}

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Where the exact paragraph sits in its parent text: [start, end] or null. Tolerates
 * whitespace differences (line wrapping) between the two.
 */
export function locateParagraph(parent, paragraph) {
  if (!parent || !paragraph) return null;
  const exact = parent.indexOf(paragraph);
  if (exact !== -1) return [exact, exact + paragraph.length];
  const words = paragraph.trim().split(/\s+/).filter(Boolean);
  if (!words.length || words.length > 2000) return null;
  const re = new RegExp(words.map(escapeRegExp).join("\\s+"));
  const m = re.exec(parent);
  return m ? [m.index, m.index + m[0].length] : null;
}
