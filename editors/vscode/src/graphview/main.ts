// Entry of the graph page, in VS Code's webview and in the standalone page that
// `fxls graph --format html` writes (the same bundle: fxls/graph_page/graph.js).
//
// The page carries the graph document as JSON in `<script type="application/json"
// id="fxls-graph-data">` and an element `#fxls-graph` to draw into. In VS Code a click on a
// node asks the extension to reveal its line (`{type: "reveal", span}`) and the extension
// posts the editor's cursor (`{type: "cursor", file, line}`); standalone, the page shows the
// node's file:line itself. `window.fxlsGraph` is the view, for tests and benchmarks.
import { GraphDocument, Span } from "./model";
import { CSS } from "./style";
import { GraphView, Host, ViewState } from "./view";

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

declare global {
  interface Window {
    fxlsGraph?: GraphView;
    fxlsGraphError?: string;
  }
}

const scriptNonce = (document.currentScript as HTMLScriptElement | null)?.nonce ?? "";

function injectStyle(): void {
  const style = document.createElement("style");
  if (scriptNonce) style.nonce = scriptNonce;
  style.textContent = CSS;
  document.head.appendChild(style);
}

function main(): void {
  const data = document.getElementById("fxls-graph-data");
  const mount = document.getElementById("fxls-graph");
  if (!data || !mount) return;
  injectStyle();
  const vscode = typeof acquireVsCodeApi === "function" ? acquireVsCodeApi() : null;
  let view: GraphView | null = null;
  const host: Host = {
    reveal(span: Span) {
      if (vscode) vscode.postMessage({ type: "reveal", span });
      view?.showLocation(span);
    },
  };
  // VS Code sets the panel's page again after every trace: keep what was open and where
  if (vscode) host.saveState = (state: ViewState) => vscode.setState(state);
  const saved = (vscode?.getState() as ViewState | undefined) ?? null;
  try {
    performance.mark("fxls-script");
    const doc = JSON.parse(data.textContent || "{}") as GraphDocument;
    performance.mark("fxls-parsed");
    view = new GraphView(mount, doc, host, saved);
    performance.mark("fxls-drawn");
    window.fxlsGraph = view;
  } catch (error) {
    window.fxlsGraphError = error instanceof Error ? `${error.message}\n${error.stack}` : String(error);
    const p = document.createElement("p");
    p.className = "error";
    p.id = "error";
    p.textContent = `Could not show the graph: ${window.fxlsGraphError}`;
    mount.appendChild(p);
    return;
  }
  window.addEventListener("message", (event: MessageEvent) => {
    const message = event.data as { type?: string; file?: string; line?: number };
    if (message?.type === "cursor" && typeof message.line === "number") view?.highlightLine(message.file ?? null, message.line);
  });
  vscode?.postMessage({ type: "ready" });
}

main();
