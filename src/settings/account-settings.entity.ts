import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

@Entity('account_settings')
export class AccountSettings {
  @PrimaryColumn({ name: 'account_id', type: 'uuid' })
  accountId: string;

  @Column({ name: 'network_status', type: 'boolean', default: true })
  networkStatus: boolean;

  @Column({ name: 'line_type', type: 'boolean', default: false })
  lineType: boolean;

  @Column({ type: 'boolean', default: false })
  portability: boolean;

  @Column({ name: 'webhook_secret', type: 'varchar', length: 64 })
  webhookSecret: string;

  /** The secret before the last rotation, still signing callbacks until previousWebhookSecretExpiresAt. */
  @Column({ name: 'previous_webhook_secret', type: 'varchar', length: 64, nullable: true })
  previousWebhookSecret: string | null;

  @Column({ name: 'previous_webhook_secret_expires_at', type: 'timestamptz', nullable: true })
  previousWebhookSecretExpiresAt: Date | null;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
