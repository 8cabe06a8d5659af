import { existsSync, readFileSync } from 'node:fs';
import { folderOf, sourceFiles } from './source-files';
import { dirname, join, relative, resolve } from 'node:path';
import { preProcessFile } from 'typescript';

/**
 * The shape of src/ (docs/architecture.md, "The shape of src/"): common/ is the ground floor, which
 * imports no other folder, and checks/, erasures/ and metrics/ are leaves, which import only the ground floor; no two folders import each other
 * (a cycle means an orchestrator is missing); the answer without billing lives in provider/, so no
 * feature reaches into filter/; no file imports itself back through any chain of imports; and
 * provider/ is built in layers (PROVIDER_LAYERS) that import only the layers below. main.ts and
 * app.module.ts, directly in src/, assemble the app and may import anything.
 */
const SRC = join(__dirname, '..');
/** Leaves: they stand on the ground floor (common/) and import nothing else. */
const LEAVES = ['checks', 'erasures', 'metrics'];

/**
 * provider/'s parts, lowest first: a file imports its own part and the parts below it. `(face)` is
 * what the rest of src/ uses (lookup.service.ts, provider-health.ts); provider.module.ts assembles
 * every part and is imported only from outside.
 */
const PROVIDER_LAYERS: ReadonlyArray<readonly string[]> = [
  ['port'],
  ['numbering', 'resilience', 'cache'],
  ['adapters'],
  ['routing'],
  ['(face)'],
  ['metrics'],
  ['(module)'],
];
/** What a file outside provider/ may import of it. */
const PROVIDER_FACE = ['(face)', '(module)', 'port'];

/**
 * risk/ is an orchestrator like filter/ (docs/architecture.md): it imports the leaves it asks (and auth/'s
 * customer-API decorator, like every /api/v1 controller), and nothing imports its routes or service:
 * others reach only its records (retention and erasure) and its verdict without billing (bulk jobs
 * with `risk: true`, and the verdict's one response shape), through these files.
 */
const RISK_IMPORTS = ['auth', 'checks', 'common', 'config', 'credits', 'erasures', 'idempotency', 'provider', 'settings'];
const RISK_OPEN_TO_OTHERS = ['risk/risk-store.module.ts', 'risk/risk-records.ts', 'risk/risk-verdict.module.ts', 'risk/risk-verdicts.ts', 'risk/dto/risk.dto.ts'];

/** Imports of risk/ files from outside it that are not its records. */
function riskBreaks(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const breaks: string[] = [];
  for (const [file, imported] of graph) {
    // main.ts and app.module.ts assemble the app.
    if (folderOf(file) === 'risk' || folderOf(file) === undefined) continue;
    for (const target of imported) {
      if (folderOf(target) === 'risk' && !RISK_OPEN_TO_OTHERS.includes(relative(SRC, target))) breaks.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
    }
  }
  return breaks;
}

/** Every relative import (also `import type`, `export … from`, `import()`) of a file, resolved to a file of src/. */
function importsOf(file: string, text = readFileSync(file, 'utf8')): string[] {
  return preProcessFile(text, true, true)
    .importedFiles.map(({ fileName }) => fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => resolve(dirname(file), name))
    .map((path) => [`${path}.ts`, join(path, 'index.ts'), path].find((candidate) => existsSync(candidate)) ?? `${path}.ts`);
}

/** The file graph of src/: each source file and the files it imports. */
function fileGraph(): Map<string, string[]> {
  return new Map(sourceFiles(SRC).map((file) => [file, importsOf(file)]));
}

/** "from -> to" for every import that crosses folders. */
function folderEdges(graph: Map<string, string[]>): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const [file, imported] of graph) {
    const from = folderOf(file);
    if (!from) continue;
    for (const target of imported) {
      const to = folderOf(target);
      if (!to || to === from) continue;
      const key = `${from} -> ${to}`;
      edges.set(key, [...(edges.get(key) ?? []), relative(SRC, file)]);
    }
  }
  return edges;
}

/**
 * Every import circle among files (Tarjan's strongly connected components of more than one file, or a
 * file importing itself), each as its files relative to src/, sorted.
 */
export function importCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, counter);
    low.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) circles.push(component.map((path) => relative(SRC, path)).sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return circles;
}

/** The part of provider/ a file of it is in (its sub-folder, or `(face)` / `(module)` at its top). */
function providerPart(file: string): string | undefined {
  const parts = relative(join(SRC, 'provider'), file).split('/');
  if (parts[0] === '..') return undefined;
  if (parts.length > 1) return parts[0];
  return parts[0] === 'provider.module.ts' ? '(module)' : '(face)';
}

