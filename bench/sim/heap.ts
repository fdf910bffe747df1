/** Min-heap by a numeric key, ties by insertion. */
export class Heap<T> {
  private readonly items: Array<{ key: number; seq: number; value: T }> = [];
  private seq = 0;
  get size(): number {
    return this.items.length;
  }
  peekKey(): number {
    return this.items[0]?.key ?? Number.POSITIVE_INFINITY;
  }
  peek(): T | undefined {
    return this.items[0]?.value;
  }
  values(): T[] {
    return this.items.map((i) => i.value);
  }
  push(key: number, value: T): void {
    const a = this.items;
    a.push({ key, seq: this.seq++, value });
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(i, p)) break;
      [a[i], a[p]] = [a[p] as (typeof a)[number], a[i] as (typeof a)[number]];
      i = p;
    }
  }
  pop(): T | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.less(l, m)) m = l;
        if (r < a.length && this.less(r, m)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m] as (typeof a)[number], a[i] as (typeof a)[number]];
        i = m;
      }
    }
    return top?.value;
  }
  private less(i: number, j: number): boolean {
    const x = this.items[i] as { key: number; seq: number };
    const y = this.items[j] as { key: number; seq: number };
    return x.key < y.key || (x.key === y.key && x.seq < y.seq);
  }
}
