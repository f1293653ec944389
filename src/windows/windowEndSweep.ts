/** What the sweep holds: `gone` once it holds nothing any more (it is then skipped wherever it is still listed). */
export interface Swept {
  gone: boolean;
}

/**
 * The keys whose windows fire at each window end, for a window operator whose only timers would be "fire the key's
 * window at its end": in place of a timer per key and window, each window end has the set of entries (one per key,
 * holding what the operator knows of the key) that fire at it, and a watermark walks the ends in ascending order,
 * each set in the order its entries were added, as a timer queue fires the timers of one time and window. Firing
 * then needs no lookup from a key back to what the operator keeps for it, and no timer namespace to parse.
 */
export class WindowEndSweep<E extends Swept> {
  private readonly due = new Map<number, Set<E>>();
  /** The ends with entries, ascending; few (the windows open at once), so kept sorted by insertion. */
  private readonly ends: number[] = [];
  /** The set added to last: consecutive records and a firing mostly add to the same end. */
  private lastEnd = Number.NaN;
  private lastSet: Set<E> | undefined;

  /** Makes `entry` fire at `end` (once, however often it is added). */
  add(entry: E, end: number): void {
    let set: Set<E> | undefined;
    if (end === this.lastEnd) set = this.lastSet!;
    else {
      set = this.due.get(end);
      if (set === undefined) {
        this.due.set(end, (set = new Set()));
        const ends = this.ends;
        let i = ends.length;
        while (i > 0 && ends[i - 1]! > end) i--;
        ends.splice(i, 0, end);
      }
      this.lastEnd = end;
      this.lastSet = set;
    }
    set.add(entry);
  }

  /** The earliest end some entry fires at, or undefined. */
  next(): number | undefined {
    return this.ends[0];
  }

  /** Removes the earliest end and returns its entries in the order added (some may be gone since). */
  takeNext(): ReadonlySet<E> {
    const end = this.ends.shift()!;
    const set = this.due.get(end)!;
    this.due.delete(end);
    if (end === this.lastEnd) {
      this.lastEnd = Number.NaN;
      this.lastSet = undefined;
    }
    return set;
  }

  /** Visits every entry not gone with each end it fires at, ascending by end, each end's in the order added. */
  forEach(visit: (end: number, entry: E) => void): void {
    for (const end of this.ends) for (const entry of this.due.get(end)!) if (!entry.gone) visit(end, entry);
  }
}
