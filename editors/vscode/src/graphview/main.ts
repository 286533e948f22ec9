// Entry of the graph page, in VS Code's webview and in the standalone page that
// `fxls graph --format html` writes (the same bundle: fxls/graph_page/graph.js).
//
// The page carries the graph document as JSON in `<script type="application/json"
// id="fxls-graph-data">` and an element `#fxls-graph` to draw into. In VS Code a click on a
// node asks the extension to reveal its line (`{type: "reveal", span}`) and the extension
// posts the editor's cursor (`{type: "cursor", file, line}`); standalone, the page shows the
// node's file:line itself. `window.fxlsGraph` is the view, for tests and benchmarks.
//
// A document of `kind: "pass"` (an FX pass's before/after, fxls/output/pass_page.py) is
// drawn by a PassView: the graphs before and after the pass in two panes
// (`window.fxlsPass`).
//
// In VS Code, a module that torch.export or torch.compile made a graph of has a switch
// (`<script type="application/json" id="fxls-graph-switch">`: the graphs and the shown one);
// a click posts `{type: "chooseGraph", graph}` and the extension sets the page of that graph.
// Each graph keeps its own open groups, zoom and selection.
import { GraphDocument, Span } from "./model";
import { PassState, PassView, isPassDocument } from "./passview";
import { CSS } from "./style";
import { GraphSwitch, GraphView, Host, ViewState } from "./view";
import { VIEW_CSS } from "./viewstyle";

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

declare global {
  interface Window {
    fxlsGraph?: GraphView;
    fxlsPass?: PassView;
    fxlsGraphError?: string;
  }
}

const scriptNonce = (document.currentScript as HTMLScriptElement | null)?.nonce ?? "";

function injectStyle(): void {
  const style = document.createElement("style");
  if (scriptNonce) style.nonce = scriptNonce;
  style.textContent = CSS + VIEW_CSS;
  document.head.appendChild(style);
}

/** The page's switch between the module's graphs, if it has one. */
function graphSwitch(vscode: VsCodeApi): GraphSwitch | null {
  const data = document.getElementById("fxls-graph-switch");
  if (!data) return null;
  const { shown, choices } = JSON.parse(data.textContent || "{}") as Partial<GraphSwitch>;
  if (typeof shown !== "string" || !Array.isArray(choices)) return null;
  return { shown, choices, choose: (graph: string) => vscode.postMessage({ type: "chooseGraph", graph }) };
}

function main(): void {
  const data = document.getElementById("fxls-graph-data");
  const mount = document.getElementById("fxls-graph");
  if (!data || !mount) return;
  injectStyle();
  const vscode = typeof acquireVsCodeApi === "function" ? acquireVsCodeApi() : null;
  let view: GraphView | null = null;
  let pass: PassView | null = null;
  const host: Host = {
    reveal(span: Span) {
      if (vscode) vscode.postMessage({ type: "reveal", span });
      view?.showLocation(span);
    },
  };
  const graphs = vscode ? graphSwitch(vscode) : null;
  if (graphs) host.graphs = graphs;
  // VS Code sets the panel's page again after every trace and switch: keep what was open
  // and where, per graph
  const shown = graphs?.shown ?? "fx";
  const states = (vscode?.getState() as Record<string, ViewState> | undefined) ?? {};
  if (vscode) host.saveState = (state: ViewState) => vscode.setState({ ...(vscode.getState() as object | undefined), [shown]: state });
  const saved = states[shown] ?? null;
  try {
    performance.mark("fxls-script");
    const doc = JSON.parse(data.textContent || "{}") as unknown;
    performance.mark("fxls-parsed");
    if (isPassDocument(doc)) {
      const passHost = {
        reveal(span: Span) {
          if (vscode) vscode.postMessage({ type: "reveal", span });
        },
        saveState: vscode ? (state: PassState) => vscode.setState(state) : undefined,
      };
      pass = new PassView(mount, doc, passHost, (vscode?.getState() as PassState | undefined) ?? null);
      window.fxlsPass = pass;
    } else {
      view = new GraphView(mount, doc as GraphDocument, host, saved);
      window.fxlsGraph = view;
    }
    performance.mark("fxls-drawn");
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
    if (message?.type === "cursor" && typeof message.line === "number") {
      view?.highlightLine(message.file ?? null, message.line);
      pass?.highlightLine(message.file ?? null, message.line);
    }
  });
  vscode?.postMessage({ type: "ready" });
}

main();
