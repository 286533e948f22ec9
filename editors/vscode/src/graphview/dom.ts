// The few DOM helpers every part of the graph view uses.

const ESC: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** `text` safe inside HTML or SVG markup (text and attribute values). */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESC[c]);
}

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) element.setAttribute(key, value);
  if (text !== undefined) element.textContent = text;
  return element;
}

/** A coordinate for the SVG markup: one decimal is finer than a pixel at any useful zoom. */
export function fmt(n: number): string {
  return Math.round(n * 10) / 10 + "";
}
