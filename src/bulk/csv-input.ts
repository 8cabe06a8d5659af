import { AppError } from '../common/errors';
import { BulkEntryInput, isReference, REFERENCE_RULE } from './entry-input';

/** A row of an uploaded CSV with the line it starts on (1 = the header row). */
export interface CsvRow {
  line: number;
  cells: string[];
}

/**
 * RFC 4180 text to rows: comma-separated cells, double quotes around cells holding commas, quotes
 * or line breaks ("" for a quote), CRLF or LF line ends, an optional UTF-8 BOM. Blank lines are
 * skipped. An unterminated quote or text after a closing quote is a 400 naming its line.
 */
export function parseCsv(text: string): CsvRow[] {
  const rows: CsvRow[] = [];
  let line = 1;
  let i = text.startsWith('\uFEFF') ? 1 : 0;
  while (i < text.length) {
    const rowLine = line;
    const cells: string[] = [];
    for (;;) {
      let cell = '';
      if (text[i] === '"') {
        i++;
        for (;;) {
          if (i >= text.length) throw csvError(rowLine, 'a quoted cell is not closed');
          if (text[i] === '"') {
            if (text[i + 1] === '"') {
              cell += '"';
              i += 2;
              continue;
            }
            i++;
            break;
          }
          if (text[i] === '\n') line++;
          cell += text[i++];
        }
        if (i < text.length && text[i] !== ',' && text[i] !== '\r' && text[i] !== '\n') {
          throw csvError(rowLine, 'text after a closing quote (write a quote inside a quoted cell as "")');
        }
      } else {
        while (i < text.length && text[i] !== ',' && text[i] !== '\r' && text[i] !== '\n') {
          if (text[i] === '"') throw csvError(rowLine, 'a quote inside an unquoted cell (quote the whole cell)');
          cell += text[i++];
        }
      }
      cells.push(cell);
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === '\r') i++;
      if (text[i] === '\n') i++;
      line++;
      break;
    }
    if (!(cells.length === 1 && cells[0].trim() === '')) rows.push({ line: rowLine, cells });
  }
  return rows;
}

/**
 * The entries of a bulk upload: a header row naming a `phone` column and optionally a `reference`
 * column (any order, any case; other columns are ignored), then one entry per row, at most
 * `maxRows`. Errors name the line, so a user can fix the file.
 */
export function bulkEntriesFromCsv(text: string, maxRows: number): Array<BulkEntryInput & { line: number }> {
  const [header, ...rows] = parseCsv(text);
  if (!header) throw csvError(1, 'the file is empty: send a header row with a "phone" column, then one number per row');
  const names = header.cells.map((cell) => cell.trim().toLowerCase());
  const phoneColumn = names.indexOf('phone');
  const referenceColumn = names.indexOf('reference');
  if (phoneColumn < 0) throw csvError(header.line, 'the header row has no "phone" column');
  if (names.indexOf('phone', phoneColumn + 1) >= 0 || (referenceColumn >= 0 && names.indexOf('reference', referenceColumn + 1) >= 0)) {
    throw csvError(header.line, 'the header row names a column twice');
  }
  if (rows.length === 0) {
    // Numbers in the header row: the file lost its line breaks on the way (`curl -d @file` drops them).
    const flattened = /\d{6}/.test(header.cells.join(','));
    const hint = flattened ? ' (the line breaks are missing: `curl -d @file` removes them; send the file with `--data-binary @file`)' : '';
    throw csvError(header.line + 1, `no rows after the header: send 1 to ${maxRows} numbers, one per line${hint}`);
  }
  if (rows.length > maxRows) throw csvError(rows[maxRows].line, `more than ${maxRows} rows (the limit of one job)`);
  return rows.map(({ line, cells }) => {
    if (cells.length !== header.cells.length) {
      throw csvError(line, `${cells.length} cells where the header has ${header.cells.length}`);
    }
    const reference = referenceColumn >= 0 && cells[referenceColumn] !== '' ? cells[referenceColumn] : undefined;
    if (reference !== undefined && !isReference(reference)) throw csvError(line, `the reference must be ${REFERENCE_RULE}`);
    return { line, phone: cells[phoneColumn], ...(reference === undefined ? {} : { reference }) };
  });
}

export function csvError(line: number, problem: string): AppError {
  return new AppError('INVALID_REQUEST', `CSV line ${line}: ${problem}.`);
}
