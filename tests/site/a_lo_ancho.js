// What of some elements' text a reader cannot see for its width: run as an expression that
// returns a function of a CSS selector. For every element the selector finds (and shown):
// a box of it, in it or around it (up to the article) that scrolls sideways with more than it
// shows, and every line of its text that ends beyond the element's box or the viewport's width
// (a line a reader would have to scroll to, or cannot reach). [] when all of it is seen.
((selector) => {
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (el.classList.length ? "." + [...el.classList].join(".") : "");
  const problems = [];
  const elements = [...document.querySelectorAll(selector)].filter((el) => el.getClientRects().length);
  for (const el of elements) {
    const boxes = [...el.querySelectorAll("*"), el];
    for (let up = el.parentElement; up && !up.matches("article, body"); up = up.parentElement) boxes.push(up);
    for (const box of boxes) {
      if (box.scrollWidth > box.clientWidth + 1 && getComputedStyle(box).overflowX !== "visible") {
        problems.push(`${name(el)}: ${name(box)} shows ${box.clientWidth} px of its ${box.scrollWidth} px (it scrolls sideways)`);
        break;
      }
    }
    const own = el.getBoundingClientRect();
    const left = Math.max(0, own.left) - 1, right = Math.min(innerWidth, own.right) + 1;
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), range = document.createRange();
    let beyond = null;
    while (walker.nextNode() && !beyond) {
      const node = walker.currentNode;
      if (!node.textContent.trim() || node.parentElement.closest(".md-code__nav, .zeroclipboard-container")) continue;
      range.selectNodeContents(node);
      for (const b of range.getClientRects()) {
        if (b.width >= 1 && (b.right > right || b.left < left)) {
          beyond = `${name(el)}: text from ${Math.round(b.left)} to ${Math.round(b.right)} px, seen from ${Math.round(left + 1)} to ${Math.round(right - 1)} px ("${node.textContent.trim().slice(0, 40)}")`;
          break;
        }
      }
    }
    if (beyond) problems.push(beyond);
  }
  return { count: elements.length, problems };
})
