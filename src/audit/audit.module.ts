import { Module } from '@nestjs/common';
import { AdminAuditRepository } from './audit.repository';

/**
 * The audit trail (admin_audit): who changed what, before and after. A leaf that the modules whose
 * actions are audited (admin/, settings/ for the customer's webhook-secret rotation) write through,
 * each in the transaction of its action, so an action and its audit row commit together or not at all.
 */
@Module({
  providers: [AdminAuditRepository],
  exports: [AdminAuditRepository],
})
export class AuditModule {}
