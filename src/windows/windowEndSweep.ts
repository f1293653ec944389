/** What the sweep holds, with the marks it keeps on each entry. */
export interface Swept {
  /** Set once the entry holds nothing any more: it is skipped wherever it is still listed. */
  gone: boolean;
  /** The end the entry was added to last, and the end it fired at last (NaN: none). */
  addedAt: number;
  firedAt: number;
}

/**
 * The keys whose windows fire at each window end, for a window operator whose only timers would be "fire the key's
 * window at its end": in place of a timer per key and window, each window end lists the entries (one per key,
 * holding what the operator knows of the key) that fire at it, and a watermark walks the ends in ascending order,
 * each list in the order its entries were added, as a timer queue fires the timers of one time and window. Firing
 * then needs no lookup from a key back to what the operator keeps for it, and no timer namespace to parse.
 *
 * An entry fires once per end however often it was added there: adding it again to the end it was added to last
 * does nothing, and a copy listed further down (added to another end in between) is skipped when the end fires.
 */
export class WindowEndSweep<E extends Swept> {
  private readonly due = new Map<number, E[]>();
  /** The ends with entries, ascending; few (the windows open at once), so kept sorted by insertion. */
  private readonly ends: number[] = [];
  /** The list added to last: consecutive records and a firing mostly add to the same end. */
  private lastEnd = Number.NaN;
  private lastList: E[] | undefined;

  /** Makes `entry` fire at `end`. */
  add(entry: E, end: number): void {
    if (entry.addedAt === end) return;
    entry.addedAt = end;
    let list: E[] | undefined;
    if (end === this.lastEnd) list = this.lastList!;
    else {
      list = this.due.get(end);
      if (list === undefined) {
        this.due.set(end, (list = []));
        const ends = this.ends;
        let i = ends.length;
        while (i > 0 && ends[i - 1]! > end) i--;
        ends.splice(i, 0, end);
      }
      this.lastEnd = end;
      this.lastList = list;
    }
    list.push(entry);
  }

  /** The earliest end some entry fires at, or undefined. */
  next(): number | undefined {
    return this.ends[0];
  }

  /**
   * Removes the earliest end and calls `fire` for each of its entries, in the order added, once each and not for
   * those gone. Entries added meanwhile go to later ends (a window's firing makes the next one fire).
   */
  fireNext(fire: (entry: E) => void): void {
    const end = this.ends.shift()!;
    const list = this.due.get(end)!;
    this.due.delete(end);
    if (end === this.lastEnd) {
      this.lastEnd = Number.NaN;
      this.lastList = undefined;
    }
    for (let i = 0; i < list.length; i++) {
      const entry = list[i]!;
      if (entry.gone || entry.firedAt === end) continue;
      entry.firedAt = end;
      fire(entry);
    }
  }

  /** Visits every entry not gone with each end it fires at, ascending by end, each end's in the order added. */
  forEach(visit: (end: number, entry: E) => void): void {
    for (const end of this.ends) {
      const seen = new Set<E>();
      for (const entry of this.due.get(end)!) {
        if (entry.gone || seen.has(entry)) continue;
        seen.add(entry);
        visit(end, entry);
      }
    }
  }
}
