// When a crashed server is restarted: at most `maxRestarts` times in `windowMs`.

export class CrashTracker {
  private readonly times: number[] = [];

  constructor(
    readonly maxRestarts = 4,
    readonly windowMs = 3 * 60 * 1000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Record one crash; true when the server should be restarted. */
  crashed(): boolean {
    const t = this.now();
    this.times.push(t);
    while (this.times.length && t - this.times[0] > this.windowMs) this.times.shift();
    return this.times.length <= this.maxRestarts;
  }

  /** Crashes counted in the current window. */
  get recent(): number {
    const t = this.now();
    return this.times.filter((x) => t - x <= this.windowMs).length;
  }

  reset(): void {
    this.times.length = 0;
  }
}
