import request from 'supertest';
import type { App } from 'supertest/types';
import { eventually } from './eventually';
import { parseCsv } from '../../src/bulk/csv-input';

/** `count` distinct UK mobile numbers, valid for their plan, none in the test-number table (they end in 7; 0005 and 0006 are test numbers). */
export function distinctNumbers(count: number, block: number): string[] {
  return Array.from({ length: count }, (_, i) => `+4474${String(block).padStart(2, '0')}${String(i).padStart(5, '0')}7`);
}

/** Polls GET /api/v1/filter/bulk/{id} until the job has completed; returns its last body. */
export async function waitForBulkJob(
  target: App | string,
  auth: { Authorization: string },
  id: string,
  timeoutMs = 30_000,
): Promise<{ status: string; processed: number; total: number; results: unknown[]; [key: string]: unknown }> {
  const body = await eventually(
    async () => {
      const res = await request(target).get(`/api/v1/filter/bulk/${id}`).set(auth);
      if (res.status !== 200) throw new Error(`GET bulk job ${id}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    },
    (job) => job.status === 'completed',
    timeoutMs,
  );
  if (body.status !== 'completed') throw new Error(`bulk job ${id} not completed in ${timeoutMs} ms: ${body.status} ${body.processed}/${body.total}`);
  return body;
}

/** How many entries of a bulk job have their answer, read with any client's `query` (TypeORM's or pg's). */
export async function answeredEntries(query: (sql: string, params: unknown[]) => Promise<Array<{ done: string }>>, jobId: string): Promise<number> {
  const [row] = await query(`SELECT count(*) AS done FROM bulk_entries WHERE job_id = $1 AND done_at IS NOT NULL`, [jobId]);
  return Number(row.done);
}

/**
 * A bulk results CSV read by column name, as a customer's parser would: its header, and each row's cells
 * by column (RFC 4180 quoting undone). Assertions on it name the columns they mean, whatever others exist.
 */
export function csvRecords(text: string): { header: string[]; rows: Array<Record<string, string>> } {
  const [header, ...rows] = parseCsv(text).map((row) => row.cells);
  return { header, rows: rows.map((cells) => Object.fromEntries(header.map((column, i) => [column, cells[i]]))) };
}
