import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { GENERATED_KEY_FILE } from '../config/data-hash-key';
import { DEFAULT_EMBEDDED_PG_DIR } from '../database/embedded-postgres-staging';

/**
 * Every relative link of README.md and docs/*.md reaches a file of the repository, and every #anchor a
 * heading (or an explicit anchor) of its page, as GitHub renders them. Links to other sites are not
 * followed (no network in tests).
 */
const ROOT = resolve(__dirname, '..', '..');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

/** The text outside fenced code blocks and inline code, where a link is a link. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[\s\S]*?^\1/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's heading ids: lower case, punctuation dropped (not `-` and `_`), spaces to `-`, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutFences = markdown.replace(/^(```|~~~)[\s\S]*?^\1/gm, '');
  for (const [, heading] of withoutFences.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '');
    const slug = text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const [, id] of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id);
  return anchors;
}

interface Link {
  page: string;
  target: string;
}

function linksOf(page: string): Link[] {
  const text = prose(readFileSync(join(ROOT, page), 'utf8'));
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map(([, target]) => target);
  const references = [...text.matchAll(/^\s*\[[^\]]+\]:\s+(\S+)/gm)].map(([, target]) => target);
  return [...inline, ...references].filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target)).map((target) => ({ page, target }));
}

/** Why a link does not resolve, or undefined when it does. */
function brokenBecause({ page, target }: Link): string | undefined {
  const [path, anchor] = target.split('#', 2);
  const file = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), decodeURIComponent(path));
  if (!file.startsWith(ROOT)) return `points outside the repository (${relative(ROOT, file)})`;
  if (!existsSync(file)) return `${relative(ROOT, file)} does not exist`;
  if (anchor === undefined || anchor === '') return undefined;
  if (statSync(file).isDirectory() || !file.endsWith('.md')) return `#${anchor} on a file that has no headings`;
  return anchorsOf(readFileSync(file, 'utf8')).has(decodeURIComponent(anchor)) ? undefined : `${relative(ROOT, file)} has no heading #${anchor}`;
}

describe('links of README.md and docs/', () => {
  const links = PAGES.flatMap(linksOf);

  it('finds the links (a change to the parsing that finds none would pass anything)', () => {
    expect(links.length).toBeGreaterThan(50);
    expect(links.filter((link) => link.target.includes('#')).length).toBeGreaterThan(10);
  });

  it('every relative link reaches a file of the repository, and every #anchor a heading of it', () => {
    const broken = links.flatMap((link) => {
      const reason = brokenBecause(link);
      return reason ? [`${link.page}: (${link.target}) ${reason}`] : [];
    });
    expect(broken).toEqual([]);
  });

  it('computes the anchors GitHub gives headings', () => {
    const page = ['# Phone Filter', '## Several upstreams (`LOOKUP_PROVIDERS`)', '## 9. Bulk lookups and webhooks', '## Notes', '## Notes', '```', '# not a heading', '```'].join('\n');
    expect([...anchorsOf(page)]).toEqual(['phone-filter', 'several-upstreams-lookup_providers', '9-bulk-lookups-and-webhooks', 'notes', 'notes-1']);
  });

  it("README's clean-up names every file the service keeps in the checkout", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const cleanUp = readme.slice(readme.indexOf('## Clean up'), readme.indexOf('\n## ', readme.indexOf('## Clean up') + 1));
    const kept = [DEFAULT_EMBEDDED_PG_DIR, `${DEFAULT_EMBEDDED_PG_DIR}.password`, `${DEFAULT_EMBEDDED_PG_DIR}.demo-account`, GENERATED_KEY_FILE];
    expect(kept.filter((file) => !cleanUp.includes(`\`${file}\``))).toEqual([]);
  });
});
