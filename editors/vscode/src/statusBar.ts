// The status bar item: shows `statusFor(...)` for the active editor.
import * as vscode from "vscode";
import { Status, StatusAction, StatusInput, statusFor } from "./status";

const ACTION_COMMANDS: Record<StatusAction, string> = {
  showLogs: "fxls.showLogs",
  showProblems: "workbench.actions.view.problems",
  showGraph: "fxls.showGraph",
  restart: "fxls.restart",
};

export class StatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  last: Status | undefined;

  constructor() {
    this.item = vscode.window.createStatusBarItem("fxls.status", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "fxls";
  }

  update(input: StatusInput): Status {
    const status = statusFor(input);
    this.last = status;
    this.item.text = status.text;
    this.item.tooltip = status.tooltip;
    this.item.command = ACTION_COMMANDS[status.action];
    this.item.backgroundColor =
      status.level === "error"
        ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : status.level === "warning"
          ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
    if (status.visible) this.item.show();
    else this.item.hide();
    return status;
  }

  dispose(): void {
    this.item.dispose();
  }
}
