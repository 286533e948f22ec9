// The bits of the `vscode` API that the unit-tested modules touch; esbuild aliases `vscode`
// to this file when bundling the tests.

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class StubStatusBarItem {
  text = "";
  tooltip: string | undefined;
  command: string | undefined;
  name: string | undefined;
  backgroundColor: ThemeColor | undefined;
  visible = false;
  disposed = false;
  constructor(
    readonly id: string,
    readonly alignment: StatusBarAlignment,
    readonly priority: number,
  ) {}
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {
    this.disposed = true;
  }
}

export const created: StubStatusBarItem[] = [];

export const window = {
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number): StubStatusBarItem {
    const item = new StubStatusBarItem(id, alignment, priority);
    created.push(item);
    return item;
  },
};
