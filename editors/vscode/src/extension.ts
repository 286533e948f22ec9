// The fxls VS Code extension: starts `<python> -m fxls serve` and wires its features in.
// Logic that does not need the `vscode` module lives in the sibling modules (unit-tested).
import * as crypto from "node:crypto";
import * as os from "node:os";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  DynamicFeature,
  ErrorAction,
  ExecuteCommandRegistrationOptions,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  RegistrationData,
  RevealOutputChannelOn,
  ServerOptions,
  State,
  StaticFeature,
} from "vscode-languageclient/node";
import { CrashTracker } from "./crashes";
import { GraphView, PassRun, byteColumnToChar, graphHtml, makeNonce } from "./graphHtml";
import { GRAPH_LABELS, GraphChoice, GraphSelection, graphsToPick } from "./graphSwitch";
import {
  Interpreter,
  chooseInterpreter,
  describeInterpreter,
  folderOf,
  folderPython,
  interpreterSettingFor,
  pythonFromEnvironment,
  resolveVariables,
} from "./interpreter";
import { GraphTarget, PASS_FORMAT, classNames, enclosingClass, enclosingDefinition, targetFromArgs, withoutCommands } from "./modules";
import { NotebookCellText, toCell, toSource } from "./notebookLines";
import { buildServerCommand, formatCommandLine, startFailureHint } from "./serverCommand";
import { ServerSettings, configChangeAction, didChangeConfigurationParams, initializationOptions, serverSettings } from "./settings";
import { ClientState, FileTargets, countSeverities, fromCache, targetsOf } from "./status";
import { StatusBar } from "./statusBar";

const SHOW_GRAPH = "fxls.showGraph";
/** the server's notification that the complete report of a document version is in place */
const ANALYSIS_DONE = "fxls/analysisDone";
/** Server commands the extension implements itself (it calls the server for the data). */
const CLIENT_OWNED_COMMANDS = [SHOW_GRAPH];

/** A LanguageClient that leaves `fxls.showGraph` to the extension instead of registering it. */
class FxlsLanguageClient extends LanguageClient {
  override registerFeature(feature: StaticFeature | DynamicFeature<unknown>): void {
    const dynamic = feature as DynamicFeature<ExecuteCommandRegistrationOptions>;
    if (dynamic.registrationType?.method === ExecuteCommandRequest.method) {
      const register = dynamic.register.bind(dynamic);
      dynamic.register = (data: RegistrationData<ExecuteCommandRegistrationOptions>) =>
        register({ ...data, registerOptions: withoutCommands(data.registerOptions, CLIENT_OWNED_COMMANDS) });
    }
    super.registerFeature(feature);
  }
}

interface GraphResult {
  name: string;
  status: string;
  format: string;
  text: string;
  /** a pass's before/after view (format `pass`) */
  passKind?: string;
  graphsFrom?: string;
  runs?: PassRun[];
  /** a pass's graphs before and after it, for the graph view (`kind: "pass"`) */
  document?: unknown;
  /** the targets that made a graph of the module (`export`, `compile`) */
  graphs?: unknown;
}

/** A node's source range as fxls gives it: 1-based lines, UTF-8 byte columns. */
interface SourceSpan {
  file: string;
  line: number;
  end_line: number;
  col: number;
  end_col: number;
}

/** What the graph view script posts to the extension. */
interface WebviewMessage {
  type?: string;
  span?: SourceSpan;
  /** `chooseGraph`: the module's graph the switch asks for */
  graph?: string;
}

interface GraphPanel {
  panel: vscode.WebviewPanel;
  target: GraphTarget;
  /** a module's graph shown (FX, export, compile) and those its switch offers */
  graphs: GraphSelection;
  refreshTimer?: NodeJS.Timeout;
  /** the panel shows a graph or code (not only an error) */
  shown?: boolean;
}

/** the notebooks whose Python cells fxls analyses (package.json activates on them) */
const NOTEBOOK_TYPE = "jupyter-notebook";

/** A notebook's cells as the server reads them: Python code cells are analysed. */
function cellTexts(cells: readonly vscode.NotebookCell[]): NotebookCellText[] {
  return cells.map((cell) => ({
    python: cell.kind === vscode.NotebookCellKind.Code && cell.document.languageId === "python",
    text: cell.document.getText(),
  }));
}

