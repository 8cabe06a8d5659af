/**
 * The items in flight (requests, calls), for a long-lived owner that adds and removes one per call:
 * a doubly linked list whose removal clears the node's links.
 *
 * Not a Set or a Map: V8 rehashes a Set's table every few additions when entries come and go, and
 * the table it replaces keeps the entries it held and a link to the new one. Observed in the service
 * on Node 24: once the process had been through a major GC (or a quiet moment with the pollers'
 * scavenges), those replaced tables, dead in the old generation, kept the responses in flight when
 * each was replaced alive through the scavenges, so most requests were promoted to the old generation,
 * where only a major GC takes them back: 8.4 KB promoted per cache-hit call with a Set in HttpDrain,
 * 1.45 KB with this list (docs/architecture.md, "What a call may leave behind"). A removed node links to nothing, so a
 * dead node keeps nothing alive.
 */
export class InFlightList<T> {
  private head: Node<T> | undefined;
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Adds `item`; the function returned removes it (again: nothing). */
  add(item: T): () => void {
    const node: Node<T> = { item, previous: undefined, next: this.head, linked: true };
    if (this.head) this.head.previous = node;
    this.head = node;
    this.count++;
    return () => this.remove(node);
  }

  /** The items in flight now, newest first: a copy, so the caller may remove any of them meanwhile. */
  items(): T[] {
    const items: T[] = [];
    for (let node = this.head; node; node = node.next) items.push(node.item);
    return items;
  }

  private remove(node: Node<T>): void {
    if (!node.linked) return;
    if (node.previous) node.previous.next = node.next;
    else this.head = node.next;
    if (node.next) node.next.previous = node.previous;
    node.previous = undefined;
    node.next = undefined;
    node.linked = false;
    this.count--;
  }
}

interface Node<T> {
  item: T;
  previous: Node<T> | undefined;
  next: Node<T> | undefined;
  linked: boolean;
}
