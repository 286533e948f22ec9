// Drives a graph page written by `fxls graph FILE::Class --format html` in headless Chromium
// (playwright-core from editors/vscode/node_modules, the system's chromium) as a person
// would, and prints what happened as one JSON object on stdout. Used by
// tests/graph_view/test_graph_page.py and benchmarks/bench_graph_page.py.
//
//   node scripts/graph_page_browser.cjs PAGE.html [--search QUERY] [--click NODE]
//        [--screenshot OUT.png] [--repeat N] [--expand-depth D] [--expand-all] [--width W --height H]
//
// Steps: load (time to the first drawn view), click the first collapsed group (time of the
// expansion, from the page's own clock), search and go to the first match, click a node
// (the page shows its file:line), optionally expand all; --repeat N reloads and measures
// load and expansion N times.
const path = require("node:path");
const { openPage } = require("./chromium.cjs");

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
}

async function measureLoad(page, url) {
  const started = Date.now();
  await page.goto(url);
  await page.waitForSelector('#graph[data-rendered="true"]', { timeout: 60_000 });
  // the page's own clock, from navigation start: its script starts, the JSON is parsed, the
  // view is drawn (marks set by src/graphview/main.ts), then the first frame after it
  return page.evaluate(
    () =>
      new Promise((resolve) => {
        const marks = Object.fromEntries(performance.getEntriesByType("mark").map((m) => [m.name, m.startTime]));
        const nav = performance.getEntriesByType("navigation")[0];
        requestAnimationFrame(() => setTimeout(() => resolve({ ...marks, responseEnd: nav.responseEnd, readyMs: Math.max(marks["fxls-drawn"] ?? 0, 0) }), 0));
      }),
  ).then((times) => ({ ...times, wallMs: Date.now() - started }));
}

/** Clicks the first collapsed group; the time from the click event to the next frame
 * after its handler ran (measured in the page: the handler, layout, drawing, style). */
async function expandFirstGroup(page) {
  const group = page.locator("g.group.collapsed").first();
  if ((await group.count()) === 0) return null;
  const id = await group.getAttribute("data-id");
  await page.evaluate((shown) => window.fxlsGraph.centerOnId(shown), id); // as a person scrolls to it
  const before = await page.evaluate(() => window.fxlsGraph.timing.shownNodes);
  await page.evaluate(() => {
    window.__clickDone = null;
    document.addEventListener(
      "click",
      () => {
        const start = performance.now();
        requestAnimationFrame(() => setTimeout(() => (window.__clickDone = performance.now() - start), 0));
      },
      { capture: true, once: true },
    );
  });
  await group.click();
  await page.waitForFunction(() => window.__clickDone !== null);
  const ms = await page.evaluate(() => window.__clickDone);
  const timing = await page.evaluate(() => ({ ...window.fxlsGraph.timing }));
  return { group: id.slice(2), shownBefore: before, shownAfter: timing.shownNodes, groupsAfter: timing.shownGroups, clickToFrameMs: ms, renderMs: timing.lastRenderMs, layoutMs: timing.lastLayoutMs, groupsLaidOut: timing.groupsLaidOut };
}

async function main() {
  const file = path.resolve(process.argv[2]);
  const url = "file://" + file;
  const result = { errors: [], requests: [] };
  const { browser, page } = await openPage(Number(arg("--width", 1400)), Number(arg("--height", 900)), result);
  try {
    const repeat = Number(arg("--repeat", 1));
    result.loads = [];
    result.expansions = [];
    for (let i = 0; i < repeat; i++) {
      result.loads.push(await measureLoad(page, url));
      if (i === 0) {
        result.title = await page.locator("h1").innerText();
        result.total = await page.evaluate(() => window.fxlsGraph.model.nodes.size);
        result.collapsed = await page.evaluate(() => window.fxlsGraph.shown());
        // each collapsed group's tooltip, as a reader hovering it sees it (its class)
        result.groups = await page.locator("g.group.collapsed").evaluateAll((groups) =>
          groups.map((g) => ({ id: g.getAttribute("data-id"), title: g.querySelector("title")?.textContent ?? "" })));
      }
      for (let depth = 0; depth < Number(arg("--expand-depth", 1)); depth++) {
        const expansion = await expandFirstGroup(page);
        if (expansion) result.expansions.push(expansion);
      }
    }
    if (result.expansions.length) {
      // collapse the last group expanded, by its frame's title
      const last = result.expansions[result.expansions.length - 1].group;
      await page.evaluate((id) => window.fxlsGraph.centerOnId(id), `g:${last}`);
      await page.locator(`g.frame[data-id="g:${last}"] .frame-title`).click();
      await page.locator(`g.group.collapsed[data-id="g:${last}"]`).waitFor({ timeout: 10_000 });
      result.collapse = { group: last, shownNodes: await page.evaluate(() => window.fxlsGraph.timing.shownNodes) };
    }
    const query = arg("--search");
    if (query) {
      await page.fill("#fx-search", query);
      await page.press("#fx-search", "Enter");
      result.search = {
        count: await page.locator("#fx-search-count").innerText(),
        selected: await page.locator("#fx-selected").innerText(),
        matchesShown: await page.locator("g.match").count(),
      };
    }
    const click = arg("--click");
    if (click) {
      await page.evaluate((name) => window.fxlsGraph.focusNode(window.fxlsGraph.model.nodes.get(name), false), click);
      await page.locator(`g.node[data-id="n:${click}"]`).click();
      result.click = {
        location: await page.locator("#fx-source-location").innerText(),
        selected: await page.locator("#fx-selected").innerText(),
        panelSource: await page.locator("#fx-node-source").innerText().catch(() => ""),
      };
    }
    if (process.argv.includes("--expand-all")) {
      const started = Date.now();
      await page.click("#fx-expand-all");
      await page.waitForFunction(() => document.querySelectorAll("g.group.collapsed").length === 0);
      result.expandAll = {
        wallMs: Date.now() - started,
        renderMs: await page.evaluate(() => window.fxlsGraph.timing.lastRenderMs),
        layoutMs: await page.evaluate(() => window.fxlsGraph.timing.lastLayoutMs),
        groupsLaidOut: await page.evaluate(() => window.fxlsGraph.timing.groupsLaidOut),
        shownNodes: await page.evaluate(() => window.fxlsGraph.timing.shownNodes),
        // what is in the DOM: zoomed out, every node as a bare box; closer, what is in view
        drawnNodes: await page.locator("g.node").count(),
      };
      await page.click("#fx-fit");
    }
    const shot = arg("--screenshot");
    if (shot) await page.screenshot({ path: shot });
    result.pageError = await page.evaluate(() => window.fxlsGraphError ?? null);
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