/** The Jupyter notebook on disk that ``document`` is a cell of, if it is one. */
function notebookOf(document: vscode.TextDocument): vscode.NotebookDocument | undefined {
  if (document.uri.scheme !== "vscode-notebook-cell") return undefined;
  return vscode.workspace.notebookDocuments.find(
    (notebook) =>
      notebook.notebookType === NOTEBOOK_TYPE &&
      notebook.uri.scheme === "file" &&
      notebook.getCells().some((cell) => cell.document === document),
  );
}

class FxlsExtension implements vscode.Disposable {
  private readonly output: vscode.OutputChannel;
  private readonly status: StatusBar;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly crashes = new CrashTracker(4, 3 * 60 * 1000);
  private readonly panels = new Map<string, GraphPanel>();
  /** documents (vscode URI strings) the server has published diagnostics for */
  private readonly traced = new Set<string>();
  /** documents -> the tracers their last complete report was analysed for, and why */
  private readonly targets = new Map<string, FileTargets>();
  /** documents showing the server's result cache's report until their analysis ends */
  private readonly cached = new Set<string>();
  /** documents with a trace asked for (open/save) and not reported yet -> expiry timer */
  private readonly tracing = new Map<string, NodeJS.Timeout>();
  private client: FxlsLanguageClient | undefined;
  private clientState: ClientState = "stopped";
  private interpreter: Interpreter | undefined;
  /** the workspace folder whose settings chose the interpreter (the server's cwd) */
  private serverFolder: vscode.WorkspaceFolder | undefined;
  private stopping = false;
  /** serialises start/stop/restart */
  private queue: Promise<unknown> = Promise.resolve();
  private pythonApiHooked = false;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel("fxls");
    this.status = new StatusBar();
    this.disposables.push(
      this.output,
      this.status,
      vscode.commands.registerCommand("fxls.restart", () => this.restart("restart command")),
      vscode.commands.registerCommand(SHOW_GRAPH, (...args: unknown[]) => this.showGraph(args)),
      vscode.commands.registerCommand("fxls.showLogs", () => this.output.show(true)),
      vscode.workspace.onDidChangeConfiguration((event) => this.onConfigurationChanged(event)),
      vscode.workspace.onDidChangeWorkspaceFolders(() => void this.recheckInterpreter("the workspace folders changed")),
      vscode.window.onDidChangeActiveTextEditor(() => this.updateStatus()),
      vscode.window.onDidChangeTextEditorSelection((event) => this.postCursor(event.textEditor)),
      vscode.languages.onDidChangeDiagnostics(() => this.updateStatus()),
      vscode.workspace.onDidCloseTextDocument((doc) => {
        this.traced.delete(doc.uri.toString());
        this.targets.delete(doc.uri.toString());
        this.cached.delete(doc.uri.toString());
        this.clearTracing(doc.uri.toString());
      }),
    );
  }

  log(message: string): void {
    this.output.appendLine(`[${new Date().toISOString()}] ${message}`);
  }

  // -- settings -------------------------------------------------------------------------

  private variableContext(folder: vscode.WorkspaceFolder | undefined = this.serverFolder) {
    const workspaceFolder = (folder ?? vscode.workspace.workspaceFolders?.[0])?.uri.fsPath;
    return { workspaceFolder, home: os.homedir(), env: process.env };
  }

  private settings(): ServerSettings {
    // read in the server's folder: a folder's own .vscode/settings.json counts there
    const config = vscode.workspace.getConfiguration("fxls", this.serverFolder?.uri);
    return serverSettings((key) => config.get(key), (p) => resolveVariables(p, this.variableContext()));
  }

  /** One answer to the server's `workspace/configuration`: for a workspace folder's
   * `fxls` section, `python` is the interpreter that runs that folder's code. */
  private folderSettings(item: { scopeUri?: string; section?: string }, answer: unknown): unknown {
    if (item.section !== "fxls" || !item.scopeUri || !answer || typeof answer !== "object") return answer;
    const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.parse(item.scopeUri));
    if (!folder) return answer;
    const config = vscode.workspace.getConfiguration("fxls", folder.uri);
    const python = folderPython(config.get("python"), config.get("interpreter"), (p) => resolveVariables(p, this.variableContext(folder)));
    return { ...(answer as Record<string, unknown>), python: python ?? "" };
  }

  private onConfigurationChanged(event: vscode.ConfigurationChangeEvent): void {
    const action = configChangeAction((section) => event.affectsConfiguration(section));
    if (action === "restart") {
      // a restart only if the interpreter the window should use is another one now; else
      // the server asks the folders' settings again (a folder's interpreter runs its code)
      void this.recheckInterpreter("fxls.interpreter changed").then(() => this.pushSettings());
    } else if (action === "push") {
      this.pushSettings();
    }
    this.updateStatus();
  }

  private pushSettings(): void {
    if (this.client && this.clientState === "running") {
      const settings = this.settings();
      this.log(`settings changed: ${JSON.stringify(settings)}`);
      void this.client
        .sendNotification(DidChangeConfigurationNotification.type, didChangeConfigurationParams(settings))
        .catch((error) => this.log(`could not send settings: ${error}`));
    }
  }

  // -- interpreter ----------------------------------------------------------------------

  private async pythonExtensionInterpreter(folder?: vscode.WorkspaceFolder): Promise<string | undefined> {
    const extension = vscode.extensions.getExtension("ms-python.python");
    if (!extension) return undefined;
    try {
      const api = extension.isActive ? extension.exports : await extension.activate();
      const environments = api?.environments;
      if (!environments?.getActiveEnvironmentPath) return undefined;
      if (!this.pythonApiHooked && environments.onDidChangeActiveEnvironmentPath) {
        this.pythonApiHooked = true;
        this.disposables.push(
          environments.onDidChangeActiveEnvironmentPath(() => {
            if (this.interpreter?.source !== "setting") void this.restart("the Python extension's environment changed");
          }),
        );
      }
      const resource = (folder ?? vscode.workspace.workspaceFolders?.[0])?.uri;
      const active = environments.getActiveEnvironmentPath(resource);
      const resolved = environments.resolveEnvironment ? await environments.resolveEnvironment(active) : undefined;
      return pythonFromEnvironment(active, resolved);
    } catch (error) {
      this.log(`could not ask the Python extension for its environment: ${error}`);
      return undefined;
    }
  }

  /** The folder of the Python file the user works in: the active editor's, else the first
   * open Python document's. */
  private preferredFolder(): vscode.WorkspaceFolder | undefined {
    const folders = vscode.workspace.workspaceFolders ?? [];
    const candidates = [
      vscode.window.activeTextEditor?.document,
      ...vscode.workspace.textDocuments.filter((d) => d.languageId === "python" && d.uri.scheme === "file"),
    ];
    for (const document of candidates) {
      if (!document || document.uri.scheme !== "file") continue;
      const path = folderOf(document.uri.fsPath, folders.map((f) => f.uri.fsPath));
      const folder = folders.find((f) => f.uri.fsPath === path);
      if (folder) return folder;
    }
    return undefined;
  }

  private async chooseInterpreter(): Promise<{ interpreter: Interpreter; folder?: vscode.WorkspaceFolder }> {
    const folders = vscode.workspace.workspaceFolders ?? [];
    const choice = interpreterSettingFor(
      folders.map((f) => ({ folder: f.uri.fsPath, value: vscode.workspace.getConfiguration("fxls", f.uri).get<string>("interpreter") })),
      vscode.workspace.getConfiguration("fxls").get<string>("interpreter"),
      this.preferredFolder()?.uri.fsPath,
    );
    const folder = folders.find((f) => f.uri.fsPath === choice.folder);
    const ctx = this.variableContext(folder);
    if (choice.setting) return { interpreter: chooseInterpreter({ setting: choice.setting }, ctx), folder };
    const pythonExtension = await this.pythonExtensionInterpreter(folder);
    return { interpreter: chooseInterpreter({ setting: choice.setting, pythonExtension }, ctx), folder };
  }

  /**
   * Read the settings again and restart the server if they now name another interpreter.
   * Run after every start and on every change of `fxls.interpreter` or of the folders: a
   * window can start the extension before the folder (or, in code-server, the user)
   * settings have reached the extension host, and then the first read misses them; the
   * configuration event that follows used to restart blindly and could be swallowed by a
   * start in progress. Queued after any start or stop, like them.
   */
  recheckInterpreter(reason: string): Promise<unknown> {
    this.queue = this.queue
      .then(async () => {
        if (!this.interpreter) return; // not started yet: the start reads them
        const { interpreter } = await this.chooseInterpreter();
        if (interpreter.path === this.interpreter.path) return;
        this.log(`${reason}: the interpreter is now ${describeInterpreter(interpreter)}; restarting the server`);
        await this.doStop();
        this.crashes.reset();
        await this.doStart();
      })
      .catch((error) => this.log(`checking the interpreter failed: ${error}`));
    return this.queue;
  }

  // -- client lifecycle -----------------------------------------------------------------

  private setState(state: ClientState): void {
    this.clientState = state;
    this.updateStatus();
  }

  start(): Promise<unknown> {
    this.queue = this.queue.then(() => this.doStart()).catch((error) => this.log(`start failed: ${error}`));
    return this.queue;
  }

  restart(reason: string): Promise<unknown> {
    this.queue = this.queue
      .then(async () => {
        this.log(`restarting the server (${reason})`);
        await this.doStop();
        this.crashes.reset();
        await this.doStart();
      })
      .catch((error) => this.log(`restart failed: ${error}`));
    return this.queue;
  }

  stop(): Promise<unknown> {
    this.queue = this.queue.then(() => this.doStop()).catch((error) => this.log(`stop failed: ${error}`));
    return this.queue;
  }

  private async doStart(): Promise<void> {
    const { interpreter, folder } = await this.chooseInterpreter();
    this.interpreter = interpreter;
    this.serverFolder = folder;
    const command = buildServerCommand({
      interpreter: interpreter.path,
      cwd: (folder ?? vscode.workspace.workspaceFolders?.[0])?.uri.fsPath,
      baseEnv: process.env,
    });
    const settings = this.settings();
    this.log(`interpreter: ${describeInterpreter(interpreter)}`);
    this.log(`starting: ${formatCommandLine(command)}${command.options.cwd ? ` (in ${command.options.cwd})` : ""}`);
    this.log(`settings: ${JSON.stringify(settings)}`);

    const serverOptions: ServerOptions = { command: command.command, args: command.args, options: command.options };
    const clientOptions: LanguageClientOptions = {
      // a Jupyter notebook's Python cells too: the server syncs the notebook itself
      // (notebookDocumentSync) and answers requests on its cells
      documentSelector: [
        { scheme: "file", language: "python" },
        { notebook: NOTEBOOK_TYPE, language: "python" },
      ],
      diagnosticCollectionName: "fxls",
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      // hovers on submodule calls link to the graph: only that command may run from them
      markdown: { isTrusted: { enabledCommands: [SHOW_GRAPH] } },
      initializationOptions: initializationOptions(settings),
      errorHandler: {
        error: (_error, _message, count) => ({
          action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
          handled: true,
        }),
        closed: () => this.onServerClosed(interpreter),
      },
      middleware: {
        workspace: {
          // the server asks for each workspace folder's settings: a folder's code runs
          // under its own fxls.python, else its own fxls.interpreter (multi-root windows)
          configuration: async (params, token, next) => {
            const answers = await next(params, token);
            if (!Array.isArray(answers)) return answers;
            return answers.map((answer, i) => this.folderSettings(params.items[i], answer));
          },
        },
        handleDiagnostics: (uri, diagnostics, next) => {
          next(uri, diagnostics);
          const key = uri.toString();
          this.traced.add(key);
          this.cached.delete(key); // the cache's publish is followed by its fxls/analysisDone
          this.clearTracing(key);
          this.updateStatus();
          this.scheduleGraphRefresh(key);
        },
        didOpen: (document, next) => {
          this.markTracing(document.uri.toString());
          return next(document);
        },
        didSave: (document, next) => {
          if (this.settings().trace.onSave) this.markTracing(document.uri.toString());
          return next(document);
        },
        notebooks: {
          didOpen: (notebook, cells, next) => {
            this.markTracing(notebook.uri.toString());
            return next(notebook, cells);
          },
          didSave: (notebook, next) => {
            if (this.settings().trace.onSave) this.markTracing(notebook.uri.toString());
            return next(notebook);
          },
        },
      },
    };

    const client = new FxlsLanguageClient("fxls", "fxls", serverOptions, clientOptions);
    this.client = client;
    this.disposables.push(
      client.onDidChangeState((event) => {
        if (client !== this.client) return;
        if (event.newState === State.Running) {
          this.setState("running");
        } else if (event.newState === State.Starting) {
          this.setState("starting");
        } else if (this.clientState !== "failed") {
          this.traced.clear();
          this.setState("stopped");
        }
      }),
    );
    // with pull diagnostics (vscode-languageclient pulls when the server offers it) no
    // diagnostics are pushed: the server says when a document's analysis is complete
    client.onNotification(ANALYSIS_DONE, (params: { uri?: string }) => {
      if (client !== this.client || typeof params?.uri !== "string") return;
      const key = client.protocol2CodeConverter.asUri(params.uri).toString();
      this.traced.add(key);
      const targets = targetsOf(params);
      if (targets) this.targets.set(key, targets);
      else this.targets.delete(key);
      if (fromCache(params)) this.cached.add(key);
      else this.cached.delete(key);
      this.clearTracing(key);
      this.updateStatus();
      this.scheduleGraphRefresh(key);
    });
    this.setState("starting");
    try {
      await client.start();
      this.log(`server running (pid ${this.serverPid(client) ?? "?"})`);
      // settings that arrived while it started (see recheckInterpreter)
      void this.recheckInterpreter("settings read again after the start");
    } catch (error) {
      this.log(`the server did not start: ${error}`);
      if (this.client === client && this.clientState !== "running") {
        this.setState("failed");
        this.offerHelp(`fxls could not start with ${interpreter.path}. ${startFailureHint(interpreter.path)}`);
      }
    }
  }

  private serverPid(client: LanguageClient): number | undefined {
    // `_serverProcess` is internal to vscode-languageclient; used for the log line only.
    const process = (client as unknown as { _serverProcess?: { pid?: number } })._serverProcess;
    return process?.pid;
  }

  private onServerClosed(interpreter: Interpreter) {
    if (this.stopping) return { action: CloseAction.DoNotRestart, handled: true };
    this.traced.clear();
    if (this.crashes.crashed()) {
      this.log(`the server stopped; restarting it (${this.crashes.recent} of ${this.crashes.maxRestarts + 1} allowed in 3 minutes)`);
      return { action: CloseAction.Restart, handled: true };
    }
    this.log("the server stopped too often; not restarting it. Use 'fxls: Restart Server' after fixing the cause.");
    this.setState("failed");
    this.offerHelp(`The fxls server stopped ${this.crashes.recent} times in 3 minutes and will not be restarted. ${startFailureHint(interpreter.path)}`);
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  private offerHelp(message: string): void {
    void vscode.window.showErrorMessage(message, "Show Logs", "Open Settings", "Restart").then((choice) => {
      if (choice === "Show Logs") this.output.show(true);
      else if (choice === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "fxls.interpreter");
      else if (choice === "Restart") void this.restart("user asked after a failure");
    });
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    if (!client) return;
    this.stopping = true;
    try {
      if (client.needsStop()) await client.stop(5000);
    } catch (error) {
      this.log(`stopping the server: ${error}`);
    } finally {
      this.stopping = false;
      this.client = undefined;
      this.traced.clear();
      for (const key of [...this.tracing.keys()]) this.clearTracing(key);
      this.setState("stopped");
      try {
        await client.dispose();
      } catch {
        // already stopped
      }
    }
  }

  // -- status bar -----------------------------------------------------------------------

  private markTracing(key: string): void {
    this.clearTracing(key);
    const expiry = (this.settings().trace.timeout + 15) * 1000;
    this.tracing.set(
      key,
      setTimeout(() => {
        this.tracing.delete(key);
        this.updateStatus();
      }, expiry),
    );
    this.updateStatus();
  }

  private clearTracing(key: string): void {
    const timer = this.tracing.get(key);
    if (timer) clearTimeout(timer);
    this.tracing.delete(key);
  }

  updateStatus(): void {
    const editor = vscode.window.activeTextEditor;
    const document = editor?.document;
    // a notebook's cell: the notebook is the document the server analysed, its cells
    // together show its diagnostics
    const notebook = document ? notebookOf(document) : undefined;
    const shown = notebook?.uri ?? document?.uri;
    const isPython =
      !!document && document.languageId === "python" && (notebook !== undefined || document.uri.scheme === "file");
    const key = shown?.toString() ?? "";
    const diagnostics = notebook
      ? notebook.getCells().flatMap((cell) => vscode.languages.getDiagnostics(cell.document.uri))
      : document
        ? vscode.languages.getDiagnostics(document.uri)
        : [];
    this.status.update({
      client: this.clientState,
      isPython,
      traced: this.traced.has(key),
      targets: this.targets.get(key),
      cached: this.cached.has(key),
      tracing: this.tracing.has(key),
      counts: countSeverities(diagnostics),
      fileName: shown ? vscode.workspace.asRelativePath(shown) : undefined,
    });
  }

  // -- graph view -----------------------------------------------------------------------

  private async showGraph(args: unknown[]): Promise<void> {
    let target = targetFromArgs(args);
    if (!target) {
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.document.languageId !== "python") {
        void vscode.window.showInformationMessage("fxls: open a Python file with an nn.Module to show its FX graph.");
        return;
      }
      const document = editor.document;
      const text = document.getText();
      // a notebook's cell: the notebook is the document the server analysed
      const analysed = notebookOf(document)?.uri ?? document.uri;
      const uri = this.client ? this.client.code2ProtocolConverter.asUri(analysed) : analysed.toString();
      const lines = text.split(/\r?\n/);
      const line = editor.selection.active.line;
      // the cursor in an FX pass: its before/after view
      const definition = enclosingDefinition(lines, line);
      if (definition && definition !== enclosingClass(lines, line) && (await this.isPass(uri, definition))) {
        await this.openPanel({ uri, className: definition, format: PASS_FORMAT });
        return;
      }
      let className = enclosingClass(lines, line);
      if (!className) {
        const names = classNames(text);
        if (names.length === 0) {
          void vscode.window.showInformationMessage("fxls: this file has no class to show.");
          return;
        }
        className = names.length === 1 ? names[0] : await vscode.window.showQuickPick(names, { placeHolder: "Module to show" });
        if (!className) return;
      }
      const graph = await this.pickGraph(analysed.toString());
      if (!graph) return;
      target = graph === "fx" ? { uri, className } : { uri, className, target: graph };
    }
    await this.openPanel(target);
  }

  /** Which graph of the module to show: its FX graph, unless the file was analysed for
   * export or compile too (then the user picks; the panel's switch changes it later). */
  private async pickGraph(key: string): Promise<GraphChoice | undefined> {
    const choices = graphsToPick(this.targets.get(key)?.targets ?? []);
    if (choices.length === 1) return "fx";
    const picked = await vscode.window.showQuickPick(
      choices.map((graph) => ({ label: GRAPH_LABELS[graph], graph })),
      { placeHolder: "Graph to show" },
    );
    return picked?.graph;
  }

  private panelKey(target: GraphTarget): string {
    return `${target.uri}#${target.className}${target.format ? `.${target.format}` : ""}`;
  }

  /** Whether the server knows `name` as an FX pass of `uri`. */
  private async isPass(uri: string, name: string): Promise<boolean> {
    const client = await this.runningClient(5_000);
    if (!client) return false;
    try {
      await client.sendRequest(ExecuteCommandRequest.type, { command: SHOW_GRAPH, arguments: [uri, name, PASS_FORMAT] });
      return true;
    } catch {
      return false;
    }
  }

  private async openPanel(target: GraphTarget): Promise<void> {
    const key = this.panelKey(target);
    let entry = this.panels.get(key);
    if (entry) {
      entry.graphs.shown = target.target ?? "fx";
      entry.panel.reveal(undefined, true);
    } else {
      const panel = vscode.window.createWebviewPanel(
        "fxls.graph",
        target.format === PASS_FORMAT ? `FX pass: ${target.className}` : `FX: ${target.className}`,
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
        { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(this.context.extensionUri, "dist")] },
      );
      entry = { panel, target, graphs: new GraphSelection(target.target ?? "fx") };
      this.panels.set(key, entry);
      const created = entry;
      panel.webview.onDidReceiveMessage((message: WebviewMessage) => {
        if (message?.type === "reveal" && message.span) void this.revealSource(message.span);
        // the switch: the same panel draws the module's other graph
        if (created.graphs.choose(message)) void this.render(created).catch((error) => this.log(`switching the graph: ${error}`));
        if (message?.type === "ready") {
          const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
          if (editor) this.postCursor(editor);
        }
      });
      panel.onDidDispose(() => {
        if (created.refreshTimer) clearTimeout(created.refreshTimer);
        this.panels.delete(key);
      });
    }
    await this.render(entry);
  }

  private async render(entry: GraphPanel): Promise<void> {
    let view = await this.fetchGraph(entry);
    if (view.error && !isTransient(view.error) && entry.graphs.failed()) {
      // the module no longer has that target's graph (or never had): its FX graph instead
      void vscode.window.showInformationMessage(`fxls: ${view.error}; showing the FX graph.`);
      view = await this.fetchGraph(entry);
    }
    if (!this.panels.has(this.panelKey(entry.target))) return; // closed meanwhile
    const shows = view.graph !== undefined || view.code !== undefined || view.pass !== undefined;
    if (entry.shown && !shows && isTransient(view.error)) {
      // a restarted server has not traced the file yet: keep the last graph until it has
      this.log(`graph of ${entry.target.className} kept: ${view.error}`);
      return;
    }
    entry.shown = shows;
    const webview = entry.panel.webview;
    webview.html = graphHtml({
      nonce: makeNonce((n) => crypto.randomBytes(n)),
      cspSource: webview.cspSource,
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(this.context.extensionUri, "dist", "webview.js")).toString(),
      view,
    });
  }

  private async fetchGraph(entry: GraphPanel): Promise<GraphView> {
    const { target, graphs } = entry;
    let file = target.uri;
    try {
      file = vscode.workspace.asRelativePath(vscode.Uri.parse(target.uri));
    } catch {
      // keep the URI
    }
    const view: GraphView = { name: target.className, file };
    const client = await this.runningClient(30_000);
    if (!client) {
      this.log(`graph of ${target.className}: the server is not running (${this.clientState})`);
      view.error = "The fxls server is not running: see 'fxls: Show Logs'.";
      return view;
    }
    if (target.format === PASS_FORMAT) return this.fetchPass(client, target, view);
    try {
      const result = (await client.sendRequest(ExecuteCommandRequest.type, {
        command: SHOW_GRAPH,
        arguments: graphs.request(target.uri, target.className),
      })) as GraphResult;
      if (result) {
        view.graph = JSON.parse(result.text);
        view.status = result.status;
        graphs.answered(result);
        view.switch = graphs.switch;
      }
    } catch (error) {
      view.error = errorText(error);
    }
    return view;
  }

  /** The graph view asked for a node's source: show that range in an editor (the one that
   * already shows the file, else the first column). */
  private async revealSource(span: SourceSpan): Promise<void> {
    if (await this.revealInCell(span)) return;
    try {
      const uri = vscode.Uri.file(span.file);
      const document = await vscode.workspace.openTextDocument(uri);
      const shown = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === uri.toString());
      const line = Math.max(0, span.line - 1);
      const endLine = Math.max(line, span.end_line - 1);
      const start = new vscode.Position(line, byteColumnToChar(document.lineAt(line).text, span.col));
      const end = new vscode.Position(endLine, byteColumnToChar(document.lineAt(Math.min(endLine, document.lineCount - 1)).text, span.end_col));
      await vscode.window.showTextDocument(document, {
        viewColumn: shown?.viewColumn ?? vscode.ViewColumn.One,
        selection: new vscode.Range(start, end),
        preserveFocus: false,
      });
    } catch (error) {
      this.log(`could not reveal ${span.file}:${span.line}: ${error}`);
    }
  }

  /** A span in an open notebook (its lines are those of the source the server analysed):
   * shown in its cell. False when `span.file` is no open notebook. */
  private async revealInCell(span: SourceSpan): Promise<boolean> {
    const notebook = vscode.workspace.notebookDocuments.find(
      (candidate) => candidate.notebookType === NOTEBOOK_TYPE && candidate.uri.fsPath === span.file,
    );
    if (!notebook) return false;
    const cells = notebook.getCells();
    const start = toCell(cellTexts(cells), span.line - 1);
    if (!start) return true; // the prelude: no cell to show
    const document = cells[start.cell].document;
    const end = toCell(cellTexts(cells), span.end_line - 1);
    const endLine = end && end.cell === start.cell ? end.line : start.line;
    // in the column that shows the notebook (the graph panel is the active one)
    const shown = vscode.window.visibleNotebookEditors.find((editor) => editor.notebook === notebook);
    try {
      await vscode.window.showTextDocument(document, {
        viewColumn: shown?.viewColumn ?? vscode.ViewColumn.One,
        selection: new vscode.Range(
          new vscode.Position(start.line, byteColumnToChar(document.lineAt(start.line).text, span.col)),
          new vscode.Position(endLine, byteColumnToChar(document.lineAt(endLine).text, span.end_col)),
        ),
        preserveFocus: false,
      });
    } catch (error) {
      this.log(`could not reveal ${span.file}:${span.line}: ${error}`);
    }
    return true;
  }

  /** The cursor moved in `editor`: its graph panels mark the nodes of that line (a pass's
   * before/after view: the nodes a pass line made or changed, or a model line's nodes). In
   * a notebook's cell, the line is the notebook's, in the source the server analysed. */
  private postCursor(editor: vscode.TextEditor): void {
    const notebook = notebookOf(editor.document);
    const shown = notebook?.uri ?? editor.document.uri;
    const uri = this.client ? this.client.code2ProtocolConverter.asUri(shown) : shown.toString();
    let line: number | undefined = editor.selection.active.line;
    if (notebook) {
      const cells = notebook.getCells();
      const cell = cells.findIndex((candidate) => candidate.document === editor.document);
      line = toSource(cellTexts(cells), cell, line);
    }
    if (line === undefined) return;
    for (const entry of this.panels.values()) {
      if (entry.target.uri !== uri) continue;
      void entry.panel.webview.postMessage({ type: "cursor", file: shown.fsPath, line: line + 1 });
    }
  }

  /** A pass's before/after view (`fxls.showGraph` with the format `pass`). */
  private async fetchPass(client: FxlsLanguageClient, target: GraphTarget, view: GraphView): Promise<GraphView> {
    try {
      const result = (await client.sendRequest(ExecuteCommandRequest.type, {
        command: SHOW_GRAPH,
        arguments: [target.uri, target.className, PASS_FORMAT],
      })) as GraphResult;
      view.status = result.status;
      // the graphs before and after the pass, drawn by the graph view (src/graphview/passview.ts)
      if (result.document) view.graph = result.document;
      else view.pass = { passKind: result.passKind ?? "", graphsFrom: result.graphsFrom ?? "models", runs: result.runs ?? [] };
    } catch (error) {
      view.error = errorText(error);
    }
    return view;
  }

  /** The client once it runs; waits while it is (re)starting, up to `timeoutMs`. */
  private async runningClient(timeoutMs: number): Promise<FxlsLanguageClient | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (this.clientState === "starting" || (this.clientState === "stopped" && this.client?.state === State.Starting)) {
      if (Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return this.clientState === "running" && this.client?.isRunning() ? this.client : undefined;
  }

  /** A trace of `uri` finished: re-render its open graph panels. */
  private scheduleGraphRefresh(uri: string): void {
    for (const entry of this.panels.values()) {
      const panelUri = this.client ? this.client.protocol2CodeConverter.asUri(entry.target.uri).toString() : entry.target.uri;
      if (panelUri !== uri) continue;
      if (entry.refreshTimer) clearTimeout(entry.refreshTimer);
      entry.refreshTimer = setTimeout(() => {
        entry.refreshTimer = undefined;
        void this.render(entry).catch((error) => this.log(`refreshing the graph: ${error}`));
      }, 250);
    }
  }

  dispose(): void {
    for (const entry of this.panels.values()) entry.panel.dispose();
    for (const key of [...this.tracing.keys()]) this.clearTracing(key);
    for (const disposable of this.disposables) disposable.dispose();
  }
}

/** Errors that the next trace (and its refresh) will clear by itself. */
function isTransient(error: string | undefined): boolean {
  return !!error && /not been traced yet|server is not running/.test(error);
}

function errorText(reason: unknown): string {
  if (reason instanceof Error) return reason.message;
  if (reason && typeof reason === "object" && "message" in reason) return String((reason as { message: unknown }).message);
  return String(reason);
}

let extension: FxlsExtension | undefined;

export function activate(context: vscode.ExtensionContext): void {
  extension = new FxlsExtension(context);
  context.subscriptions.push(extension);
  extension.updateStatus();
  // not awaited: activation does not wait for Python (the status bar shows "starting")
  void extension.start();
}

export async function deactivate(): Promise<void> {
  if (extension) {
    await extension.stop();
    extension = undefined;
  }
}
