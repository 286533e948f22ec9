// The graph view's style sheet, injected by the script (with the page's CSP nonce in VS Code).
// The graph itself is drawn on a light canvas in every theme; the toolbar and side panel
// take the editor's colours where VS Code gives them.
export const CSS = `
html, body { height: 100%; margin: 0; overflow: hidden; }
body { font-family: var(--vscode-font-family, system-ui, sans-serif); font-size: 13px;
  color: var(--vscode-foreground, #222); background: var(--vscode-editor-background, #fff); }
.fx-app { display: flex; flex-direction: column; height: 100vh; }
.fx-toolbar { display: flex; align-items: center; gap: 6px; padding: 6px 10px; flex-wrap: wrap;
  border-bottom: 1px solid var(--vscode-panel-border, #ddd); }
.fx-toolbar h1 { font-size: 15px; margin: 0 6px 0 0; }
.fx-toolbar .file { color: var(--vscode-descriptionForeground, #777); }
.fx-toolbar input, .fx-search { width: 220px; padding: 3px 6px; font: inherit;
  color: var(--vscode-input-foreground, #222); background: var(--vscode-input-background, #fff);
  border: 1px solid var(--vscode-input-border, #bbb); border-radius: 3px; }
.fx-toolbar button { font: inherit; padding: 2px 8px; cursor: pointer; border-radius: 3px;
  color: var(--vscode-button-secondaryForeground, #222); background: var(--vscode-button-secondaryBackground, #eee);
  border: 1px solid var(--vscode-input-border, #ccc); }
.fx-toolbar button:hover { filter: brightness(0.95); }
.fx-graph-switch { display: inline-flex; }
.fx-graph-switch button { border-radius: 0; margin-left: -1px; }
.fx-graph-switch button:first-child { border-radius: 3px 0 0 3px; margin-left: 0; }
.fx-graph-switch button:last-child { border-radius: 0 3px 3px 0; }
.fx-graph-switch button.on { background: var(--vscode-button-background, #0b62c4); color: var(--vscode-button-foreground, #fff); cursor: default; }
.fx-spacer { flex: 1; }
.fx-muted, .note { color: var(--vscode-descriptionForeground, #777); }
.status { border-radius: 9px; padding: 0 8px; font-size: 0.85em; border: 1px solid currentColor; }
.status-traced { color: var(--vscode-testing-iconPassed, #388a34); }
.status-partial { color: var(--vscode-editorWarning-foreground, #bf8803); }
.status-failed { color: var(--vscode-editorError-foreground, #e51400); }
.status-drafted { color: var(--vscode-editorWarning-foreground, #bf8803); }
#fx-source-location { font-family: var(--vscode-editor-font-family, monospace); }
.fx-banner { padding: 4px 10px; background: rgba(229, 20, 0, 0.09); border-bottom: 1px solid rgba(229, 20, 0, 0.3); }
.fx-banner a { cursor: pointer; text-decoration: underline; }
.fx-main { flex: 1; display: flex; min-height: 0; }
#graph, .fx-graph { flex: 1; position: relative; overflow: hidden; background: #fbfbfc; cursor: grab; }
#graph.panning, .fx-graph.panning { cursor: grabbing; }
#graph svg, .fx-graph svg { width: 100%; height: 100%; display: block; user-select: none; }
#graph text, .fx-graph text { font-family: var(--vscode-editor-font-family, ui-monospace, Menlo, Consolas, monospace); fill: #1f2328; }
.node rect { stroke: #8c959f; stroke-width: 1; fill: #ffffff; }
.node .t1 { font-size: 13px; font-weight: 600; }
.node .t2 { font-size: 11px; fill: #4b5563; }
.node.op-placeholder rect { fill: #dbeafe; stroke: #60a5fa; }
.node.op-output rect { fill: #dcfce7; stroke: #4ade80; }
.node.op-get_attr rect { fill: #fff3e0; stroke: #f0a030; }
.node.op-call_module rect { fill: #ede7f6; stroke: #9575cd; }
.node.op-call_method rect { fill: #e0f2f1; stroke: #4db6ac; }
.node, .group, .frame-title { cursor: pointer; }
.group rect { fill: #eef2f7; stroke: #64748b; stroke-width: 1.2; }
.group .t1 { font-size: 13px; font-weight: 600; }
.group .t2 { font-size: 11px; fill: #4b5563; }
/* one light, opaque fill: frames nested ten deep look as light as one (sizes: labels.ts) */
.frame-fill { fill: #f3f6f9; stroke: none; }
.frame rect { fill: transparent; stroke: #b8c4d2; stroke-width: 1; }
.frame .frame-title { font-size: 13px; font-weight: 600; fill: #334155;
  paint-order: stroke; stroke: #f3f6f9; stroke-width: 4px; stroke-linejoin: round; }
.edge { fill: none; stroke: #5f6f84; stroke-width: 1.3; pointer-events: none; }
.edge-label { font-size: 11px; fill: #334155 !important; pointer-events: none;
  paint-order: stroke; stroke: #fbfbfc; stroke-width: 3px; stroke-linejoin: round; }
marker.arrow path { fill: #5f6f84; }
.problem > rect { stroke: #e51400 !important; stroke-width: 2.2 !important; }
.badge { fill: #e51400; }
.badge-text { fill: #fff !important; font-size: 10px; font-weight: 700; }
.group .same-badge rect { fill: #475569; stroke: #f8fafc; stroke-width: 1; }
.group .same-badge text { fill: #fff !important; font-size: 11px; font-weight: 700; }
.match > rect { stroke: #d97706 !important; stroke-width: 2.5 !important; fill: #fef3c7 !important; }
.cursor > rect { stroke: #0ea5e9 !important; stroke-width: 3 !important; }
.selected > rect { stroke: #1d4ed8 !important; stroke-width: 3 !important; }
svg.far .t2, svg.far .edge-label { display: none; }
svg.very-far text { display: none; }
.fx-minimap { position: absolute; right: 10px; bottom: 10px; border: 1px solid #cbd5e1; background: rgba(255,255,255,0.92); cursor: crosshair; }
.fx-minimap.hidden { display: none; }
.fx-panel { width: 320px; overflow: auto; padding: 8px 12px; border-left: 1px solid var(--vscode-panel-border, #ddd); }
.fx-panel h2 { font-size: 14px; margin: 6px 0; word-break: break-all; }
.fx-panel h3 { font-size: 12px; margin: 12px 0 4px; text-transform: uppercase; color: var(--vscode-descriptionForeground, #777); }
.fx-panel table { border-collapse: collapse; width: 100%; }
.fx-panel td { vertical-align: top; padding: 2px 4px; font-family: var(--vscode-editor-font-family, monospace); font-size: 12px; word-break: break-all; }
.fx-panel td:first-child { color: var(--vscode-descriptionForeground, #777); white-space: nowrap; font-family: inherit; }
.fx-panel a { color: var(--vscode-textLink-foreground, #0b62c4); cursor: pointer; }
.fx-panel ul { padding-left: 16px; margin: 4px 0; }
.fx-panel li { margin: 2px 0; }
.fx-panel .problem-text { color: var(--vscode-errorForeground, #c41a16); }
@media (max-width: 1100px) {
  .fx-pass .fx-panel { width: 190px; }
  .fx-pane-app .fx-toolbar .fx-count, .fx-pane-app .fx-prev, .fx-pane-app .fx-next { display: none; }
}
@media (max-width: 900px) {
  .fx-panel { width: 210px; padding: 6px 8px; }
  .fx-minimap { width: 120px; height: 84px; }
  .fx-toolbar input, .fx-search { width: 150px; }
}
pre { background: var(--vscode-textCodeBlock-background, #f6f8fa); padding: 8px; overflow: auto;
  font-family: var(--vscode-editor-font-family, monospace); font-size: 12px; }
pre code { font-family: inherit; }
/* an FX pass's before/after view (passview.ts): what the pass did to each node */
.node.mark-added rect { fill: #dafbe1; stroke: #1a7f37; stroke-width: 2; }
.node.mark-removed rect { fill: #ffebe9; stroke: #cf222e; stroke-width: 2; stroke-dasharray: 5 3; }
.node.mark-removed text { text-decoration: line-through; }
.node.mark-rewired rect { fill: #fff8c5; stroke: #bf8700; stroke-width: 2; }
.node.mark-swapped rect { fill: #ddf4ff; stroke: #0969da; stroke-width: 2; }
.group.changed .change-bar { fill: #bf8700; stroke: none; }
.counterpart > rect { stroke: #7c3aed !important; stroke-width: 3 !important; stroke-dasharray: 6 3; }
.fx-pane-app { height: 100%; }
.fx-pane-app .fx-toolbar { padding: 4px 8px; gap: 4px; flex-wrap: nowrap; overflow: hidden; }
.fx-pane-app .fx-toolbar input { width: 90px; min-width: 50px; }
.fx-pane-app .fx-toolbar .fx-count { white-space: nowrap; }
.fx-pane-title { font-size: 13px; margin: 0 4px 0 0; white-space: nowrap; }
.fx-split { flex: 1; display: flex; min-height: 0; min-width: 0; }
.fx-pane { flex: 1; min-width: 0; display: flex; flex-direction: column; border-right: 1px solid var(--vscode-panel-border, #ddd); }
.fx-pane.hidden { display: none; }
.fx-pass-bar { display: flex; align-items: center; gap: 8px; flex-wrap: wrap; padding: 6px 10px; border-bottom: 1px solid var(--vscode-panel-border, #ddd); }
.fx-pass-bar h1 { font-size: 15px; margin: 0; }
.fx-pass-bar button.on { background: var(--vscode-button-background, #0b62c4); color: var(--vscode-button-foreground, #fff); }
.fx-pass-bar button, .fx-pass-bar select { font: inherit; padding: 2px 8px; border-radius: 3px; border: 1px solid var(--vscode-input-border, #ccc);
  color: var(--vscode-button-secondaryForeground, #222); background: var(--vscode-button-secondaryBackground, #eee); cursor: pointer; }
.fx-legend { display: flex; gap: 10px; align-items: center; font-size: 12px; }
.fx-legend span { display: inline-flex; align-items: center; gap: 4px; }
.fx-legend i { display: inline-block; width: 14px; height: 10px; border-radius: 2px; border: 2px solid; }
.fx-legend .added i { background: #dafbe1; border-color: #1a7f37; }
.fx-legend .removed i { background: #ffebe9; border-color: #cf222e; border-style: dashed; }
.fx-legend .rewired i { background: #fff8c5; border-color: #bf8700; }
.fx-legend .swapped i { background: #ddf4ff; border-color: #0969da; }
.fx-legend .problem i { background: #fff; border-color: #e51400; }
.fx-mark { border-radius: 3px; padding: 0 4px; }
.fx-mark-added, .chip.added, .diff .add { background: rgba(46, 160, 67, 0.22); }
.fx-mark-removed, .chip.removed, .diff .del { background: rgba(248, 81, 73, 0.22); }
.fx-mark-swapped, .chip.swapped { background: rgba(9, 105, 218, 0.18); }
.fx-mark-rewired, .chip.rewired { background: rgba(187, 128, 9, 0.22); }
.chips { display: flex; gap: 4px; flex-wrap: wrap; margin: 4px 0; }
.chip { border-radius: 4px; padding: 0 5px; font-family: var(--vscode-editor-font-family, monospace); font-size: 12px; cursor: pointer; }
.diff { margin: 4px 0; }
.diff .line { display: block; white-space: pre; }
.diff .hunk { color: var(--vscode-descriptionForeground, #777); }
.error { color: var(--vscode-errorForeground, #c41a16); white-space: pre-wrap; }
`;
