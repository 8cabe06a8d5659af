import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { bigintToNumber } from '../common/bigint.transformer';

export type LedgerEntryType = 'TOPUP' | 'CHARGE' | 'REFUND' | 'ADJUSTMENT';

/** One change of a balance. Append-only: rows are inserted, and a charge is only ever marked settled. */
@Entity('ledger_entries')
export class LedgerEntry {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId: string;

  @Column({ type: 'varchar', length: 10 })
  type: LedgerEntryType;

  @Column({ type: 'bigint', transformer: bigintToNumber })
  amount: number;

  @Column({ name: 'balance_after', type: 'bigint', transformer: bigintToNumber })
  balanceAfter: number;

  @Column({ type: 'varchar', length: 128 })
  reference: string;

  @Column({ name: 'refund_of', type: 'bigint', nullable: true })
  refundOf: string | null;

  /** Masked (+1415555****): the ledger never holds a full number. */
  @Column({ type: 'varchar', length: 32, nullable: true })
  phone: string | null;

  @Column({ type: 'varchar', length: 64, nullable: true })
  source: string | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  reason: string | null;

  @Column({ type: 'varchar', length: 200, nullable: true })
  actor: string | null;

  @Column({ name: 'settled_at', type: 'timestamptz', nullable: true })
  settledAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
