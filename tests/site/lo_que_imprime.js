(() => {
  const HEADING = "Lo que imprime";
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (el.classList.length ? "." + [...el.classList].join(".") : "");
  const heads = [...document.querySelectorAll("h1,h2,h3,h4,h5,h6")]
    .filter((h) => h.textContent.replace("¶", "").trim() === HEADING);
  if (heads.length !== 1) return { text: null, problems: [`${heads.length} headings '${HEADING}' on the page`] };
  const pre = [...document.querySelectorAll("pre")]
    .find((p) => heads[0].compareDocumentPosition(p) & Node.DOCUMENT_POSITION_FOLLOWING);
  if (!pre) return { text: null, problems: [`no block after the heading '${HEADING}'`] };
  const code = pre.querySelector("code") || pre;
  const problems = [];
  for (let el = code; el && el !== document.documentElement; el = el.parentElement) {
    const style = getComputedStyle(el);
    if (el.hidden) problems.push(`hidden: ${name(el)} has the hidden attribute`);
    if (style.display === "none") problems.push(`hidden: ${name(el)} has display: none`);
    if (style.visibility !== "visible") problems.push(`hidden: ${name(el)} has visibility: ${style.visibility}`);
    if (parseFloat(style.opacity) < 0.5) problems.push(`hidden: ${name(el)} has opacity: ${style.opacity}`);
    if (style.overflowY !== "visible" && el.scrollHeight > el.clientHeight + 1)
      problems.push(`clipped: ${name(el)} shows ${el.clientHeight} px of its ${el.scrollHeight} px (overflow-y: ${style.overflowY}${style.maxHeight !== "none" ? ", max-height: " + style.maxHeight : ""})`);
    if (style.clipPath !== "none") problems.push(`clipped: ${name(el)} has clip-path: ${style.clipPath}`);
  }
  const all = [code, ...code.querySelectorAll("*")];
  for (const el of all) {
    const style = getComputedStyle(el);
    for (const pseudo of ["::before", "::after"]) {
      const content = getComputedStyle(el, pseudo).content;
      if (content && content !== "none" && content !== "normal" && content !== '""')
        problems.push(`added text: ${name(el)}${pseudo} shows ${content}`);
    }
    if (parseFloat(style.fontSize) < 8) problems.push(`hidden: ${name(el)} has font-size: ${style.fontSize}`);
    const color = style.color.match(/[\d.]+/g) || [];
    if (color.length === 4 && parseFloat(color[3]) < 0.5) problems.push(`hidden: ${name(el)} has color: ${style.color}`);
    if (style.textTransform !== "none") problems.push(`changed text: ${name(el)} has text-transform: ${style.textTransform}`);
  }
  // covered: the start of every line of text must be the block's own, seen from the front
  const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  const boxes = [];
  while (walker.nextNode()) {
    const node = walker.currentNode;
    let offset = 0;
    for (const line of node.textContent.split("\n")) {  // one box per line of text
      if (line.length) {
        range.setStart(node, offset);
        range.setEnd(node, offset + line.length);
        const box = range.getBoundingClientRect();
        if (box.width >= 1 && box.height >= 1)
          boxes.push({ y: box.top + scrollY + box.height / 2, x: box.left + Math.min(box.width, 8) / 2,
                       text: line.trim().slice(0, 40) });
      }
      offset += line.length + 1;
    }
  }
  let covered = null;
  // An element that ignores the mouse (pointer-events: none) still covers what is under it:
  // for this measurement every element takes part in hit testing.
  const everyone = document.createElement("style");
  everyone.textContent = "*, *::before, *::after { pointer-events: auto !important; }";
  document.head.append(everyone);
  for (const box of boxes) {
    window.scrollTo(0, box.y - innerHeight / 2);
    const y = box.y - scrollY, x = Math.min(box.x, innerWidth - 1);
    const top = document.elementFromPoint(x, y);
    if (top && top !== code && !code.contains(top)) {
      covered = `covered: ${name(top)} lies over the block at "${box.text}"`;
      break;
    }
  }
  everyone.remove();
  if (covered) problems.push(covered);
  // scrolls sideways: the block, or a box of it, narrower than its longest line
  let overflow = null;
  for (const el of [code, pre]) {
    if (el.scrollWidth > el.clientWidth + 1 && !overflow)
      overflow = `${name(el)} shows ${el.clientWidth} px of its ${el.scrollWidth} px wide lines`;
  }
  // a copy button (Material's or mkdocs-jupyter's) over a line of any block of the page
  const lineBoxes = (root) => {
    const out = [], walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT), r = document.createRange();
    while (walk.nextNode()) {
      const node = walk.currentNode;
      if (node.parentElement.closest(".clipboard-copy-txt, .zeroclipboard-container, .md-clipboard, .md-code__nav")) continue;
      let offset = 0;
      for (const line of node.textContent.split("\n")) {
        const start = line.length - line.trimStart().length;
        if (line.trim().length) {
          r.setStart(node, offset + start);
          r.setEnd(node, offset + line.trimEnd().length);
          for (const b of r.getClientRects()) if (b.width >= 1) out.push({ b, text: line.trim().slice(0, 40) });
        }
        offset += line.length + 1;
      }
    }
    return out;
  };
  // Material 9.8 puts its buttons in a .md-code__nav at the block's top right (before, a
  // .md-clipboard); mkdocs-jupyter's is a clipboard-copy.
  const buttons = [...document.querySelectorAll(".md-clipboard, .md-code__nav, clipboard-copy")]
    .filter((b) => b.getClientRects().length && getComputedStyle(b).visibility === "visible");
  const coveredBy = [];
  for (const button of buttons) {
    const holder = button.closest(".CodeMirror, .highlight, pre") || button.parentElement;
    const bb = button.getBoundingClientRect();
    for (const { b, text } of lineBoxes(holder)) {
      if (b.left < bb.right && bb.left < b.right && b.top < bb.bottom && bb.top < b.bottom) {
        coveredBy.push(`a copy button (${name(button)}) covers "${text}"`);
        break;
      }
    }
  }
  return { text: code.innerText, problems, overflow, copy_buttons: buttons.length, covered_by_buttons: coveredBy };
})()
