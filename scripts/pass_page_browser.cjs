// Drives an FX pass's before/after page (`fxls graph FILE::pass --format html`) in headless
// Chromium (playwright-core from editors/vscode/node_modules, the system's chromium) as a
// person would, and prints what it saw as one JSON object on stdout. Used by
// tests/passes/test_pass_page.py.
//
//   node scripts/pass_page_browser.cjs PAGE.html [--click-after NODE] [--click-before NODE]
//        [--screenshot OUT.png] [--width W --height H]
//
// Steps: load; read both panes (their nodes, marks, problems); click a node in the graph
// after the pass (the page shows the pass line, the other pane marks the same node);
// click a node in the graph before it; switch to "After" only and back; screenshot.
const path = require("node:path");
const fs = require("node:fs");

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
}

function chromiumPath() {
  for (const candidate of [process.env.FXLS_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"]) {
    if (candidate && fs.existsSync(candidate)) return candidate;
  }
  throw new Error("no chromium found (apt-get install chromium, or set FXLS_CHROMIUM)");
}

/** Every drawn node of a pane: name, classes, whether it carries a problem badge. */
function paneNodes(page, pane) {
  return page.$$eval(`#fx-pane-${pane} g.node`, (nodes) =>
    nodes.map((g) => ({
      name: g.getAttribute("data-id").slice(2),
      classes: g.getAttribute("class").split(/\s+/),
      badge: !!g.querySelector(".badge"),
    })),
  );
}

/** The text of an element the panel may not have: "" at once when it is absent. The panel
 * is drawn whole and synchronously on a click, so absent now is absent for good (a bare
 * innerText() would wait out its 30 s timeout for it). */
async function optionalText(locator) {
  return (await locator.count()) ? locator.innerText() : "";
}

async function clickNode(page, pane, name) {
  const view = pane === "after" ? "after" : "before";
  await page.evaluate(([side, node]) => {
    const v = window.fxlsPass[side];
    v.focusNode(v.model.nodes.get(node), false);
  }, [view, name]);
  await page.locator(`#fx-pane-${pane} g.node[data-id="n:${name}"]`).click();
  return {
    location: await page.locator("#fx-source-location").innerText(),
    selected: await page.locator("#fx-selected").innerText(),
    pane: await page.locator("#fx-selected-pane").innerText(),
    mark: await optionalText(page.locator("#fx-node-table .fx-mark")),
    source: await optionalText(page.locator("#fx-node-source")),
    origin: await optionalText(page.locator("#fx-node-origin")),
    otherPane: await page.$$eval(`#fx-pane-${pane === "after" ? "before" : "after"} g.counterpart`, (gs) => gs.map((g) => g.getAttribute("data-id").slice(2))),
  };
}

async function main() {
  const file = path.resolve(process.argv[2]);
  const { chromium } = require("playwright-core");
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox", "--disable-gpu"] });
  const result = { errors: [], requests: [] };
  try {
    const page = await browser.newPage({ viewport: { width: Number(arg("--width", 1400)), height: Number(arg("--height", 800)) } });
    page.on("pageerror", (error) => result.errors.push(String(error)));
    page.on("console", (message) => message.type() === "error" && result.errors.push(message.text()));
    page.on("request", (request) => !request.url().startsWith("file:") && !request.url().startsWith("data:") && result.requests.push(request.url()));
    await page.goto("file://" + file);
    await page.waitForFunction(() => window.fxlsPass || window.fxlsGraphError, null, { timeout: 60_000 });
    result.pageError = await page.evaluate(() => window.fxlsGraphError ?? null);
    if (result.pageError) return;
    result.title = await page.locator(".fx-pass-bar h1").innerText();
    result.paneTitles = await page.locator(".fx-pane-title").allInnerTexts();
    result.legend = await page.locator("#fx-legend").innerText();
    result.banner = await page.locator("#fx-banner").isVisible() ? await page.locator("#fx-banner").innerText() : "";
    result.summary = await page.locator("#fx-run-summary").innerText();
    result.changes = await page.locator("#fx-changes .chip").allInnerTexts().catch(() => []);
    result.before = await paneNodes(page, "before");
    result.after = await paneNodes(page, "after");
    result.noAfter = await optionalText(page.locator(".fx-no-after"));
    const shot = arg("--screenshot");
    const clickAfter = arg("--click-after");
    if (clickAfter) result.clickAfter = await clickNode(page, "after", clickAfter);
    if (shot) await page.screenshot({ path: shot });
    const clickBefore = arg("--click-before");
    if (clickBefore) result.clickBefore = await clickNode(page, "before", clickBefore);
    await page.click("#fx-mode-after");
    result.afterOnly = {
      beforeVisible: await page.locator("#fx-pane-before").isVisible(),
      afterVisible: await page.locator("#fx-pane-after").isVisible(),
    };
    await page.click("#fx-mode-split");
    result.split = await page.locator("#fx-pane-before").isVisible() && await page.locator("#fx-pane-after").isVisible();
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
