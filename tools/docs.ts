/**
 * Writes the generated parts of the documentation (`npm run docs`): the regions of README.md and
 * docs/*.md marked `<!-- generated: … -->`, and .env.example, from the check definitions, the adapters'
 * descriptors and the environment schema (tools/docs/render.ts). `--check` writes nothing and exits 1
 * when a file is stale, naming it, as `npm run openapi:check` does for openapi.json. Needs no database.
 */
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { docSources, generatedFiles, staleFiles } from './docs/render';

const ROOT = resolve(__dirname, '..');

function main(argv: string[]): number {
  const sources = docSources();
  if (argv.includes('--check')) {
    const stale = staleFiles(ROOT, sources);
    if (stale.length === 0) {
      console.log('the generated docs are current');
      return 0;
    }
    console.error(`stale, run npm run docs: ${stale.join(', ')}`);
    return 1;
  }
  const stale = new Set(staleFiles(ROOT, sources));
  for (const [file, text] of generatedFiles(ROOT, sources)) {
    if (!stale.has(file)) continue;
    writeFileSync(join(ROOT, file), text);
    console.log(`wrote ${file}`);
  }
  if (stale.size === 0) console.log('the generated docs are unchanged');
  return 0;
}

process.exit(main(process.argv.slice(2)));
