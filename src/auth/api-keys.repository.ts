import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ApiKey } from './api-key.entity';

export interface KeyOwner {
  keyId: string;
  keyStatus: 'active' | 'revoked';
  accountId: string;
  accountDisabled: boolean;
  planName: string;
  planLimit: number;
  planWindowSeconds: number;
}

@Injectable()
export class ApiKeysRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insert(accountId: string, prefix: string, keyHash: string): Promise<ApiKey> {
    const repo = this.db.getRepository(ApiKey);
    return repo.save(repo.create({ accountId, prefix, keyHash, status: 'active' }));
  }

  /** One indexed lookup by hash, with what the guard and the rate limiter need of the owner. */
  async findOwnerByHash(keyHash: string): Promise<KeyOwner | undefined> {
    const rows: KeyOwner[] = await this.db.query(
      `SELECT k.id AS "keyId", k.status AS "keyStatus", a.id AS "accountId", a.disabled AS "accountDisabled",
              p.name AS "planName", p."limit" AS "planLimit", p.window_seconds AS "planWindowSeconds"
         FROM api_keys k JOIN accounts a ON a.id = k.account_id JOIN plans p ON p.name = a.plan
        WHERE k.key_hash = $1`,
      [keyHash],
    );
    return rows[0];
  }

  async findById(keyId: string): Promise<ApiKey | null> {
    return this.db.getRepository(ApiKey).findOneBy({ id: keyId });
  }

  async listByAccount(accountId: string): Promise<ApiKey[]> {
    return this.db.getRepository(ApiKey).find({ where: { accountId }, order: { createdAt: 'ASC' } });
  }

  /** Revokes once; revoking a revoked key changes nothing and still answers with the key. */
  async revoke(keyId: string): Promise<ApiKey | null> {
    await this.db.query(
      `UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE id = $1 AND status = 'active'`,
      [keyId],
    );
    return this.findById(keyId);
  }

  async touchLastUsed(keyId: string): Promise<void> {
    await this.db.query(`UPDATE api_keys SET last_used_at = now() WHERE id = $1`, [keyId]);
  }
}
