/**
 * JSON.parse keeps the last of two equal keys (`{"phone":A,"phone":B}` is B), so a body read two ways
 * (a proxy, a log, a signature check that keeps the first) could mean two things: the service refuses
 * it instead (issue 35 point 5). The cost on the hot path is one native scan for ':' bytes and the key
 * count of the walk the body gets anyway: every key is followed by exactly one ':' outside strings, so
 * a body with as many colons as parsed keys has no duplicate. Only a body with more (a colon inside a
 * string, such as a URL, or a real duplicate) is tokenized, once, by `duplicateKey`.
 */

const COLON = 0x3a;

/** How many ':' bytes the raw body holds (Buffer.indexOf: native). */
export function colonCount(raw: Buffer): number {
  let count = 0;
  for (let at = raw.indexOf(COLON); at !== -1; at = raw.indexOf(COLON, at + 1)) count++;
  return count;
}

interface ObjectFrame {
  kind: 'object';
  path: string;
  keys: Set<string>;
  awaitingKey: boolean;
  current: string;
}
interface ArrayFrame {
  kind: 'array';
  path: string;
  index: number;
}

/**
 * The path (as refuseUnsafeInput names fields: `a.b`, `list[2].c`) of the first key an object of this
 * JSON text holds twice, or null. Keys are compared as JSON.parse reads them (`"a"` and `"\u0061"` are
 * one key). `text` must be valid JSON: it is scanned after JSON.parse accepted it.
 */
export function duplicateKey(text: string): string | null {
  const stack: Array<ObjectFrame | ArrayFrame> = [];
  const childPath = (): string => {
    const top = stack.at(-1);
    if (!top) return '';
    if (top.kind === 'array') return `${top.path}[${top.index}]`;
    return top.path ? `${top.path}.${top.current}` : top.current;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let end = i + 1;
      while (text.charCodeAt(end) !== 0x22) end += text.charCodeAt(end) === 0x5c /* \ */ ? 2 : 1;
      const top = stack.at(-1);
      if (top?.kind === 'object' && top.awaitingKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (top.keys.has(key)) return top.path ? `${top.path}.${key}` : key;
        top.keys.add(key);
        top.current = key;
        top.awaitingKey = false;
      }
      i = end;
    } else if (c === 0x7b /* { */) {
      stack.push({ kind: 'object', path: childPath(), keys: new Set(), awaitingKey: true, current: '' });
    } else if (c === 0x5b /* [ */) {
      stack.push({ kind: 'array', path: childPath(), index: 0 });
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
    } else if (c === 0x2c /* , */) {
      const top = stack.at(-1);
      if (top?.kind === 'object') top.awaitingKey = true;
      else if (top) top.index++;
    }
  }
  return null;
}
