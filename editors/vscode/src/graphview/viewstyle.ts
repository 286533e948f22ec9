// The style of the view's orientation parts (overview column, search results, source
// lines, the selected node's edges), injected after style.ts's sheet.
export const VIEW_CSS = `
#graph.fx-graph, .fx-graph { display: flex; }
.fx-draw { flex: 1; min-width: 0; position: relative; overflow: hidden; }
.fx-overview { width: 160px; flex: none; display: flex; flex-direction: column; border-left: 1px solid #e2e8f0; background: #f8fafc; cursor: default; }
.fx-overview.folded { width: 22px; }
.fx-overview.folded .fx-overview-map { display: none; }
.fx-overview-toggle { align-self: flex-start; font: inherit; font-size: 11px; line-height: 1; padding: 3px 5px; margin: 2px; cursor: pointer;
  border: 1px solid #cbd5e1; border-radius: 3px; background: #fff; color: #334155; }
.fx-overview-map { display: block; flex: 1 1 0; min-height: 0; width: 100%; cursor: crosshair; }
.fx-pane-app .fx-overview:not(.folded) { width: 110px; }
@media (max-width: 900px) { .fx-overview:not(.folded) { width: 110px; } }
.fx-search-count.fx-error { color: var(--vscode-errorForeground, #c41a16); }
.fx-search.fx-regex { font-family: var(--vscode-editor-font-family, monospace); }
.fx-matches details { margin: 2px 0; }
.fx-matches summary { cursor: pointer; font-family: var(--vscode-editor-font-family, monospace); font-size: 12px; overflow-wrap: anywhere; }
.fx-matches ul { margin: 2px 0 6px; }
.fx-matches li { font-size: 12px; overflow-wrap: anywhere; }
.fx-matches li.current { font-weight: 600; background: rgba(29, 78, 216, 0.08); }
.fx-panel, .fx-panel h2, .fx-panel li, .fx-panel td, .fx-panel a, .fx-banner { overflow-wrap: anywhere; }
.fx-source-lines { padding: 4px 0; margin: 6px 0; }
/* a long line wraps under its own text, not under the line number */
.fx-source-lines .line { display: grid; grid-template-columns: auto 1fr; padding: 0 8px; }
.fx-source-lines .code { white-space: pre-wrap; overflow-wrap: anywhere; }
.fx-source-lines .line.here { background: rgba(250, 204, 21, 0.28); font-weight: 600; }
.fx-source-lines .number { color: var(--vscode-editorLineNumber-foreground, #8c959f); margin-right: 6px; user-select: none; }
svg.fx-focus .edge { opacity: 0.22; }
svg.fx-focus .edge-label { opacity: 0.3; }
svg.fx-focus .edge.edge-in, svg.fx-focus .edge.edge-out { opacity: 1; stroke-width: 2.4; }
.edge.edge-in { stroke: #2563eb; }
.edge.edge-out { stroke: #ea580c; }
marker.arrow-in path { fill: #2563eb; }
marker.arrow-out path { fill: #ea580c; }
.fx-toolbar button.on { background: var(--vscode-button-background, #0b62c4); color: var(--vscode-button-foreground, #fff); }
`;
