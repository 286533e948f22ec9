// Adjusts fxls's DOT before Graphviz (viz.js) lays it out in the webview.
//
// Graphviz sizes boxes from its own font metrics. It has none for the generic family
// "monospace" and falls back to proportional (Times) widths, so labels drawn in a real
// monospace font overflow their boxes. "Courier" has 0.6 em metrics, which is the width of
// the usual monospace fonts; the webview's CSS then draws the text in the editor's
// monospace font.
export function prepareDot(dot: string): string {
  return dot.replace(/fontname\s*=\s*"?(monospace|mono)"?/gi, 'fontname="Courier"');
}
