import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import {
  byteColumnToChar,
  contentSecurityPolicy,
  diffHtml,
  graphHtml,
  jsonForScript,
  makeNonce,
} from "../src/graphHtml";

const GRAPH = {
  version: 1,
  name: "Gate",
  status: "partial",
  nodes: [
    { name: "x", op: "placeholder", target: "x", args: "()", kwargs: "{}", users: ["output"], span: null,
      shape: null, dtype: null, module_path: null, module_type: null },
    { name: "output", op: "output", target: "output", args: "(%x,)", kwargs: "{}", users: [], span: null,
      shape: null, dtype: null, module_path: null, module_type: null },
  ],
  problems: [],
  code: `def forward(self, x):
    gt = x.sum() > 0  # <script>alert("x")</script> & 'quotes'
    return gt`,
};
const CODE = "def forward(self, x):\n    return x";

function page(overrides = {}) {
  return graphHtml({
    nonce: "N0nce123",
    cspSource: "https://file+.vscode-resource.vscode-cdn.net",
    scriptUri: "https://file+.vscode-resource.vscode-cdn.net/ext/dist/webview.js",
    view: { name: "Gate", status: "partial", file: "models/gate.py", graph: GRAPH, ...overrides },
  });
}

test("the page has a strict CSP with the nonce", () => {
  const html = page();
  const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html);
  assert.ok(csp, "CSP meta tag present");
  const policy = csp[1].replace(/&#39;/g, "'");
  assert.match(policy, /default-src 'none'/);
  assert.match(policy, /script-src 'nonce-N0nce123'/);
  assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval|\*/);
  assert.equal(policy, contentSecurityPolicy("N0nce123", "https://file+.vscode-resource.vscode-cdn.net"));
});

test("every script carries the nonce; the graph view mounts on #fxls-graph", () => {
  const html = page();
  const scripts = html.match(/<script\b[^>]*>/g) ?? [];
  assert.equal(scripts.length, 2);
  for (const tag of scripts) assert.match(tag, /nonce="N0nce123"/);
  assert.match(html, /<script nonce="N0nce123" src="https:\/\/file\+\.vscode-resource\.vscode-cdn\.net\/ext\/dist\/webview\.js"><\/script>/);
  assert.match(html, /<div id="fxls-graph"><\/div>/);
  assert.doesNotMatch(html, /\son\w+=/, "no inline event handlers");
});

test("the graph document travels as JSON that cannot close its script element", () => {
  const nasty = { ...GRAPH, name: "</script><script>alert(1)</script>" };
  const html = page({ graph: nasty });
  assert.equal((html.match(/<\/script>/g) ?? []).length, 2, "only our own two scripts close");
  const json = /<script nonce="N0nce123" type="application\/json" id="fxls-graph-data">([^<]*)<\/script>/.exec(html);
  assert.ok(json);
  assert.deepEqual(JSON.parse(json[1]), nasty);
  assert.equal(JSON.parse(jsonForScript("a\u2028b<!--")), "a\u2028b<!--");
  assert.doesNotMatch(jsonForScript("a\u2028b"), /\u2028/);
});

test("header, status, errors and code without a graph", () => {
  const html = page({ name: "A<B>", status: "failed", error: "no module A<B> in file:///m.py", graph: undefined });
  assert.match(html, /<h1>A&lt;B&gt;<\/h1>/);
  assert.match(html, /class="status status-failed">failed</);
  assert.match(html, /<p class="error" id="error">no module A&lt;B&gt; in file:\/\/\/m.py<\/p>/);
  assert.doesNotMatch(html, /<pre/);
  assert.match(page({ graph: undefined, code: CODE }), /<pre id="code"><code>def forward/);
  assert.match(page({ graph: undefined, error: "x" }), /models\/gate.py/);
});

test("UTF-8 byte columns become UTF-16 indices", () => {
  assert.equal(byteColumnToChar("    y = x + 1", 8), 8);
  assert.equal(byteColumnToChar("é = x.sum()", 5), 4);
  assert.equal(byteColumnToChar("😀 = x", 5), 3);
  assert.equal(byteColumnToChar("ab", 10), 2);
});

test("nonces are 32 characters of letters and digits, and differ", () => {
  const a = makeNonce((n) => randomBytes(n));
  const b = makeNonce((n) => randomBytes(n));
  assert.match(a, /^[A-Za-z0-9]{32}$/);
  assert.notEqual(a, b);
});

test("a pass's page: a section per graph, its diff with added and removed lines marked", () => {
  const html = graphHtml({
    nonce: "N0nce123",
    cspSource: "https://file+.vscode-resource.vscode-cdn.net",
    scriptUri: "https://file+.vscode-resource.vscode-cdn.net/ext/dist/webview.js",
    view: {
      name: "relu_to_gelu",
      status: "ok",
      file: "passes.py",
      pass: {
        passKind: "graph_module",
        graphsFrom: "representative",
        runs: [
          {
            graph: "ConvBnReLU", summary: "ConvBnReLU: +1 -1, 1 rewired", added: ["gelu"], removed: ["relu"],
            rewired: ["output"], problem: null, before: "", after: "",
            diff: [" def forward(self, x):", "-    relu = torch.relu(x)", "+    gelu = gelu(x) # <b>", "@@ -1 +1 @@"],
          },
          { graph: "MLP", summary: "MLP: no change", added: [], removed: [], rewired: [], problem: null,
            before: "def forward", after: "def forward", diff: [" def forward"] },
        ],
      },
    },
  });
  assert.match(html, /<title>FX pass: relu_to_gelu<\/title>/);
  assert.match(html, /ran on representative graphs/);
  assert.match(html, /<h2>ConvBnReLU: \+1 -1, 1 rewired<\/h2>/);
  assert.match(html, /<span class="line del">-    relu = torch.relu\(x\)<\/span>/);
  assert.match(html, /<span class="line add">\+    gelu = gelu\(x\) # &lt;b&gt;<\/span>/);
  assert.match(html, /<span class="chip added" title="added">\+ gelu<\/span>/);
  assert.match(html, /<span class="chip removed" title="removed">- relu<\/span>/);
  assert.match(html, /<h2>MLP: no change<\/h2>/);
  assert.equal((html.match(/class="diff"/g) ?? []).length, 1, "an unchanged graph shows no diff");
  assert.doesNotMatch(html, /<b>/);
});

test("diff lines keep their marker and get a class", () => {
  assert.equal(diffHtml([" a", "+b", "-c", "@@ x"]),
    '<pre class="diff"><code><span class="line ctx"> a</span><span class="line add">+b</span>' +
    '<span class="line del">-c</span><span class="line hunk">@@ x</span></code></pre>');
});
