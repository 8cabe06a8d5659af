import type { AdminService } from '../../src/admin/admin.service';

export interface TestAccount {
  id: string;
  apiKey: string;
  auth: { Authorization: string };
}

let counter = 0;

/** A new account through the same service the admin API uses (no raw SQL). */
export async function createAccount(t: { admin: AdminService }, options: { credits?: number; plan?: string; name?: string } = {}): Promise<TestAccount> {
  const created = await t.admin.createAccount(
    { name: options.name ?? `test account ${++counter}`, plan: options.plan ?? 'enterprise', credits: options.credits ?? 1000 },
    'test',
  );
  return { id: created.id, apiKey: created.api_key, auth: { Authorization: `Bearer ${created.api_key}` } };
}
