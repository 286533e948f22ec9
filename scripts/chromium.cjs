// Headless Chromium for the graph page's tests and benchmarks: playwright-core from
// editors/vscode/node_modules driving the system's chromium (no browser download).
const fs = require("node:fs");

function chromiumPath() {
  for (const candidate of [process.env.FXLS_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"]) {
    if (candidate && fs.existsSync(candidate)) return candidate;
  }
  throw new Error("no chromium found (apt-get install chromium, or set FXLS_CHROMIUM)");
}

/** A browser and a page of the given size; the page's errors and any request that leaves
 * the file system are collected into `result.errors` / `result.requests`. */
async function openPage(width, height, result) {
  const { chromium } = require("playwright-core");
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox", "--disable-gpu"] });
  const page = await browser.newPage({ viewport: { width, height } });
  page.on("pageerror", (error) => result.errors.push(String(error)));
  page.on("console", (message) => message.type() === "error" && result.errors.push(message.text()));
  page.on("request", (request) => !request.url().startsWith("file:") && !request.url().startsWith("data:") && result.requests.push(request.url()));
  return { browser, page };
}

module.exports = { chromiumPath, openPage };
