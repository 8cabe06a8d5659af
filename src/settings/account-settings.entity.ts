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

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