function layerOf(part: string): number {
  return PROVIDER_LAYERS.findIndex((layer) => layer.includes(part));
}

/** Imports that break provider/'s layering: a part importing one at its level or above, an outsider importing an inner part. */
function providerLayerBreaks(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const breaks: string[] = [];
  for (const [file, imported] of graph) {
    const from = providerPart(file);
    for (const target of imported) {
      const to = providerPart(target);
      if (to === undefined || from === to) continue;
      const allowed = from === undefined ? PROVIDER_FACE.includes(to) : layerOf(from) > layerOf(to);
      if (!allowed) breaks.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
    }
  }
  return breaks;
}

describe('the import graph of src/', () => {
  const graph = fileGraph();
  const edges = folderEdges(graph);

  it('finds the imports it checks', () => {
    expect(edges.has('filter -> provider')).toBe(true);
    expect(graph.get(join(SRC, 'provider/provider.module.ts'))).toContain(join(SRC, 'provider/routing/failover-provider.ts'));
  });

  it('common/, the ground floor, imports no other folder of src/', () => {
    expect([...edges.keys()].filter((edge) => edge.startsWith('common -> '))).toEqual([]);
  });

  it.each(LEAVES)('%s/ imports no other folder of src/ but the ground floor, common/', (leaf) => {
    expect([...edges.keys()].filter((edge) => edge.startsWith(`${leaf} -> `) && edge !== `${leaf} -> common`)).toEqual([]);
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

  it('has no import circle among its files, type-only imports included', () => {
    expect(importCircles(graph)).toEqual([]);
  });

  it('builds provider/ in layers: each part imports only the parts below it, the rest of src/ only its face and port', () => {
    const parts = new Set([...graph.keys()].map(providerPart).filter((part) => part !== undefined));
    expect([...parts].filter((part) => layerOf(part) < 0)).toEqual([]);
    expect(providerLayerBreaks(graph)).toEqual([]);
  });

  it('keeps risk/ an orchestrator: it imports only the modules it asks, and others reach only its records', () => {
    const imported = [...edges.keys()].filter((edge) => edge.startsWith('risk -> ')).map((edge) => edge.slice('risk -> '.length));
    expect(imported.filter((folder) => !RISK_IMPORTS.includes(folder))).toEqual([]);
    expect(riskBreaks(graph)).toEqual([]);
  });

  it('holds at most three code files directly in src/', () => {
    expect([...graph.keys()].filter((file) => folderOf(file) === undefined).map((file) => relative(SRC, file)).sort()).toEqual([
      'app.module.ts',
      'main.ts',
    ]);
  });

  describe('catches a planted', () => {
    const at = (path: string) => join(SRC, path);

    it('circle: the port importing back the failure type that imports it (the circle of the old provider/)', () => {
      const planted = new Map(graph);
      const text = `import type { LookupProvider } from '../port/lookup-provider';`;
      planted.set(at('provider/port/upstream-failure.ts'), importsOf(at('provider/resilience/planted.ts'), text));
      expect(importCircles(planted)).toEqual([
        ['provider/port/lookup-provider.ts', 'provider/port/provider-attempts.ts', 'provider/port/upstream-failure.ts', 'provider/port/upstream-tally.ts'],
      ]);
    });

    it('file that imports itself', () => {
      expect(importCircles(new Map([[at('common/a.ts'), [at('common/a.ts')]]]))).toEqual([['common/a.ts']]);
    });

    it("feature that imports risk/'s service instead of its records", () => {
      const planted = new Map(graph);
      planted.set(at('bulk/planted.ts'), [at('risk/risk.service.ts'), at('risk/risk-records.ts')]);
      expect(riskBreaks(planted)).toEqual(['bulk/planted.ts -> risk/risk.service.ts']);
    });

    it('port that imports an adapter, and a feature that imports a cache', () => {
      const planted = new Map(graph);
      planted.set(at('provider/port/planted.ts'), [at('provider/adapters/sandbox.adapter.ts')]);
      planted.set(at('filter/planted.ts'), [at('provider/cache/lookup-cache.store.ts')]);
      expect(providerLayerBreaks(planted).sort()).toEqual([
        'filter/planted.ts -> provider/cache/lookup-cache.store.ts',
        'provider/port/planted.ts -> provider/adapters/sandbox.adapter.ts',
      ]);
    });
  });
});
