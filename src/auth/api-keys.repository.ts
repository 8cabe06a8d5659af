import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { TransactionHost, type TypeOrmTx } from '../database/transactions';
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
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly txHost: TransactionHost<TypeOrmTx>,
  ) {}

  async insert(accountId: string, prefix: string, keyHash: string): Promise<ApiKey> {
    const repo = this.txHost.tx.getRepository(ApiKey);
    return repo.save(repo.create({ accountId, prefix, keyHash, status: 'active' }));
  }

  /** One indexed lookup by hash: the key, its state and its account (the account's own state is asked of accounts/). */
  async findByHash(keyHash: string): Promise<Pick<KeyOwner, 'keyId' | 'keyStatus' | 'accountId'> | undefined> {
    const rows: Array<Pick<KeyOwner, 'keyId' | 'keyStatus' | 'accountId'>> = await this.db.query(
      `SELECT id AS "keyId", status AS "keyStatus", account_id AS "accountId" FROM api_keys WHERE key_hash = $1`,
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
    await this.txHost.tx.query(
      `UPDATE api_keys SET status = 'revoked', revoked_at = now() WHERE id = $1 AND status = 'active'`,
      [keyId],
    );
    return this.txHost.tx.getRepository(ApiKey).findOneBy({ id: keyId });
  }

  async touchLastUsed(keyId: string): Promise<void> {
    await this.db.query(`UPDATE api_keys SET last_used_at = now() WHERE id = $1`, [keyId]);
  }
}
