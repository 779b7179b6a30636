// A small, safe Markdown renderer for the model's answers: it builds DOM nodes with
// createElement and textContent only (never innerHTML), so the model's text is always
// text. Covers what answers use: headings, paragraphs, fenced and inline code, bold,
// italic, links (http, https and mailto only), lists, block quotes, rules, tables as text.
// Standalone: no dependency, usable from the page and from a report file.
(function (root) {
  "use strict";

  // Control characters (terminal escapes among them) shown as visible symbols, not obeyed.
  function inert(text) {
    return String(text).replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, function (c) {
      return c === "\u007f" ? "\u2421" : String.fromCharCode(0x2400 + c.charCodeAt(0));
    });
  }

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = inert(text);
    if (cls) node.className = cls;
    return node;
  }

  var SAFE_URL = /^(https?:\/\/|mailto:)/i;

  // Inline: `code`, **bold**, *italic* / _italic_, [text](url). Anything else is text.
  function inline(parent, text) {
    var pattern = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|\b_([^_]+)_\b|\[([^\]]+)\]\(([^)\s]+)\)/g;
    var last = 0, m;
    while ((m = pattern.exec(text)) !== null) {
      if (m.index > last) parent.appendChild(document.createTextNode(inert(text.slice(last, m.index))));
      if (m[1]) parent.appendChild(el("code", m[2]));
      else if (m[3] || m[4]) inline(parent.appendChild(el("strong")), m[3] || m[4]);
      else if (m[5] || m[6]) inline(parent.appendChild(el("em")), m[5] || m[6]);
      else if (m[7]) {
        if (SAFE_URL.test(m[8])) {
          var a = el("a", m[7]);
          a.href = m[8];
          a.rel = "noopener noreferrer nofollow";
          a.target = "_blank";
          parent.appendChild(a);
        } else {
          parent.appendChild(document.createTextNode(inert(m[0])));
        }
      }
      last = pattern.lastIndex;
    }
    if (last < text.length) parent.appendChild(document.createTextNode(inert(text.slice(last))));
    return parent;
  }

  function render(text, target) {
    var out = target || el("div");
    out.classList.add("md");
    var lines = String(text || "").replace(/\r\n?/g, "\n").split("\n");
    var i = 0, para = [];
    function flush() {
      if (para.length) inline(out.appendChild(el("p")), para.join("\n"));
      para = [];
    }
    while (i < lines.length) {
      var line = lines[i], m;
      if ((m = /^\s*(```+|~~~+)\s*([\w+-]*)/.exec(line))) {
        flush();
        var fence = m[1], body = [];
        i++;
        while (i < lines.length && lines[i].trim().indexOf(fence) !== 0) body.push(lines[i++]);
        i++;
        var pre = out.appendChild(el("pre"));
        var code = pre.appendChild(el("code", body.join("\n")));
        if (m[2]) code.setAttribute("data-lang", m[2]);
        continue;
      }
      if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
        flush();
        inline(out.appendChild(el("h" + Math.min(6, m[1].length + 2))), m[2]);
        i++;
        continue;
      }
      if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { flush(); out.appendChild(el("hr")); i++; continue; }
      if (/^\s*>/.test(line)) {
        flush();
        var quoted = [];
        while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
        render(quoted.join("\n"), out.appendChild(el("blockquote")));
        continue;
      }
      if ((m = /^\s*([-*+]|\d+[.)])\s+/.exec(line))) {
        flush();
        var ordered = /\d/.test(m[1]);
        var list = out.appendChild(el(ordered ? "ol" : "ul"));
        while (i < lines.length && (m = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(lines[i]))) {
          var item = [m[2]];
          i++;
          while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !/^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) item.push(lines[i++].trim());
          var li = list.appendChild(el("li"));
          var box = /^\[([ xX])\]\s+/.exec(item[0]);
          if (box) {
            li.appendChild(el("span", box[1] === " " ? "\u2610 " : "\u2611 ", "box"));
            item[0] = item[0].slice(box[0].length);
          }
          inline(li, item.join("\n"));
        }
        continue;
      }
      if (!line.trim()) { flush(); i++; continue; }
      para.push(line);
      i++;
    }
    flush();
    return out;
  }

  root.BaseagentMarkdown = { render: render, inline: inline, inert: inert };
})(typeof window !== "undefined" ? window : this);
