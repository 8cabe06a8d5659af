import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The guides stay readable (issue 36 point 6): no prose paragraph of README.md or docs/*.md runs over
 * MAX_WORDS words, and every page opens, before its first section, with a sentence that says whom it is
 * for and what it answers. Prose means what is left once code blocks, tables, headings and HTML comments
 * are set aside; each list item is a paragraph of its own (its indented continuation lines included).
 */
const ROOT = resolve(__dirname, '..', '..');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
const MAX_WORDS = 80;

interface Paragraph {
  line: number;
  text: string;
}

const FENCE = /^\s*(```|~~~)/;
const HEADING = /^#{1,6}\s/;
const TABLE_ROW = /^\s*\|/;
const LIST_ITEM = /^\s*(?:[-*+]|\d+[.)])\s+/;

/** The prose paragraphs of a Markdown page, in order, each with the line it starts on. */
export function paragraphsOf(markdown: string): Paragraph[] {
  const paragraphs: Paragraph[] = [];
  let current: Paragraph | undefined;
  let fence: string | undefined;
  let inComment = false;
  const close = () => {
    if (current && current.text.trim() !== '') paragraphs.push({ line: current.line, text: current.text.trim() });
    current = undefined;
  };
  markdown.split('\n').forEach((raw, index) => {
    const line = raw.replace(/\r$/, '');
    if (fence !== undefined) {
      if (line.trim().startsWith(fence)) fence = undefined;
      return;
    }
    const opening = FENCE.exec(line);
    if (opening) {
      close();
      fence = opening[1];
      return;
    }
    if (inComment) {
      if (line.includes('-->')) inComment = false;
      return;
    }
    if (/^\s*<!--/.test(line)) {
      close();
      inComment = !line.includes('-->');
      return;
    }
    if (line.trim() === '' || HEADING.test(line) || TABLE_ROW.test(line)) {
      close();
      return;
    }
    if (LIST_ITEM.test(line)) {
      close();
      current = { line: index + 1, text: line.replace(LIST_ITEM, '') };
      return;
    }
    if (current) current.text += ` ${line.trim()}`;
    else current = { line: index + 1, text: line.trim() };
  });
  close();
  return paragraphs;
}

/** Words as a reader counts them: a link counts its text, not its address; bare punctuation is no word. */
export function wordsOf(text: string): number {
  return text
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .split(/\s+/)
    .filter((token) => /[\p{L}\p{N}]/u.test(token)).length;
}

/** The prose between a page's title and its first section (empty when a section or nothing comes first). */
export function openingOf(markdown: string): string {
  const lines = markdown.split('\n');
  let fence: string | undefined;
  // Headings outside code blocks (a `# comment` in a shell example is none).
  const headings = lines.map((line) => {
    const marker = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      if (line.trim().startsWith(fence)) fence = undefined;
      return false;
    }
    if (marker) fence = marker;
    return fence === undefined && HEADING.test(line);
  });
  const title = headings.findIndex((isHeading, index) => isHeading && /^#\s/.test(lines[index]));
  const firstSection = headings.findIndex((isHeading, index) => isHeading && index > title);
  const before = lines.slice(title + 1, firstSection === -1 ? lines.length : firstSection).join('\n');
  return paragraphsOf(before)
    .map((paragraph) => paragraph.text)
    .join(' ');
}

describe('the guides read in short paragraphs, each page saying first what it answers', () => {
  it('finds the prose of every page (a parsing that found none would pass anything)', () => {
    const counts = PAGES.map((page) => paragraphsOf(readFileSync(join(ROOT, page), 'utf8')).length);
    expect(counts.filter((count) => count === 0)).toEqual([]);
    expect(counts.reduce((sum, count) => sum + count, 0)).toBeGreaterThan(300);
  });

  it(`no paragraph of README.md or docs/*.md runs over ${MAX_WORDS} words`, () => {
    const long = PAGES.flatMap((page) =>
      paragraphsOf(readFileSync(join(ROOT, page), 'utf8'))
        .map((paragraph) => ({ ...paragraph, words: wordsOf(paragraph.text) }))
        .filter((paragraph) => paragraph.words > MAX_WORDS)
        .map((paragraph) => `${page}:${paragraph.line} has ${paragraph.words} words: ${paragraph.text.slice(0, 60)}…`),
    );
    expect(long).toEqual([]);
  });

  it('every page opens with a sentence before its first section', () => {
    const silent = PAGES.filter((page) => !/[\p{L}\p{N}].*[.?:]/u.test(openingOf(readFileSync(join(ROOT, page), 'utf8'))));
    expect(silent).toEqual([]);
  });

  it('splits a page into prose paragraphs: list items apart, code, tables, headings and comments left out', () => {
    const page = [
      '# Title',
      '',
      'An opening sentence',
      'that goes on.',
      '',
      '## Section',
      '- one item',
      '  continued',
      '- another item',
      '',
      '| a | b |',
      '|---|---|',
      '```bash',
      'echo not prose',
      '',
      'still code',
      '```',
      '<!-- generated: x -->',
      'Generated prose.',
      '<!-- /generated: x -->',
      '<!-- a comment',
      'over lines -->',
      '1. numbered',
    ].join('\n');
    expect(paragraphsOf(page)).toEqual([
      { line: 3, text: 'An opening sentence that goes on.' },
      { line: 7, text: 'one item continued' },
      { line: 9, text: 'another item' },
      { line: 19, text: 'Generated prose.' },
      { line: 23, text: 'numbered' },
    ]);
    expect(wordsOf('See [the API guide](docs/api.md#very-long-anchor) — now.')).toBe(5);
    expect(openingOf(page)).toBe('An opening sentence that goes on.');
    expect(openingOf('# Title\n\n## First section\n\nText.')).toBe('');
    expect(openingOf('# Title\n\nSays what.\n```bash\n# a comment\n```\nMore.\n## Section')).toBe('Says what. More.');
  });
});
