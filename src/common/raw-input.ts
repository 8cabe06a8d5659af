import { AppError } from './errors';

/**
 * Keys no request field is ever called, that JavaScript gives a meaning: class-transformer drops them
 * silently (so the unknown-field rule never sees them) and, merged into an object, they could reach
 * its prototype. Refused as unknown fields wherever they appear in a body or a query.
 */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * C0 and C1 control characters (U+0000 to U+001F, U+007F to U+009F: NUL is refused by PostgreSQL text,
 * the rest has no place in a field) and the bidirectional embeddings, overrides and isolates
 * (U+202A to U+202E, U+2066 to U+2069), which make a reference or a name display as other text than it
 * holds. The marks U+200E/U+200F that right-to-left text needs stay allowed.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is this rule's purpose
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/**
 * The one rule for every string a client sends (body, query, path), checked on the raw input before
 * any transformation, validation or database call: throws 400 INVALID_REQUEST naming the field when
 * a string holds a control character or a lone surrogate, or a key is a prototype key. `root` names the value itself
 * (a path parameter's name), or is empty for an object whose keys are the fields (a body, a query).
 * Iterative: bodies are at most 32 levels deep, but a walk must not trust that.
 */
export function refuseUnsafeInput(value: unknown, root = ''): void {
  const stack: Array<[unknown, string]> = [[value, root]];
  while (stack.length > 0) {
    const [node, path] = stack.pop()!;
    if (typeof node === 'string') {
      refuseUnsafeString(node, path || 'the value');
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    const isArray = Array.isArray(node);
    for (const key of Object.keys(node)) {
      const field = isArray ? `${path}[${key}]` : path ? `${path}.${key}` : key;
      if (!isArray && PROTOTYPE_KEYS.has(key)) throw new AppError('INVALID_REQUEST', `unknown field "${field}".`);
      refuseUnsafeString(key, `the name of field "${field}"`);
      stack.push([(node as Record<string, unknown>)[key], field]);
    }
  }
}

/**
 * A control character, or a lone UTF-16 surrogate (`"\ud800"` in JSON): not a character at all, so
 * PostgreSQL's jsonb refuses it (the audit row of an admin action would fail) and no text means it.
 */
function refuseUnsafeString(text: string, field: string): void {
  const found = CONTROL_CHARACTER.exec(text);
  if (found) throw controlCharacter(field, found[0]);
  if (!text.isWellFormed()) {
    throw new AppError('INVALID_REQUEST', `${field} is not well-formed Unicode (a lone surrogate); send UTF-8 text.`);
  }
}

function controlCharacter(field: string, character: string): AppError {
  const code = `U+${character.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
  const kind = character >= '\u202a' ? 'a bidirectional override' : 'a control character';
  return new AppError('INVALID_REQUEST', `${field} contains ${kind} (${code}); control characters and bidirectional overrides are not accepted.`);
}
