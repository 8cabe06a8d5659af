import { readFileSync } from 'node:fs';
import { folderOf, sourceFiles } from './source-files';
import { dirname, relative, resolve } from 'node:path';
import { preProcessFile } from 'typescript';

/**
 * The shape of src/: common/ is the ground floor and checks/ and metrics/ are leaves, so they import
 * no other folder; no two folders import each other (a cycle means an orchestrator is missing); the
 * answer without billing lives in provider/, so no feature reaches into filter/. Files directly in
 * src/ (main.ts, app.module.ts, http-setup.ts...) assemble the app and may import anything.
 */
const SRC = __dirname;
const GROUND_FLOOR_AND_LEAVES = ['common', 'checks', 'metrics'];

/** "from -> to" for every import (also `import type`, `export … from`, `import()`) that crosses folders. */
function folderEdges(): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const from = folderOf(file);
    if (!from) continue;
    for (const { fileName } of preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const to = folderOf(resolve(dirname(file), fileName));
      if (!to || to === from) continue;
      const key = `${from} -> ${to}`;
      edges.set(key, [...(edges.get(key) ?? []), relative(SRC, file)]);
    }
  }
  return edges;
}

describe('the import graph of src/', () => {
  const edges = folderEdges();

  it('finds the imports it checks', () => {
    expect(edges.has('filter -> provider')).toBe(true);
  });

  it.each(GROUND_FLOOR_AND_LEAVES)('%s/ imports no other folder of src/', (leaf) => {
    expect([...edges.keys()].filter((edge) => edge.startsWith(`${leaf} -> `))).toEqual([]);
  });

  it('has no two folders that import each other', () => {
    const mutual = [...edges.keys()].filter((edge) => {
      const [from, to] = edge.split(' -> ');
      return from < to && edges.has(`${to} -> ${from}`);
    });
    expect(mutual).toEqual([]);
  });

  it('has no feature that imports the billed /filter feature', () => {
    expect([...edges.keys()].filter((edge) => edge.endsWith(' -> filter'))).toEqual([]);
  });
});
