// HTML of the FX graph webview. A module's page carries its graph document (`fxls.showGraph`
// with the format `json`) as JSON; the graph view script (dist/webview.js, src/graphview)
// draws it: groups by module path, zoom, search, the selected node's source. An FX pass's
// before/after view is a graph document too (`kind: "pass"`, drawn by passview.ts); the diff
// sections below are what a server without it (no `document` in its answer) gets. A
// module that export or compile made a graph of gets a switch between its graphs
// (graphSwitch.ts), carried as JSON beside the document.
import { GRAPH_LABELS, GraphSwitch } from "./graphSwitch";

/** One graph an FX pass ran on (`fxls.showGraph` with the format `pass`: `runs[i]`). */
export interface PassRun {
  graph: string;
  /** `Net: +1 -1, 1 rewired` or `Net: <problem>` */
  summary: string;
  added: string[];
  removed: string[];
  rewired: string[];
  problem: string | null;
  before: string;
  after: string | null;
  /** unified diff lines of the code before -> after (first character ` `, `+`, `-` or `@`) */
  diff: string[];
}

/** The before/after view of an FX pass. */
export interface PassView {
  /** graph_module | module | transformer | pass_base | ... */
  passKind: string;
  /** models | pass_models | representative | import */
  graphsFrom: string;
  runs: PassRun[];
}

export interface GraphView {
  name: string;
  /** traced | partial | failed | skipped */
  status?: string;
  /** file the module lives in, for the header */
  file?: string;
  /** the graph document (`fxls graph --format json`), drawn by the graph view script */
  graph?: unknown;
  code?: string;
  /** why the graph or code could not be fetched */
  error?: string;
  /** an FX pass's before/after view (then `graph` and `code` are unset) */
  pass?: PassView;
  /** the module's graphs to switch between (FX, export, compile), the shown one first */
  switch?: GraphSwitch;
}

export interface GraphPage {
  nonce: string;
  /** webview.cspSource */
  cspSource: string;
  /** webview URI of dist/webview.js */
  scriptUri: string;
  view: GraphView;
}

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);
}

/** JSON that is safe inside a <script> element: no `</script>`, `<!--` or line separators. */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

/** A nonce for the CSP: 32 base64url-ish characters from a cryptographic source. */
export function makeNonce(randomBytes: (n: number) => Uint8Array): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from(randomBytes(32), (b) => alphabet[b % alphabet.length]).join("");
}

export function contentSecurityPolicy(nonce: string, cspSource: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
}

const STYLE = `
  body { font-family: var(--vscode-font-family); color: var(--vscode-foreground); padding: 0 16px 24px; }
  header { display: flex; align-items: baseline; gap: 10px; flex-wrap: wrap; }
  h1 { font-size: 1.3em; margin: 14px 0 6px; }
  h2 { font-size: 1.05em; margin: 18px 0 6px; }
  .file { color: var(--vscode-descriptionForeground); }
  .status { border-radius: 9px; padding: 1px 8px; font-size: 0.85em; border: 1px solid currentColor; }
  .status-traced { color: var(--vscode-testing-iconPassed, #388a34); }
  .status-partial { color: var(--vscode-editorWarning-foreground, #bf8803); }
  .status-failed { color: var(--vscode-editorError-foreground, #e51400); }
  .status-skipped { color: var(--vscode-descriptionForeground); }
  .error { color: var(--vscode-errorForeground); white-space: pre-wrap; }
  pre { background: var(--vscode-textCodeBlock-background); padding: 10px; overflow: auto;
        font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); }
  pre code { background: none; padding: 0; color: inherit; font-family: inherit; font-size: inherit; }
  .status-ok { color: var(--vscode-testing-iconPassed, #388a34); }
  .status-problem { color: var(--vscode-editorError-foreground, #e51400); }
  .note { color: var(--vscode-descriptionForeground); }
  .chips { display: flex; gap: 6px; flex-wrap: wrap; margin: 4px 0 8px; }
  .chip { border-radius: 4px; padding: 1px 6px; font-family: var(--vscode-editor-font-family); }
  .chip.added, .diff .add { background: rgba(46, 160, 67, 0.22); }
  .chip.removed, .diff .del { background: rgba(248, 81, 73, 0.22); }
  .chip.rewired { background: rgba(187, 128, 9, 0.22); }
  .diff .line { display: block; white-space: pre; }
  .diff .hunk { color: var(--vscode-descriptionForeground); }
`;

const GRAPHS_FROM_NOTE: Record<string, string> = {
  representative: "The file has no model to run it on: it ran on representative graphs.",
  pass_models: "It ran on the project's pass_models.",
  import: "The file runs it itself, at import.",
};

