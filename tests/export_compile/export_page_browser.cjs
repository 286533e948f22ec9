// Opens a graph page of an export or compile graph (`fxls graph FILE::Class --target ...
// --format html`) in headless Chromium and prints, as one JSON object, what a person sees:
// the top-level groups with their classes, the problems marked, the file:line a click on a
// node shows. Used by tests/export_compile/test_export_graph_page.py.
//
//   node export_page_browser.cjs PAGE.html --click NODE --screenshot OUT.png
const path = require("node:path");

function arg(name) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
}

async function main() {
  const { chromium } = require("playwright-core");
  const browser = await chromium.launch({
    executablePath: process.env.FXLS_CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu"],
  });
  const result = { errors: [], requests: [] };
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.on("pageerror", (error) => result.errors.push(String(error)));
    page.on("request", (request) => !/^(file|data):/.test(request.url()) && result.requests.push(request.url()));
    await page.goto("file://" + path.resolve(process.argv[2]));
    await page.waitForSelector('#graph[data-rendered="true"]', { timeout: 60_000 });
    result.title = await page.title();
    result.banner = await page.locator("#fx-banner").innerText().catch(() => "");
    result.groups = await page.locator("g.group.collapsed").evaluateAll((groups) =>
      groups.map((g) => ({ id: g.getAttribute("data-id"), title: g.querySelector("title")?.textContent ?? "", problem: g.classList.contains("problem") })));
    const click = arg("--click");
    if (click) {
      await page.evaluate((name) => window.fxlsGraph.focusNode(window.fxlsGraph.model.nodes.get(name), false), click);
      await page.locator(`g.node[data-id="n:${click}"]`).click();
      result.click = {
        location: await page.locator("#fx-source-location").innerText(),
        problem: await page.locator(`g.node[data-id="n:${click}"]`).evaluate((g) => g.classList.contains("problem")),
        panel: await page.locator("#fx-panel").innerText().catch(() => ""),
      };
    }
    const shot = arg("--screenshot");
    if (shot) await page.screenshot({ path: shot });
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
