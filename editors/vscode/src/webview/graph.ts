// Runs inside the graph webview: renders the DOT text with Graphviz (viz.js, WebAssembly).
import { instance } from "@viz-js/viz";
import { prepareDot } from "../dot";

interface Data {
  dot: string | null;
}

function showError(target: HTMLElement, message: string): void {
  target.classList.add("empty");
  target.textContent = "";
  const p = document.createElement("p");
  p.className = "error";
  p.textContent = message;
  target.appendChild(p);
}

async function main(): Promise<void> {
  const target = document.getElementById("graph");
  const dataElement = document.getElementById("fxls-data");
  if (!target || !dataElement) return;
  const data = JSON.parse(dataElement.textContent || "{}") as Data;
  if (!data.dot) return;
  try {
    const viz = await instance();
    const svg = viz.renderSVGElement(prepareDot(data.dot));
    target.textContent = "";
    target.appendChild(svg);
    target.dataset.rendered = "true";
  } catch (error) {
    showError(target, `Could not render the graph: ${error instanceof Error ? error.message : String(error)}`);
  }
}

void main();