const DIFF_CLASS: Record<string, string> = { "+": "add", "-": "del", "@": "hunk" };

function chips(run: PassRun): string {
  const items = [
    ...run.added.map((name) => `<span class="chip added" title="added">+ ${escapeHtml(name)}</span>`),
    ...run.removed.map((name) => `<span class="chip removed" title="removed">- ${escapeHtml(name)}</span>`),
    ...run.rewired.map((name) => `<span class="chip rewired" title="rewired">~ ${escapeHtml(name)}</span>`),
  ];
  return items.length ? `<div class="chips">${items.join(" ")}</div>` : "";
}

/** A diff as lines marked `add` / `del` / `ctx` / `hunk` (the marker character kept). */
export function diffHtml(lines: readonly string[]): string {
  const body = lines
    .map((line) => `<span class="line ${DIFF_CLASS[line[0]] ?? "ctx"}">${escapeHtml(line)}</span>`)
    .join("");
  return `<pre class="diff"><code>${body}</code></pre>`;
}

/** The body of a pass's before/after view: a section per graph it ran on. */
export function passSections(view: PassView): string {
  const parts = [`<p class="note">FX pass (${escapeHtml(view.passKind)}): each graph's generated code before → after.</p>`];
  const note = GRAPHS_FROM_NOTE[view.graphsFrom];
  if (note) parts.push(`<p class="note" id="graphs-from">${escapeHtml(note)}</p>`);
  if (!view.runs.length) parts.push(`<p class="note">Not run: no graph to run it on.</p>`);
  for (const run of view.runs) {
    const unchanged = !run.problem && !run.added.length && !run.removed.length && !run.rewired.length;
    parts.push(`<section class="run" data-graph="${escapeHtml(run.graph)}">`);
    parts.push(`<h2>${escapeHtml(run.summary)}</h2>`);
    if (run.problem) parts.push(`<p class="error">${escapeHtml(run.problem)}</p>`);
    if (!unchanged) parts.push(chips(run), diffHtml(run.diff));
    parts.push(`</section>`);
  }
  return parts.join("\n");
}

/** Converts a UTF-8 byte column of `line` (as fxls spans count) to a UTF-16 index. */
export function byteColumnToChar(line: string, byteColumn: number): number {
  let bytes = 0;
  let index = 0;
  for (const ch of line) {
    if (bytes >= byteColumn) break;
    const code = ch.codePointAt(0)!;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    index += ch.length;
  }
  return index;
}

function head(page: GraphPage, title: string, style: string): string {
  const { nonce, cspSource } = page;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeHtml(contentSecurityPolicy(nonce, cspSource))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${title}</title>
${style ? `<style nonce="${nonce}">${style}</style>\n` : ""}</head>`;
}

/** A module's graph page: the graph view script draws everything from the document. */
function graphViewHtml(page: GraphPage): string {
  const { nonce, scriptUri, view } = page;
  const kind = GRAPH_LABELS[view.switch?.shown ?? "fx"];
  const graphSwitch = view.switch
    ? `<script nonce="${nonce}" type="application/json" id="fxls-graph-switch">${jsonForScript(view.switch)}</script>\n`
    : "";
  return `${head(page, `${escapeHtml(kind)}: ${escapeHtml(view.name)}`, "")}
<body>
<div id="fxls-graph"></div>
<script nonce="${nonce}" type="application/json" id="fxls-graph-data">${jsonForScript(view.graph)}</script>
${graphSwitch}<script nonce="${nonce}" src="${escapeHtml(scriptUri)}"></script>
</body>
</html>
`;
}

export function graphHtml(page: GraphPage): string {
  const { view } = page;
  if (view.graph !== undefined && !view.error && !view.pass) return graphViewHtml(page);
  const status = view.status ?? "";
  const statusClass = /^[a-z]+$/.test(status) ? `status-${status}` : "";
  const codeSection =
    view.code !== undefined ? `<h2>Generated code</h2>\n<pre id="code"><code>${escapeHtml(view.code)}</code></pre>` : "";
  const error = view.error ? `<p class="error" id="error">${escapeHtml(view.error)}</p>` : "";
  const passSection = view.pass ? `<div id="pass">\n${passSections(view.pass)}\n</div>` : "";
  const kind = view.pass ? "FX pass" : "FX graph";
  return `${head(page, `${kind}: ${escapeHtml(view.name)}`, STYLE)}
<body>
<header>
<h1>${escapeHtml(view.name)}</h1>
${status ? `<span class="status ${statusClass}">${escapeHtml(status)}</span>` : ""}
${view.file ? `<span class="file">${escapeHtml(view.file)}</span>` : ""}
</header>
${error}
${passSection}
${codeSection}
</body>
</html>
`;
}
