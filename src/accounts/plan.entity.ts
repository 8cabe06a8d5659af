import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

@Entity('plans')
export class Plan {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  name: string;

  @Column({ type: 'integer' })
  limit: number;

  @Column({ name: 'window_seconds', type: 'integer' })
  windowSeconds: number;

  /** Numbers an account of this plan may watch, across all its watchlists. */
  @Column({ name: 'max_watched_numbers', type: 'integer', default: 10_000 })
  maxWatchedNumbers: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
