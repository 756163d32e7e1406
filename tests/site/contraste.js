// Shared by the site checks that measure colours (test_plots.py, test_figuras.py), run inside
// a page: `bg`, the page's background behind the content; `over(colour, opacity)`, a colour
// composited over it; `contrast(colour)`, its WCAG 2 contrast ratio against it.
  const parse = (css) => {
    const m = css.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const [r, g, b, a = 1] = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number);
    return [r, g, b, a];
  };
  let node = document.querySelector('.md-content'), bg = null;
  while (node && !bg) {
    const c = parse(getComputedStyle(node).backgroundColor);
    if (c && c[3] > 0) bg = c;
    node = node.parentElement;
  }
  bg = bg || [255, 255, 255, 1];
  const over = ([r, g, b, a], opacity) => {
    const k = a * opacity;
    return [r * k + bg[0] * (1 - k), g * k + bg[1] * (1 - k), b * k + bg[2] * (1 - k)];
  };
  const lum = (c) => {
    const [r, g, b] = c.map(v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const contrast = (c) => {
    const [x, y] = [lum(c), lum(bg)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
