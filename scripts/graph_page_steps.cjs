// Drives a graph page (`fxls graph ... --format html`) in headless Chromium through a list of
// steps, as a test writes them, and prints what they read as one JSON object on stdout.
//
//   node scripts/graph_page_steps.cjs PAGE.html STEPS.json [--width W --height H]
//
// STEPS.json is a list; each step is one of
//   {"click": SELECTOR}                  a real click (scrolled into view first)
//   {"fill": SELECTOR, "text": T}        types into an input
//   {"press": SELECTOR, "key": K}        a key press ("Enter")
//   {"wait": SELECTOR} / {"until": JS}   waits for an element / for an expression to be truthy
//   {"eval": JS, "as": KEY}              the value of an expression in the page
//                                        (`view` is window.fxlsGraph, `pass` window.fxlsPass)
//   {"boxes": SELECTOR, "as": KEY}       each match's text and client rectangle
//   {"screenshot": PATH}
//   {"open": PAGE, "width": W, "height": H}
//                                        loads another page in the same browser, at that size:
//                                        one browser launch for several tests' pages
// The output: {"errors": [...], "requests": [...], KEY: value, ...}; the page is loaded and
// drawn (`.fx-graph[data-rendered="true"]`: the graph, or a pane of a pass page) before the first step.
const path = require("node:path");
const fs = require("node:fs");
const { openPage } = require("./chromium.cjs");

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : fallback;
}


const DRAWN = '.fx-graph[data-rendered="true"]';

async function load(page, file) {
  await page.goto("file://" + path.resolve(file));
  await page.waitForSelector(DRAWN, { timeout: 60_000 });
}

/** The page's own failure, if any, kept before another page replaces it. */
async function keepPageError(page, result) {
  result.pageError = result.pageError ?? (await page.evaluate(() => window.fxlsGraphError ?? null));
}

async function run(page, step, result) {
  if (step.click) return page.locator(step.click).first().click();
  if (step.fill) return page.fill(step.fill, step.text);
  if (step.press) return page.press(step.press, step.key);
  if (step.wait) return page.locator(step.wait).first().waitFor({ timeout: 30_000 });
  if (step.until)
    return page.waitForFunction((js) => new Function("view", "pass", `return (${js});`)(window.fxlsGraph, window.fxlsPass), step.until, { timeout: 30_000 });
  if (step.eval) {
    result[step.as] = await page.evaluate(
      (js) => new Function("view", "pass", `return (${js});`)(window.fxlsGraph, window.fxlsPass),
      step.eval,
    );
    return;
  }
  if (step.boxes) {
    result[step.as] = await page.locator(step.boxes).evaluateAll((elements) =>
      elements.map((e) => {
        const r = e.getBoundingClientRect();
        return { text: e.textContent ?? "", id: e.closest("[data-id]")?.getAttribute("data-id") ?? null, x: r.x, y: r.y, width: r.width, height: r.height };
      }),
    );
    return;
  }
  if (step.screenshot) return page.screenshot({ path: step.screenshot });
  if (step.open) {
    await keepPageError(page, result);
    await page.setViewportSize({ width: step.width ?? 1600, height: step.height ?? 1000 });
    return load(page, step.open);
  }
  throw new Error(`unknown step ${JSON.stringify(step)}`);
}

async function main() {
  const file = path.resolve(process.argv[2]);
  const steps = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
  const result = { errors: [], requests: [], pageError: null };
  const { browser, page } = await openPage(Number(arg("--width", 1600)), Number(arg("--height", 1000)), result);
  try {
    await load(page, file);
    for (const step of steps) {
      try {
        await run(page, step, result);
      } catch (error) {
        // several tests' pages share a run: say which step failed
        throw new Error(`step ${JSON.stringify(step).slice(0, 300)}: ${error.message}`);
      }
    }
    await keepPageError(page, result);
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
