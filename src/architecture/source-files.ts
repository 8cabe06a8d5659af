import { readdirSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/** What the structure specs (import-graph.spec.ts, table-ownership.spec.ts) read of src/. */
const SRC = join(__dirname, '..');

/** Every non-spec TypeScript file under `folder`. */
export function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** Top folder of src/ a path is in; undefined for files directly in src/ and anything outside it. */
export function folderOf(path: string): string | undefined {
  const parts = relative(SRC, path).split(sep);
  return parts.length > 1 && parts[0] !== '..' ? parts[0] : undefined;
}
